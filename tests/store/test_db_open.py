"""Opening a store's database while other processes open or write it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memdir.errors import StorageError
from memdir.store import _db


def _held_in_rollback_mode(path: Path) -> sqlite3.Connection:
    """Another process's connection to a database not yet in WAL, in the middle of a write transaction."""
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=0)
    other.execute("CREATE TABLE t (x)")
    other.execute("BEGIN IMMEDIATE")
    return other


def test_opening_waits_for_a_writer_that_holds_a_new_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Switching to WAL under another connection's write lock fails at once, without SQLite's busy handler:
    # opening must wait, as it does for any other lock (one of six processes creating a store at once failed).
    path = tmp_path / "new.db"
    other = _held_in_rollback_mode(path)
    waits: list[float] = []

    def wait(seconds: float) -> None:
        if not waits:
            other.execute("COMMIT")  # the other process finishes while this one waits
        waits.append(seconds)

    monkeypatch.setattr(_db.time, "sleep", wait)
    conn = _db.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert len(waits) >= 1
    conn.close()
    other.close()


def test_opening_gives_up_after_the_busy_timeout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "new.db"
    other = _held_in_rollback_mode(path)
    clock = iter(range(0, 10_000, 1))
    monkeypatch.setattr(_db.time, "monotonic", lambda: float(next(clock)))
    monkeypatch.setattr(_db.time, "sleep", lambda _seconds: None)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        _db.connect(path, busy_timeout_ms=5_000)
    db = _db.SqlDatabase(path)
    with pytest.raises(StorageError, match="locked by another process"):
        db.conn  # noqa: B018 - the property opens the connection
    other.close()
