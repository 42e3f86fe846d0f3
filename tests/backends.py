"""The backends every contract test runs on: one fixture, parametrised (httpx-style).

``remote`` is `RemoteStore` against a real ``memdir serve`` app: uvicorn in a thread, on a free loopback port,
over a SQLite store of the test's own (one server per test, stopped when the test ends). Its URLs carry a token
for the namespace asked for (``http://TOKEN@127.0.0.1:PORT``). ``postgres`` is `PostgresStore` on a database of
the test's own in the session's throwaway cluster (`support.postgres`).
"""

from __future__ import annotations

import asyncio
import socket
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from memdir import Store, open_store
from memdir.server import ServerConfig, create_app
from memdir.server._run import uvicorn_options
from support.postgres import database_url

BACKENDS = ["memory", "sqlite", "directory", "remote", "postgres"]

StoreFactory = Callable[..., Store]


class LiveServer:
    """A memdir app served by uvicorn in a thread of this process, on a free port of 127.0.0.1."""

    def __init__(self, config: ServerConfig, **options: Any) -> None:
        self.app = create_app(config)
        self.services = self.app.state.services
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", 0))
        self.port = self._socket.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        served = {**uvicorn_options(), "log_config": None, "lifespan": "on", **options}
        self._server = _ThreadedServer(uvicorn.Config(self.app, **served))
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True)

    def start(self) -> LiveServer:
        self._thread.start()
        if not self._server.ready.wait(30):
            raise RuntimeError("the test server did not start")
        return self

    def stop(self) -> None:
        self._server.stop()
        self._thread.join(30)
        self._socket.close()

    def token(self, namespace: str = "default", label: str | None = None, *, admin: bool = False) -> str:
        return str(self.services.tokens.create(namespace, label, admin=admin)[0])

    def url_for(self, namespace: str = "default", *, admin: bool = False) -> str:
        """A store URL carrying a new token for ``namespace``."""
        return f"http://{self.token(namespace, admin=admin)}@127.0.0.1:{self.port}"

    def __enter__(self) -> LiveServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _ThreadedServer(uvicorn.Server):
    """uvicorn, stopped at once from another thread (its own loop polls ``should_exit`` every 0.1 s)."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._exit: asyncio.Event | None = None

    async def main_loop(self) -> None:
        await self.on_tick(0)  # the default headers (Date)
        self._loop, self._exit = asyncio.get_running_loop(), asyncio.Event()
        self.ready.set()
        await self._exit.wait()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's shutdown without its fixed 0.1 s pause: close, let connections and tasks end, lifespan."""
        for server in self.servers:
            server.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()
        for _ in range(10_000):  # connections close within a few loop turns; requests in flight may take longer
            if not self.server_state.connections and not self.server_state.tasks:
                break
            await asyncio.sleep(0.001)
        await self.lifespan.shutdown()

    def stop(self) -> None:
        if self._loop is not None and self._exit is not None:
            self._loop.call_soon_threadsafe(self._exit.set)
        else:
            self.should_exit = True


_LIVE: dict[Path, LiveServer] = {}


def live_server(tmp_path: Path) -> LiveServer:
    """The test's remote-backend server (started on first use, stopped by `_stop_live_servers`)."""
    server = _LIVE.get(tmp_path)
    if server is None:
        config = ServerConfig(store_url=f"sqlite://{tmp_path / 'remote.db'}", rate=0)
        server = _LIVE[tmp_path] = LiveServer(config).start()
    return server


@pytest.fixture(autouse=True)
def _stop_live_servers() -> Iterator[None]:
    yield
    while _LIVE:
        _LIVE.popitem()[1].stop()


def store_url(kind: str, tmp_path: Path) -> str:
    if kind == "memory":
        return f"memory:{uuid.uuid4().hex}"
    if kind == "sqlite":
        return f"sqlite://{tmp_path / 'memory.db'}"
    if kind == "remote":
        # An admin token: the contract suite's remote store is a trusted client's, whose replayed versions keep
        # their provenance (`import_version`); what any other token gets is tested in tests/gate.
        return live_server(tmp_path).url_for("default", admin=True)
    if kind == "postgres":
        return database_url(str(tmp_path))
    return str(tmp_path / "store")


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_store(backend: str, tmp_path: Path) -> Iterator[StoreFactory]:
    """Open (and close at the end) stores of the parametrised backend, sharing one URL per test."""
    url = store_url(backend, tmp_path) if backend != "remote" else ""
    opened: list[Store] = []

    def factory(namespace: str = "default") -> Store:
        # A remote store's namespace is its token's: each namespace asked for gets a token of its own.
        target = live_server(tmp_path).url_for(namespace, admin=True) if backend == "remote" else url
        store = open_store(target, namespace=namespace)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()


@pytest.fixture
def store(make_store: StoreFactory) -> Store:
    return make_store()
