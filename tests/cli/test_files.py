"""ls, cat, history, show, diff and restore: exact output, for scripts (no terminal) and for people (a table)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from backends import store_url
from cli.helpers import Run, add, seed
from memdir import MemoryTool, Store, open_store

MILK = hashlib.sha256(b"milk\n").hexdigest()
NOTES_1 = hashlib.sha256(b"one\ntwo\n").hexdigest()
NOTES_2 = hashlib.sha256(b"one\nthree\n").hexdigest()
GONE = hashlib.sha256(b"gone\n").hexdigest()


@pytest.fixture
def seeded(opened: Store) -> Store:
    seed(opened)
    return opened


def test_ls_prints_one_tab_separated_line_per_file_when_piped(run: Run, sqlite_url: str, seeded: Store) -> None:
    result = run("ls", store=sqlite_url)
    assert result.exit_code == 0
    assert result.stdout == (
        "/memories/lists/todo.md\t5\t4\t2023-11-14T22:17:20Z\n/memories/notes.md\t10\t2\t2023-11-14T22:15:20Z\n"
    )


def test_ls_of_a_directory_or_a_file(run: Run, sqlite_url: str, seeded: Store) -> None:
    assert (
        run("ls", "/memories/lists", store=sqlite_url).stdout == "/memories/lists/todo.md\t5\t4\t2023-11-14T22:17:20Z\n"
    )
    assert (
        run("ls", "/memories/notes.md", store=sqlite_url).stdout == "/memories/notes.md\t10\t2\t2023-11-14T22:15:20Z\n"
    )


def test_ls_of_an_empty_store_prints_nothing(run: Run, sqlite_url: str, opened: Store) -> None:
    result = run("ls", store=sqlite_url)
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")


def test_ls_json(run: Run, sqlite_url: str, seeded: Store) -> None:
    result = run("ls", "--json", store=sqlite_url)
    assert json.loads(result.stdout) == [
        {
            "path": "/memories/lists/todo.md",
            "size": 5,
            "version": 4,
            "sha256": MILK,
            "modified": "2023-11-14T22:17:20Z",
        },
        {
            "path": "/memories/notes.md",
            "size": 10,
            "version": 2,
            "sha256": NOTES_2,
            "modified": "2023-11-14T22:15:20Z",
        },
    ]


def test_ls_on_a_terminal_is_a_table_with_human_sizes(
    run: Run, sqlite_url: str, seeded: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("memdir.cli._files.stdout_is_tty", lambda: True)
    add(seeded, "/memories/big.md", "create", b"x" * 5632)
    lines = [line.rstrip() for line in run("ls", store=sqlite_url).stdout.splitlines()]
    assert lines == [
        " Path                     Size  Version  Modified",
        " /memories/big.md         5.5K  7        2023-11-14T22:20:20Z",
        " /memories/lists/todo.md  5B    4        2023-11-14T22:17:20Z",
        " /memories/notes.md       10B   2        2023-11-14T22:15:20Z",
    ]


def test_cat_prints_the_bytes_exactly(run: Run, sqlite_url: str, opened: Store) -> None:
    content = b"\x89PNG\r\n\x1a\n\x00\xff no newline"
    opened.write("/memories/pic.png", content)
    result = run("cat", "/memories/pic.png", store=sqlite_url)
    assert result.exit_code == 0
    assert result.stdout_bytes == content


def test_history_is_newest_first_and_follows_renames(run: Run, sqlite_url: str, seeded: Store) -> None:
    assert run("history", "/memories/lists/todo.md", store=sqlite_url).stdout == (
        f"4\t2023-11-14T22:17:20Z\trename\tuser\t-\t5\t{MILK[:12]}\t/memories/todo.md\t-\n"
        f"3\t2023-11-14T22:16:20Z\tcreate\tuser\t-\t5\t{MILK[:12]}\t-\t-\n"
    )
    assert run("history", "/memories/old.md", store=sqlite_url).stdout == (
        "6\t2023-11-14T22:19:20Z\tdelete\tmodel\ts-1\t0\t-\t-\t-\n"
        f"5\t2023-11-14T22:18:20Z\tcreate\tmodel\ts-1\t5\t{GONE[:12]}\t-\t-\n"
    )


def test_history_on_a_terminal(run: Run, sqlite_url: str, seeded: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("memdir.cli._files.stdout_is_tty", lambda: True)
    lines = [line.rstrip() for line in run("history", "/memories/notes.md", store=sqlite_url).stdout.splitlines()]
    assert lines == [
        " Version  Time                  Op           Actor  Session  Size  SHA-256       Renamed from  Source",
        f" 2        2023-11-14T22:15:20Z  str_replace  model  s-2      10B   {NOTES_2[:12]}  -             -",
        f" 1        2023-11-14T22:14:20Z  create       model  s-1      8B    {NOTES_1[:12]}  -             -",
    ]


def test_history_json(run: Run, sqlite_url: str, seeded: Store) -> None:
    result = run("history", "--json", "/memories/lists/todo.md", store=sqlite_url)
    assert json.loads(result.stdout)[0] == {
        "version": 4,
        "path": "/memories/lists/todo.md",
        "op": "rename",
        "actor": "user",
        "session": None,
        "source": None,
        "timestamp": "2023-11-14T22:17:20Z",
        "sha256": MILK,
        "size": 5,
        "old_path": "/memories/todo.md",
        "time": "2023-11-14T22:17:20Z",
    }


def test_show_prints_a_version_exactly(run: Run, sqlite_url: str, seeded: Store) -> None:
    assert run("show", "/memories/notes.md@1", store=sqlite_url).stdout_bytes == b"one\ntwo\n"
    assert run("show", "/memories/old.md@5", store=sqlite_url).stdout_bytes == b"gone\n"  # deleted since


def test_show_splits_at_the_last_at_sign(run: Run, sqlite_url: str, opened: Store) -> None:
    opened.write("/memories/me@example.md", b"hi\n")
    assert run("show", "/memories/me@example.md@1", store=sqlite_url).stdout == "hi\n"


def test_diff_defaults_to_the_previous_version_against_the_current(run: Run, sqlite_url: str, seeded: Store) -> None:
    result = run("diff", "/memories/notes.md", store=sqlite_url)
    assert result.stdout == (
        "--- /memories/notes.md@1\n+++ /memories/notes.md (current)\n@@ -1,2 +1,2 @@\n one\n-two\n+three\n"
    )


def test_diff_between_named_versions_and_of_a_deleted_file(run: Run, sqlite_url: str, seeded: Store) -> None:
    assert run("diff", "/memories/notes.md", "2", "1", store=sqlite_url).stdout == (
        "--- /memories/notes.md@2\n+++ /memories/notes.md@1\n@@ -1,2 +1,2 @@\n one\n-three\n+two\n"
    )
    assert run("diff", "/memories/old.md", store=sqlite_url).stdout == (
        "--- /memories/old.md@5\n+++ /memories/old.md (deleted)\n@@ -1 +0,0 @@\n-gone\n"
    )


def test_diff_of_one_version_against_the_current_and_of_identical_content(
    run: Run, sqlite_url: str, seeded: Store
) -> None:
    assert run("diff", "/memories/notes.md", "2", store=sqlite_url).stdout == ""
    assert run("diff", "/memories/lists/todo.md", store=sqlite_url).stdout == ""  # a rename changes no content


def test_diff_of_a_first_version_and_a_missing_final_newline(run: Run, sqlite_url: str, opened: Store) -> None:
    opened.write("/memories/a.md", b"a\nb")
    assert run("diff", "/memories/a.md", store=sqlite_url).stdout == (
        "--- /dev/null\n+++ /memories/a.md (current)\n@@ -0,0 +1,2 @@\n+a\n+b\n\\ No newline at end of file\n"
    )


def test_diff_is_coloured_on_a_terminal(run: Run, sqlite_url: str, seeded: Store) -> None:
    result = run("diff", "/memories/notes.md", store=sqlite_url, color=True)
    assert result.stdout.splitlines()[2:] == [
        "\x1b[36m@@ -1,2 +1,2 @@\x1b[0m",
        " one",
        "\x1b[31m-two\x1b[0m",
        "\x1b[32m+three\x1b[0m",
    ]
    assert result.stdout.startswith("\x1b[1m--- /memories/notes.md@1\x1b[0m\n")


def test_diff_of_binary_content(run: Run, sqlite_url: str, opened: Store) -> None:
    opened.write("/memories/pic.png", b"\x89PNG\xff1")
    opened.write("/memories/pic.png", b"\x89PNG\xff2")
    assert run("diff", "/memories/pic.png", store=sqlite_url).stdout == (
        "Binary contents of /memories/pic.png@1 and /memories/pic.png (current) differ\n"
    )


def test_restore_records_a_new_version_by_the_user(run: Run, sqlite_url: str, seeded: Store) -> None:
    result = run("restore", "/memories/notes.md", "1", store=sqlite_url)
    assert (result.exit_code, result.stdout) == (0, "7\n")
    assert seeded.read("/memories/notes.md").content == b"one\ntwo\n"
    latest = seeded.history("/memories/notes.md")[-1]
    assert (latest.version, latest.op, latest.actor, latest.source) == (7, "restore", "user", "restored from version 1")


def test_restore_brings_back_a_deleted_file(run: Run, sqlite_url: str, seeded: Store) -> None:
    assert run("restore", "/memories/old.md", "5", store=sqlite_url).stdout == "7\n"
    assert run("cat", "/memories/old.md", store=sqlite_url).stdout == "gone\n"


def test_the_commands_work_the_same_on_every_backend(run: Run, backend: str, tmp_path: Path) -> None:
    url = store_url(backend, tmp_path)
    with open_store(url) as store:
        tool = MemoryTool(store)
        tool.execute({"command": "create", "path": "/memories/a.md", "file_text": "one\ntwo\n"})
        tool.execute({"command": "str_replace", "path": "/memories/a.md", "old_str": "two", "new_str": "2"})
        tool.execute({"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/d/b.md"})
        assert [line.split("\t")[:3] for line in run("ls", store=url).stdout.splitlines()] == [
            ["/memories/d/b.md", "6", "3"]
        ]
        assert run("cat", "/memories/d/b.md", store=url).stdout == "one\n2\n"
        history = [line.split("\t") for line in run("history", "/memories/d/b.md", store=url).stdout.splitlines()]
        assert [(h[0], h[2], h[3], h[7]) for h in history] == [
            ("3", "rename", "model", "/memories/a.md"),
            ("2", "str_replace", "model", "-"),
            ("1", "create", "model", "-"),
        ]
        assert run("show", "/memories/d/b.md@1", store=url).stdout == "one\ntwo\n"
        assert run("diff", "/memories/d/b.md", "1", store=url).stdout.endswith(" one\n-two\n+2\n")
        assert run("restore", "/memories/d/b.md", "1", store=url).stdout == "4\n"
        assert store.read("/memories/d/b.md").content == b"one\ntwo\n"


def test_a_giant_file_in_a_directory_store_does_not_stop_the_commands_that_read_every_file(
    run: Run, tmp_path: Path
) -> None:
    url = str(tmp_path / "store")
    with open_store(url) as store:
        store.write("/memories/note.md", b"important note\n")
    with open(tmp_path / "store" / "memories" / "build.log.md", "wb") as fh:
        fh.truncate(64 * 1024 * 1024 + 1)  # sparse: one byte over what memdir reads, costing no disk
    assert run("ls", store=url).stdout.split("\t")[0] == "/memories/note.md"
    for command in (["ls"], ["verify"], ["export", str(tmp_path / "out.zip")], ["search", "note"], ["reindex"]):
        result = run(*command, store=url)
        assert result.exit_code == 0, (command, result.stderr)
        assert "build.log" not in result.stdout + result.stderr, command
    result = run("cat", "/memories/build.log.md", store=url)
    assert (result.exit_code, result.stderr) == (
        1,
        "Error: /memories/build.log.md is 67,108,865 bytes, too large to read\n",
    )
