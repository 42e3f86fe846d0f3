"""The virtual path rules: which ``/memories/...`` paths the model may use, and what they mean.

Every path the model sends is *virtual*. It is checked here, structurally (by segments, never by string
prefix), before any store sees it; a store only ever receives a `MemoryPath`, whose segments are known safe.
The rules and the error wording are SPEC.md's "Paths" section. In short:

- accept exactly ``/memories``, ``/memories/`` and ``/memories/<segments>``;
- normalise first: collapse repeated ``/``, drop a trailing ``/``, Unicode NFC;
- refuse ``.``/``..`` segments, backslashes, control characters, traversal hidden behind percent-encoding
  (once or repeatedly, ``%uXXXX`` and overlong UTF-8 included) or Unicode look-alikes (NFKC and a few
  separators NFKC leaves alone), hidden segments (a leading ``.``), a segment over 255 bytes and a path
  over 1,024 bytes.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache

from .errors import PathError

__all__ = ["MAX_PATH_BYTES", "MAX_SEGMENT_BYTES", "ROOT", "MemoryPath", "is_valid_segment", "parse"]

ROOT = "/memories"
MAX_SEGMENT_BYTES = 255
MAX_PATH_BYTES = 1024

# A raw path longer than this is refused before any per-segment work, so a hostile multi-megabyte path
# costs nothing. It is generous: repeated slashes collapse, so a raw path may be longer than its normal form.
_MAX_RAW_CHARS = 8 * MAX_PATH_BYTES

# Characters that render as nothing or reorder text. A name holding one can look like another name (or hide
# an extension), so the model and a person reading the listing would disagree about what a file is.
# ZWJ/ZWNJ (U+200C/U+200D) stay allowed: scripts such as Persian and Devanagari, and emoji, need them.
_INVISIBLE = frozenset(
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b\u200e\u200f"
    "\u202a\u202b\u202c\u202d\u202e\u2060\u2061\u2062\u2063\u2064"
    "\u2066\u2067\u2068\u2069\u206a\u206b\u206c\u206d\u206e\u206f\ufeff"
)

# Separators and dots that NFKC leaves alone but that some tools, fonts or "best fit" code pages turn into
# '/', '\\' or '.'. A segment made of them is treated as the traversal it imitates.
_LOOKALIKES = str.maketrans(
    {
        "\u2215": "/",  # DIVISION SLASH
        "\u2044": "/",  # FRACTION SLASH
        "\u29f8": "/",  # BIG SOLIDUS
        "\u2571": "/",  # BOX DRAWINGS LIGHT DIAGONAL
        "\u2216": "\\",  # SET MINUS
        "\u29f5": "\\",  # REVERSE SOLIDUS OPERATOR
        "\u29f9": "\\",  # BIG REVERSE SOLIDUS
        "\u3002": ".",  # IDEOGRAPHIC FULL STOP
        "\uff61": ".",  # HALFWIDTH IDEOGRAPHIC FULL STOP
    }
)

_PERCENT = re.compile(r"%(?:u([0-9a-fA-F]{4})|([0-9a-fA-F]{2}))")
_SAFE_ASCII = re.compile(r"[A-Za-z0-9_\-][A-Za-z0-9_\-. +=@,;!~#&()\[\]{}']*")


@dataclass(frozen=True, slots=True)
class MemoryPath:
    """A checked virtual path. ``parts`` are its segments below ``/memories`` (empty for the root).

    Build one with `parse` (or `MemoryPath.root()` / `child`); the constructor itself does not check.
    """

    parts: tuple[str, ...]
    # The path relative to the root, ``a/b.md`` (``""`` for the root): what backends store. Kept, not derived
    # on each use: listings of thousands of files ask for it several times per file.
    key: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", "/".join(self.parts))

    @classmethod
    def root(cls) -> MemoryPath:
        return _ROOT_PATH

    @property
    def is_root(self) -> bool:
        return not self.parts

    @property
    def virtual(self) -> str:
        """The normal form the model sees: ``/memories/a/b.md``."""
        return ROOT + "/" + self.key if self.parts else ROOT

    @property
    def name(self) -> str:
        return self.parts[-1] if self.parts else "memories"

    @property
    def parent(self) -> MemoryPath:
        return MemoryPath(self.parts[:-1])

    def ancestors(self) -> list[MemoryPath]:
        """Proper ancestors below the root, nearest last: ``a/b/c`` gives ``a``, ``a/b``."""
        return [MemoryPath(self.parts[:i]) for i in range(1, len(self.parts))]

    def child(self, name: str) -> MemoryPath:
        """A checked child path."""
        return parse(self.virtual + "/" + name)

    def is_within(self, other: MemoryPath) -> bool:
        """True when ``self`` is ``other`` or lies below it (structural, never a string prefix)."""
        return self.parts[: len(other.parts)] == other.parts

    def relative_to(self, other: MemoryPath) -> tuple[str, ...]:
        if not self.is_within(other):
            raise ValueError(f"{self.virtual} is not within {other.virtual}")
        return self.parts[len(other.parts) :]

    def rebase(self, old: MemoryPath, new: MemoryPath) -> MemoryPath:
        """The path this becomes when ``old`` (self or an ancestor) is renamed to ``new``."""
        return MemoryPath(new.parts + self.relative_to(old))

    def __str__(self) -> str:
        return self.virtual


_ROOT_PATH = MemoryPath(())


# Cached: one command parses its path several times on its way through the layers (the tool, the audit record,
# auto memory, the store), and the paths an agent uses are few. A `MemoryPath` is immutable, so sharing one is
# safe; a refused path raises each time (exceptions are not cached).
@lru_cache(maxsize=1024)
def parse(raw: str) -> MemoryPath:
    """Check a virtual path sent by the model and return its normal form.

    Raises `PathError` with SPEC.md's wording; nothing is touched on the way.
    """
    if len(raw) > _MAX_RAW_CHARS:
        raise PathError(raw, "not_allowed", f"the path is over the limit of {MAX_PATH_BYTES:,} bytes")
    _check_characters(raw)
    if "\\" in raw:
        # A backslash is a separator on Windows and in some path libraries; one next to `..` is traversal.
        if any(seg == ".." for seg in re.split(r"[/\\]", raw)):
            raise PathError(raw, "escape")
        raise PathError(raw, "not_allowed", "it contains a backslash")
    segments = re.sub("/+", "/", raw).split("/")
    # Structural root check: the first segment must be exactly "memories". A string prefix check would let
    # "/memoriesX/a.md" through (the SDK helper's bug).
    if len(segments) < 2 or segments[0] != "" or segments[1] != "memories":
        raise PathError(raw, "outside")
    parts = tuple(unicodedata.normalize("NFC", s) for s in segments[2:] if s != "")
    for segment in parts:
        _check_segment(raw, segment)
    path = MemoryPath(parts)
    size = len(path.virtual.encode("utf-8"))
    if size > MAX_PATH_BYTES:
        raise PathError(raw, "not_allowed", f"the path is {size:,} bytes, over the limit of {MAX_PATH_BYTES:,}")
    return path


def is_valid_segment(name: str) -> bool:
    """Whether a name found in storage (a file on disk, say) is one the model could address."""
    if _SAFE_ASCII.fullmatch(name) and len(name) <= MAX_SEGMENT_BYTES:
        return True
    try:
        parse(ROOT + "/" + name)
    except PathError:
        return False
    return unicodedata.normalize("NFC", name) == name


def _check_characters(raw: str) -> None:
    for ch in raw:
        code = ord(ch)
        if code < 0x20 or 0x7F <= code < 0xA0:
            what = "a NUL byte" if code == 0 else f"a control character (U+{code:04X})"
            raise PathError(raw, "not_allowed", f"it contains {what}")
        if 0xD800 <= code < 0xE000:
            raise PathError(raw, "not_allowed", "it is not valid UTF-8 (it contains an unpaired surrogate)")
        if ch in _INVISIBLE:
            raise PathError(raw, "not_allowed", f"it contains an invisible formatting character (U+{code:04X})")
        if ch in "\u2028\u2029":
            # LINE/PARAGRAPH SEPARATOR are not control characters, but str.splitlines() and many renderers
            # break lines on them: a name holding one could forge extra lines in a `view` listing.
            raise PathError(raw, "not_allowed", f"it contains a line separator (U+{code:04X})")


def _check_segment(raw: str, segment: str) -> None:
    if segment == "..":
        raise PathError(raw, "escape")
    if segment == ".":
        raise PathError(raw, "not_allowed", "'.' segments are not allowed")
    size = len(segment.encode("utf-8"))
    if size > MAX_SEGMENT_BYTES:
        raise PathError(raw, "not_allowed", f"a segment is {size:,} bytes, over the limit of {MAX_SEGMENT_BYTES} bytes")
    if not _SAFE_ASCII.fullmatch(segment):  # the fast path: plain ASCII with no '%' cannot decode or fold
        # Traversal is looked for before the hidden-name rule: `..%2f`, `..%c0%af` and `.. ` start with a dot
        # too, but they are escapes and must be reported as escapes.
        folded = _fold(segment)
        pieces = re.split(r"[/\\]", folded)
        if any(p.rstrip(" ") == ".." for p in pieces):
            raise PathError(raw, "escape")
        if len(pieces) > 1:
            raise PathError(raw, "not_allowed", "it contains an encoded or look-alike path separator")
        if folded.rstrip(" ") == ".":
            raise PathError(raw, "not_allowed", "it contains an encoded or look-alike '.' segment")
    if segment.startswith("."):
        # Hidden names belong to the backend (the directory store keeps its metadata under one), so the
        # model may neither read nor create them.
        raise PathError(raw, "not_allowed", "names starting with '.' are hidden and reserved")


@lru_cache(maxsize=4096)
def _fold(segment: str) -> str:
    """What a segment could turn into in the hands of a decoder: percent-decoding repeated, overlong UTF-8
    read leniently, NFKC and separator look-alikes, until nothing changes."""
    current = segment
    for _ in range(8):
        folded = unicodedata.normalize("NFKC", _percent_decode(current)).translate(_LOOKALIKES)
        if folded == current:
            break
        current = folded
    return current


def _percent_decode(text: str) -> str:
    if "%" not in text:
        return text
    out = bytearray()
    pos = 0
    for match in _PERCENT.finditer(text):
        out += text[pos : match.start()].encode("utf-8", "surrogatepass")
        wide, byte = match.groups()
        out += chr(int(wide, 16)).encode("utf-8", "surrogatepass") if wide else bytes([int(byte, 16)])
        pos = match.end()
    out += text[pos:].encode("utf-8", "surrogatepass")
    return _lenient_utf8(bytes(out))


def _lenient_utf8(data: bytes) -> str:
    """Decode UTF-8 *without* refusing overlong forms: ``C0 AF`` becomes ``/`` here, as it did in the
    decoders the ``..%c0%af`` attack was written for. Anything else malformed becomes U+FFFD."""
    chars: list[str] = []
    i = 0
    while i < len(data):
        lead = data[i]
        length = 1 if lead < 0x80 else 8 - (lead ^ 0xFF).bit_length()
        if length < 2 or length > 6 or i + length > len(data):
            chars.append(chr(lead) if lead < 0x80 else "\ufffd")
            i += 1
            continue
        tail = data[i + 1 : i + length]
        if any(b & 0xC0 != 0x80 for b in tail):
            chars.append("\ufffd")
            i += 1
            continue
        code = lead & (0x7F >> length)
        for b in tail:
            code = (code << 6) | (b & 0x3F)
        chars.append(chr(code) if code <= 0x10FFFF and not 0xD800 <= code < 0xE000 else "\ufffd")
        i += length
    return "".join(chars)
