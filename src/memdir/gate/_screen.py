"""Screening a write as the gate sees it: only what changed, whatever the door; names and labels too.

A door hands the gate the new content of a file, never "what the command meant". So the gate works out what
changed itself: the spans of the new text that differ from the old (`changed_spans`). Only those are screened,
with the lines around them (`WritePolicy.screen`): text already in the file was screened when it was written,
or put there by a person who approved it, and flagging it again on every edit would make a reviewed note
impossible to touch. A finding that overlaps or touches a changed span counts, so a token completed at the
edge of an edit is caught.

Names are screened too: a secret in a file name is refused (a name cannot be redacted and still mean what the
writer meant), and the labels recorded with a change (session, source) are redacted before they are stored.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

from .._matching import line_opcodes
from ..errors import BlockedError
from ..policy.findings import strongest
from ..policy.pipeline import Screened, WritePolicy, redact
from ._receipt import _ACTIVE

if TYPE_CHECKING:
    from ..paths import MemoryPath
    from ..policy.findings import Finding

__all__ = [
    "blocked",
    "changed_spans",
    "describe",
    "is_redaction_of",
    "redacted_label",
    "refuse_secret_name",
    "screen",
    "secrets_in_name",
]

# A change whose differing middle spans more lines than this is split into the runs of lines that differ (a
# note's `modified:` stamp at the top and an edit further down are two changes, not one span between them).
_SPLIT_LINES = 8
_REDACTING = WritePolicy()  # what a held write's text is kept as: secrets redacted, whatever the namespace's policy


def changed_spans(old: str | None, new: str) -> list[tuple[int, int]]:
    """The (start, end) spans of ``new`` that differ from ``old``, in order (``old`` None: all of ``new``). A
    span may be empty: text was removed at that position."""
    if not old:
        return [(0, len(new))]
    start = _common_prefix(old, new)
    tail = _common_suffix(old, new, start)
    end, old_end = len(new) - tail, len(old) - tail
    if new.count("\n", start, end) <= _SPLIT_LINES and old.count("\n", start, old_end) <= _SPLIT_LINES:
        return [(start, end)]
    return _line_runs(old, new, start, end, old_end)


def _common_prefix(a: str, b: str) -> int:
    """Length of the common prefix, by halving: each comparison is one memcmp, not a Python loop per char."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: str, b: str, floor: int) -> int:
    """Length of the common suffix, not reaching into the first ``floor`` characters of either."""
    size_a, size_b = len(a), len(b)
    lo, hi = 0, min(size_a, size_b) - floor
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[size_a - mid : size_a - lo] == b[size_b - mid : size_b - lo]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _line_runs(old: str, new: str, start: int, end: int, old_end: int) -> list[tuple[int, int]]:
    """The differing middle (``new[start:end]`` against ``old[start:old_end]``) split into runs of changed lines."""
    lo = new.rfind("\n", 0, start) + 1  # whole lines, from the line the change starts in
    old_lines = old[lo:old_end].splitlines(keepends=True)
    new_lines = new[lo:end].splitlines(keepends=True)
    offsets = [lo]
    for line in new_lines:
        offsets.append(offsets[-1] + len(line))
    spans: list[tuple[int, int]] = []
    for tag, _i1, _i2, j1, j2 in line_opcodes(old_lines, new_lines):  # bounded: it runs under the write lock
        if tag != "equal":
            spans.append((max(offsets[j1], start), min(offsets[j2], end)))
    return spans or [(start, end)]


def screen(policy: WritePolicy, text: str, spans: list[tuple[int, int]], *, untrusted: bool) -> Screened:
    """``text`` screened in ``spans`` (from `changed_spans`): one `Screened` whose ``region`` covers the last
    span once redacted. Spans are screened last first, so a redaction never moves a span still to be screened."""
    if len(spans) == 1:
        return policy.screen(text, spans[0], untrusted=untrusted)
    found: list[Finding] = []
    region = spans[-1]
    for number, span in enumerate(reversed(spans)):
        part = policy.screen(text, span, untrusted=untrusted)
        found += [f for f in part.findings if f not in found]
        if part.outcome == "block":
            return Screened(text, region, found, "block")
        text = part.text
        if number == 0:
            region = part.region
    return Screened(text, region, sorted(found, key=lambda f: f.span), strongest([f.action for f in found]))


def held_text(screened: Screened) -> str:
    """What the quarantine keeps of a held write: its text with every secret redacted, whatever action the policy
    takes on secrets (a held write waits in a database too: a secret must not wait there in full)."""
    # Looked for again in the text as screened (redacted where the policy redacts): a policy that only warns of
    # secrets, or allows them, leaves them in it, and its findings (if any) lie in the text before redaction.
    secrets = _REDACTING.secrets_in(screened.text)
    return redact(screened.text, secrets)[0] if secrets else screened.text


