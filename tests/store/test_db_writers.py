"""Writers of one process on one SQLite file queue on a lock of the process (`memdir.store._db._writers_of`):
every database object on the file shares it, a forked child does not inherit a lock held by a thread it lacks,
and a writer that waits too long gets a clear error, not a hang."""

from __future__ import annotations

import contextlib
import multiprocessing
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from memdir.errors import StorageError
from memdir.store import _db
from memdir.store._db import SqlDatabase


def made(path: Path) -> SqlDatabase:
    db = SqlDatabase(path)
    with db.transaction("set up") as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS t (x)")
    return db


def test_two_database_objects_on_one_file_share_the_writers_lock(tmp_path: Path) -> None:
    first, second = made(tmp_path / "a.db"), made(tmp_path / "a.db")
    inside, leave = threading.Event(), threading.Event()

    def hold() -> None:
        with first.transaction("hold") as conn:
            conn.execute("INSERT INTO t VALUES (1)")
            inside.set()
            leave.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    assert inside.wait(10)
    lock = _db._writers_of(second._writer_key)
    assert lock is not None and not lock.acquire(blocking=False)  # the other object's writer holds it
    leave.set()
    holder.join()
    with second.transaction("after") as conn:  # taken at once when the holder commits
        conn.execute("INSERT INTO t VALUES (2)")
    with second.reading("count") as conn:
        assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 2
    first.close()
    second.close()


@contextlib.contextmanager
def held_by_another_thread(db: SqlDatabase) -> Iterator[None]:
    """This process's writers' lock of ``db``'s file, held by another thread while the block runs."""
    lock = _db._writers_of(db._writer_key)
    assert lock is not None
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with lock:
            held.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(10)
    try:
        yield
    finally:
        release.set()
        holder.join()


def _write_in_child(path: str, done: multiprocessing.Queue[str]) -> None:
    db = SqlDatabase(path)
    try:
        with db.transaction("write in the child") as conn:
            conn.execute("INSERT INTO t VALUES (3)")
        done.put("written")
    except StorageError as exc:
        done.put(str(exc))


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="POSIX fork only")
def test_a_forked_child_does_not_inherit_a_lock_held_by_a_parents_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = made(tmp_path / "a.db")
    monkeypatch.setattr(_db, "_WRITE_WAIT", 5.0)
    context = multiprocessing.get_context("fork")
    done: multiprocessing.Queue[str] = context.Queue()
    # The process lock only: SQLite's own lock is not held, so only ours could stop the child.
    with held_by_another_thread(db):
        child = context.Process(target=_write_in_child, args=(str(tmp_path / "a.db"), done))
        child.start()
        assert done.get(timeout=30) == "written"
    child.join(10)
    db.close()


def test_a_writer_that_waits_too_long_is_told_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = made(tmp_path / "a.db")
    monkeypatch.setattr(_db, "_WRITE_WAIT", 0.05)
    with (
        held_by_another_thread(db),
        pytest.raises(StorageError, match="could not write: the store is busy with another write; try again"),
        db.transaction("write"),
    ):
        pass
    with db.transaction("write") as conn:  # and nothing is left locked by the refusal
        conn.execute("INSERT INTO t VALUES (4)")
    db.close()
