"""Helpers for the server tests (imported as ``server.helpers``: ``tests`` is on the path)."""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx

if TYPE_CHECKING:
    from backends import LiveServer


def tool(http: httpx.Client, **command: Any) -> dict[str, Any]:
    """Run a memory tool command; the HTTP exchange itself must succeed."""
    response = http.post("/v1/tool", json=command)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def error_of(response: httpx.Response) -> tuple[int, str]:
    """(status, error code) of an error response, checking the error shape on the way."""
    body = response.json()
    assert set(body) == {"error"}, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"], body
    assert response.headers["content-type"] == "application/json"
    return response.status_code, body["error"]["code"]


@dataclass
class RawResponse:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def read_response(sock: socket.socket) -> RawResponse:
    buffer = b""
    while b"\r\n\r\n" not in buffer:
        chunk = sock.recv(65536)
        if not chunk:
            break
        buffer += chunk
    head, _, body = buffer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return RawResponse(status, headers, body[:length])


def get(target: str, token: str, *, extra: str = "") -> str:
    """A GET request line and headers, as raw text, for `raw`."""
    return (
        f"GET {target} HTTP/1.1\r\nHost: {{host}}\r\nAuthorization: Bearer {token}\r\n{extra}Connection: close\r\n\r\n"
    )


Raw = Callable[..., RawResponse]


def raw_sender(server: LiveServer) -> Raw:
    """Send exactly these bytes on a new connection (``{host}`` is filled in) and read one response."""

    def send(request: bytes | str) -> RawResponse:
        data = request.encode("latin-1") if isinstance(request, str) else request
        data = data.replace(b"{host}", f"127.0.0.1:{server.port}".encode())
        with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
            # The server may refuse part way and close: its answer, if any, is still to be read.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                sock.sendall(data)
            try:
                return read_response(sock)
            except (ConnectionResetError, IndexError, ValueError):
                return RawResponse(0, {}, b"")  # closed without an answer

    return send