@functools.lru_cache(maxsize=4096)
def _name_secrets(policy: WritePolicy, name: str) -> tuple[Finding, ...]:
    return tuple(policy.secrets_in(name))


def secrets_in_name(policy: WritePolicy, name: str) -> tuple[Finding, ...]:
    """The secrets a path (or any name) holds, whatever the policy does with secrets in content: a name is stored
    in every version, the audit log, listings and URLs, so one is never kept. Cached: a store's names repeat."""
    if policy.secrets == "allow":
        return ()
    return _name_secrets(policy, name)


@functools.lru_cache(maxsize=4096)
def _label(policy: WritePolicy, label: str) -> str:
    found = policy.secrets_in(label)
    return redact(label, found)[0] if found else label


def redacted_label(policy: WritePolicy, label: str | None) -> str | None:
    """A label recorded with a change (actor, session, source), with any secret in it redacted."""
    if label is None or policy.secrets == "allow":
        return label
    if not label.isascii():  # a lone surrogate cannot be screened (nor stored): keep what UTF-8 can say of it
        label = label.encode("utf-8", "replace").decode("utf-8")
    return _label(policy, label)


def describe(findings: list[Finding] | tuple[Finding, ...]) -> str:
    """ "it contains a secret (line 2: an AWS access key id)" / "part of it reads like an instruction..."."""
    secrets = [f for f in findings if f.kind == "secret"]
    injections = [f for f in findings if f.kind == "injection"]
    reasons = []
    if secrets:
        reasons.append(f"it contains {'a secret' if len(secrets) == 1 else 'secrets'} ({_where(secrets)})")
    if injections:
        reasons.append(f"part of it reads like an instruction aimed at a future session ({_where(injections)})")
    return " and ".join(reasons)


def _where(findings: list[Finding]) -> str:
    shown = [f"line {f.line}: {f.detail}" for f in findings[:3]]
    more = f"; {len(findings) - 3} more" if len(findings) > 3 else ""
    return "; ".join(shown) + more


def rules(findings: list[Finding] | tuple[Finding, ...]) -> tuple[str, ...]:
    """The rules that matched, as the audit log names them (``secret:aws-access-key``)."""
    return tuple(dict.fromkeys(f"{f.kind}:{f.rule}" for f in findings))


_LABEL = re.compile(r"\[REDACTED:[a-z0-9][a-z0-9._-]{0,63}\]")


def is_redaction_of(stored: bytes, original: bytes) -> bool:
    """Whether ``stored`` is ``original`` with some spans replaced by redaction labels (what the gate stores of
    a text holding secrets): a copy of a store that redacted on the way is still a copy of it."""
    try:
        text, source = stored.decode("utf-8"), original.decode("utf-8")
    except UnicodeDecodeError:
        return False
    parts = _LABEL.split(text)
    if len(parts) == 1:
        return False
    pattern = ".+?".join(re.escape(part) for part in parts)
    return re.fullmatch(pattern, source, re.DOTALL) is not None


def refuse_secret_name(policy: WritePolicy, target: MemoryPath) -> None:
    """A path that holds a secret is refused (`BlockedError`): a name is kept in every version, listing, URL and
    log entry, and cannot be redacted and still name the file the writer meant."""
    found = secrets_in_name(policy, target.virtual)
    if not found:
        return
    receipt = _ACTIVE.get()
    if receipt is not None:
        receipt.findings, receipt.outcome = list(found), "block"
    kinds = ", ".join(dict.fromkeys(f.detail for f in found))
    reasons = f"the path holds {'a secret' if len(found) == 1 else 'secrets'} ({kinds})"
    raise BlockedError(
        f"{reasons}: a file name is kept in every version, listing and log, so it must not hold one. "
        "Choose another name.",
        reasons=reasons,
        rules=rules(found),
    )


def blocked(target: MemoryPath, findings: list[Finding], *, binary: bool = False, held: bool = False) -> BlockedError:
    """The error refusing a write for what the policy found in it; ``held``: a write the policy holds for
    review, replayed (an import or a version replay cannot wait for one)."""
    reasons = describe(findings)
    extra = " (the content is not UTF-8 text, so it cannot be redacted or held for review)" if binary else ""
    if held:
        extra = " (the policy holds such a write for review, and a replayed version cannot wait for one)"
    return BlockedError(
        f"the write to {target.virtual} was refused by the memory policy: {reasons}{extra}",
        reasons=reasons + extra,
        rules=rules(findings),
    )
