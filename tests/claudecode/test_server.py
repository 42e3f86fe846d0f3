"""``memdir serve --claude-code``: every memory directory its own namespace, each reached by its own token."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from backends import LiveServer
from memdir.claudecode import store_id
from memdir.server.routers.claude_code import prepare

from .helpers import TOKEN, Layout


@dataclass
class Served:
    live: LiveServer
    sign_in: str
    count: int

    def client(self, token: str) -> httpx.Client:
        return httpx.Client(base_url=self.live.url, headers={"Authorization": f"Bearer {token}"})


@pytest.fixture
def served(layout: Layout) -> Iterator[Served]:
    config, secret, count = prepare(rate=0)
    with LiveServer(config) as live:
        yield Served(live, secret, count)


def namespaces(served: Served) -> dict[str, dict[str, str]]:
    with served.client(served.sign_in) as http:
        response = http.post("/v1/claude-code/sign-in")
    assert response.status_code == 200, response.text
    return {d["label"]: d for d in response.json()["namespaces"]}


def test_sign_in_gives_each_directory_its_token(served: Served, layout: Layout) -> None:
    found = namespaces(served)
    assert served.count == len(found) == 7
    app = found[f"project {layout.app}"]
    assert app["namespace"] == store_id(layout.app_memory)
    assert app["directory"] == str(layout.app_memory)
    with served.client(app["token"]) as http:
        assert http.get("/v1/whoami").json()["namespace"] == app["namespace"]
        view = http.post("/v1/tool", json={"command": "view", "path": "/memories/feedback_testing.md"}).json()
        assert "Run pytest with -x." in view["text"]


def test_a_token_reaches_its_own_directory_only(served: Served, layout: Layout) -> None:
    found = namespaces(served)
    blog = found[f"project {layout.blog}"]
    with served.client(blog["token"]) as http:
        assert http.get("/v1/files/memories/style.md").status_code == 200
        assert http.get("/v1/files/memories/feedback_testing.md").status_code == 404  # the app's file


def test_the_sign_in_token_opens_no_memory(served: Served) -> None:
    with served.client(served.sign_in) as http:
        response = http.get("/v1/files/memories/MEMORY.md")
    assert response.status_code == 404
    assert response.json()["error"]["message"] == "this server has no namespace 'claude-code'"


def test_a_directory_token_opens_no_overview(served: Served, layout: Layout) -> None:
    token = namespaces(served)[f"project {layout.app}"]["token"]
    with served.client(token) as http:
        for response in (http.post("/v1/claude-code/sign-in"), http.get("/v1/claude-code/status")):
            assert response.status_code == 404
            assert response.json()["error"]["message"] == "this token does not open the Claude Code overview"


def test_the_overview_reports_the_findings(served: Served, layout: Layout) -> None:
    with served.client(served.sign_in) as http:
        report = http.get("/v1/claude-code/status").json()
    (app,) = [d for d in report["directories"] if d["label"] == f"project {layout.app}"]
    assert app["index"]["whole"] is False and app["index"]["loaded_lines"] == 200
    assert app["secrets"] == [{"path": "api_access.md", "line": 7, "what": "github-token"}]
    assert TOKEN not in str(report)


def test_edits_and_restores_through_the_server_are_versions(served: Served, layout: Layout) -> None:
    token = namespaces(served)[f"project {layout.app}"]["token"]
    with served.client(token) as http:
        done = http.put("/v1/files/memories/feedback_testing.md", content=b"Run pytest.\n")
        assert done.status_code == 200, done.text
        history = http.get("/v1/history/memories/feedback_testing.md").json()["versions"]
        assert [(v["op"], v["actor"]) for v in history] == [("create", "claude-code"), ("write", "user")]
        first = history[0]["version"]
        restored = http.post("/v1/restore/memories/feedback_testing.md", json={"version": first})
        assert restored.status_code == 200, restored.text
    assert (layout.app_memory / "feedback_testing.md").read_text().endswith("Run pytest with -x.\n")


def test_a_restart_signs_everyone_out(layout: Layout) -> None:
    config, first, _ = prepare(rate=0)
    with (
        LiveServer(config) as live,
        httpx.Client(base_url=live.url, headers={"Authorization": f"Bearer {first}"}) as http,
    ):
        old = http.post("/v1/claude-code/sign-in").json()["namespaces"][0]["token"]
    config, second, _ = prepare(rate=0)
    with LiveServer(config) as live:
        for token in (first, old):
            assert httpx.get(f"{live.url}/v1/whoami", headers={"Authorization": f"Bearer {token}"}).status_code == 401
        assert httpx.get(f"{live.url}/v1/whoami", headers={"Authorization": f"Bearer {second}"}).status_code == 200


def test_the_serve_command_prints_the_sign_in_token(layout: Layout, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    import memdir.server
    from memdir.cli import cli
    from memdir.server import ServerConfig

    started: list[tuple[ServerConfig, int]] = []

    def serve(config: ServerConfig, workers: int, sock: socket.socket) -> None:  # no server: the command's socket
        assert sock.getsockname()[1] == port
        started.append((config, workers))

    monkeypatch.setattr(memdir.server, "serve", serve)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = CliRunner().invoke(cli, ["serve", "--claude-code", "--port", str(port), "--rate", "0"])
    assert result.exit_code == 0, result.output
    ((config, workers),) = started
    assert workers == 1
    assert (config.claude_code, config.port, config.rate, len(config.namespaces)) == (True, port, 0.0, 7)
    assert config.namespaces[store_id(layout.app_memory)] == f"claude-code:dir:{layout.app_memory}"
    token = result.stdout.strip()
    assert token.startswith("mdt_")
    assert result.stderr.startswith(f"Serving 7 Claude Code memory directories on http://127.0.0.1:{port}/ ;")
