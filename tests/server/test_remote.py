"""`RemoteStore` beyond the contract suite (which runs on it too: the ``remote`` backend in tests/backends.py):
where its token comes from, how failures come back, retries, and the places a store is used (CLI, SDK adapter).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

import memdir.anthropic
from backends import LiveServer
from memdir import (
    AuthenticationError,
    ConfigError,
    MemoryTool,
    NotFoundError,
    PathError,
    RemoteStore,
    StorageError,
    open_store,
)
from memdir.cli import cli
from memdir.server.tokens import TokenRegistry


def test_the_token_comes_from_the_argument_the_url_or_the_environment(
    server: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice, bob, carol = server.token("alice"), server.token("bob"), server.token("carol")
    host = f"127.0.0.1:{server.port}"
    monkeypatch.setenv("MEMDIR_TOKEN", carol)
    with open_store(f"http://{bob}@{host}", token=alice) as store:
        assert store.namespace == "alice"
    with open_store(f"http://{bob}@{host}/") as store:
        assert store.namespace == "bob"
        assert bob not in repr(store) and repr(store) == f"RemoteStore('http://{host}', namespace='bob')"
    with open_store(f"http://{host}", namespace="ignored") as store:  # the token decides the namespace
        assert store.namespace == "carol"
    monkeypatch.delenv("MEMDIR_TOKEN")
    with pytest.raises(ConfigError, match="needs a token"):
        open_store(f"http://{host}")


def test_a_refused_token_fails_when_the_store_is_opened(server: LiveServer) -> None:
    with pytest.raises(AuthenticationError, match="not valid"):
        RemoteStore(server.url, token="mdt_" + "z" * 43)
    token = server.token("alice")
    store = RemoteStore(server.url, token=token)
    registry: TokenRegistry = server.services.tokens
    registry.revoke(registry.verify(token).id)
    with pytest.raises(AuthenticationError):
        store.stat("/memories")
    store.close()


def test_an_unreachable_server_is_a_storage_error() -> None:
    with pytest.raises(StorageError, match=r"could not reach the memdir server at http://127\.0\.0\.1:9"):
        RemoteStore("http://127.0.0.1:9", token="mdt_" + "z" * 43, retries=0)
    with pytest.raises(ConfigError):
        RemoteStore("ftp://example.com", token="t")


def test_errors_come_back_as_the_same_classes_with_the_same_words(server: LiveServer) -> None:
    with RemoteStore(server.url, token=server.token("alice")) as store:
        with pytest.raises(NotFoundError):
            store.read("/memories/missing.md")
        assert store.stat("/memories/missing.md") is None
        store.write("/memories/a.md", b"x")
        with pytest.raises(PathError) as caught:
            store.move("/memories/a.md", "/memories/a.md/inside")
        assert caught.value.tool_text() == (
            "Error: Path /memories/a.md/inside is not allowed: it lies inside /memories/a.md"
        )
        tool = MemoryTool(store)
        assert tool.execute({"command": "view", "path": "/memories/../x"}).text == (
            "Error: Path /memories/../x would escape /memories directory"
        )


Handler = Callable[[httpx.Request], httpx.Response]


def mock_store(handler: Handler, **options: object) -> RemoteStore:
    def route(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/whoami":
            return httpx.Response(200, json={"namespace": "alice", "token_id": "0123456789ab"})
        return handler(request)

    return RemoteStore("http://memdir.test", token="t", transport=httpx.MockTransport(route), **options)  # type: ignore[arg-type]


def test_reads_are_retried_when_the_connection_fails_and_writes_are_not() -> None:
    calls: list[str] = []

    def flaky(request: httpx.Request) -> httpx.Response:
        calls.append(request.method)
        if len(calls) == 1 or request.method == "PUT":
            raise httpx.ReadError("connection reset", request=request)
        return httpx.Response(200, json={"files": 1, "bytes": 2})

    store = mock_store(flaky)
    assert (store.usage().files, calls) == (1, ["GET", "GET"])
    with pytest.raises(StorageError, match="could not reach"):
        store.write("/memories/a.md", b"x")
    assert calls.count("PUT") == 1  # the change may have been applied: never sent twice
    store.close()


def test_a_429_is_waited_out_then_reported() -> None:
    answers = iter(
        [httpx.Response(429, headers={"Retry-After": "0"}, json={"error": {"code": "rate_limited", "message": "slow"}})]
        * 2
        + [httpx.Response(200, json={"files": 0, "bytes": 0})]
    )
    store = mock_store(lambda _request: next(answers))
    assert store.usage().files == 0
    store.close()


def test_answers_that_are_not_memdir_errors_are_storage_errors() -> None:
    store = mock_store(lambda _request: httpx.Response(502, text="<html>Bad Gateway</html>"))
    with pytest.raises(StorageError, match="HTTP 502"):
        store.usage()
    wrong_place = mock_store(
        lambda _request: httpx.Response(404, json={"error": {"code": "route_not_found", "message": "no such endpoint"}})
    )
    with pytest.raises(StorageError, match="route_not_found"):
        wrong_place.stat("/memories/a.md")  # never mistaken for "nothing there"
    store.close()
    wrong_place.close()


def test_the_cli_works_against_a_server(server: LiveServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MEMDIR_TOKEN", server.token("alice"))
    runner = CliRunner()
    url = server.url
    created = runner.invoke(
        cli, ["--store", url, "tool", '{"command": "create", "path": "/memories/a.md", "file_text": "hi\\n"}']
    )
    assert created.stdout == "File created successfully at: /memories/a.md\n"
    assert runner.invoke(cli, ["--store", url, "cat", "/memories/a.md"]).stdout == "hi\n"
    assert runner.invoke(cli, ["--store", url, "ls"]).stdout.split("\t")[:3] == ["/memories/a.md", "3", "1"]
    history = runner.invoke(cli, ["--store", url, "history", "/memories/a.md", "--json"]).stdout
    assert [(v["op"], v["actor"]) for v in json.loads(history)] == [("create", "user")]
    exported = runner.invoke(cli, ["--store", url, "export", str(tmp_path / "a.zip")])
    assert exported.exit_code == 0, exported.stderr
    monkeypatch.setenv("MEMDIR_TOKEN", server.token("copy"))
    imported = runner.invoke(cli, ["--store", url, "import", str(tmp_path / "a.zip")])
    assert imported.exit_code == 0, imported.stderr
    assert runner.invoke(cli, ["--store", url, "cat", "/memories/a.md"]).stdout == "hi\n"


def test_the_sdk_adapter_runs_on_a_remote_store(server: LiveServer) -> None:
    with RemoteStore(server.url, token=server.token("alice")) as store:
        adapter = memdir.anthropic.MemoryTool(store)
        assert adapter.call({"command": "create", "path": "/memories/a.md", "file_text": "x"}) == (
            "File created successfully at: /memories/a.md"
        )
        assert store.read("/memories/a.md").content == b"x"
