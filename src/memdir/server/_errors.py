"""Errors as JSON responses: ``{"error": {"code": ..., "message": ...}}``, never a traceback or a host path.

Handlers raise `ApiError` for what is wrong with the request, or let a `MemdirError` through; `error_response`
turns either into the response with the code's status (`memdir._wire.ERRORS`). Anything else is a bug:
logged with its traceback, answered as ``internal_error`` with no detail.

A database that cannot be reached (`StorageUnavailableError`: restarting, failed over, out of connections) is not
a bug but weather: ``503 unavailable`` with ``Retry-After``, logged as one warning line without a traceback.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from starlette.responses import Response

from .._wire import ERRORS, RETRY_UNAVAILABLE_SECONDS, code_for
from ..errors import BlockedError, ConflictError, HeldError, MemdirError, PathError, StorageUnavailableError

__all__ = ["ApiError", "error_response", "exception_response", "json_response", "unavailable"]

log = logging.getLogger("memdir.server")


class ApiError(Exception):
    """A request refused before or instead of reaching the store."""

    def __init__(self, code: str, message: str, *, headers: dict[str, str] | None = None, **extra: Any) -> None:
        super().__init__(message)
        if code not in ERRORS:
            raise ValueError(f"unknown error code {code!r}")  # the documented set is closed
        self.code = code
        self.message = message
        self.headers = headers or {}
        self.extra = extra


def json_response(data: object, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    try:
        body = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate a client sent and an answer quotes: JSON's own escape says it
        body = json.dumps(data, separators=(",", ":"), allow_nan=False).encode("ascii")
    return Response(body, status, headers=headers, media_type="application/json")


def error_response(error: ApiError) -> Response:
    body = {"error": {"code": error.code, "message": error.message, **error.extra}}
    headers = dict(error.headers)
    if error.code == "unauthorized":
        headers.setdefault("WWW-Authenticate", 'Bearer realm="memdir"')
    return json_response(body, ERRORS[error.code].status, headers)


def exception_response(exc: BaseException) -> Response:
    """The response for anything a handler raised."""
    if isinstance(exc, ApiError):
        return error_response(exc)
    if isinstance(exc, MemdirError):
        return error_response(_from_memdir(exc))
    log.error("unexpected error while serving a request", exc_info=exc)
    return error_response(ApiError("internal_error", "internal error; the details are in the server log"))


def _from_memdir(exc: MemdirError) -> ApiError:
    code = code_for(exc)
    # Messages of MemdirError are safe to show by contract (backends translate OSError without host paths).
    message = exc.reason
    if isinstance(exc, PathError):
        return ApiError(code, message, path=exc.shown, kind=exc.kind, why=exc.why)
    if isinstance(exc, ConflictError):
        return ApiError(code, message, current=exc.current)
    if isinstance(exc, HeldError):
        return ApiError(code, message, item=exc.item, reasons=exc.reasons, rules=list(exc.rules))
    if isinstance(exc, BlockedError):
        return ApiError(code, message, reasons=exc.reasons, rules=list(exc.rules))
    if isinstance(exc, StorageUnavailableError):
        return unavailable(message)
    return ApiError(code, message)


def unavailable(message: str) -> ApiError:
    """``503 unavailable``: the database is out of reach for now; the client should come back shortly."""
    log.warning("storage unavailable: %s", message)
    seconds = RETRY_UNAVAILABLE_SECONDS
    return ApiError("unavailable", message, headers={"Retry-After": str(seconds)}, retry_after=seconds)
