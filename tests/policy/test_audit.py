"""The audit log: every read and write, who and what and when and which content (by hash), append-only, with reads
buffered off the hot path."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from memdir import MemoryTool, Store, open_store
from memdir.policy.audit import AuditLog, audit_log
from memdir.store._records import sha256_hex
from support.postgres import database_url

KEY = "AKIAQ3EGUSXR7ZPLM4NB"  # an AWS access key id of the right shape (made up): redacted by the default policy


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store whose audit log can be read past memdir: a SQLite file, or a PostgreSQL database."""
    return f"sqlite://{tmp_path / 'm.db'}" if request.param == "sqlite" else database_url(str(tmp_path))


def test_reads_and_writes_are_recorded_with_who_what_and_hash(store: Store) -> None:
    with MemoryTool(store, actor="model", session="s-1", source="chat") as tool:
        tool.execute({"command": "create", "path": "/memories/a.md", "file_text": "hello\n"})
        tool.execute({"command": "view", "path": "/memories/a.md"})
        tool.execute({"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/b.md"})
        tool.execute({"command": "view", "path": "/memories/../etc/passwd"})
    entries = audit_log(store).entries()
    assert [(e.command, e.path, e.new_path, e.outcome) for e in entries] == [
        ("create", "/memories/a.md", None, "ok"),
        ("view", "/memories/a.md", None, "ok"),
        ("rename", "/memories/a.md", "/memories/b.md", "ok"),
        ("view", "/memories/../etc/passwd", None, "error"),
    ]
    assert {(e.channel, e.actor, e.session, e.source) for e in entries} == {("tool", "model", "s-1", "chat")}
    assert entries[0].sha256 == entries[1].sha256 == sha256_hex(b"hello\n")
    assert (entries[0].size, entries[0].version) == (6, 1)


def test_the_log_filters_by_path_and_time(store: Store) -> None:
    with MemoryTool(store) as tool:
        for name in ("a", "dir/b", "dir/c"):
            tool.execute({"command": "create", "path": f"/memories/{name}.md", "file_text": "x"})
    log = audit_log(store)
    assert [e.path for e in log.entries(path="/memories/dir")] == ["/memories/dir/b.md", "/memories/dir/c.md"]
    assert [e.path for e in log.entries(path="/memories/a.md")] == ["/memories/a.md"]
    assert log.entries(since=log.entries()[-1].ts + 1) == []
    assert [e.path for e in log.entries(limit=1)] == ["/memories/dir/c.md"]


def _rows(url: str) -> int:
    """Audit rows, counted on a connection of the test's own (what another process would see)."""
    if url.startswith("postgresql://"):
        with psycopg.connect(url) as pg:
            (table,) = pg.execute("SELECT to_regclass('audit')").fetchone() or (None,)
            counted = pg.execute("SELECT count(*) FROM audit").fetchone() if table else None
        return int(counted[0]) if counted else 0
    conn = sqlite3.connect(url.removeprefix("sqlite://"))
    try:
        return int(conn.execute("SELECT count(*) FROM audit").fetchone()[0])
    except sqlite3.OperationalError:  # not created yet
        return 0
    finally:
        conn.close()


