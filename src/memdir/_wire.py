"""The HTTP API's wire format, shared by the server and `memdir.RemoteStore`: error codes, JSON shapes, headers.

Kept free of server imports (no Starlette): the client imports it too.

Every error response is ``{"error": {"code": CODE, "message": TEXT, ...}}`` with a code from `ERRORS`. A few codes
carry more fields: ``conflict`` the file's ``current`` version, ``path_error`` the ``path`` as sent with its
``kind`` and ``why`` (so a client can rebuild the exact `PathError` the model reads), ``rate_limited`` and
``unavailable`` their ``retry_after`` seconds (also sent as ``Retry-After``).

A change sent with an ``Idempotency-Key`` header (`HEADER_IDEMPOTENCY`) is made at most once: sent again with
the same key, it answers what the first attempt did (`memdir.server._idempotency`).
"""

from __future__ import annotations

import json
import math
import urllib.parse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import (
    AlreadyExistsError,
    ArchiveError,
    AuthenticationError,
    BlockedError,
    ConfigError,
    ConflictError,
    CorruptStoreError,
    EncodingError,
    HeldError,
    HistoryUnavailableError,
    LimitError,
    MemdirError,
    NotADirectoryError_,
    NotAFileError,
    NotFoundError,
    PathError,
    RateLimitError,
    RedactedError,
    StorageError,
    StorageFullError,
    StorageUnavailableError,
)
from .paths import parse
from .store._json import iso_time, parse_time, version_from_json, version_to_json
from .store._records import Entry, Stat, Usage

if TYPE_CHECKING:
    from .store._records import Version

__all__ = [
    "API_PREFIX",
    "ERRORS",
    "HEADER_ACTOR",
    "HEADER_IDEMPOTENCY",
    "HEADER_REPLAYED",
    "HEADER_SESSION",
    "HEADER_SOURCE",
    "MAX_JSON_DEPTH",
    "RETRY_UNAVAILABLE_SECONDS",
    "ErrorCode",
    "code_for",
    "decode_header",
    "encode_header",
    "entry_from_json",
    "entry_to_json",
    "error_from_body",
    "iso_time",
    "parse_json",
    "parse_time",
    "stat_from_json",
    "stat_to_json",
    "usage_to_json",
    "version_from_json",
    "version_to_json",
]

API_PREFIX = "/v1"
HEADER_ACTOR = "X-Memdir-Actor"
HEADER_SESSION = "X-Memdir-Session"
HEADER_SOURCE = "X-Memdir-Source"
HEADER_IDEMPOTENCY = "Idempotency-Key"
HEADER_REPLAYED = "Idempotent-Replayed"
RETRY_UNAVAILABLE_SECONDS = 1  # what an `unavailable` answer asks a client to wait: a database restart takes ~1 s
# Arrays and objects nested deeper than this are refused: no request needs more than a few levels, and code that
# walks a value recursively (the JSON encoder, for one) must never meet one that exhausts the stack.
MAX_JSON_DEPTH = 64


@dataclass(frozen=True, slots=True)
class ErrorCode:
    code: str
    status: int
    meaning: str


