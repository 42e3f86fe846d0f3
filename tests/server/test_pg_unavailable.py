"""A database out of reach is weather, not a bug: ``503 unavailable`` with ``Retry-After``, never a 500 or a
traceback, and the server serves again as soon as the database is back. `RemoteStore` retries what is safe to
retry, with backoff: reads, requests that never left, and changes carrying an idempotency key on a server that
records keys."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from backends import LiveServer
from memdir.errors import StorageError, StorageUnavailableError
from memdir.server import ServerConfig
from memdir.store.remote import RemoteStore
from support.postgres import PgCluster


def wait_until_served(client: httpx.Client, url: str, seconds: float = 30) -> httpx.Response:
    """The first 200 for ``url`` (the pool reconnects in the background, with its own backoff)."""
    deadline = time.monotonic() + seconds
    while True:
        response = client.get(url)
        if response.status_code == 200 or time.monotonic() > deadline:
            return response
        time.sleep(0.2)


def assert_unavailable(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text
    assert response.headers["retry-after"] == "1"
    error = response.json()["error"]
    assert (error["code"], error["retry_after"]) == ("unavailable", 1)
    assert "Traceback" not in response.text and "postgresql://" not in response.text


def test_a_stopped_database_is_503_and_the_server_recovers_when_it_is_back(
    pg_cluster: PgCluster, pg_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    url = pg_url + "?pool_timeout=1&connect_timeout=2"  # fail fast: the test waits on each refusal
    with LiveServer(ServerConfig(store_url=url, rate=0)) as live:
        token = live.token("alice")
        with httpx.Client(base_url=live.url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as client:
            assert client.put("/v1/files/memories/a.md", content=b"kept\n").status_code == 200
            pg_cluster.stop()
            try:
                assert_unavailable(client.get("/v1/files/memories/a.md"))
                assert_unavailable(client.post("/v1/tool", json={"command": "view", "path": "/memories/a.md"}))
                assert_unavailable(client.put("/v1/files/memories/b.md", content=b"lost?"))
                assert client.get("/healthz").status_code == 200  # the process itself is fine
                with pytest.raises(StorageUnavailableError):
                    RemoteStore(live.url, token=token, retries=0)
            finally:
                pg_cluster.start()
            assert wait_until_served(client, "/v1/files/memories/a.md").text == "kept\n"
            assert client.get("/v1/stat/memories/b.md").status_code == 404  # the refused write left nothing
            assert client.put("/v1/files/memories/b.md", content=b"now\n").status_code == 200
    assert not [r for r in caplog.records if r.exc_info]  # no traceback logged for weather


def test_a_tool_command_the_database_could_not_serve_is_503(tmp_path: Any) -> None:
    with LiveServer(ServerConfig(store_url=f"sqlite://{tmp_path / 'm.db'}", rate=0)) as live:
        headers = {"Authorization": f"Bearer {live.token('alice')}"}
        with httpx.Client(base_url=live.url, headers=headers) as client:
            client.post("/v1/tool", json={"command": "create", "path": "/memories/a.md", "file_text": "a\n"})
            with live.services.tenants.lease("alice") as store:

                def down(*_args: object, **_kwargs: object) -> Any:
                    raise StorageUnavailableError("could not edit a file: the database server is unavailable")

                store.update = down  # type: ignore[method-assign]
                command = {"command": "insert", "path": "/memories/a.md", "insert_line": 0, "insert_text": "b"}
                assert_unavailable(client.post("/v1/tool", json=command))
                del store.update
                assert client.post("/v1/tool", json=command).json()["is_error"] is False


# -- RemoteStore's retries ---------------------------------------------------------------------------------------

Handler = Callable[[httpx.Request], httpx.Response]


@pytest.fixture
def mock_store() -> Iterator[Callable[..., RemoteStore]]:
    opened: list[RemoteStore] = []

    def make(handler: Handler, *, idempotent: bool, **options: Any) -> RemoteStore:
        def route(request: httpx.Request) -> httpx.Response:
            if request.url.path == "/v1/whoami":
                return httpx.Response(200, json={"namespace": "a", "token_id": "t", "idempotent_writes": idempotent})
            return handler(request)

        store = RemoteStore("http://memdir.test", token="t", transport=httpx.MockTransport(route), **options)
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


UNAVAILABLE = {"error": {"code": "unavailable", "message": "the database server is unavailable", "retry_after": 0}}
VERSION = {
    "version": 1, "path": "/memories/a.md", "op": "write", "actor": "user", "session": None, "source": None,
    "timestamp": 1.0, "sha256": "0" * 64, "size": 1, "old_path": None,
}  # fmt: skip


def test_reads_wait_out_503s(mock_store: Callable[..., RemoteStore]) -> None:
    answers = iter([httpx.Response(503, headers={"Retry-After": "0"}, json=UNAVAILABLE)] * 2)

    def handler(_request: httpx.Request) -> httpx.Response:
        return next(answers, httpx.Response(200, json={"files": 3, "bytes": 4}))

    assert mock_store(handler, idempotent=False).usage().files == 3


def test_a_lasting_outage_is_storage_unavailable(mock_store: Callable[..., RemoteStore]) -> None:
    calls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request.method)
        return httpx.Response(503, headers={"Retry-After": "0"}, json=UNAVAILABLE)

    with pytest.raises(StorageUnavailableError, match="unavailable"):
        mock_store(handler, idempotent=True, retries=2).usage()
    assert calls == ["GET"] * 3


def test_a_change_is_resent_with_its_key_to_a_server_that_records_keys(mock_store: Callable[..., RemoteStore]) -> None:
    keys: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        keys.append(request.headers["idempotency-key"])
        if len(keys) == 1:
            raise httpx.ReadError("connection reset", request=request)  # the answer was lost
        if len(keys) == 2:
            return httpx.Response(503, headers={"Retry-After": "0"}, json=UNAVAILABLE)
        return httpx.Response(200, json=VERSION)

    store = mock_store(handler, idempotent=True)
    assert store.write("/memories/a.md", b"x").version == 1
    assert len(keys) == 3 and len(set(keys)) == 1  # one call, one key
    store.write("/memories/a.md", b"y")
    assert keys[3] != keys[0]  # the next call has its own


def test_a_change_whose_answer_was_lost_is_not_resent_to_a_server_without_keys(
    mock_store: Callable[..., RemoteStore],
) -> None:
    calls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request.method)
        if request.method == "DELETE":
            return httpx.Response(503, headers={"Retry-After": "0"}, json=UNAVAILABLE)
        raise httpx.ReadError("connection reset", request=request)

    store = mock_store(handler, idempotent=False)
    with pytest.raises(StorageError, match="may have been applied"):
        store.write("/memories/a.md", b"x")
    with pytest.raises(StorageUnavailableError):
        store.delete("/memories/a.md")
    assert calls == ["PUT", "DELETE"]


def test_a_change_that_never_left_is_sent_again(mock_store: Callable[..., RemoteStore]) -> None:
    calls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request.method)
        if len(calls) == 1:
            raise httpx.ConnectError("connection refused", request=request)
        return httpx.Response(200, json={"versions": []})

    assert mock_store(handler, idempotent=False).move("/memories/a.md", "/memories/b.md") == []
    assert calls == ["POST", "POST"]
