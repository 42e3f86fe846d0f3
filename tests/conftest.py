"""Shared fixtures. No test touches the real home: MEMDIR_HOME points at a temporary directory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from support.fixtures import anthropic_client, anthropic_server  # noqa: F401 - fake Anthropic API for every test

# Shared fixtures live in plain modules under tests/ (on sys.path through `pythonpath` in pyproject.toml).
pytest_plugins = ["support.postgres", "support.processes", "backends"]  # postgres first: backends imports it


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("memdir-home")
    monkeypatch.setenv("MEMDIR_HOME", str(home))
    for name in (
        "MEMDIR_STORE",
        "MEMDIR_NAMESPACE",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "MEMDIR_DISABLE_AUTO_MEMORY",
    ):
        monkeypatch.delenv(name, raising=False)
    yield home
