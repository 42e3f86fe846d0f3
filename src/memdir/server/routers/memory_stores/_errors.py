"""Errors as Anthropic's API words them, so the official SDK raises what it raises against api.anthropic.com.

``{"type": "error", "error": {"type": "not_found_error", "message": "..."}, "request_id": "req_..."}`` with the
status the SDK maps to its exception classes (``anthropic.NotFoundError`` for 404, ``ConflictError`` for 409...),
a ``request-id`` header (the SDK's ``exc.request_id``) and ``x-should-retry: false`` on a refusal that would be
refused again: the SDK otherwise retries every 409, and a stale precondition stays stale.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...._wire import RETRY_UNAVAILABLE_SECONDS, code_for
from ....errors import LimitError, MemdirError, PolicyError, StorageUnavailableError
from ....memstores import InvalidRequestError, PathConflictError, PreconditionFailedError, StateConflictError
from ..._errors import ApiError, json_response
from ..._schemas import ref

if TYPE_CHECKING:
    from starlette.responses import Response

__all__ = ["ANTHROPIC", "AnthropicErrors"]

log = logging.getLogger("memdir.server")


@dataclass(frozen=True, slots=True)
class _Kind:
    status: int
    type: str


_INVALID = _Kind(400, "invalid_request_error")
_PATH_CONFLICT = _Kind(409, "memory_path_conflict_error")
_INTERNAL = _Kind(500, "api_error")

# memdir's error codes (`memdir._wire.ERRORS`) as Anthropic's status and type.
_BY_CODE: dict[str, _Kind] = {
    "invalid_request": _INVALID,
    "path_error": _INVALID,
    "unauthorized": _Kind(401, "authentication_error"),
    "not_found": _Kind(404, "not_found_error"),
    "route_not_found": _Kind(404, "not_found_error"),
    "redacted": _Kind(404, "not_found_error"),
    "method_not_allowed": _Kind(405, "invalid_request_error"),
    "already_exists": _PATH_CONFLICT,
    "not_a_file": _PATH_CONFLICT,
    "not_a_directory": _PATH_CONFLICT,
    "history_unavailable": _INVALID,
    "conflict": _Kind(409, "conflict_error"),
    "payload_too_large": _Kind(413, "request_too_large"),
    "uri_too_long": _Kind(414, "invalid_request_error"),
    "unsupported_media_type": _Kind(415, "invalid_request_error"),
    "limit_exceeded": _INVALID,
    "encoding_error": _INVALID,
    "archive_error": _INVALID,
    "refused": _INVALID,
    "idempotency_key_reused": _INVALID,
    "rate_limited": _Kind(429, "rate_limit_error"),
    "headers_too_large": _Kind(431, "invalid_request_error"),
    "internal_error": _INTERNAL,
    "corrupt_store": _INTERNAL,
    "storage_error": _INTERNAL,
    "insufficient_storage": _Kind(507, "api_error"),
    "unavailable": _Kind(503, "api_error"),
}
# This API's own refusals, by the Anthropic type they are answered with.
_BY_TYPE: dict[str, _Kind] = {
    kind.type: kind
    for kind in (
        _INVALID,
        _PATH_CONFLICT,
        _Kind(409, "memory_precondition_failed_error"),
        _Kind(409, "conflict_error"),
        _Kind(404, "not_found_error"),
    )
}
_RETRIED = frozenset({408, 429, 500, 503, 507, 529})  # worth sending again (the SDK waits Retry-After)


class AnthropicErrors:
    """The `memdir.server._endpoint.ErrorStyle` of the Memory Stores API."""

    def response(self, exc: BaseException) -> Response:
        kind, message, extra, headers = self._describe(exc)
        return error_response(kind, message, extra, headers)

    def answered(self, response: Response) -> Response:
        response.headers.setdefault("request-id", new_request_id())
        return response

    def openapi(self, codes: tuple[str, ...]) -> dict[str, Any]:
        by_status: dict[int, set[str]] = {}
        for code in codes:
            kind = _BY_CODE.get(code) or _BY_TYPE.get(code)
            if kind is not None:
                by_status.setdefault(kind.status, set()).add(kind.type)
        return {
            str(status): {
                "description": "Error (Anthropic's shape): " + ", ".join(f"`{t}`" for t in sorted(types)),
                "content": {"application/json": {"schema": ref("AnthropicError")}},
            }
            for status, types in sorted(by_status.items())
        }

    def _describe(self, exc: BaseException) -> tuple[_Kind, str, dict[str, Any], dict[str, str]]:
        if isinstance(exc, ApiError):
            return _BY_CODE.get(exc.code, _INTERNAL), exc.message, {}, dict(exc.headers)
        if isinstance(exc, PathConflictError):
            fields = {"conflicting_path": exc.conflicting_path, "conflicting_memory_id": exc.conflicting_memory_id}
            return _PATH_CONFLICT, str(exc), fields, {}
        if isinstance(exc, PreconditionFailedError):
            return _BY_TYPE["memory_precondition_failed_error"], str(exc), {}, {}
        if isinstance(exc, StateConflictError):
            return _BY_TYPE["conflict_error"], str(exc), {}, {}
        if isinstance(exc, InvalidRequestError | PolicyError | LimitError):
            return _INVALID, str(exc), {}, {}
        if isinstance(exc, StorageUnavailableError):
            log.warning("storage unavailable: %s", exc)
            return _BY_CODE["unavailable"], str(exc), {}, {"Retry-After": str(RETRY_UNAVAILABLE_SECONDS)}
        if isinstance(exc, MemdirError):
            # Messages of MemdirError are safe to show by contract (no host paths, no secrets).
            return _BY_CODE.get(code_for(exc), _INVALID), exc.reason, {}, {}
        log.error("unexpected error while serving a request", exc_info=exc)
        return _INTERNAL, "internal error; the details are in the server log", {}, {}


def error_response(kind: _Kind, message: str, extra: dict[str, Any], headers: dict[str, str]) -> Response:
    request_id = new_request_id()
    body = {"type": "error", "error": {"type": kind.type, "message": message, **extra}, "request_id": request_id}
    sent = {"request-id": request_id, **headers}
    if kind.status not in _RETRIED:
        sent["x-should-retry"] = "false"
    if kind.status == 401:
        sent.setdefault("WWW-Authenticate", 'Bearer realm="memdir"')
    return json_response(body, kind.status, sent)


def new_request_id() -> str:
    """An answer's ``request-id`` (the SDK's ``_request_id`` on a result, ``exc.request_id`` on an error)."""
    return "req_" + secrets.token_hex(12)


ANTHROPIC = AnthropicErrors()
