"""Fixtures for the CLI tests: run ``memdir`` in-process against a store the test prepared."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memdir import Store, open_store
from memdir.cli import cli

from .helpers import Run


@pytest.fixture
def run() -> Run:
    """``run(*args, store=URL, color=False, input=None)``: invoke the CLI, stdout and stderr kept apart."""

    def invoke(*args: str, store: str | None = None, color: bool = False, input: str | bytes | None = None) -> Result:
        argv = (["--store", store] if store is not None else []) + list(args)
        return CliRunner().invoke(cli, argv, color=color, input=input)

    return invoke


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite://{tmp_path / 'memory.db'}"


@pytest.fixture
def opened(sqlite_url: str) -> Iterator[Store]:
    """The SQLite store at ``sqlite_url`` (times recorded exactly as given, so output is deterministic)."""
    store = open_store(sqlite_url)
    yield store
    store.close()
