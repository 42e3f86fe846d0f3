"""uvicorn's HTTP/1.1 protocols, with two fixes memdir needs: Nagle off, and a bounded request head.

- **TCP_NODELAY on every connection.** asyncio turns Nagle's algorithm off only on sockets created with
  ``proto=IPPROTO_TCP``; the listening socket uvicorn binds for ``--workers N`` has ``proto=0``, so its connections
  keep Nagle on. A response goes out in two writes (head, body), and the second then waits for the client's delayed
  ACK: 40 ms per request on a keep-alive connection.
- **A bounded request head with httptools.** h11 refuses a head over 16 KiB by itself; httptools buffers whatever
  it is sent until the head ends. The httptools protocol here counts the bytes of the head as they arrive and
  answers ``431`` past `MAX_HEAD_BYTES` (the app's own, smaller bound answers the rest precisely).

- **Time limits for slow clients.** uvicorn waits for a request head and body as long as bytes keep coming (one
  header line a second holds a connection, and its worker's memory, forever) and for a new connection's first
  byte without end. Here the head must be complete `DEFAULT_HEADER_TIMEOUT` seconds after the connection opens or
  the request's first byte arrives, and the body `DEFAULT_BODY_TIMEOUT` seconds after the head; past either, the
  client gets ``408`` (``request_timeout``) and the connection is closed. A server's own limits
  (`ServerConfig.header_timeout` / ``body_timeout``) reach the protocol through the lifespan state
  (`DEADLINES_KEY`), so each server in a process keeps its own.

httptools parses several times faster than h11; memdir uses it when it is installed (it is a dependency), h11
otherwise. Both are named by import path, so worker processes, which import uvicorn's configuration anew, find them.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
from typing import TYPE_CHECKING, Any, Literal

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from ._headers import secure

if TYPE_CHECKING:
    import asyncio

__all__ = [
    "DEADLINES_KEY",
    "DEFAULT_BODY_TIMEOUT",
    "DEFAULT_HEADER_TIMEOUT",
    "MAX_HEAD_BYTES",
    "NoDelayH11Protocol",
    "http_protocol",
]

MAX_HEAD_BYTES = 64 * 1024
DEFAULT_HEADER_TIMEOUT = 10.0  # seconds for a request head: a person's client sends one in milliseconds
DEFAULT_BODY_TIMEOUT = 60.0  # seconds for a body: an 8 MiB upload at 1 MiB/s, with room to spare
DEADLINES_KEY = "memdir.deadlines"  # lifespan state: (header seconds, body seconds)

log = logging.getLogger("memdir.server")

Phase = Literal["head", "body"]


def refusal(status: str, code: str, message: str) -> bytes:
    """A whole response the protocol answers itself, before or instead of the app: JSON as every error is, with
    the security headers every response carries (`_headers.secure`), and the connection closed."""
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    lines = b"".join(name + b": " + value + b"\r\n" for name, value in secure(headers))
    return f"HTTP/1.1 {status}\r\n".encode() + lines + b"connection: close\r\n\r\n" + body


_TOO_LARGE = refusal(
    "431 Request Header Fields Too Large", "headers_too_large", f"the request head is over {MAX_HEAD_BYTES:,} bytes"
)
# uvicorn's own answer to what its parser cannot read (a bad Content-Length, an unknown method, a head it cannot
# parse) was plain text, without the security headers.
_UNREADABLE = refusal("400 Bad Request", "invalid_request", "the request is not valid HTTP/1.1")


def _timed_out(phase: Phase, seconds: float) -> bytes:
    what = "request head" if phase == "head" else "request body"
    return refusal("408 Request Timeout", "request_timeout", f"the {what} did not arrive within {seconds:g} s")


class _Deadlines:
    """The head and body time limits of one connection (mixed into both protocols).

    At most one timer runs: the head's from when the connection is ready for a request (opened, or a new request's
    first byte after a response), the body's from the end of the head until the end of the message."""

    transport: asyncio.Transport
    app_state: dict[str, Any]
    loop: asyncio.AbstractEventLoop
    _deadline: asyncio.TimerHandle | None = None
    _phase: Phase | None = None

    def _limits(self) -> tuple[float, float]:
        found = self.app_state.get(DEADLINES_KEY)
        return found if found is not None else (DEFAULT_HEADER_TIMEOUT, DEFAULT_BODY_TIMEOUT)

    def _arm(self, phase: Phase) -> None:
        if self._phase == phase:
            return  # keep the running deadline: trickling bytes must not push it back
        self._disarm()
        seconds = self._limits()[0 if phase == "head" else 1]
        self._phase = phase
        self._deadline = self.loop.call_later(seconds, self._expire, phase, seconds)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline, self._phase = None, None

    def _expire(self, phase: Phase, seconds: float) -> None:
        self._deadline, self._phase = None, None
        if self.transport.is_closing():
            return
        cycle = getattr(self, "cycle", None)
        if phase == "head" or cycle is None or not cycle.response_started:
            self.transport.write(_timed_out(phase, seconds))
        log.info("closed a slow connection", extra={"reason": f"{phase} not received within {seconds:g} s"})
        self.transport.close()


def _no_delay(transport: asyncio.BaseTransport) -> None:
    raw = transport.get_extra_info("socket")
    if raw is not None and raw.family in (socket.AF_INET, socket.AF_INET6):
        with contextlib.suppress(OSError):
            raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class NoDelayH11Protocol(_Deadlines, H11Protocol):
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        _no_delay(transport)
        super().connection_made(transport)
        self._arm("head")

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        # h11 reports where the client is in its message: still sending the head, the body, or done.
        state = self.conn.their_state
        if state is h11.IDLE:
            self._arm("head")
        elif state is h11.SEND_BODY:
            self._arm("body")
        else:
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:  # noqa: ARG002 - uvicorn's text is replaced
        self._disarm()
        self.transport.write(_UNREADABLE)
        self.transport.close()


try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:  # pragma: no cover - httptools is a dependency; uvicorn works without it
    HttpToolsProtocol = None  # type: ignore[assignment,misc]


if HttpToolsProtocol is not None:

    class BoundedHttpToolsProtocol(_Deadlines, HttpToolsProtocol):
        _in_head = True
        _head_bytes = 0
        _refused = False

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            _no_delay(transport)
            super().connection_made(transport)
            self._arm("head")

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def on_message_complete(self) -> None:
            self._disarm()
            super().on_message_complete()

        def data_received(self, data: bytes) -> None:
            if self._refused:
                return
            if self._in_head:
                self._head_bytes += len(data)
            super().data_received(data)
            # Checked after parsing: a chunk may end the head and carry the start of a large body. While the
            # head goes on, the parser holds at most the bound plus one chunk.
            if self._in_head and self._head_bytes > MAX_HEAD_BYTES:
                self._refuse()

        def on_message_begin(self) -> None:
            self._in_head, self._head_bytes = True, 0
            self._arm("head")
            super().on_message_begin()

        def on_headers_complete(self) -> None:
            self._in_head = False
            self._arm("body")
            super().on_headers_complete()

        def _refuse(self) -> None:
            self._refused = True
            self._disarm()
            self.transport.write(_TOO_LARGE)
            self.transport.close()

        def send_400_response(self, msg: str) -> None:  # noqa: ARG002 - uvicorn's text is replaced
            self._disarm()
            self.transport.write(_UNREADABLE)
            self.transport.close()


def http_protocol() -> str:
    """The protocol class uvicorn should use, by import path."""
    name = "BoundedHttpToolsProtocol" if HttpToolsProtocol is not None else "NoDelayH11Protocol"
    return f"{__name__}:{name}"