ERRORS: dict[str, ErrorCode] = {
    e.code: e
    for e in (
        ErrorCode(
            "invalid_request", 400, "The request is malformed: bad JSON, a missing or mistyped field or parameter."
        ),
        ErrorCode(
            "path_error", 400, "A memory path the rules refuse (outside /memories, traversal, hidden, too long)."
        ),
        ErrorCode("unauthorized", 401, "No bearer token, an unknown one, or a revoked one."),
        ErrorCode("not_found", 404, "No file, directory, version or content there."),
        ErrorCode("route_not_found", 404, "No such endpoint."),
        ErrorCode(
            "redacted", 410, "That content was redacted: the versions that had it keep their record, not its bytes."
        ),
        ErrorCode("method_not_allowed", 405, "The endpoint exists but not with this HTTP method."),
        ErrorCode("already_exists", 409, "The destination already holds a file or a directory."),
        ErrorCode("not_a_file", 409, "A file operation met a directory."),
        ErrorCode("not_a_directory", 409, "The path runs through a file, as if it were a directory."),
        ErrorCode("history_unavailable", 409, "The store keeps no version history."),
        ErrorCode("already_decided", 409, "The quarantined write was already approved or rejected."),
        ErrorCode(
            "no_longer_applies",
            409,
            "The quarantined write no longer applies to the file as it is now; it stays pending.",
        ),
        ErrorCode(
            "request_timeout", 408, "The request head or body did not arrive in time; the connection was closed."
        ),
        ErrorCode("conflict", 412, "The file is not at the expected version (someone else wrote first)."),
        ErrorCode("payload_too_large", 413, "The request body is over the server's bound for this endpoint."),
        ErrorCode("uri_too_long", 414, "The URL (path and query) is over the server's bound."),
        ErrorCode("unsupported_media_type", 415, "The body's Content-Type is not the one this endpoint takes."),
        ErrorCode("limit_exceeded", 422, "A size or count limit would be exceeded; nothing was written."),
        ErrorCode("encoding_error", 422, "Bytes that are not UTF-8 where text is required."),
        ErrorCode("archive_error", 422, "An archive that cannot be used, or an import that was refused."),
        ErrorCode(
            "policy_refused",
            422,
            "The write policy refused the write (a secret it blocks, a secret in a file name); nothing was written. "
            "`reasons` says why, `rules` which rules matched.",
        ),
        ErrorCode(
            "held_for_review",
            422,
            "The write policy held the write for a person to review (quarantine item `item`, `GET /v1/review`); "
            "it is not applied unless approved.",
        ),
        ErrorCode("refused", 422, "memdir refused the request for another reason; the message says why."),
        ErrorCode("idempotency_key_reused", 422, "The Idempotency-Key was already used for a different change."),
        ErrorCode("rate_limited", 429, "Too many requests with this token; wait Retry-After seconds."),
        ErrorCode("headers_too_large", 431, "The request headers are over the server's bound."),
        ErrorCode("internal_error", 500, "An unexpected error; the details are in the server log."),
        ErrorCode("corrupt_store", 500, "The store's files are damaged; `memdir doctor` can help."),
        ErrorCode("storage_error", 500, "The store could not complete the operation (disk full, read-only, locked)."),
        ErrorCode(
            "insufficient_storage",
            507,
            "The disk holding the store's database is full; nothing was written. Reads still work.",
        ),
        ErrorCode(
            "unavailable",
            503,
            "The store's database cannot be reached right now (restarting, overloaded). Retry after Retry-After "
            "seconds; retry a change with the same Idempotency-Key, which makes it at most once.",
        ),
    )
}

# Most specific class first: the first match names the code.
_CODES_BY_CLASS: tuple[tuple[type[MemdirError], str], ...] = (
    (CorruptStoreError, "corrupt_store"),
    (StorageUnavailableError, "unavailable"),
    (StorageFullError, "insufficient_storage"),
    (StorageError, "storage_error"),
    (PathError, "path_error"),
    (RedactedError, "redacted"),
    (NotFoundError, "not_found"),
    (AlreadyExistsError, "already_exists"),
    (NotAFileError, "not_a_file"),
    (NotADirectoryError_, "not_a_directory"),
    (ConflictError, "conflict"),
    (HeldError, "held_for_review"),
    (BlockedError, "policy_refused"),
    (RateLimitError, "rate_limited"),
    (LimitError, "limit_exceeded"),
    (EncodingError, "encoding_error"),
    (HistoryUnavailableError, "history_unavailable"),
    (ArchiveError, "archive_error"),
    (AuthenticationError, "unauthorized"),
    (ConfigError, "invalid_request"),
)


def code_for(exc: MemdirError) -> str:
    for cls, code in _CODES_BY_CLASS:
        if isinstance(exc, cls):
            return code
    return "refused"


_SIMPLE_ERRORS: dict[str, type[MemdirError]] = {
    "not_found": NotFoundError,
    "redacted": RedactedError,
    "already_exists": AlreadyExistsError,
    "not_a_file": NotAFileError,
    "not_a_directory": NotADirectoryError_,
    "limit_exceeded": LimitError,
    "payload_too_large": LimitError,
    "uri_too_long": LimitError,
    "encoding_error": EncodingError,
    "history_unavailable": HistoryUnavailableError,
    "archive_error": ArchiveError,
    "unauthorized": AuthenticationError,
    "corrupt_store": CorruptStoreError,
    "storage_error": StorageError,
    "refused": MemdirError,
}


