"""The `memdir claude-code` commands: each documented, each a thin call, errors in one line."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from memdir.cli import cli

from .helpers import Layout

GROUP = cli.commands["claude-code"]
assert isinstance(GROUP, click.Group)


def test_the_subcommands() -> None:
    assert sorted(GROUP.commands) == ["install", "restore", "snapshot", "status", "uninstall", "watch", "where"]


@pytest.mark.parametrize("name", sorted(GROUP.commands))
def test_every_subcommand_has_help_with_an_example(name: str) -> None:
    result = CliRunner().invoke(cli, ["claude-code", name, "--help"])
    assert result.exit_code == 0
    summary = GROUP.commands[name].get_short_help_str(limit=80)
    assert summary and not summary.endswith("...")
    example = result.stdout.split("Example:", 1)
    assert len(example) == 2 and "memdir claude-code" in example[1].split("Options:")[0]


def test_where(layout: Layout) -> None:
    result = CliRunner().invoke(cli, ["claude-code", "where"])
    assert result.stdout == f"{layout.app_memory}\n"
    assert result.stderr == f"(project {layout.app}: the default location for {layout.app})\n"
    result = CliRunner().invoke(cli, ["claude-code", "where", "--store", "claude-code:agent/planner"])
    assert result.stdout == f"{layout.planner_project}\n"


def test_errors_are_one_line(layout: Layout) -> None:
    for args in (["where", "--store", "sqlite:///x.db"], ["where", "--store", "claude-code:agent/a/b/c"]):
        result = CliRunner().invoke(cli, ["claude-code", *args])
        assert result.exit_code == 1
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("Error: ")


@pytest.mark.parametrize("url", ["claude-code:~memdir-no-such-user/x", "claude-code:dir:~memdir-no-such-user/x"])
def test_an_unknown_users_home_is_a_one_line_error(layout: Layout, url: str) -> None:
    result = CliRunner().invoke(cli, ["--store", url, "ls"])
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr.startswith("Error: cannot expand '~memdir-no-such-user'") and result.stderr.count("\n") == 1
    assert "internal error" not in result.stderr
