"""Secrets in text: API keys, tokens, private keys, passwords in URLs and assignments, card numbers.

The rules are data (`memdir.policy._rules_tokens`, `memdir.policy._rules_keyed`; `memdir.policy._rules` says what
a rule is): each a regular expression for a format an issuer fixed (a prefix, a length, an alphabet), or for a
value that what stands around it marks as a credential (a key word, a URL, a header). This module runs them: one
Aho-Corasick pass finds which rules' hints a text holds, and only those rules are tried, most of them only where
their hints occur. That keeps screening on every write cheap, and false positives low on what memory files are
full of: hashes, UUIDs, version strings, base64 blobs, settings about secrets, placeholders.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._hints import Gated, HintSearch
from ._rules import Rule
from ._rules_keyed import BLOCK_RULES, KEYED_RULES
from ._rules_tokens import TOKEN_RULES
from .findings import contains_any

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["SECRET_RULES", "Rule", "SecretMatch", "find_secrets"]


@dataclass(frozen=True, slots=True)
class SecretMatch:
    """A secret at ``start:end`` (what a redaction replaces), found by a match of ``rule`` at ``reach``: the whole
    match, wider when the rule reads a key word or a URL around the secret (what an edit must touch to count)."""

    rule: str
    start: int
    end: int
    detail: str
    reach: tuple[int, int] = (0, 0)


# Order matters where matches tie (same start, same length): the rule listed first names the secret.
SECRET_RULES: tuple[Rule, ...] = (*BLOCK_RULES, *TOKEN_RULES, *KEYED_RULES)

_GATES = HintSearch(h.lower() for rule in SECRET_RULES for h in rule.hints)
_LOWERED = tuple(frozenset(h.lower() for h in rule.hints) for rule in SECRET_RULES)
# For each rule matched exactly, its hints by their lower-cased form: an occurrence found in the lower-cased text
# is one of the rule's only where the text holds one of these there.
_CASED = tuple({low: tuple(h for h in rule.hints if h.lower() == low) for low in _LOWERED[o]}
               for o, rule in enumerate(SECRET_RULES))  # fmt: skip
# The rules (by order) a hint found in the lower-cased text lets through; the rest are tried on every text: the
# multi-line ones (their hints are looked for in the whole text) and those gated otherwise (card numbers).
_THROUGH = Gated({o: _LOWERED[o] for o, r in enumerate(SECRET_RULES) if r.hints and not r.multiline})
# (A rule with no hints is tried on every text: its gate or its places say quickly whether it can match.)
_TRIED = frozenset(o for o, r in enumerate(SECRET_RULES) if not r.hints or r.multiline)
_LABEL = re.compile(r"\[REDACTED:[a-z0-9\-]+\]")


def _candidates(found: set[str]) -> list[int]:
    """The rules to try, in order, on a text holding the hints ``found``: every other rule's hints are absent."""
    return sorted(_TRIED | _THROUGH.through(found))


def _may_match(order: int, text: str, found: set[str]) -> bool:
    """Whether rule ``order`` can match ``text`` (a line-bound part), which holds the hints ``found``."""
    rule = SECRET_RULES[order]
    if rule.gate is not None and not rule.gate(text):
        return False
    if not rule.hints:
        return True
    if found.isdisjoint(_LOWERED[order]):  # one test in C for all of a rule's hints
        return False
    return rule.fold or contains_any(text, rule.hints)


def _starts(order: int, text: str, occurrences: list[tuple[str, int, int]]) -> list[int]:
    """Where rule ``order`` is tried: its anchor at each place one of its hints occurs."""
    rule, lowered, cased = SECRET_RULES[order], _LOWERED[order], _CASED[order]
    places: set[int] = set()
    for hint, start, _ in occurrences:
        if hint in lowered and (rule.fold or any(text.startswith(h, start) for h in cased[hint])):
            place = rule.anchor(text, start) if rule.anchor is not None else None
            if isinstance(place, int):
                places.add(place)
            elif place is not None:
                places.update(place)
    return sorted(places)


def _tried(order: int, scope: str, occurrences: list[tuple[str, int, int]] | None) -> Iterator[re.Match[str]]:
    """The matches of rule ``order`` in ``scope``: at its anchors when ``occurrences`` lie in ``scope`` (None: they
    do not, because lower-casing changed the text's length), else by a scan."""
    rule = SECRET_RULES[order]
    if rule.places is not None:
        places = rule.places(scope)
    elif rule.anchor is None or occurrences is None or rule.multiline:
        yield from rule.pattern.finditer(scope)
        return
    else:
        places = _starts(order, scope, occurrences)
    for place in places:
        match = rule.pattern.match(scope, place)
        if match is not None:
            yield match


def _matches(text: str, lines: tuple[int, int] | None) -> Iterator[tuple[int, SecretMatch]]:
    lo, hi = lines if lines is not None else (0, len(text))
    part = text[lo:hi]
    lowered = part.lower()
    occurrences = _GATES.occurrences(lowered)
    found = {hint for hint, _, _ in occurrences}
    aligned = occurrences if len(lowered) == len(part) else None  # offsets in `lowered` are offsets in `part`
    for order in _candidates(found):
        rule = SECRET_RULES[order]
        if rule.multiline:  # read in the whole text, its hints looked for directly
            scope, offset, gate = text, 0, contains_any(text, rule.hints)
        else:
            scope, offset, gate = part, lo, _may_match(order, part, found)
        if not gate:
            continue
        for match in _tried(order, scope, aligned if scope is part else None):
            if rule.accept is None or rule.accept(match):
                start, end = rule.secret_span(match)
                reach = (offset + match.start(), offset + match.end())
                yield order, SecretMatch(rule.name, offset + start, offset + end, rule.detail, reach)


def _rank(item: tuple[int, SecretMatch]) -> tuple[int, bool, int, int]:
    order, match = item
    return match.start, SECRET_RULES[order].fallback, match.start - match.end, order


def find_secrets(text: str, lines: tuple[int, int] | None = None) -> list[SecretMatch]:
    """Every secret in ``text``, in order, without overlaps: of overlapping matches, the one starting first wins,
    then one of a known kind over a fallback rule's (`Rule.fallback`), then the longest, then the rule listed first
    (a service account's key is named as such, not as a PEM key).

    ``lines`` (start, end offsets at line boundaries): look only there, except for the rules whose matches can
    span lines (PEM keys), which read the whole text: an edit inside a key block completes the whole block.

    A redaction label (``[REDACTED:github-token]``) is never part of a match: screening redacted text again finds
    nothing new and changes nothing. Nor does one hide what is around it: the text is also read with its labels
    blank (`_blanked`)."""
    labels = [m.span() for m in _LABEL.finditer(text)] if "[REDACTED:" in text else []
    matches = list(_matches(text, lines))
    if labels:
        matches = [m for m in matches if not any(s < m[1].reach[1] and m[1].reach[0] < e for s, e in labels)]
        matches += _matches(_blanked(text, labels), lines)
    found: list[SecretMatch] = []
    for _, match in sorted(matches, key=_rank):
        if not found or match.start >= found[-1].end:
            found.append(match)
    return found


def _blanked(text: str, labels: list[tuple[int, int]]) -> str:
    """``text`` with its labels as blanks of their length (every offset kept). A writer can plant a label too:
    inside a key block or between a key word and its value, where a match touching it would be skipped. Read
    blank, a label is no key word and no part of a value, and what is around it is still found."""
    parts, cursor = [], 0
    for start, end in labels:
        parts += [text[cursor:start], " " * (end - start)]
        cursor = end
    parts.append(text[cursor:])
    return "".join(parts)