def test_reads_and_clean_writes_are_buffered_and_acted_on_writes_are_not(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(AuditLog, "max_delay", 3600.0)  # no flush by age during this test
    with open_store(url) as store:
        tool = MemoryTool(store)
        tool.execute({"command": "create", "path": "/memories/a.md", "file_text": "x"})
        for _ in range(5):
            tool.execute({"command": "view", "path": "/memories/a.md"})
        assert _rows(url) == 0  # a clean write and reads wait in the buffer (the write's version is recorded)
        assert [v.op for v in store.log()] == ["create"]
        tool.execute({"command": "create", "path": "/memories/b.md", "file_text": f"key {KEY}"})
        assert _rows(url) == 7  # a redacted write is flushed at once, with what waited before it
        tool.close()
        assert _rows(url) == 7


def test_a_full_buffer_is_flushed_in_the_background_at_once(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The command that fills the buffer does not wait for the transaction; the background thread writes it
    without waiting for ``max_delay`` (an hour here)."""
    monkeypatch.setattr(AuditLog, "max_delay", 3600.0)
    monkeypatch.setattr(AuditLog, "max_records", 3)
    with open_store(url) as store:
        store.write("/memories/a.md", b"x")
        tool = MemoryTool(store)
        for _ in range(2):
            tool.execute({"command": "view", "path": "/memories/a.md"})
        time.sleep(0.1)
        assert _rows(url) == 0
        tool.execute({"command": "view", "path": "/memories/a.md"})
        assert _eventually(lambda: _rows(url) == 3)
        for _ in range(3):  # and again: the thread that wrote the first batch may have ended meanwhile
            tool.execute({"command": "view", "path": "/memories/a.md"})
        assert _eventually(lambda: _rows(url) == 6)
        tool.close()


def _eventually(condition: Callable[[], bool]) -> bool:
    """Poll for up to 10 s: a background thread's work is awaited, not a fixed sleep."""
    done = threading.Event()
    for _ in range(400):
        if condition():
            return True
        done.wait(0.025)
    return condition()


def test_an_idle_process_flushes_in_the_background(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(AuditLog, "max_delay", 0.05)
    with open_store(url) as store:
        store.write("/memories/a.md", b"x")
        tool = MemoryTool(store)
        tool.execute({"command": "view", "path": "/memories/a.md"})
        done = threading.Event()
        for _ in range(400):  # the timer thread writes it; wait for that, not for a fixed time
            if _rows(url) == 1:
                done.set()
                break
            done.wait(0.025)
        assert done.is_set()
        tool.close()


def test_the_log_is_append_only(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with open_store(f"sqlite://{db}") as store, MemoryTool(store) as tool:
        tool.execute({"command": "create", "path": "/memories/a.md", "file_text": "x"})
    conn = sqlite3.connect(db)
    try:
        for statement in ("UPDATE audit SET actor = 'nobody'", "DELETE FROM audit"):
            with pytest.raises(sqlite3.IntegrityError, match="append-only"):
                conn.execute(statement)
    finally:
        conn.close()


def test_the_log_is_append_only_on_postgres(tmp_path: Path) -> None:
    url = database_url(str(tmp_path))
    with open_store(url) as store, MemoryTool(store) as tool:
        tool.execute({"command": "create", "path": "/memories/a.md", "file_text": "x"})
    with psycopg.connect(url, autocommit=True) as pg:
        for statement in ("UPDATE audit SET actor = 'nobody'", "DELETE FROM audit", "TRUNCATE audit"):
            with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
                pg.execute(statement)  # type: ignore[arg-type]
    assert _rows(url) == 1


def test_refused_paths_holding_nul_or_surrogates_are_logged(store: Store) -> None:
    """A path is logged as sent even when refused; one no database can store as it is must not stop the log."""
    with MemoryTool(store) as tool:
        tool.execute({"command": "view", "path": "/memories/a\x00b.md"})
        tool.execute({"command": "view", "path": "/memories/\ud800.md"})
        tool.execute({"command": "create", "path": "/memories/ok.md", "file_text": "x"})
    entries = audit_log(store).entries()
    assert [(e.path, e.outcome) for e in entries] == [
        ("/memories/a\ufffdb.md", "error"),
        ("/memories/?.md", "error"),
        ("/memories/ok.md", "ok"),
    ]


def test_last_access_comes_from_reads_without_a_write_per_read(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(AuditLog, "max_delay", 3600.0)
    store.write("/memories/a.md", b"x")
    tool = MemoryTool(store)
    tool.execute({"command": "view", "path": "/memories/a.md"})
    pending = audit_log(store).last_access()["/memories/a.md"]  # the buffered read counts already
    tool.close()
    assert audit_log(store).last_access()["/memories/a.md"] == pending


def test_the_cli_is_audited(url: str) -> None:
    from click.testing import CliRunner

    from memdir.cli import cli

    with open_store(url) as store:
        store.write("/memories/a.md", b"hello\n")
        store.write("/memories/a.md", b"bye\n")
    for args in (["cat", "/memories/a.md"], ["restore", "/memories/a.md", "1"], ["history", "/memories/a.md"]):
        assert CliRunner().invoke(cli, ["--store", url, *args]).exit_code == 0
    with open_store(url) as store:
        entries = audit_log(store).entries()
    assert [(e.channel, e.actor, e.command, e.path) for e in entries] == [
        ("cli", "user", "cat", "/memories/a.md"),
        ("cli", "user", "restore", "/memories/a.md"),
        ("cli", "user", "history", "/memories/a.md"),
    ]
    assert entries[0].sha256 == sha256_hex(b"bye\n")


def test_a_command_method_called_directly_is_recorded_once(store: Store) -> None:
    store.write("/memories/a.md", b"x")
    with MemoryTool(store) as tool:
        tool.view("/memories/a.md")  # as the agent's backfill reads
        tool.execute({"command": "view", "path": "/memories/a.md"})
    assert [(e.command, e.path, e.outcome) for e in audit_log(store).entries()] == [
        ("view", "/memories/a.md", "ok"),
        ("view", "/memories/a.md", "ok"),
    ]


def test_closing_the_tool_waits_for_the_background_flush_in_flight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tool's close returns once the batch the background thread took is written: the store can be closed
    right after without that write opening the database again (it used to re-create the files of a store being
    deleted)."""
    monkeypatch.setattr(AuditLog, "max_records", 1)
    url = f"sqlite://{tmp_path / 'm.db'}"
    writing, release = threading.Event(), threading.Event()
    order: list[str] = []
    real_write = AuditLog._write

    def slow_write(self: AuditLog, batch: list[object]) -> None:
        if threading.current_thread().name == "memdir-audit-flush":
            writing.set()
            release.wait(30)
        real_write(self, batch)  # type: ignore[arg-type]
        order.append("written")

    monkeypatch.setattr(AuditLog, "_write", slow_write)
    store = open_store(url)
    store.write("/memories/a.md", b"x")
    tool = MemoryTool(store)
    tool.execute({"command": "view", "path": "/memories/a.md"})
    tool.execute({"command": "view", "path": "/memories/a.md"})  # the buffer is full: the thread takes it
    assert writing.wait(30)
    closer = threading.Thread(target=lambda: (tool.close(), order.append("closed")))
    closer.start()
    closer.join(0.5)  # without the fix it returned at once, having nothing to write itself
    assert closer.is_alive()  # blocked behind the write in flight, which cannot end before `release`
    release.set()
    closer.join(30)
    store.close()
    # The thread's batch is written before close returns (the thread may have taken both entries, or close
    # the second: either way nothing is written after "closed").
    assert order[-1] == "closed" and order.count("written") in (1, 2)
    assert _rows(url) == 2
