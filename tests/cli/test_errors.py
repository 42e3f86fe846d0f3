"""Every error is one line on stderr, a non-zero exit and no traceback; nothing is printed on stdout."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import Result

from cli.helpers import Run, seed
from memdir import Store, open_store

NUMBERS = "versions are numbers from 1 (see `memdir history`)"


def assert_one_line_error(result: Result, message: str) -> None:
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == f"Error: {message}\n"
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["cat", "/etc/passwd"], "Path must start with /memories, got: /etc/passwd"),
        (["cat", "/memoriesX/a.md"], "Path must start with /memories, got: /memoriesX/a.md"),
        (["ls", "/memories/../etc"], "Path /memories/../etc would escape /memories directory"),
        (["history", "/memories/%2e%2e/x"], "Path /memories/%2e%2e/x would escape /memories directory"),
        (["cat", "/memories/missing.md"], "/memories/missing.md does not exist"),
        (["ls", "/memories/missing"], "/memories/missing does not exist"),
        (["cat", "/memories/lists"], "/memories/lists is a directory"),
        (["history", "/memories/never.md"], "no history for /memories/never.md"),
        (["show", "/memories/notes.md"], "expected PATH@VERSION, e.g. /memories/notes.md@3, got: /memories/notes.md"),
        (["show", "/memories/notes.md@x"], f"invalid version 'x': {NUMBERS}"),
        (["show", "/memories/notes.md@0"], f"invalid version '0': {NUMBERS}"),
        (["show", "/memories/notes.md@9"], "/memories/notes.md has no version 9"),
        (["show", "/memories/old.md@6"], "version 6 of /memories/old.md is a deletion; it has no content"),
        (["diff", "/memories/notes.md", "9"], "/memories/notes.md has no version 9"),
        (
            ["diff", "/memories/notes.md", "1.5"],
            f"invalid version '1.5': {NUMBERS}",
        ),
        (
            ["restore", "/memories/notes.md", "two"],
            f"invalid version 'two': {NUMBERS}",
        ),
        (["restore", "/memories/notes.md", "9"], "/memories/notes.md has no version 9"),
    ],
)
def test_bad_paths_missing_files_and_bad_versions(
    run: Run, sqlite_url: str, opened: Store, args: list[str], message: str
) -> None:
    seed(opened)
    assert_one_line_error(run(*args, store=sqlite_url), message)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["cat", "/memories/a\nb.md"],
            "Path /memories/a\\nb.md is not allowed: it contains a control character (U+000A)",
        ),
        (
            ["cat", "/memories/a\x1b[31mred.md"],
            "Path /memories/a\\x1b[31mred.md is not allowed: it contains a control character (U+001B)",
        ),
        (["write", "/memories/b.md", "no\nsuch\r"], "cannot read no\\nsuch\\r: No such file or directory"),
        (
            ["cat", "/memories/\u202egnp.md"],
            "Path /memories/\\u202egnp.md is not allowed: it contains an invisible formatting character (U+202E)",
        ),
    ],
)
def test_what_an_error_quotes_cannot_break_its_line_or_reach_the_terminal_raw(
    run: Run, sqlite_url: str, opened: Store, args: list[str], message: str
) -> None:
    """A path or file name quoted in an error has its control characters (and invisible format characters such as
    a right-to-left override) escaped: the error stays one line, and no escape sequence reaches the terminal."""
    seed(opened)
    assert_one_line_error(run(*args, store=sqlite_url), message)


def test_an_unknown_store_scheme(run: Run) -> None:
    assert_one_line_error(
        run("ls", store="bogus:somewhere"),
        "unknown store URL scheme 'bogus': use a directory path or one of claude-code:, file:, http:, https:, memory:, postgres:, postgresql:, sqlite:",
    )


def test_a_sqlite_file_that_is_not_a_database(run: Run, tmp_path: Path) -> None:
    (tmp_path / "memory.db").write_bytes(b"this is not a database\n" * 100)
    result = run("cat", "/memories/a.md", store=f"sqlite://{tmp_path / 'memory.db'}")
    assert_one_line_error(result, "could not open the store: the file is not a memdir SQLite database")


def test_a_damaged_sidecar_index(run: Run, tmp_path: Path) -> None:
    with open_store(str(tmp_path / "store")) as store:
        store.write("/memories/a.md", b"kept\n")
    (tmp_path / "store" / ".memdir" / "index.db").write_bytes(b"garbage" * 500)
    result = run("ls", store=str(tmp_path / "store"))
    assert_one_line_error(result, "could not open the store: the store's database is damaged; run `memdir doctor`")


def test_an_unexpected_error_is_logged_not_shown(
    run: Run, sqlite_url: str, monkeypatch: pytest.MonkeyPatch, _isolated_home: Path
) -> None:
    def explode(*_: object) -> None:
        raise RuntimeError("/secret/host/path exploded")

    monkeypatch.setattr("memdir.cli._files.file_stats", explode)
    open_store(sqlite_url).close()
    assert_one_line_error(run("ls", store=sqlite_url), "internal error (RuntimeError); see the memdir log")
    log = _isolated_home / "memdir.log"
    assert "Traceback" in log.read_text() and "/secret/host/path exploded" in log.read_text()
    assert oct(log.stat().st_mode)[-3:] == "600"


def test_the_log_is_not_created_when_nothing_goes_wrong(run: Run, sqlite_url: str, _isolated_home: Path) -> None:
    open_store(sqlite_url).close()
    assert run("ls", store=sqlite_url).exit_code == 0
    assert not (_isolated_home / "memdir.log").exists()


def test_a_missing_argument_is_a_usage_error(run: Run, sqlite_url: str) -> None:
    result = run("cat", store=sqlite_url)
    assert result.exit_code == 2
    assert "Missing argument 'PATH'" in result.stderr
    assert "Traceback" not in result.stderr


def test_cat_never_follows_a_symlink_out_of_a_directory_store(run: Run, tmp_path: Path) -> None:
    with open_store(str(tmp_path / "store")):
        pass
    (tmp_path / "secret.txt").write_text("secret\n")
    os.symlink(tmp_path / "secret.txt", tmp_path / "store" / "memories" / "link.md")
    result = run("cat", "/memories/link.md", store=str(tmp_path / "store"))
    assert_one_line_error(result, "Path /memories/link.md would escape /memories directory")
