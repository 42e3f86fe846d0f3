"""A real memdir server per test (SQLite store of the test's own), and the official SDK's clients pointed at it.

``client("alice")`` is ``anthropic.Anthropic(base_url=<the server>, api_key=<a new token of tenant alice>)``:
nothing in the SDK is mocked or patched, and no request leaves the machine.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import anthropic
import pytest

from backends import LiveServer
from memdir.server import ServerConfig

Client = Callable[..., anthropic.Anthropic]
AsyncClient = Callable[..., anthropic.AsyncAnthropic]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture
def config(db_path: Path) -> ServerConfig:
    return ServerConfig(store_url=f"sqlite://{db_path}", rate=0)


@pytest.fixture
def server(config: ServerConfig) -> Iterator[LiveServer]:
    with LiveServer(config) as live:
        yield live


@pytest.fixture
def client(server: LiveServer) -> Iterator[Client]:
    opened: list[anthropic.Anthropic] = []

    def make(tenant: str = "alice", *, api_key: str | None = None, **options: object) -> anthropic.Anthropic:
        key = api_key if api_key is not None else server.token(tenant)
        made = anthropic.Anthropic(base_url=server.url, api_key=key, max_retries=0, **options)  # type: ignore[arg-type]
        opened.append(made)
        return made

    yield make
    for made in opened:
        made.close()


@pytest.fixture
def aclient(server: LiveServer) -> AsyncClient:
    def make(tenant: str = "alice") -> anthropic.AsyncAnthropic:
        return anthropic.AsyncAnthropic(base_url=server.url, api_key=server.token(tenant), max_retries=0)

    return make


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def database_bytes(db_path: Path) -> bytes:
    """Every byte of a SQLite store as it lies on disk: the database file and its write-ahead log."""
    wal = db_path.with_name(db_path.name + "-wal")
    return db_path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")
