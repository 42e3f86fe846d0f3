"""The outermost layer of the app (plain ASGI, so it costs almost nothing): bounds, the access log, last resort.

- The URL (path and query as sent) and the headers are bounded before any routing or parsing (414 / 431).
- One access-log line per request, written when the response has been sent.
- An exception that escaped everything else becomes a JSON ``internal_error``, never a traceback on the wire.
- Every response carries the security headers (`memdir.server._headers`).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from ._errors import ApiError, error_response, exception_response
from ._headers import secure
from ._logs import ACCESS

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["Guard", "request_info"]

INFO_KEY = "memdir.request"


def request_info(scope: Scope) -> dict[str, Any]:
    """What handlers tell the access log about a request (route template, namespace, token id)."""
    info: dict[str, Any] = scope.setdefault(INFO_KEY, {})
    return info


class Guard:
    def __init__(self, app: ASGIApp, *, max_url_bytes: int, max_header_bytes: int) -> None:
        self.app = app
        self.max_url_bytes = max_url_bytes
        self.max_header_bytes = max_header_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = [0]

        async def send_logged(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
                message = {**message, "headers": secure(list(message.get("headers", ())))}
            await send(message)

        try:
            refusal = self._refusal(scope)
            if refusal is not None:
                await error_response(refusal)(scope, receive, send_logged)
            else:
                await self.app(scope, receive, send_logged)
        except Exception as exc:
            if status[0]:  # the response had started: nothing sensible can follow it
                logging.getLogger("memdir.server").error("error after the response started", exc_info=exc)
            else:
                await exception_response(exc)(scope, receive, send_logged)
        finally:
            self._log(scope, status[0], time.perf_counter() - started)

    def _refusal(self, scope: Scope) -> ApiError | None:
        raw_path: bytes = scope.get("raw_path") or scope["path"].encode("utf-8", "surrogateescape")
        if len(raw_path) + len(scope.get("query_string", b"")) > self.max_url_bytes:
            return ApiError("uri_too_long", f"the URL is over {self.max_url_bytes:,} bytes")
        if sum(len(k) + len(v) for k, v in scope["headers"]) > self.max_header_bytes:
            return ApiError("headers_too_large", f"the request headers are over {self.max_header_bytes:,} bytes")
        return None

    @staticmethod
    def _log(scope: Scope, status: int, seconds: float) -> None:
        info = scope.get(INFO_KEY, {})
        ACCESS.info(
            "request",
            extra={
                "method": scope["method"],
                "route": info.get("route", "-"),
                "status": status,
                "duration_ms": round(seconds * 1000, 3),
                "namespace": info.get("namespace"),
                "token_id": info.get("token_id"),
            },
        )
