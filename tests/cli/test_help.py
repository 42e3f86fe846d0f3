"""Every command documents itself: a one-line summary and an Example block, shown by --help."""

from __future__ import annotations

import inspect

import click
import pytest
from click.testing import CliRunner

from memdir.cli import cli

COMMANDS = sorted(cli.commands)


def test_the_command_set() -> None:
    assert COMMANDS == [
        "audit", "cat", "chat", "claude-code", "config", "diff", "doctor", "edit", "export", "gc", "history", "import",
        "init", "ls", "mcp", "migrate", "migrate-store", "mv", "redact", "reindex", "restore", "review", "rm", "run",
        "scan", "search", "serve", "sessions", "show", "sync", "token", "tool", "verify", "where", "write"
    ]  # fmt: skip


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_has_help_with_an_example(name: str) -> None:
    command = cli.commands[name]
    assert command.help and command.help.strip()
    summary = command.get_short_help_str(limit=80)
    assert summary and not summary.endswith("..."), f"{name}: the first line should be short: {summary!r}"
    result = CliRunner().invoke(cli, [name, "--help"])
    assert result.exit_code == 0
    example = result.stdout.split("Example:", 1)
    assert len(example) == 2, f"{name} --help has no Example block"
    assert "memdir" in example[1].split("Options:")[0], f"{name}: the example should show a memdir command line"


def _every_command(group: click.Group, path: list[str]) -> list[tuple[list[str], click.Command]]:
    found: list[tuple[list[str], click.Command]] = [(path, group)]
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            found += _every_command(command, [*path, name])
        else:
            found.append(([*path, name], command))
    return found


@pytest.mark.parametrize(
    ("path", "command"), [pytest.param(p, c, id=" ".join(p) or "memdir") for p, c in _every_command(cli, [])]
)
def test_examples_keep_their_lines(path: list[str], command: click.Command) -> None:
    # Each line of an example is a command line to copy: rewrapped, two of them ran into one.
    result = CliRunner().invoke(cli, [*path, "--help"], terminal_width=80)
    assert result.exit_code == 0
    shown = {line.strip() for line in result.stdout.splitlines()}
    text = inspect.cleandoc(command.help or "")
    examples = [p for p in text.split("\n\n") if p.startswith(" ")]
    assert examples or not path, f"{path}: no example"
    for line in (line.strip() for example in examples for line in example.splitlines()):
        assert line in shown, f"{' '.join(path)} --help broke the example line {line!r}"


def test_the_group_help_lists_every_command() -> None:
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    assert "Example:" in result.stdout
    for name in COMMANDS:
        assert f"\n  {name} " in result.stdout


def test_the_commands_are_click_commands_with_docstrings() -> None:
    for name in COMMANDS:
        command = cli.commands[name]
        assert isinstance(command, click.Command)
        assert command.callback is not None and command.callback.__doc__


def test_shell_completion_works_as_the_readme_says() -> None:
    import os
    import subprocess
    import sys
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert 'eval "$(_MEMDIR_COMPLETE=bash_source memdir)"' in readme
    env = {**os.environ, "_MEMDIR_COMPLETE": "bash_complete", "COMP_WORDS": "memdir wr", "COMP_CWORD": "1"}
    done = subprocess.run([sys.executable, "-m", "memdir"], env=env, capture_output=True, text=True, check=False)
    assert "plain,write" in done.stdout.splitlines()
    script = subprocess.run(
        [sys.executable, "-m", "memdir"], env={**os.environ, "_MEMDIR_COMPLETE": "bash_source"},
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert "_memdir_completion()" in script.stdout
