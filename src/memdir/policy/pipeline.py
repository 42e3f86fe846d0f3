"""The write policy: every write the memory tool makes passes through `WritePolicy.screen` before it is committed.

Two steps, each with its action (`allow`, `warn`, `redact`, `quarantine`, `block`):

- ``secrets`` (default ``redact``): API keys, private keys, tokens, passwords in URLs, card numbers
  (`memdir.policy.secrets`);
- ``injection`` (default ``warn``): text that tries to steer a future session (`memdir.policy.injection`);
  ``untrusted_injection`` overrides it for content whose origin is marked untrusted (`Origin.source` starting
  with ``untrusted``, e.g. written in the same turn as a web page was read).

A write gets the strongest action any of its findings calls for. ``redact`` replaces each redacted span with
``[REDACTED:<rule>]`` and the write goes on; ``quarantine`` holds the (redacted) write for a person to review;
``block`` refuses it. Only what the command changes is screened: text that was already in the file was screened
when it was written (or put there by a person), and re-flagging it on every edit would make a reviewed note
impossible to touch. An edit is read in the lines it changes and `CONTEXT_LINES` lines on each side: a secret
completed by the edit lies within a line (a PEM key block, which spans lines, is looked for in the whole text),
and those lines are what the injection detector reads as the edit's context. So an edit of a large file costs
what the edit is, not what the file is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ._disguise import View, undisguised
from .findings import Action, Finding, check_action, strongest
from .injection import find_injections
from .secrets import SecretMatch, find_secrets

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["Screened", "WritePolicy", "redact", "scan"]

UNTRUSTED_PREFIX = "untrusted"
CONTEXT_LINES = 3  # lines on each side of an edit screened with it (injections, secrets within a line)
DISGUISED = " (disguised)"  # ends the detail of a finding read through a disguise (`memdir.policy._disguise`)


@dataclass(frozen=True, slots=True)
class WritePolicy:
    """What to do with secrets and with injected instructions found in a write."""

    secrets: Action = "redact"
    injection: Action = "warn"
    untrusted_injection: Action | None = None  # None: the same as ``injection``

    def __post_init__(self) -> None:
        check_action(self.secrets, "policy.secrets")
        check_action(self.injection, "policy.injection")
        if self.untrusted_injection is not None:
            check_action(self.untrusted_injection, "policy.untrusted_injection")

    @classmethod
    def allow_all(cls) -> WritePolicy:
        """No screening at all (what a person approving a reviewed write gets)."""
        return cls(secrets="allow", injection="allow")

    def findings(self, text: str, *, untrusted: bool = False, around: tuple[int, int] | None = None) -> list[Finding]:
        """Every finding in ``text``, with the action this policy takes on it. ``around`` (start, end): look only
        in the lines it touches and `CONTEXT_LINES` lines on each side (PEM keys: in the whole text).

        The text is also read with its disguises undone (escapes decoded, look-alike and invisible characters read
        as they look: `memdir.policy._disguise`); what only that reading finds is a finding of the span it was
        read from, its detail ending in `DISGUISED`."""
        injection = self.untrusted_injection if untrusted and self.untrusted_injection else self.injection
        lo, hi = (0, len(text)) if around is None else _context(text, *around)
        found = [self._secret(text, m) for m in find_secrets(text, None if around is None else (lo, hi))] + [
            Finding("injection", m.rule, (lo + m.start, lo + m.end), m.detail, injection, _line(text, lo + m.start))
            for m in find_injections(text[lo:hi])
        ]
        view = undisguised(text[lo:hi])
        if view is not None:
            found += _unseen(found, self._seen_through(text, view, lo, injection))
        return sorted(found, key=lambda f: f.span)

    def secrets_in(self, text: str) -> list[Finding]:
        """The secrets in ``text`` alone (no injection reading), with this policy's action: for names and labels,
        which hold no instruction but are stored everywhere. Disguises are seen through, as in `findings`."""
        found = [self._secret(text, m) for m in find_secrets(text)]
        view = undisguised(text)
        if view is not None:
            found += _unseen(found, [f for f in self._seen_through(text, view, 0, "allow") if f.kind == "secret"])
        return sorted(found, key=lambda f: f.span)

    def _secret(self, text: str, m: SecretMatch, detail: str = "") -> Finding:
        span, line = (m.start, m.end), _line(text, m.start)
        return Finding("secret", m.rule, span, m.detail + detail, self.secrets, line, m.reach)

    def _seen_through(self, text: str, view: View, offset: int, injection: Action) -> list[Finding]:
        """The findings in ``view`` (of ``text[offset:...]``), each given the span of ``text`` it was read from, and
        as its reach what an edit must touch for it to count (`View.reach`)."""
        found = []
        for m in find_secrets(view.text):
            (start, end), (reach_start, reach_end) = view.span(m.start, m.end), view.reach(*m.reach)
            at = SecretMatch(m.rule, offset + start, offset + end, m.detail, (offset + reach_start, offset + reach_end))
            found.append(self._secret(text, at, DISGUISED))
        for i in find_injections(view.text):
            (start, end), (reach_start, reach_end) = view.span(i.start, i.end), view.reach(i.start, i.end)
            span, reach = (offset + start, offset + end), (offset + reach_start, offset + reach_end)
            line = _line(text, span[0])
            found.append(Finding("injection", i.rule, span, i.detail + DISGUISED, injection, line, reach))
        return found

    def screen(self, text: str, region: tuple[int, int] | None = None, *, untrusted: bool = False) -> Screened:
        """Screen the part ``region`` (start, end) of ``text`` a command changed (all of it by default).

        A finding counts when its whole match (`Finding.extent`: the key word of ``API_KEY=...`` and the URL
        around a password included, not only the redacted value) overlaps or touches the region: a secret split
        across old and new text, or completed at either edge of the change (``ghp_...-zz`` edited to
        ``ghp_... ok``, ``credential_value = ...`` renamed to ``aws_secret_access_key``, a URL given its
        ``@host``), is the edit's. An empty region, where a command removed text, counts the findings that reach
        its position. Rules whose key word lies outside the region still see it: the region is read with
        `CONTEXT_LINES` lines on each side.
        """
        start, end = region if region is not None else (0, len(text))
        if self.secrets == "allow" and self.injection == "allow" and not self.untrusted_injection:
            return Screened(text, (start, end), [], "allow")
        found = [
            f
            for f in self.findings(text, untrusted=untrusted, around=region)
            if f.action != "allow" and f.extent[0] <= end and f.extent[1] >= start
        ]
        outcome = strongest([f.action for f in found])
        if outcome == "block":
            return Screened(text, (start, end), found, outcome)
        redacted, (new_start, new_end) = redact(text, [f for f in found if f.action == "redact"], (start, end))
        return Screened(redacted, (new_start, new_end), found, outcome)


@dataclass(frozen=True, slots=True)
class Screened:
    """A screened write: ``text`` after redaction, the changed ``region`` in it, what was found (spans refer to
    the text *before* redaction) and the strongest action."""

    text: str
    region: tuple[int, int]
    findings: list[Finding] = field(default_factory=list)
    outcome: Action = "allow"

    def acted_on(self, action: Action) -> list[Finding]:
        return [f for f in self.findings if f.action == action]


def redact(text: str, findings: Iterable[Finding], region: tuple[int, int] = (0, 0)) -> tuple[str, tuple[int, int]]:
    """``text`` with each finding's span replaced by its label, and ``region`` moved to match.

    Overlapping spans are merged (the first one's label stays). A region edge inside a redacted span moves out to
    that span's edge, so the region covers the whole label.
    """
    spans: list[tuple[int, int, str]] = []
    for f in sorted(findings, key=lambda f: f.span):
        start, end = f.span
        if spans and start < spans[-1][1]:
            spans[-1] = (spans[-1][0], max(spans[-1][1], end), spans[-1][2])
        else:
            spans.append((start, end, f.label))
    if not spans:
        return text, region
    out: list[str] = []
    cursor = 0
    for start, end, label in spans:
        out += [text[cursor:start], label]
        cursor = end
    out.append(text[cursor:])
    return "".join(out), (_moved(spans, region[0], to_end=False), _moved(spans, region[1], to_end=True))


def _moved(spans: list[tuple[int, int, str]], pos: int, *, to_end: bool) -> int:
    """Where offset ``pos`` lands once ``spans`` are replaced by their labels."""
    shift = 0
    for start, end, label in spans:
        if end <= pos:
            shift += len(label) - (end - start)
        elif start < pos:  # inside a redacted span
            return start + shift + (len(label) if to_end else 0)
        else:
            break
    return pos + shift


def scan(text: str, policy: WritePolicy | None = None, *, untrusted: bool = False) -> list[Finding]:
    """Every secret and injected instruction in ``text``, with the action ``policy`` (default: the defaults,
    secrets redacted, injections warned about) would take. Usable on its own: ``memdir.scan(text)``."""
    return (policy or WritePolicy()).findings(text, untrusted=untrusted)


def _unseen(plain: list[Finding], seen: list[Finding]) -> list[Finding]:
    """The findings of ``seen`` that reading the text as it is missed: no secret in ``plain`` covers them (a key
    word's value cut short at an escape is found whole in the view, and redacted whole: overlapping spans merge),
    nor does an injection of the same rule overlap them (a zero-width space found as hidden text does not stand for
    the instruction it hid)."""
    return [f for f in seen if not any(_same(p, f) for p in plain)]


def _same(plain: Finding, seen: Finding) -> bool:
    if plain.kind != seen.kind:
        return False
    if seen.kind == "secret":
        return plain.span[0] <= seen.span[0] and seen.span[1] <= plain.span[1]
    return plain.rule == seen.rule and plain.span[0] < seen.span[1] and seen.span[0] < plain.span[1]


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _context(text: str, start: int, end: int) -> tuple[int, int]:
    """The lines ``start:end`` touches and `CONTEXT_LINES` more on each side, as (start, end) offsets. Whole
    lines: the detector's rules anchor at line starts."""
    lo = text.rfind("\n", 0, start) + 1
    for _ in range(CONTEXT_LINES):
        if lo == 0:
            break
        lo = text.rfind("\n", 0, lo - 1) + 1
    hi = end if end > start and text[end - 1] == "\n" else _line_end(text, end)
    for _ in range(CONTEXT_LINES):
        hi = _line_end(text, hi)
    return lo, hi


def _line_end(text: str, pos: int) -> int:
    found = text.find("\n", pos)
    return len(text) if found < 0 else found + 1