def error_from_body(status: int, body: object) -> MemdirError:
    """The `MemdirError` an error response stands for (what the server raised, rebuilt on the client)."""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict) or not isinstance(error.get("code"), str):
        return StorageError(f"the server answered HTTP {status} without a memdir error")
    code, message = error["code"], str(error.get("message", ""))
    if code == "conflict":
        current = error.get("current")
        return ConflictError(message, current=current if isinstance(current, int) else None)
    if code == "path_error":
        return PathError(str(error.get("path", "")), str(error.get("kind", "not_allowed")), str(error.get("why", "")))
    if code == "rate_limited":
        return RateLimitError(message, retry_after=_seconds(error.get("retry_after")))
    if code in ("policy_refused", "held_for_review"):
        return _policy_error(code, message, error)
    if code == "unavailable":
        return StorageUnavailableError(message)
    if code == "insufficient_storage":
        return StorageFullError(message)
    simple = _SIMPLE_ERRORS.get(code)
    if simple is not None:
        return simple(message)
    return StorageError(f"the server refused the request ({code}): {message}")


def _policy_error(code: str, message: str, error: dict[str, Any]) -> MemdirError:
    reasons = str(error.get("reasons") or message)
    found = error.get("rules")
    rules = tuple(str(r) for r in found) if isinstance(found, list) else ()
    item = error.get("item")
    if code == "held_for_review" and isinstance(item, int):
        return HeldError(message, item=item, reasons=reasons, rules=rules)
    return BlockedError(message, reasons=reasons, rules=rules)


def _seconds(value: object) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value >= 0:
        return float(value)
    return 1.0


# -- JSON and times -------------------------------------------------------------------------------------------


def parse_json(data: bytes | str) -> Any:
    """A request body as the API reads it. `ValueError` (saying why) for anything that is not plain JSON: bad
    syntax, ``NaN``/``Infinity``, or nesting deeper than `MAX_JSON_DEPTH` (``[`` x 500,000 included, which the
    parser itself would meet with a `RecursionError`)."""
    try:
        value = json.loads(data, parse_constant=_no_constant)
    except RecursionError as exc:
        raise ValueError(f"it is nested more than {MAX_JSON_DEPTH} levels deep") from exc
    raw = data.encode() if isinstance(data, str) else data
    # Only a body with that many brackets can be that deep: the walk costs nothing for the usual small ones.
    if raw.count(b"[") + raw.count(b"{") > MAX_JSON_DEPTH and _depth(value) > MAX_JSON_DEPTH:
        raise ValueError(f"it is nested more than {MAX_JSON_DEPTH} levels deep")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _depth(value: Any) -> int:
    """How deeply arrays and objects nest in ``value``, found without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        deepest = max(deepest, level)
        if deepest > MAX_JSON_DEPTH:
            break
        stack.extend((child, level + 1) for child in children)
    return deepest


# -- records as JSON ------------------------------------------------------------------------------------------


def stat_to_json(stat: Stat) -> dict[str, Any]:
    return {
        "path": stat.path.virtual,
        "kind": stat.kind,
        "size": stat.size,
        "version": stat.version,
        "sha256": stat.sha256,
        "modified": None if stat.modified is None else iso_time(stat.modified),
    }


def stat_from_json(data: dict[str, Any]) -> Stat:
    kind = data["kind"]
    if kind not in ("file", "dir"):
        raise ValueError(f"unknown kind {kind!r}")
    modified = None if data["modified"] is None else parse_time(data["modified"])
    return Stat(parse(data["path"]), kind, int(data["size"]), data["version"], data["sha256"], modified)


def entry_to_json(entry: Entry) -> dict[str, Any]:
    return {
        "path": entry.path.virtual,
        "size": entry.size,
        "modified": iso_time(entry.modified),
        "version": entry.version,
        "sha256": entry.sha256,
    }


def entry_from_json(data: dict[str, Any]) -> Entry:
    modified = parse_time(data["modified"])
    return Entry(parse(data["path"]), int(data["size"]), modified, int(data["version"]), data["sha256"])


def usage_to_json(usage: Usage) -> dict[str, int]:
    return {"files": usage.files, "bytes": usage.bytes}


def versions_to_json(versions: list[Version]) -> dict[str, Any]:
    return {"versions": [version_to_json(v) for v in versions]}


# -- origin headers -------------------------------------------------------------------------------------------
# Header values are Latin-1 on the wire; an actor, session or source may be any Unicode text, so it travels
# percent-encoded UTF-8.


def encode_header(value: str) -> str:
    return urllib.parse.quote(value, safe="")


def decode_header(value: str) -> str:
    return urllib.parse.unquote(value, errors="strict")
