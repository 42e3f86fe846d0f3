"""The backends every contract test runs on: one fixture, parametrised (httpx-style)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memdir import Store, open_store

BACKENDS = ["memory", "sqlite", "directory"]

StoreFactory = Callable[..., Store]


def store_url(kind: str, tmp_path: Path) -> str:
    if kind == "memory":
        return f"memory:{uuid.uuid4().hex}"
    if kind == "sqlite":
        return f"sqlite://{tmp_path / 'memory.db'}"
    return str(tmp_path / "store")


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_store(backend: str, tmp_path: Path) -> Iterator[StoreFactory]:
    """Open (and close at the end) stores of the parametrised backend, sharing one URL per test."""
    url = store_url(backend, tmp_path)
    opened: list[Store] = []

    def factory(namespace: str = "default") -> Store:
        store = open_store(url, namespace=namespace)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()


@pytest.fixture
def store(make_store: StoreFactory) -> Store:
    return make_store()
