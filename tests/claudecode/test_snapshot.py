"""Snapshots: what Claude Code writes straight to its files becomes versions, and nothing else is written there."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memdir import open_store
from memdir.claudecode import _quick, snapshot
from memdir.claudecode._stores import remembered_projects, state_lock
from memdir.cli import cli

from .helpers import FakeHome, Layout


def run(*args: str, payload: dict[str, object] | None = None) -> tuple[int, str, str]:
    given = None if payload is None else json.dumps(payload)
    result = CliRunner().invoke(cli, list(args), input=given)
    return result.exit_code, result.stdout, result.stderr


def test_a_first_snapshot_records_every_directory(layout: Layout) -> None:
    found = snapshot()
    assert found.directories == 7  # app, blog, cloned, scratch; reviewer, planner (project), planner (local)
    assert sorted(r.location.label for r in found.recorded) == sorted([
        f"project {layout.app}", f"project {layout.blog}", f"project {layout.cloned}", f"project {layout.scratch}",
        f"agent planner (local scope of {layout.app})", f"agent planner (project scope of {layout.app})",
        "agent reviewer (user scope)",
    ])  # fmt: skip
    assert found.versions == 4 + 2 + 1 + 1 + 1 + 1 + 1


def test_changes_written_as_claude_code_writes_become_versions(layout: Layout) -> None:
    snapshot()
    note = layout.app_memory / "feedback_testing.md"
    note.write_text(note.read_text().replace("-x", "-x -q"))  # Claude Code's Edit tool: a rewrite in place
    (layout.app_memory / "user_role.md").write_text("---\nname: Role\ndescription: who\ntype: user\n---\nSRE\n")
    (layout.scratch_memory / "MEMORY.md").unlink()
    payload = {"session_id": "sess-42", "cwd": str(layout.feature), "hook_event_name": "SessionEnd"}
    code, out, err = run("claude-code", "snapshot", payload=payload)
    assert (code, out) == (0, "")  # nothing on stdout: a SessionStart hook's output would reach Claude's context
    assert err == "3 changes recorded in 2 of 7 Claude Code memory directories\n"
    with open_store("claude-code:") as store:
        (*_, edit) = store.history("/memories/feedback_testing.md")
        (created,) = store.history("/memories/user_role.md")
    assert (edit.op, edit.actor, edit.session, edit.source) == (
        "write",
        "claude-code",
        "sess-42",
        "snapshot (SessionEnd hook)",
    )
    assert created.op == "create"
    with open_store(f"claude-code:{layout.scratch}") as store:
        (*_, gone) = store.history("/memories/MEMORY.md")
    # Not this session's project: the change is recorded, but not attributed to the session.
    assert (gone.op, gone.session) == ("delete", None)


def test_diff_show_history_and_search_work_as_on_any_store(layout: Layout) -> None:
    snapshot()
    note = layout.app_memory / "feedback_testing.md"
    note.write_text(note.read_text().replace("Run pytest with -x.", "Run pytest with -x and --lf."))
    snapshot()
    code, out, _ = run("--store", "claude-code:", "diff", "/memories/feedback_testing.md")
    assert code == 0
    assert "-Run pytest with -x.\n+Run pytest with -x and --lf.\n" in out
    code, out, _ = run("--store", "claude-code:", "history", "/memories/feedback_testing.md")
    lines = out.splitlines()
    assert [line.split("\t")[2:4] for line in lines] == [["write", "claude-code"], ["create", "claude-code"]]
    first = lines[-1].split("\t")[0]
    code, out, _ = run("--store", "claude-code:", "show", f"/memories/feedback_testing.md@{first}")
    assert out.endswith("Run pytest with -x.\n")
    code, out, _ = run("--store", "claude-code:", "search", "pytest", "--mode", "fts", "--json")
    assert [hit["path"] for hit in json.loads(out)["hits"]] == ["/memories/feedback_testing.md"]
    code, out, _ = run("--store", "claude-code:", "restore", "/memories/feedback_testing.md", first)
    assert code == 0 and note.read_text().endswith("Run pytest with -x.\n")


def test_snapshot_and_status_write_nothing_inside_claude_codes_directories(layout: Layout, fake: FakeHome) -> None:
    snapshot()  # the first one makes memdir's own files
    (layout.app_memory / "MEMORY.md").write_text("# Memory\n- rewritten\n")
    before = fake.listing()
    payload = {"session_id": "s", "cwd": str(layout.app), "hook_event_name": "PreCompact"}
    assert run("claude-code", "snapshot", payload=payload)[0] == 0
    assert run("claude-code", "status")[0] == 0
    assert run("claude-code", "status", "--json")[0] == 0
    assert fake.listing() == before


def test_the_quick_check(layout: Layout) -> None:
    assert not _quick.unchanged()  # no manifest yet
    snapshot()
    assert _quick.unchanged()
    os.utime(layout.reviewer / "MEMORY.md", ns=(1, 1))  # any change to any file of any directory
    assert not _quick.unchanged()
    snapshot()
    assert _quick.unchanged()
    new = layout.fake.claude / "projects" / "-somewhere-new" / "memory"  # a new project's memory appears
    new.mkdir(parents=True)
    assert not _quick.unchanged()
    snapshot()
    (layout.app / ".claude" / "settings.local.json").write_text('{"autoMemoryDirectory": "~/moved"}')
    assert not _quick.unchanged()  # a setting that moves a directory


def _deep_tree(top: Path, levels: int = 22) -> None:
    """A tree whose absolute paths pass PATH_MAX (4096 on Linux), made one directory descriptor at a time."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(levels):
        os.mkdir("d" * 200, dir_fd=fd)
        fd, parent = os.open("d" * 200, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd), fd
        os.close(parent)
    note = os.open("deep.md", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd)
    os.write(note, b"deep\n")
    os.close(note)
    os.close(fd)


