"""A real server per test (uvicorn in a thread, on a free loopback port, over a SQLite store of the test's own),
clients with tokens for it, and a raw-socket client for requests httpx would refuse to send or would tidy up."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from backends import LiveServer
from memdir.server import ServerConfig

from .helpers import Raw, raw_sender


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite://{tmp_path / 'memory.db'}"


@pytest.fixture
def config(store_url: str) -> ServerConfig:
    """The server's settings (a test overrides this fixture to change them); no rate limit by default."""
    return ServerConfig(store_url=store_url, rate=0)


@pytest.fixture
def server(config: ServerConfig) -> Iterator[LiveServer]:
    with LiveServer(config) as live:
        yield live


Client = Callable[..., httpx.Client]


@pytest.fixture
def client(server: LiveServer) -> Iterator[Client]:
    """``client("alice")``: an httpx client whose requests carry a new token for namespace ``alice``."""
    opened: list[httpx.Client] = []

    def make(namespace: str = "alice", *, token: str | None = None) -> httpx.Client:
        secret = token if token is not None else server.token(namespace)
        made = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {secret}"}, timeout=30)
        opened.append(made)
        return made

    yield make
    for made in opened:
        made.close()


@pytest.fixture
def raw(server: LiveServer) -> Raw:
    """Send exactly these bytes on a new connection (``{host}`` is filled in) and read one response."""
    return raw_sender(server)
