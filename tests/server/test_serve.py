"""``memdir serve`` as a real process: JSON logs, graceful shutdown, and tokens revoked across worker processes."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from memdir import open_store
from memdir.cli import cli
from memdir.server.tokens import TokenRegistry
from support.terminal import ctrl_c_on_a_terminal

from .helpers import read_response


@dataclass
class Served:
    process: subprocess.Popen[bytes]
    url: str
    port: int
    log: Path

    def records(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log.read_text(encoding="utf-8").splitlines() if line.strip()]

    def requests(self) -> list[dict[str, Any]]:
        return [r for r in self.records() if r["logger"] == "memdir.server.access"]

    def wait_for_log(self, message: str) -> None:
        for _ in range(3000):  # bounded: 30 s
            if any(r["message"] == message for r in self.records()):
                return
            time.sleep(0.01)
        raise AssertionError(f"the server never logged {message!r}")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite://{tmp_path / 'memory.db'}"


@pytest.fixture
def token(store_url: str) -> str:
    created = CliRunner().invoke(cli, ["--store", store_url, "token", "create", "-n", "alice"])
    return created.stdout.strip()


def start(store_url: str, tmp_path: Path, *args: str) -> Served:
    port = free_port()
    log = tmp_path / f"server-{port}.log"
    env = {**os.environ, "MEMDIR_HOME": str(tmp_path / "home")}
    command = [sys.executable, "-m", "memdir", "--store", store_url, "serve", "--port", str(port), *args]
    with log.open("ab") as stderr:
        process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=stderr)
    served = Served(process, f"http://127.0.0.1:{port}", port, log)
    for _ in range(3000):  # bounded: 30 s
        if process.poll() is not None:
            raise AssertionError(f"the server exited: {log.read_text()}")
        try:
            if httpx.get(f"{served.url}/healthz").status_code == 200:
                return served
        except httpx.TransportError:
            time.sleep(0.01)
    raise AssertionError("the server did not start")


@pytest.fixture
def served(store_url: str, token: str, tmp_path: Path) -> Iterator[Served]:
    # The token is made first: the server is then the only process using the database while it runs.
    running = start(store_url, tmp_path)
    yield running
    stop(running)


# After a graceful shutdown the process ends by the signal it caught, so the exit reads as that signal's (as
# service managers expect of a process stopped by SIGTERM), with one worker or several.
STOPPED = (-signal.SIGTERM,)


def stop(running: Served) -> int:
    if running.process.poll() is None:
        running.process.send_signal(signal.SIGTERM)
    return running.process.wait(60)


def test_logs_are_json_lines_one_per_request_without_the_token(served: Served, token: str) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=served.url, headers=headers) as http:
        http.post("/v1/tool", json={"command": "create", "path": "/memories/a.md", "file_text": "x"})
        http.get("/v1/files/memories/a.md", params={"version": "1"})
        http.get("/v1/nothing")
        httpx.get(f"{served.url}/v1/whoami", headers={"Authorization": "Bearer mdt_" + "y" * 43})
    assert stop(served) in STOPPED
    text = served.log.read_text(encoding="utf-8")
    assert token not in text and "mdt_yyyy" not in text and "Traceback" not in text
    lines = [r for r in served.requests() if r["route"] != "/healthz"]
    assert [(r["method"], r["route"], r["status"], r["namespace"]) for r in lines] == [
        ("POST", "/v1/tool", 200, "alice"),
        ("GET", "/v1/files/{path}", 200, "alice"),
        ("GET", "-", 404, None),  # no such route: nothing to authenticate for
        ("GET", "/v1/whoami", 401, None),
    ]
    assert all(isinstance(r["duration_ms"], float) and r["pid"] == served.process.pid for r in lines)
    assert lines[0]["token_id"] and "time" in lines[0] and lines[0]["level"] == "info"


def test_shutdown_lets_the_request_in_flight_finish_then_closes_the_stores(
    served: Served, token: str, store_url: str
) -> None:
    body = b"written during shutdown\n"
    with socket.create_connection(("127.0.0.1", served.port), timeout=30) as sock:
        sock.sendall(
            f"PUT /v1/files/memories/late.md HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
            f"Content-Length: {len(body)}\r\nExpect: 100-continue\r\n\r\n".encode()
        )
        # "100 Continue" comes when the handler starts reading the body: the request is in flight.
        assert sock.recv(1024).startswith(b"HTTP/1.1 100 Continue")
        served.process.send_signal(signal.SIGTERM)
        served.wait_for_log("Shutting down")
        with pytest.raises(OSError):  # no new connection is accepted any more
            socket.create_connection(("127.0.0.1", served.port), timeout=5).close()
        sock.sendall(body)
        response = read_response(sock)
    assert response.status == 200
    assert response.json()["path"] == "/memories/late.md"
    assert served.process.wait(60) in STOPPED
    messages = [r["message"] for r in served.records()]
    assert messages.index("Shutting down") < messages.index("memdir server stopped; stores closed")
    with open_store(store_url, namespace="alice") as store:
        assert store.read("/memories/late.md").content == body


def test_revocation_reaches_every_worker_process(store_url: str, token: str, tmp_path: Path) -> None:
    running = start(store_url, tmp_path, "--workers", "2")
    store = None
    try:
        headers = {"Authorization": f"Bearer {token}"}

        def ask(_: int) -> int:
            with httpx.Client(base_url=running.url, headers=headers) as fresh:  # a new connection each time
                return fresh.get("/v1/whoami").status_code

        def pids(status: int) -> set[int]:
            return {r["pid"] for r in running.requests() if r["route"] == "/v1/whoami" and r["status"] == status}

        with ThreadPoolExecutor(8) as pool:
            for _ in range(100):  # bounded: until both workers have answered
                assert set(pool.map(ask, range(16))) == {200}
                if len(pids(200)) == 2:
                    break
            assert len(pids(200)) == 2
            # Revoked from this process, through its own connection to the database (kept open until the
            # workers are gone, so this process never closes the database's last connection under them).
            store = open_store(store_url)
            registry = TokenRegistry(store.aux)
            registry.revoke(registry.list()[0].id)
            for _ in range(100):
                assert set(pool.map(ask, range(16))) == {401}  # not one request gets through, on any worker
                if len(pids(401)) == 2:
                    break
            assert pids(401) == pids(200)
    finally:
        assert stop(running) in STOPPED
        if store is not None:
            store.close()


def test_serve_refuses_a_store_it_cannot_serve(tmp_path: Path) -> None:
    runner = CliRunner()
    memory = runner.invoke(cli, ["--store", "memory:", "serve"])
    assert memory.exit_code == 1 and "memory: store lives in one process" in memory.stderr
    bogus = runner.invoke(cli, ["--store", "bogus:x", "serve"])
    assert bogus.exit_code == 1 and "unknown store URL scheme 'bogus'" in bogus.stderr


@pytest.mark.parametrize("workers", ["1", "2"])
def test_ctrl_c_ends_it_with_the_signals_status(store_url: str, token: str, tmp_path: Path, workers: str) -> None:
    running = start(store_url, tmp_path, "--workers", workers)
    running.process.send_signal(signal.SIGINT)
    assert running.process.wait(60) == -signal.SIGINT  # a shell shows 130, as docs/http.md says
    assert "memdir server stopped; stores closed" in [r["message"] for r in running.records()]


def test_request_records_go_to_stderr_and_never_into_the_log_file(served: Served, token: str, tmp_path: Path) -> None:
    with httpx.Client(base_url=served.url, headers={"Authorization": f"Bearer {token}"}) as http:
        for _ in range(5):
            http.get("/v1/whoami")
    assert stop(served) in STOPPED
    assert len([r for r in served.requests() if r["route"] == "/v1/whoami"]) == 5
    assert not (tmp_path / "home" / "memdir.log").exists()  # it is for problems, and there were none


def test_a_port_in_use_is_one_clear_line(store_url: str, token: str, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {**os.environ, "MEMDIR_HOME": str(tmp_path / "home")}
        command = [sys.executable, "-m", "memdir", "--store", store_url, "serve", "--port", str(port)]
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"Error: port {port} on 127.0.0.1 is already in use (another memdir serve?): stop it, or choose another "
        "port with --port\n"
    )


def on_a_terminal(store_url: str, tmp_path: Path) -> str:
    """What ``memdir serve`` tells a person at a terminal, up to the moment it is ready; then Ctrl-C."""
    env = {**os.environ, "MEMDIR_HOME": str(tmp_path / "home")}
    argv = [sys.executable, "-m", "memdir", "--store", store_url, "serve", "--port", str(free_port())]
    shown, status = ctrl_c_on_a_terminal(argv, env, until=b"memdir server ready")
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGINT
    return shown


def test_on_a_terminal_it_says_where_to_open_it_and_warns_when_nobody_can_sign_in(
    store_url: str, tmp_path: Path
) -> None:
    shown = on_a_terminal(store_url, tmp_path)
    assert shown.startswith(f"Created a new store at {store_url}.\nmemdir serve: open http://127.0.0.1:")
    assert "/ in a browser and sign in with a token (0 tokens in this store)." in shown
    assert f"  Make a token:  memdir --store {store_url} token create --namespace NAME\n" in shown
    assert "/mcp        Ctrl-C stops the server." in shown
    assert (
        f"Warning: this store has no tokens yet, so nobody can sign in. Make one: memdir --store {store_url} token "
        "create --namespace default"
    ) in shown


def test_on_a_terminal_with_tokens_there_is_no_warning(store_url: str, token: str, tmp_path: Path) -> None:
    shown = on_a_terminal(store_url, tmp_path)
    assert "(1 token in this store)." in shown and "Warning" not in shown and "Created" not in shown
