"""uvicorn's HTTP/1.1 protocols, with two fixes memdir needs: Nagle off, and a bounded request head.

- **TCP_NODELAY on every connection.** asyncio turns Nagle's algorithm off only on sockets created with
  ``proto=IPPROTO_TCP``; the listening socket uvicorn binds for ``--workers N`` has ``proto=0``, so its connections
  keep Nagle on. A response goes out in two writes (head, body), and the second then waits for the client's delayed
  ACK: 40 ms per request on a keep-alive connection.
- **A bounded request head with httptools.** h11 refuses a head over 16 KiB by itself; httptools buffers whatever
  it is sent until the head ends. The httptools protocol here counts the bytes of the head as they arrive and
  answers ``431`` past `MAX_HEAD_BYTES` (the app's own, smaller bound answers the rest precisely).

httptools parses several times faster than h11; memdir uses it when it is installed (it is a dependency), h11
otherwise. Both are named by import path, so worker processes, which import uvicorn's configuration anew, find them.
"""

from __future__ import annotations

import contextlib
import json
import socket
from typing import TYPE_CHECKING

from uvicorn.protocols.http.h11_impl import H11Protocol

if TYPE_CHECKING:
    import asyncio

__all__ = ["MAX_HEAD_BYTES", "NoDelayH11Protocol", "http_protocol"]

MAX_HEAD_BYTES = 64 * 1024

_TOO_LARGE = json.dumps(
    {"error": {"code": "headers_too_large", "message": f"the request head is over {MAX_HEAD_BYTES:,} bytes"}}
).encode()


def _no_delay(transport: asyncio.BaseTransport) -> None:
    raw = transport.get_extra_info("socket")
    if raw is not None and raw.family in (socket.AF_INET, socket.AF_INET6):
        with contextlib.suppress(OSError):
            raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class NoDelayH11Protocol(H11Protocol):
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        _no_delay(transport)
        super().connection_made(transport)


try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:  # pragma: no cover - httptools is a dependency; uvicorn works without it
    HttpToolsProtocol = None  # type: ignore[assignment,misc]


if HttpToolsProtocol is not None:

    class BoundedHttpToolsProtocol(HttpToolsProtocol):
        _in_head = True
        _head_bytes = 0
        _refused = False

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            _no_delay(transport)
            super().connection_made(transport)

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
            super().on_message_begin()

        def on_headers_complete(self) -> None:
            self._in_head = False
            super().on_headers_complete()

        def _refuse(self) -> None:
            head = (
                "HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: application/json\r\n"
                f"content-length: {len(_TOO_LARGE)}\r\nconnection: close\r\n\r\n"
            ).encode()
            self._refused = True
            self.transport.write(head + _TOO_LARGE)
            self.transport.close()


def http_protocol() -> str:
    """The protocol class uvicorn should use, by import path."""
    name = "BoundedHttpToolsProtocol" if HttpToolsProtocol is not None else "NoDelayH11Protocol"
    return f"{__name__}:{name}"