def test_a_tree_deeper_than_path_max_is_fingerprinted_and_its_changes_recorded(layout: Layout) -> None:
    _deep_tree(layout.app_memory)
    snapshot()
    assert _quick.fingerprint(str(layout.app_memory)) != "unreadable"
    index = layout.app_memory / "MEMORY.md"
    index.write_text(index.read_text() + "- one more\n")
    assert not _quick.unchanged()
    assert [str(v.path) for r in snapshot().recorded for v in r.versions] == ["/memories/MEMORY.md"]


def test_an_unreadable_directory_is_looked_at_every_time(layout: Layout, monkeypatch: pytest.MonkeyPatch) -> None:
    real = _quick._walk

    def walk(directory: str, *rest: Any) -> None:
        if str(directory) == str(layout.app_memory):
            raise PermissionError(13, "Permission denied", directory)  # a folder another user owns, say
        real(directory, *rest)

    monkeypatch.setattr(_quick, "_walk", walk)
    snapshot()
    assert _quick.fingerprint(str(layout.app_memory)) == "unreadable"
    assert not _quick.unchanged()  # never "as last time": nothing could be compared
    index = layout.app_memory / "MEMORY.md"
    index.write_text(index.read_text() + "- one more\n")
    found = snapshot()
    assert [str(v.path) for r in found.recorded for v in r.versions] == ["/memories/MEMORY.md"]
    with open_store("claude-code:") as store:
        assert store.read("/memories/MEMORY.md").content.endswith(b"- one more\n")


def test_a_snapshot_that_records_nothing_prints_nothing(layout: Layout) -> None:
    assert "changes recorded" in run("claude-code", "snapshot")[2]  # the first one records every file
    index = layout.app_memory / "MEMORY.md"
    index.write_text(index.read_text() + "- one more\n")
    assert run("--store", "claude-code:", "ls")[0] == 0  # a command records the change first
    assert run("claude-code", "snapshot") == (0, "", "")  # looked at a changed directory, found nothing new


def test_the_quick_check_knows_the_hooks_working_directories(layout: Layout) -> None:
    snapshot(payload={"cwd": str(layout.app), "hook_event_name": "SessionStart"})
    assert _stdin_unchanged({"cwd": str(layout.app)})
    assert not _stdin_unchanged({"cwd": str(layout.blog / "sub")})  # a session somewhere new: look properly


def _stdin_unchanged(payload: dict[str, str]) -> bool:
    code = "import sys; from memdir.claudecode import _quick; print(_quick.unchanged())"
    done = subprocess.run(
        [sys.executable, "-c", code], input=json.dumps(payload), capture_output=True, text=True, check=True
    )
    return done.stdout.strip() == "True"


def test_the_hook_command_with_nothing_new_loads_no_store(layout: Layout, _isolated_home: Path) -> None:
    """The whole `memdir claude-code snapshot` of a hook that finds nothing: the stores, SQLite and the CLI stay
    unloaded (that is what keeps it fast: benchmarks/bench_claude_code.py times it)."""
    snapshot()
    code = (
        "import sys; sys.argv = ['memdir', 'claude-code', 'snapshot']; from memdir._launch import main; main(); "
        "print(sorted(m for m in ('sqlite3', 'click', 'memdir.store', 'memdir.cli', 'yaml') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], input="{}", capture_output=True, text=True, check=True)
    assert done.stdout == "[]\n"
    with open_store("claude-code:") as store:
        assert len(list(store.log(0, rescan=False))) == 4  # and it recorded nothing


_REMEMBER = """
import os, sys, time
from pathlib import Path
from memdir.claudecode._stores import remember_project
while not os.path.exists(sys.argv[1]):
    time.sleep(0.001)
remember_project(Path(sys.argv[2]))
"""


def test_hooks_noting_projects_at_once_keep_every_project(tmp_path: Path) -> None:
    """Claude Code starts its hooks together: each read projects.json, added its project and wrote it back, so
    one overwrote another's (7 of 96 projects lost in a tester's runs)."""
    go = tmp_path / "go"
    projects = [str(tmp_path / f"p{n}") for n in range(8)]
    script = [sys.executable, "-c", _REMEMBER, str(go)]
    procs = [subprocess.Popen([*script, p]) for p in projects]
    go.touch()
    assert [p.wait(timeout=120) for p in procs] == [0] * len(procs)
    assert set(projects) <= set(remembered_projects())
    registry = Path(os.environ["MEMDIR_HOME"])  # the lock is one a hook in any process takes
    with state_lock(registry / "x.json"):
        fd = os.open(registry / ".x.json.lock", os.O_RDWR)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
