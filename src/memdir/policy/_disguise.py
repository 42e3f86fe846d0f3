"""Text as its reader sees it: the disguises a writer can put on a secret or an instruction, undone.

A model reads ``ｉｇｎｏｒｅ`` (full-width letters), ``іgnore`` (a Cyrillic ``і``), ``ig<zero-width space>nore``,
``&#105;gnore`` (an HTML character reference), ``%69gnore`` (percent-encoded) or ``\\u0069gnore`` (an escape) as
"ignore"; and a token written ``ghp%5F...`` or ``ghp\\u005f...`` is one decoding away from working. The rules are
written for the plain form, so the write policy also reads the text as a `View`, with every disguise undone:

- **escapes decoded**: percent-encoding (``%XX`` runs, as UTF-8), HTML character references and named entities,
  and the ``\\uXXXX``, ``\\UXXXXXXXX`` and ``\\xXX`` escapes of JSON, Python and JavaScript strings;
- **characters read as they look**: compatibility forms by their NFKC form when that is ASCII (full-width and
  mathematical letters, ligatures, no-break and ideographic spaces), letters and digits of other scripts that look
  like an ASCII one (from Unicode's confusables data), Unicode tag characters as the ASCII they encode (the
  "ASCII smuggling" of hidden instructions); the table is `memdir.policy._chartable`;
- **invisible characters dropped**: format characters (zero-width spaces and joiners, soft hyphens, bidi
  controls) and variation selectors.

A `View` keeps, for each of its characters, the span of the original text it came from, so a finding in the view
is a finding of the original's span (what a redaction replaces). Text with nothing to undo (the common case: ASCII
without an escape, or any text without a mappable character) costs one or two expression searches and has no view.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field

from ._chartable import CHARS as _CHARS

__all__ = ["View", "undisguised"]

_ESCAPE = re.compile(
    r"(?:%[0-9A-Fa-f]{2})+"  # a run: a multi-byte UTF-8 character is several
    r"|&#[0-9]{1,7};?|&#[xX][0-9A-Fa-f]{1,6};?|&[A-Za-z][A-Za-z0-9]{1,31};"
    r"|\\u[0-9A-Fa-f]{4}|\\U[0-9A-Fa-f]{8}|\\x[0-9A-Fa-f]{2}"
)


def _ranges(codes: list[int]) -> str:
    """``codes`` (sorted) as the ranges of a character class: a class of single characters compiles 10x slower."""
    parts: list[str] = []
    first = last = codes[0]
    for code in [*codes[1:], -1]:
        if code == last + 1:
            last = code
            continue
        parts.append(re.escape(chr(first)) + ("" if first == last else "-" + re.escape(chr(last))))
        first = last = code
    return "".join(parts)


# The characters a view changes: a text holding none of them is read as it is. Those up to U+FFFF as one
# class (tested with a bitmap: ~2 us a kilobyte); beyond it, the engine would test a class range by range (~170 us
# a kilobyte), so the few characters there a text holds (emoji, mostly) are found and looked up one by one.
_MAPPED = re.compile(f"[{_ranges(sorted(c for c in _CHARS if c <= 0xFFFF))}]")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


@dataclass(frozen=True, slots=True)
class View:
    """``text`` (the view) read from ``source``: ``pieces`` are its parts, each (start, end) in ``source`` and
    the text it became (an escape decoded, or a run of the source as it is), before characters are mapped."""

    text: str
    source: str
    pieces: tuple[tuple[int, int, str, bool], ...]
    _starts: list[int] = field(default_factory=list, repr=False, compare=False)
    _ends: list[int] = field(default_factory=list, repr=False, compare=False)

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The span of the source that the view's ``start:end`` was read from."""
        if not self._starts:
            self._index()
        if start >= end:  # an empty span: where the view's character at ``start`` came from
            at = self._starts[start] if start < len(self._starts) else len(self.source)
            return at, at
        return self._starts[start], self._ends[end - 1]

    def reach(self, start: int, end: int) -> tuple[int, int]:
        """`span`, widened over what lies unseen at its edges: the characters dropped next to it, and an escape the
        characters beside it were read from (but for that escape's far end). An edit of the source that touches
        this span touches the view's ``start:end``: an edit can change half an escape (``&`` | ``#x64;``), or the
        zero-width space between a secret and what completes it."""
        lo, hi = self.span(start, end)
        if start > 0:
            before_start, before_end = self._starts[start - 1], self._ends[start - 1]
            lo = min(lo, before_start + 1 if before_end - before_start > 1 else before_end)
        else:
            lo = 0
        if end < len(self._starts):
            after_start, after_end = self._starts[end], self._ends[end]
            hi = max(hi, after_end - 1 if after_end - after_start > 1 else after_start)
        else:
            hi = len(self.source)
        return lo, hi

    def _index(self) -> None:
        """Each view character's source span, worked out only when a finding needs one (a character at a time)."""
        for start, end, text, decoded in self.pieces:
            for offset, char in enumerate(text):
                mapped = char.translate(_CHARS)
                lo, hi = (start, end) if decoded else (start + offset, start + offset + 1)
                self._starts.extend([lo] * len(mapped))
                self._ends.extend([hi] * len(mapped))


def undisguised(text: str) -> View | None:
    """``text`` with its disguises undone, or None when it has none (see the module docstring)."""
    # The expression's search costs ~30 us a kilobyte, the substring tests well under one: most texts hold no "%",
    # "&" or backslash at all.
    escapes = ("%" in text or "&" in text or "\\" in text) and _ESCAPE.search(text) is not None
    if not escapes and (text.isascii() or not _maps(text)):
        return None
    pieces = _decoded(text) if escapes else ((0, len(text), text, False),)
    view = "".join(piece for _, _, piece, _ in pieces).translate(_CHARS)
    return View(view, text, pieces) if view != text else None


def _maps(text: str) -> bool:
    """Whether ``text`` holds a character a view changes."""
    if _MAPPED.search(text) is not None:
        return True
    return any(ord(char) in _CHARS for char in _ASTRAL.findall(text))


def _decoded(text: str) -> tuple[tuple[int, int, str, bool], ...]:
    pieces: list[tuple[int, int, str, bool]] = []
    cursor = 0
    for match in _ESCAPE.finditer(text):
        start, end = match.span()
        if start > cursor:
            pieces.append((cursor, start, text[cursor:start], False))
        pieces.extend(_escape(match.group(), start))
        cursor = end
    if cursor < len(text):
        pieces.append((cursor, len(text), text[cursor:], False))
    return tuple(pieces)


def _escape(escape: str, start: int) -> list[tuple[int, int, str, bool]]:
    """The pieces one escape is read as: a percent run a character per ``%XX`` where it is ASCII."""
    end = start + len(escape)
    if escape[0] == "%":
        data = bytes.fromhex(escape.replace("%", ""))
        if data.isascii():
            return [(start + 3 * i, start + 3 * i + 3, chr(byte), True) for i, byte in enumerate(data)]
        return [(start, end, data.decode("utf-8", "replace"), True)]
    if escape[0] == "&":
        import html  # its table of entities costs ~2 ms to import: only for a text that holds one

        return [(start, end, html.unescape(escape), True)]
    code = int(escape[2:], 16)
    return [(start, end, chr(code) if code <= sys.maxunicode else escape, True)]
