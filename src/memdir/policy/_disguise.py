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
  controls), variation selectors, Unicode's other default-ignorable code points (Hangul fillers, the combining
  grapheme joiner) and ASCII's control characters but white space (the NULs of UTF-16 text read as UTF-8);
- **encoded runs read**: a run of 16 or more base64 (standard or URL-safe, padded or not, at any of the four
  alignments; else its pieces between separators, `_segments_read`) or hex characters that decodes to readable
  text is read as that text. A model decodes
  ``Z2hwX2...`` at sight, so a token or an instruction stored that way is one step from working. Runs that decode
  to bytes (hashes, keys, images, identifiers) are read as they are: random bytes are text by chance about once in
  a hundred thousand runs of twelve.

A `View` keeps, for each of its characters, the span of the original text it came from, so a finding in the view
is a finding of the original's span (what a redaction replaces). Text with nothing to undo (the common case: ASCII
without an escape, or any text without a mappable character) costs one or two expression searches and has no view.
"""

from __future__ import annotations

import binascii
import re
import string
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ._chartable import CHARS

# ASCII's control characters other than white space are dropped too: nothing shows them, and text that is
# UTF-16 read as UTF-8 (valid, when it is ASCII) has a NUL after every letter: ``g\0h\0p\0_``.
_CONTROLS = [*range(0x09), *range(0x0E, 0x20), 0x7F]
_CHARS: dict[int, str | None] = {**dict.fromkeys(_CONTROLS), **CHARS}

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

__all__ = ["View", "undisguised"]

_ESCAPE = re.compile(
    r"(?:%[0-9A-Fa-f]{2})+"  # a run: a multi-byte UTF-8 character is several
    r"|&#[0-9]{1,7};?|&#[xX][0-9A-Fa-f]{1,6};?|&[A-Za-z][A-Za-z0-9]{1,31};"
    r"|\\u[dD][89abAB][0-9A-Fa-f]{2}\\u[dD][c-fC-F][0-9A-Fa-f]{2}"  # a surrogate pair: one character
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


# Encoded runs (base64, hex): at least `_RUN` characters of the alphabets, standing alone (not the tail of a longer
# word of other characters). Found in two steps: the bytes translated to a mark per alphabet character and searched
# for `_RUN` marks in a row (~1 us a kilobyte), and only a text holding such a run searched with the expression
# (~13 us a kilobyte of prose, where every word is a failed start). The same translation marks the controls.
_RUN = 16
_RUN_ALPHABET = frozenset((string.ascii_letters + string.digits + "+/_-").encode())
_MARKS = bytes(0x61 if byte in _RUN_ALPHABET else 0x63 if byte in _CONTROLS else 0x20 for byte in range(256))
_ENCODED = re.compile(rf"[A-Za-z0-9+/_-]{{{_RUN},}}={{0,2}}")
_HEX_DIGITS = frozenset(string.hexdigits)


def undisguised(text: str) -> View | None:
    """``text`` with its disguises undone, or None when it has none (see the module docstring)."""
    # The expression's search costs ~30 us a kilobyte, the substring tests well under one: most texts hold no "%",
    # "&" or backslash at all.
    escapes = ("%" in text or "&" in text or "\\" in text) and _ESCAPE.search(text) is not None
    marked = text.encode("utf-8", "surrogatepass").translate(_MARKS)
    runs = b"a" * _RUN in marked
    if not escapes and not runs and b"c" not in marked and (text.isascii() or not _maps(text)):
        return None
    pieces = _decoded(text) if escapes else ((0, len(text), text, False),)
    if runs:
        pieces = tuple(part for piece in pieces for part in _runs_read(piece))
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
    if len(escape) == 12:  # a surrogate pair, as JSON writes a character beyond U+FFFF: "\\ud83d\\ude00"
        high, low = int(escape[2:6], 16), int(escape[8:], 16)
        return [(start, end, chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)), True)]
    code = int(escape[2:], 16)
    # A lone surrogate (or a code beyond Unicode) is no character: it is read as written, never put in the view,
    # which is text every rule (and the UTF-8 its matchers take) must be able to read.
    readable = code <= sys.maxunicode and not 0xD800 <= code <= 0xDFFF
    return [(start, end, chr(code) if readable else escape, True)]


def _runs_read(piece: tuple[int, int, str, bool]) -> list[tuple[int, int, str, bool]]:
    """A piece of the source as it is, with its encoded runs read as the text they decode to (`_encoded`)."""
    start, _end, text, decoded = piece
    if decoded:
        return [piece]

    def reads() -> Iterator[tuple[int, int, list[tuple[int, int, str, bool]]]]:
        for match in _ENCODED.finditer(text):
            run, at, end = match.group(), start + match.start(), match.end()
            read = _encoded(run, at) or _segments_read(run, at)
            if read is None:
                continue
            if end < len(text) and text[end].isalnum():  # after "==": the text goes on apart from the run's
                read.append((start + end, start + end, " ", True))
            yield match.start(), end, read

    return _spliced(text, start, reads()) or [piece]


def _spliced(
    text: str, start: int, reads: Iterable[tuple[int, int, list[tuple[int, int, str, bool]]]]
) -> list[tuple[int, int, str, bool]] | None:
    """``text`` (at ``start`` in the source) as pieces, each (begin, end, pieces) of ``reads`` read in place of
    ``text[begin:end]`` and the rest as it is; None when ``reads`` has nothing."""
    parts: list[tuple[int, int, str, bool]] = []
    cursor = 0
    for begin, end, read in reads:
        if begin > cursor:
            parts.append((start + cursor, start + begin, text[cursor:begin], False))
        parts.extend(read)
        cursor = end
    if not parts:
        return None
    if cursor < len(text):
        parts.append((start + cursor, start + len(text), text[cursor:], False))
    return parts


def _encoded(run: str, start: int) -> list[tuple[int, int, str, bool]] | None:
    """The pieces ``run`` (at ``start`` in the source) is read as when it is hex or base64 of readable text: each
    ASCII character from the two hex digits or the four base64 characters that hold it. None: not readable text."""
    body = run.rstrip("=")
    if _HEX_DIGITS.issuperset(body):  # hashes, ids: read as hex, or not at all (base64 of text is not all hex)
        data = bytes.fromhex(body) if len(body) % 2 == 0 and body == run else b"\x00"
        return _bytes_pieces(data, start, len(run), lambda i: (2 * i, 2 * i + 2)) if _readable(data) else None
    if "-" in body or "_" in body:  # the URL-safe alphabet
        body = body.translate(_URL_SAFE)
    for skip in _alignments(body):  # a run may begin with a letter or three that are not part of the encoding
        tail = body[skip:]
        if len(tail) < _RUN or len(tail) % 4 == 1:
            continue
        try:
            data = binascii.a2b_base64(tail + "=" * (-len(tail) % 4), strict_mode=True)
        except binascii.Error:
            continue
        if _readable(data):
            pieces = _bytes_pieces(data, start + skip, len(run) - skip, lambda i: (i // 3 * 4, i // 3 * 4 + 4))
            # The letters skipped are read apart from what follows: "x" + the encoding of "ghp_..." reads as a token.
            apart = [(start, start + skip, run[:skip], False), (start + skip, start + skip, " ", True)]
            return (apart if skip else []) + pieces
    return None


# A run that is no encoding as a whole may hold one between its separators: a file name under a directory
# (``notes/Z2hwX2...``), a URL's path (``keys/Z2hwX2.../rotate``), a name glued on with ``_`` or ``-``. Split at
# "/" first (base64 of ASCII text holds a "/" now and then, but rarely one that ends a piece of 16), then at
# every character the two alphabets add to letters and digits.
_SEGMENTS = (re.compile(r"[^/]+"), re.compile(r"[^/+_-]+"))
_SEPARATORS = frozenset("/+_-")


def _segments_read(run: str, start: int) -> list[tuple[int, int, str, bool]] | None:
    """The pieces ``run`` is read as when a part of it between separators is an encoding (`_encoded`), else None."""
    if _SEPARATORS.isdisjoint(run):
        return None
    for segments in _SEGMENTS:
        # A part that is the whole run was read as such already (`_runs_read`).
        reads = (
            (segment.start(), segment.end(), read)
            for segment in segments.finditer(run)
            if _RUN <= len(segment.group()) < len(run)
            and (read := _encoded(segment.group(), start + segment.start())) is not None
        )
        found = _spliced(run, start, reads)
        if found is not None:
            return found
    return None


_URL_SAFE = str.maketrans("-_", "+/")
# The base64 characters worth less than 32: the first of each four encodes the top bit of a byte there, which ASCII
# text never sets.
_LOW = frozenset(string.ascii_uppercase + "abcdef")


def _alignments(body: str) -> list[int]:
    """Where in ``body`` a base64 encoding of ASCII text can start (each fourth character from there worth less
    than 32, `_LOW`), else the start only (where other UTF-8 text is decoded): one decode a run, not four."""
    possible = [skip for skip in range(4) if _LOW.issuperset(body[skip::4])]
    return possible or [0]


_UNPRINTABLE = re.compile(rb"[^\t\n\r\x20-\x7e]")
_CONTROL_BYTES = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _readable(data: bytes) -> bool:
    """Whether decoded bytes are text a person could read: UTF-8 with no control character but line breaks and tabs."""
    if data.isascii():  # the common case, and the cheap test: most runs that are no text fail it at once
        return _UNPRINTABLE.search(data) is None
    if _CONTROL_BYTES.search(data) is not None:  # random bytes hold one nine times in ten: no decode, no exception
        return False
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return text.replace("\n", "").replace("\t", "").replace("\r", "").isprintable()


def _bytes_pieces(
    data: bytes, start: int, length: int, source: Callable[[int], tuple[int, int]]
) -> list[tuple[int, int, str, bool]]:
    """One piece per byte of ASCII ``data`` (spans from ``source``, clipped to the run); one for the whole run when
    it holds other characters (its bytes do not map to characters one by one)."""
    end = start + length
    if not data.isascii():
        return [(start, end, data.decode("utf-8"), True)]
    pieces = []
    for i, byte in enumerate(data):
        lo, hi = source(i)
        pieces.append((start + lo, min(end, start + hi), chr(byte), True))
    last_start, _, char, _ = pieces[-1]
    pieces[-1] = (last_start, end, char, True)  # the padding belongs to the last character's span
    return pieces
