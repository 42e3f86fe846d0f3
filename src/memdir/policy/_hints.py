"""The rules' cheap gates in one pass: which of many hint strings a text holds.

Every rule of `memdir.policy.secrets` and `memdir.policy.injection` needs one of a few strings in a text before
its expression can match (a necessary condition, derived from the expression's literal parts), so a rule whose
strings are absent is skipped. There are a few hundred such strings; searching a note for each in turn costs tens
of microseconds, and the memory tool screens every write. One Aho-Corasick pass (``ahocorasick_rs``, the Rust
``aho-corasick`` crate) finds every one of them in two or three, and where (`HintSearch.occurrences`): the secret
rules are tried only at those places.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Generic, TypeVar

from ahocorasick_rs import AhoCorasick, Implementation

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = ["SPACES", "Gated", "HintSearch"]

K = TypeVar("K")

# What `\s` matches in a `str` pattern (`str.isspace`): for hints standing for "white space, then a string", which
# an expression such as `\sai` needs (tests/policy/test_hints.py checks the list against every code point).
SPACES = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + "\u2028\u2029\u202f\u205f\u3000"
)


class HintSearch:
    """A fixed set of strings, looked for together."""

    def __init__(self, hints: Iterable[str]) -> None:
        self.hints = tuple(sorted(set(hints)))
        # The DFA: built once at import (a few hundred microseconds), the fastest to search.
        self._automaton = AhoCorasick(self.hints, implementation=Implementation.DFA)

    def found(self, text: str) -> set[str]:
        """The hints ``text`` holds (overlapping ones too: "assistant" and "sys" in "system assistant")."""
        try:
            return set(self._automaton.find_matches_as_strings(text, overlapping=True))
        except UnicodeEncodeError:
            return self.found(_encodable(text))

    def occurrences(self, text: str) -> list[tuple[str, int, int]]:
        """Every occurrence of every hint in ``text``: (hint, start, end)."""
        try:
            matches = self._automaton.find_matches_as_indexes(text, overlapping=True)
        except UnicodeEncodeError:
            return self.occurrences(_encodable(text))
        hints = self.hints
        return [(hints[i], start, end) for i, start, end in matches]


def _encodable(text: str) -> str:
    """``text`` with each lone surrogate (which the automaton, taking UTF-8, cannot read) as U+FFFD: one character
    for one, so every offset stays where it was. Only a caller of `memdir.scan` can hand one in: the doors refuse
    text that is not valid UTF-8."""
    return "".join("\ufffd" if "\ud800" <= char <= "\udfff" else char for char in text)


class Gated(Generic[K]):
    """Keys (rules) each let through by any one of its hints: which of them the hints a text holds let through, in a
    few set operations rather than a test per key."""

    def __init__(self, gates: Mapping[K, Iterable[str]]) -> None:
        by_hint: dict[str, set[K]] = {}
        for key, hints in gates.items():
            for hint in hints:
                by_hint.setdefault(hint, set()).add(key)
        self._by_hint = {hint: frozenset(keys) for hint, keys in by_hint.items()}

    def through(self, found: Iterable[str]) -> set[K]:
        """The keys one of whose hints is in ``found``."""
        keys: set[K] = set()
        for hint in found:
            gated = self._by_hint.get(hint)
            if gated is not None:
                keys |= gated
        return keys
