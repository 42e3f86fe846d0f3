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
        # A negative number is a version someone meant, not an unknown option.
        (["restore", "/memories/notes.md", "-5"], f"invalid version '-5': {NUMBERS}"),
        (["diff", "/memories/notes.md", "-1"], f"invalid version '-1': {NUMBERS}"),
        (["diff", "/memories/notes.md", "1", "-2"], f"invalid version '-2': {NUMBERS}"),
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


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["cat"], "Error: Missing argument 'PATH' (see 'memdir cat --help')"),
        (["ls", "--bogus"], "Error: No such option '--bogus' (see 'memdir ls --help')"),
        (["bogus"], "Error: No such command 'bogus' (see 'memdir --help')"),
        (["--bogus", "ls"], "Error: No such option '--bogus' (see 'memdir --help')"),
        (
            ["review", "approve", "x"],
            "Error: Invalid value for 'ID': 'x' is not a valid integer (see 'memdir review approve --help')",
        ),
        (
            ["cat", "/memories/a.md", "extra\x1b[2J"],
            "Error: Got unexpected extra argument (extra\\x1b[2J) (see 'memdir cat --help')",
        ),
    ],
)
def test_a_usage_error_is_one_line_with_exit_2(run: Run, sqlite_url: str, args: list[str], line: str) -> None:
    """Not click's four lines (usage, hint, blank, error): one, naming where the help is."""
    result = run(*args, store=sqlite_url)
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", line + "\n")


@pytest.mark.parametrize("group", ["token", "claude-code"])
def test_a_group_without_its_command_prints_its_help_as_memdir_alone_does(run: Run, group: str) -> None:
    result = run(group)
    assert result.exit_code == 2
    assert result.stderr == run(group, "--help").stdout  # the help as it is, lines and all: no escaped "\n"
    assert result.stderr.startswith(f"Usage: memdir {group} [OPTIONS] COMMAND [ARGS]...\n\n")
    alone = run()
    assert (alone.exit_code, alone.stderr) == (2, run("--help").stdout)


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://127.0.0.1:abc", "Port could not be cast to integer value as 'abc'"),
        ("http://[::1", "Invalid IPv6 URL"),
    ],
)
def test_a_server_url_that_does_not_parse(run: Run, monkeypatch: pytest.MonkeyPatch, url: str, why: str) -> None:
    monkeypatch.setenv("MEMDIR_TOKEN", "x")
    assert_one_line_error(run("ls", store=url), f"not a valid URL ({why}): use http://host:port or https://host")


@pytest.mark.parametrize(
    "args",
    [["ls"], ["where"], ["write", "/memories/a.md"], ["token", "list"], ["migrate", "--list"], ["config"]],
    ids=lambda a: a[0],
)
@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("", "empty store URL"),
        ("sqlite:", "a sqlite: URL needs a file path, e.g. sqlite:///home/me/memory.db"),
        ("file:", "a file: URL needs a directory path, e.g. file:///home/me/memory"),
    ],
)
def test_a_store_url_no_backend_can_open_is_refused_by_every_command(
    run: Run, _isolated_home: Path, args: list[str], url: str, message: str
) -> None:
    """Not the default store instead (an empty --store), not a URL printed as usable (`where`), not "17
    migrations pending" for a database that has no file."""
    assert_one_line_error(run(*args, store=url, input="x\n"), message)
    assert_one_line_error(run(*args, "--store", url, input="x\n"), message)  # after the command, too
    assert not (_isolated_home / "store").exists()


def test_migrate_refuses_a_file_given_as_a_directory_store(run: Run, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine\n")
    url = str(tmp_path / "notes.txt")
    assert_one_line_error(run("migrate", "--list", store=url), f"{url} is a file, not a directory store")
    assert_one_line_error(
        run("migrate", "--list", store=f"sqlite://{tmp_path}"),
        f"sqlite://{tmp_path} is a directory, not a SQLite database file",
    )


@pytest.mark.parametrize("actor", ["", "evil\tactor\nx", "a\x1b[2Jb", "x" * 257])
def test_tool_refuses_an_actor_that_is_empty_or_not_one_line_of_text(
    run: Run, sqlite_url: str, opened: Store, actor: str
) -> None:
    command = '{"command": "create", "path": "/memories/a.md", "file_text": "x"}'
    result = run("tool", "--actor", actor, command, store=sqlite_url)
    assert_one_line_error(result, "--actor must be 1 to 256 characters of text, with no control characters")
    assert list(opened.log()) == []
    assert run("tool", "--actor", "Ann Example", command, store=sqlite_url).exit_code == 0
    assert opened.history("/memories/a.md")[-1].actor == "Ann Example"


def test_cat_never_follows_a_symlink_out_of_a_directory_store(run: Run, tmp_path: Path) -> None:
    with open_store(str(tmp_path / "store")):
        pass
    (tmp_path / "secret.txt").write_text("secret\n")
    os.symlink(tmp_path / "secret.txt", tmp_path / "store" / "memories" / "link.md")
    result = run("cat", "/memories/link.md", store=str(tmp_path / "store"))
    assert_one_line_error(result, "Path /memories/link.md would escape /memories directory")


@pytest.mark.parametrize(
    "args",
    [["history", "/memories/a.md"], ["verify"], ["ls"], ["cat", "/memories/a.md"], ["export", "-"]],
    ids=["history", "verify", "ls", "cat", "export"],
)
def test_a_reader_that_closed_its_end_of_the_pipe_ends_the_command_quietly(tmp_path: Path, args: list[str]) -> None:
    """As ``memdir history ... | head -1`` once head has its line: nothing on stderr and exit status 1, as the
    Python docs' note on SIGPIPE has it. The pipe's reading end is closed before memdir writes a byte; stdout is
    buffered as it is for a user (unbuffered, a small export would not be left to the flush at exit)."""
    import subprocess
    import sys

    url = str(tmp_path / "store")
    with open_store(url) as store:
        for n in range(3):
            store.write("/memories/a.md", f"v{n}\n".encode())
    env = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "memdir", "--store", url, *args],
            stdout=write_end,
            stderr=subprocess.PIPE,
            env=env,
            check=False,
        )
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr.decode()) == (1, "")


def test_output_still_buffered_when_a_command_ends_is_dropped_quietly_for_a_closed_pipe() -> None:
    """What a command leaves in stdout's buffer is flushed by `memdir.cli.main`, which answers a closed pipe with
    exit status 1, where the interpreter's own flush at exit would print "Exception ignored" and exit 120."""
    import subprocess
    import sys

    program = (
        "import sys\n"
        "from memdir.cli import cli, main\n"
        "cli.command('buffered')(lambda: sys.stdout.write('left in the buffer\\n'))\n"
        "sys.argv = ['memdir', 'buffered']\n"
        "main()\n"
    )
    env = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [sys.executable, "-c", program], stdout=write_end, stderr=subprocess.PIPE, env=env, check=False
        )
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr.decode()) == (1, "")
