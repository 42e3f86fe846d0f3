"""What a secret rule is, and the checks rules share: the record `memdir.policy.secrets` runs, written as data in
`memdir.policy._rules_tokens` (credentials an issuer marks with a prefix) and `memdir.policy._rules_keyed`
(credentials known by what stands around them: a key word, a URL, a header, a PEM block).

A rule is a regular expression and the **hints** that gate it: strings one of which is in every text the expression
matches (a necessary condition, taken from the expression's literal parts). The hints of every rule are looked for
in one Aho-Corasick pass (`memdir.policy._hints`); a rule none of whose hints is in a text is skipped, and a rule
whose matches start at a hint (``anchor``) is tried only at the places its hints occur, rather than scanned over
the text: so a note with no credential in it costs a few microseconds whatever the number of rules.

Tokens are found wherever they sit in a URL or an identifier (``vault/ghp_...``, ``AWS_ID=AKIA..._prod``,
``https://TOKEN@host``): a token's edges need only not be letters or digits, which still keeps a run of base64
(an inline image, a certificate) from yielding an ``AKIA...`` found in its middle.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

__all__ = [
    "END",
    "START",
    "Rule",
    "at_hint",
    "back_over",
    "before",
    "entropy",
    "has_marker",
    "looks_random",
    "placeholder",
    "random_group",
    "word_start",
]

# A token's edges: not a letter or digit on either side. Not `\b`: `_` and `-` are word or token characters, and
# a token glued after one (`AWS_ID=AKIA..._prod`, `key-ghp_...`) is as much a secret as one standing alone.
START = r"(?<![A-Za-z0-9])"
END = r"(?![A-Za-z0-9])"


@dataclass(frozen=True, slots=True)
class Rule:
    """One kind of credential. ``name`` is the kind (the redaction label says it), ``detail`` what people read."""

    name: str
    detail: str
    pattern: re.Pattern[str]
    hints: tuple[str, ...]  # one of them is in every text the pattern matches
    fold: bool = False  # the hints are looked for ignoring case (else exactly as written)
    # For a rule with no literal part to hint at: a test as cheap, necessary for a match (card numbers), or the
    # places a match can start, found some cheaper way than the expression (Discord bot tokens).
    gate: Callable[[str], bool] | None = None
    places: Callable[[str], Iterable[int]] | None = None
    # Where to try the pattern, given where a hint starts (None: scan the text). A rule whose matches begin at
    # their hint, or at the start of the word around it, is tried at a handful of places instead of at every one.
    anchor: Callable[[str, int], int | tuple[int, ...] | None] | None = None
    accept: Callable[[re.Match[str]], bool] | None = None  # a further check of a match (a placeholder is not one)
    # The part of the match that is secret (a URL's password, not the whole URL): a group, or the first of several
    # that took part (a value inside double, single or back quotes, or bare).
    group: str | int | tuple[str, ...] = 0
    multiline: bool = False  # a match can span lines (else it lies within one line)
    # A rule that names a secret only when no rule of a known kind does (a key word's value that is also a
    # GitLab token is named as a GitLab token, even where the value runs on).
    fallback: bool = False

    def __post_init__(self) -> None:
        if not self.hints and self.gate is None and self.places is None:
            raise ValueError(f"rule {self.name} has no hints: every rule must be gated (see memdir.policy._rules)")

    def secret_span(self, match: re.Match[str]) -> tuple[int, int]:
        """Where the secret part of ``match`` lies."""
        if isinstance(self.group, tuple):
            return next(match.span(g) for g in self.group if match.group(g) is not None)
        return match.span(self.group)


def at_hint(_text: str, pos: int) -> int:
    """The anchor of a rule whose every match starts with one of its hints."""
    return pos


def before(count: int) -> Callable[[str, int], int | None]:
    """The anchor of a rule whose matches start ``count`` characters before their hint (``[0-9a-f]{32}-us1``)."""

    def anchor(_text: str, pos: int) -> int | None:
        return pos - count if pos >= count else None

    return anchor


_WORD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")


def word_start(text: str, pos: int) -> int:
    """The anchor of a rule whose match starts with the identifier a hint is part of (``DB_PASSWORD`` for the hint
    ``pass``): the start of the run of identifier characters before ``pos`` (64 at most)."""
    start, stop = pos, max(0, pos - 64)
    while start > stop and text[start - 1] in _WORD:  # a loop: a regex anchored at `pos` would try every start
        start -= 1
    return start


_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def word_or_next_start(text: str, pos: int) -> int | tuple[int, int]:
    """`word_start`, and, where the hint lies in a word of letters followed by blanks, also the start of what
    follows them: a name of one part takes the word before it as its own (``API key: ...``, ``pwd -us=...``,
    `memdir.policy._rules_keyed`), so the match may start at the next word."""
    start = word_start(text, pos)
    end = pos
    while end < len(text) and text[end] in _LETTERS:
        end += 1
    after = end
    while after < len(text) and text[after] in " \t":
        after += 1
    return (start, after) if end < after < len(text) else start


def back_over(chars: str, most: int) -> Callable[[str, int], int | None]:
    """The anchor of a rule whose match starts with up to ``most`` of ``chars`` before its hint (a URL's scheme
    before ``://``, a bot's id before ``:AA``); None where there are none."""
    allowed = frozenset(chars)

    def anchor(text: str, pos: int) -> int | None:
        start, stop = pos, max(0, pos - most)
        while start > stop and text[start - 1] in allowed:
            start -= 1
        return start if start < pos else None

    return anchor


# Strings found in the documented stand-ins for a credential (`AKIAIOSFODNN7EXAMPLE`, `ghp_xxxx...`,
# `<your-token>`), not in a generated one: redacting those would teach users to ignore the redaction.
_MARKERS = ("xxxx", "****", "....", "…", "example", "placeholder", "redacted", "your", "...", "changeme", "dummy",
            "sample",
            "fake", "0000000", "1234567", "abcdefg", "replace", "insert", "here")  # fmt: skip


def has_marker(value: str) -> bool:
    """Whether ``value`` holds one of the strings found in documented stand-ins (``xxxx``, ``example``...)."""
    low = value.lower()
    return any(marker in low for marker in _MARKERS)


def placeholder(value: str) -> bool:
    """Whether ``value`` is a documented stand-in rather than a credential: it holds a marker, and without the
    markers no run of 16 letters or digits is left (a real key glued to ``/xxxx`` is still a real key)."""
    if not has_marker(value):
        return False
    low = value.lower()
    for marker in _MARKERS:
        low = low.replace(marker, " ")
    return max(map(len, _RUNS.findall(low)), default=0) < 16


_RUNS = re.compile(r"[a-z0-9]+")


def looks_random(value: str, minimum_bits: float = 0.0) -> bool:
    """Whether ``value`` looks generated: varied characters (a run of ``x`` or ``a1a1a1`` is not a key), no
    placeholder marker, and at least ``minimum_bits`` of Shannon entropy per character when asked."""
    distinct = len(set(value))
    if distinct < min(10, max(4, len(value) // 3)) or placeholder(value):
        return False
    return minimum_bits <= 0 or entropy(value) >= minimum_bits


def entropy(value: str) -> float:
    """Shannon entropy of ``value``, bits per character."""
    size = len(value)
    return -sum(n / size * math.log2(n / size) for n in Counter(value).values()) if size else 0.0


def random_group(group: str | int = 0, minimum_bits: float = 0.0) -> Callable[[re.Match[str]], bool]:
    """The usual check of a token rule: the secret part looks generated."""

    def check(match: re.Match[str]) -> bool:
        return looks_random(match.group(group), minimum_bits)

    return check
