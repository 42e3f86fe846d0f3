"""The write-ahead log is checkpointed beside the writes (`memdir.store._checkpoint`), never by a command's COMMIT
while the background keeps up, and nothing of it outlives the database's close."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from memdir import SQLiteStore
from memdir.store import _checkpoint
from memdir.store._db import SqlDatabase

PAGE = 4096


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def open_fds_to(path: Path) -> list[str]:
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(path)):
            found.append(target)
    return found


def test_a_commit_leaves_the_checkpoint_to_the_background(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_checkpoint, "EVERY", 5)
    store = SQLiteStore(tmp_path / "m.db")
    with store._index.statement("read the threshold") as conn:
        assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == _checkpoint.FOREGROUND_PAGES
    _checkpoint.wait_idle(os.path.realpath(tmp_path / "m.db"))  # one the set-up's commits started, if any
    size = (tmp_path / "m.db").stat().st_size
    for i in range(5):  # a few pages each: far below any COMMIT's own threshold
        store.write(f"/memories/n{i}.md", b"a note " * 500)
    # The fifth commit started a checkpoint: the pages reach the database file without another write.
    wait_for(lambda: (tmp_path / "m.db").stat().st_size > size, "the log's pages in the database file")
    _checkpoint.wait_idle(os.path.realpath(tmp_path / "m.db"))
    store.close()


def test_the_log_stays_short_over_many_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A checkpoint that copied everything lets the next writer start the log again from its beginning."""
    monkeypatch.setattr(_checkpoint, "EVERY", 16)
    store = SQLiteStore(tmp_path / "m.db")
    key = os.path.realpath(tmp_path / "m.db")
    for i in range(400):
        store.write("/memories/n.md", f"version {i} ".encode() * 200)
        _checkpoint.wait_idle(key)  # each checkpoint done before the next write: the test's order is fixed
    wal = (tmp_path / "m.db-wal").stat().st_size
    # ~400 commits of several pages each: thousands of pages if the log were only reset by a COMMIT's own
    # checkpoint (SQLite's default threshold is 1,000 pages); about 16 commits' worth here.
    assert wal < 400 * (PAGE + 24), wal
    store.close()


def test_close_waits_for_a_checkpoint_in_flight_and_leaves_nothing_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("needs /proc to list open descriptors")
    monkeypatch.setattr(_checkpoint, "EVERY", 1)  # every commit starts one
    db = tmp_path / "m.db"
    for round_ in range(20):
        store = SQLiteStore(db)
        store.write(f"/memories/r{round_}.md", b"x" * 3000)
        store.close()
        assert open_fds_to(db) == []


def test_a_removed_database_is_never_made_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_checkpoint, "EVERY", 1)
    db = tmp_path / "gone.db"
    database = SqlDatabase(db)
    with database.transaction("set up") as conn:
        conn.execute("CREATE TABLE t (x)")
    database.close()
    for name in ("gone.db", "gone.db-wal", "gone.db-shm"):
        (tmp_path / name).unlink(missing_ok=True)
    _checkpoint.committed(os.path.realpath(db))  # as if a last commit had raced the removal
    _checkpoint.wait_idle(os.path.realpath(db))
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_does_not_wait_for_the_parents_checkpoint(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    store = SQLiteStore(db)
    store.write("/memories/a.md", b"before the fork")
    key = os.path.realpath(db)
    entry = _checkpoint._FILES[key]
    with entry.idle:
        entry.busy = True  # a checkpoint of the parent's in flight at the fork: no thread of the child's
    try:
        pid = os.fork()
        if pid == 0:  # the child: writes and closes at once, its own checkpoints started afresh
            code = 1
            try:
                child = SQLiteStore(db)
                child.write("/memories/b.md", b"from the child")
                child.close()
                code = 0
            finally:
                os._exit(code)
        deadline = time.monotonic() + 30  # the close would wait out `_IDLE_WAIT` (60 s) for the parent's
        while (done := os.waitpid(pid, os.WNOHANG)) == (0, 0):
            assert time.monotonic() < deadline, "the child's close waited for the parent's checkpoint"
            time.sleep(0.01)
        assert os.waitstatus_to_exitcode(done[1]) == 0
    finally:
        with entry.idle:
            entry.busy = False
            entry.idle.notify_all()
    assert store.read("/memories/b.md").content == b"from the child"
    store.close()


def test_a_redaction_empties_the_log_even_when_a_background_checkpoint_is_due(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The redaction's own COMMIT starts a background checkpoint (every commit does, here) just before the
    redaction empties the log itself: SQLite would refuse the second checkpointer, and the log keep the bytes."""
    monkeypatch.setattr(_checkpoint, "EVERY", 1)
    db = tmp_path / "m.db"
    store = SQLiteStore(db)
    secret = b"the redacted text itself " * 40
    old = store.write("/memories/a.md", secret)
    store.write("/memories/a.md", b"something else")
    for attempt in range(10):  # a fresh race each time
        assert old.sha256 is not None
        store.redact_content(old.sha256)
        assert (tmp_path / "m.db-wal").stat().st_size == 0, f"the log was not emptied (attempt {attempt})"
        store.write("/memories/a.md", secret)  # the same bytes again, and away again
        store.write("/memories/a.md", b"something else")
    assert secret not in db.read_bytes()
    store.close()
