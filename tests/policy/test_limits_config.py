"""The [limits] settings: a file's and a namespace's bounds, per namespace, for every door; mistakes named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memdir import ConfigError, Limits, MemoryTool, open_store
from memdir.cli import cli
from memdir.gate import Rules
from memdir.policy.limits import limits_from_section
from memdir.settings import load_settings


def test_nothing_configured_means_the_defaults() -> None:
    assert limits_from_section({}, "default") == Limits()


def test_the_section_a_namespace_override_and_none() -> None:
    section: dict[str, Any] = {
        "max_files": 50,
        "max_total_bytes": "none",
        "namespaces": {"big": {"max_files": "none", "max_file_bytes": 1_000_000}},
    }
    assert limits_from_section(section, "default") == Limits(max_files=50, max_total_bytes=None)
    assert limits_from_section(section, "big") == Limits(max_files=None, max_total_bytes=None, max_file_bytes=1_000_000)


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"max_filez": 3}, r"unknown key\(s\) in \[limits\]: max_filez; known: max_file_bytes, max_files"),
        ({"max_files": 0}, 'limits.max_files must be a whole number from 1 or "none", got 0'),
        ({"max_files": True}, 'limits.max_files must be a whole number from 1 or "none", got True'),
        ({"max_total_bytes": "50MB"}, "limits.max_total_bytes must be a whole number from 1 or \"none\", got '50MB'"),
        ({"max_view_chars": "none"}, "limits.max_view_chars must be a whole number from 1, got 'none'"),
        ({"namespaces": {"a": 3}}, r"\[limits.namespaces\] must be a table of tables"),
    ],
)
def test_mistakes_are_named(section: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        limits_from_section(section, "a")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git repository whose memdir.toml bounds the default namespace to 2 files and lifts the bound of "big"."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "memdir.toml").write_text('[limits]\nmax_files = 2\n[limits.namespaces.big]\nmax_files = "none"\n')
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_every_gate_of_the_namespace_holds_to_them(project: Path) -> None:
    assert Rules.for_namespace("default", settings=load_settings(project)).limits == Limits(max_files=2)
    with open_store(f"sqlite://{project / 'm.db'}") as store, MemoryTool(store) as tool:
        for name in "ab":
            assert not tool.execute({"command": "create", "path": f"/memories/{name}.md", "file_text": "x"}).is_error
        refused = tool.execute({"command": "create", "path": "/memories/c.md", "file_text": "x"})
        assert refused.is_error and "the limit is 2 files" in refused.text
    with open_store(f"sqlite://{project / 'm.db'}", namespace="big") as store, MemoryTool(store) as tool:
        for name in "abc":
            assert not tool.execute({"command": "create", "path": f"/memories/{name}.md", "file_text": "x"}).is_error


def test_the_cli_shows_and_applies_them(project: Path) -> None:
    url = f"sqlite://{project / 'm.db'}"
    runner = CliRunner()
    for name in "ab":
        assert runner.invoke(cli, ["--store", url, "write", f"/memories/{name}.md"], input="x\n").exit_code == 0
    third = runner.invoke(cli, ["--store", url, "write", "/memories/c.md"], input="x\n")
    assert third.exit_code == 1 and "the limit is 2 files" in third.stderr
    shown = json.loads(runner.invoke(cli, ["config", "--json"]).stdout)
    assert shown["tables"]["limits"]["max_files"]["value"] == 2
    assert shown["warnings"] == []
