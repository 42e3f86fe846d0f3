"""Paths: a memory store's ``/food.md`` is the namespace's ``/memories/food.md``.

One namespace, one history: the memory tool, MCP, the web page and the ``memdir`` commands see a memory store's
memories as the files below ``/memories``, and a file they write is a memory here.

A path sent to the API must pass the API's documented rules *and* memdir's, which are stricter in places:

- the API's: it starts with ``/``, has 1 to 20 segments, none empty (so no ``//`` and no trailing ``/``), none
  ``.`` or ``..``; no control character (Unicode Cc), no format character (Cf: bidi controls, zero-width
  characters, soft hyphen, BOM, and ZWJ/ZWNJ too), no U+2028/U+2029; in NFC exactly (a path in another form is
  refused, not normalised: the path answered must be the path sent); at most 1,024 bytes of UTF-8;
- memdir's (`memdir.paths`): no segment starting with ``.`` (hidden names belong to the backend), no backslash,
  no traversal hidden behind percent-encoding or look-alike characters (``%2e%2e``, fullwidth dots, U+2215), no
  segment over 255 bytes, and at most 1,024 bytes once under ``/memories`` (so 1,015 here).

Anything refused is ``400 invalid_request_error`` naming the rule; nothing is written. Files that other doors
made under names the API would refuse (more than 20 segments, a ZWJ) are still listed and reachable by id.
"""

from __future__ import annotations

import re
import unicodedata
from typing import NoReturn

from ..errors import PathError
from ..paths import MemoryPath, parse
from ._errors import InvalidRequestError

__all__ = ["MAX_PATH_BYTES", "MAX_SEGMENTS", "api_path", "memory_path", "prefix_path"]

MAX_SEGMENTS = 20
MAX_PATH_BYTES = 1024
_SEPARATORS = frozenset("\u2028\u2029")
_PLAIN = re.compile(r"[\x20-\x7e]*")
_SHOWN = 200  # characters of a refused path quoted back


def api_path(path: MemoryPath) -> str:
    """The API's path of a file: ``/memories/a/b.md`` is ``/a/b.md``."""
    return "/" + path.key


def memory_path(raw: object, field: str = "path") -> MemoryPath:
    """The file a path sent to the API names, checked by both sets of rules."""
    if not isinstance(raw, str):
        raise InvalidRequestError(f"{field}: must be a string")
    _check_api_rules(raw, field)
    return _memdir_rules(raw, field)


def prefix_path(raw: str) -> MemoryPath:
    """The directory a ``path_prefix`` names (``/notes/``; ``/`` is the whole store)."""
    if not raw.startswith("/") or not raw.endswith("/"):
        raise InvalidRequestError("path_prefix: must start and end with '/', as in /notes/")
    if raw == "/":
        return MemoryPath.root()
    return memory_path(raw[:-1], "path_prefix")


def _check_api_rules(raw: str, field: str) -> None:
    if not raw.startswith("/"):
        _refuse(raw, field, "it must start with '/'")
    if len(raw.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES:
        _refuse(raw, field, f"it is over {MAX_PATH_BYTES:,} bytes")
    segments = raw[1:].split("/")
    if len(segments) > MAX_SEGMENTS:
        _refuse(raw, field, f"it has {len(segments)} segments, over the limit of {MAX_SEGMENTS}")
    if any(not s for s in segments):
        _refuse(raw, field, "a segment is empty ('//', or a '/' at the end)")
    if any(s in (".", "..") for s in segments):
        _refuse(raw, field, "'.' and '..' segments are not allowed")
    if _PLAIN.fullmatch(raw):  # printable ASCII: no control, format or separator character, and NFC already
        return
    for ch in raw:
        category = unicodedata.category(ch)
        if category in ("Cc", "Cf", "Cs") or ch in _SEPARATORS:
            kind = {"Cc": "a control", "Cf": "a format", "Cs": "an unpaired surrogate"}.get(category, "a line")
            _refuse(raw, field, f"it contains {kind} character (U+{ord(ch):04X})")
    if not unicodedata.is_normalized("NFC", raw):
        _refuse(raw, field, "it is not in Unicode Normalization Form C (NFC)")


def _memdir_rules(raw: str, field: str) -> MemoryPath:
    try:
        return parse("/memories" + raw)
    except PathError as exc:
        why = "it would escape the store" if exc.kind == "escape" else exc.why
        _refuse(raw, field, why)


def _refuse(raw: str, field: str, why: str) -> NoReturn:
    shown = raw.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    if len(shown) > _SHOWN:
        shown = shown[:_SHOWN] + "…"
    raise InvalidRequestError(f"{field}: {shown!r} is not a valid memory path: {why}")
