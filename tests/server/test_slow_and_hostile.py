"""What a hostile or slow client cannot do on the wire: a deeply nested JSON body is a 400 (never a 500 with a
RecursionError), and a request head or body that trickles in, or never comes, is answered 408 and disconnected
when its time is up. Real sockets against a real server, on both HTTP parsers."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from backends import LiveServer
from memdir.server import ServerConfig

from .helpers import error_of, read_response

PROTOCOLS = [f"memdir.server._protocols:{name}" for name in ("NoDelayH11Protocol", "BoundedHttpToolsProtocol")]
HEAD_SECONDS, BODY_SECONDS = 0.6, 0.8


@pytest.fixture(params=PROTOCOLS, ids=["h11", "httptools"])
def slow_server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LiveServer]:
    config = ServerConfig(
        store_url=f"sqlite://{tmp_path / 'm.db'}", rate=0, header_timeout=HEAD_SECONDS, body_timeout=BODY_SECONDS
    )
    with LiveServer(config, http=request.param) as live:
        yield live


def connect(server: LiveServer) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    return sock


def closed_within(sock: socket.socket, seconds: float) -> bytes:
    """Everything the server sends until it closes the connection, which must happen within ``seconds``."""
    sock.settimeout(seconds)
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk


def test_a_head_sent_one_line_at_a_time_is_cut_off(slow_server: LiveServer) -> None:
    token = slow_server.token("alice")
    lines = [b"GET /v1/whoami HTTP/1.1\r\n", b"Host: x\r\n", f"Authorization: Bearer {token}\r\n".encode()]
    lines += [f"X-Slow-{n}: {n}\r\n".encode() for n in range(100)]
    with connect(slow_server) as sock:
        started = time.monotonic()
        with pytest.raises(OSError):  # the server closes while lines are still coming
            for line in lines:
                sock.sendall(line)
                time.sleep(0.05)  # the slow client of this test: the server must not wait for it
        answer = closed_within(sock, 10)
        assert time.monotonic() - started < HEAD_SECONDS + 5
    assert answer.startswith(b"HTTP/1.1 408 ")
    assert b'"code": "request_timeout"' in answer and b"request head did not arrive within 0.6 s" in answer


def test_a_connection_that_sends_nothing_is_closed(slow_server: LiveServer) -> None:
    with connect(slow_server) as sock:
        answer = closed_within(sock, HEAD_SECONDS + 5)
    assert answer.startswith(b"HTTP/1.1 408 ")


def test_a_body_that_never_arrives_is_cut_off(slow_server: LiveServer) -> None:
    token = slow_server.token("alice")
    head = (
        f"POST /v1/tool HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\n"
        "Content-Length: 1000\r\n\r\n"
    )
    with connect(slow_server) as sock:
        sock.sendall(head.encode() + b'{"command": "vi')  # and then nothing
        started = time.monotonic()
        answer = closed_within(sock, BODY_SECONDS + 5)
        assert time.monotonic() - started >= BODY_SECONDS - 0.1
    assert answer.startswith(b"HTTP/1.1 408 ")
    assert b"request body did not arrive within 0.8 s" in answer


def test_prompt_clients_and_idle_keep_alive_are_unaffected(slow_server: LiveServer) -> None:
    headers = {"Authorization": f"Bearer {slow_server.token('alice')}"}
    with httpx.Client(base_url=slow_server.url, headers=headers) as http:
        for _ in range(3):
            assert http.post("/v1/tool", json={"command": "view", "path": "/memories"}).status_code == 200
    token = slow_server.token("bob")
    request = f"GET /v1/whoami HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n".encode()
    with connect(slow_server) as sock:
        for _ in range(2):  # a keep-alive connection, with pauses between requests shorter than uvicorn's 5 s
            sock.sendall(request)
            assert read_response(sock).status == 200
            time.sleep(HEAD_SECONDS + 0.2)  # idle between requests is not a slow head


@pytest.mark.parametrize("body", ["[" * 500_000, "[" * 65 + "]" * 65, '{"a":' * 100 + "1" + "}" * 100])
def test_deeply_nested_json_is_a_400(tmp_path: Path, body: str, caplog: pytest.LogCaptureFixture) -> None:
    config = ServerConfig(store_url=f"sqlite://{tmp_path / 'm.db'}", rate=0)
    with LiveServer(config) as server:
        headers = {"Authorization": f"Bearer {server.token('alice')}", "Content-Type": "application/json"}
        with httpx.Client(base_url=server.url, headers=headers) as http:
            refused = http.post("/v1/tool", content=body.encode())
            assert error_of(refused) == (400, "invalid_request")
            assert "nested more than 64 levels deep" in refused.json()["error"]["message"]
            assert http.post("/v1/tool", json={"command": "view", "path": "/memories"}).status_code == 200
    assert "RecursionError" not in caplog.text and "Traceback" not in caplog.text


def test_json_nested_a_little_is_fine(tmp_path: Path) -> None:
    config = ServerConfig(store_url=f"sqlite://{tmp_path / 'm.db'}", rate=0)
    with LiveServer(config) as server:
        headers = {"Authorization": f"Bearer {server.token('alice')}"}
        with httpx.Client(base_url=server.url, headers=headers) as http:
            command = {"command": "view", "path": "/memories", "extra": [[[[{"a": [1, 2, {"b": [3]}]}]]]]}
            assert http.post("/v1/tool", json=command).json()["is_error"] is False


def test_a_client_hanging_up_mid_body_is_logged_as_such_not_as_an_error(
    server: LiveServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Logged as an unexpected error with its traceback, a client hanging up 95 times a second rotated memdir.log
    (and all it held) away within a minute."""
    caplog.set_level(logging.INFO, logger="memdir.server")
    head = (
        "PUT /v1/files/memories/a.md HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {server.token('alice')}\r\nContent-Length: 5200\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", server.port)) as conn:
        conn.sendall(head.encode() + b"x" * 100)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not [r for r in caplog.records if r.name == "memdir.server"]:
        time.sleep(0.01)
    logged = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "memdir.server"]
    assert logged == [("INFO", "the client closed the connection before its request body arrived")]
