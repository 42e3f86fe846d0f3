"""Closing a SQLite-backed database while another thread runs a transaction on it.

A tool's audit log writes from a thread of its own, and nothing stops a program from closing the store first.
Closing a connection under a running statement used to crash the interpreter (a segmentation fault, reproduced by
the script below within a few hundred closes); `close` now waits for the other threads' transactions.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from memdir.errors import StorageError
from memdir.store import _db
from memdir.store._db import SqlDatabase

HAMMER = r"""
import contextlib, sys, threading, time
from memdir.errors import StorageError
from memdir.store._db import SqlDatabase

db = SqlDatabase(sys.argv[1])
with db.transaction("set up") as conn:
    conn.execute("CREATE TABLE t (x)")
stop = False

def write():
    while not stop:
        with contextlib.suppress(StorageError), db.transaction("write") as conn:
            conn.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(300)])

thread = threading.Thread(target=write)
thread.start()
for _ in range(400):
    db.close()
    time.sleep(0.0003)
stop = True
thread.join()
with db.reading("count") as conn:
    print(conn.execute("SELECT count(*) FROM t").fetchone()[0] % 300)
"""


def test_closing_under_another_threads_transactions_never_crashes(tmp_path: Path) -> None:
    script = tmp_path / "hammer.py"
    script.write_text(HAMMER)
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "x.db")], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == "0\n"  # every transaction whole: 300 rows or none


def test_close_from_inside_a_transaction_does_not_wait_for_itself(tmp_path: Path) -> None:
    db = SqlDatabase(tmp_path / "x.db")
    with pytest.raises(StorageError, match="could not write"), db.transaction("write") as conn:
        conn.execute("CREATE TABLE t (x)")
        db.close()  # the caller's own transaction: closed under it at once, which its COMMIT then reports
    assert db.closed


def test_close_waits_for_a_transaction_on_another_thread_then_gives_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = SqlDatabase(tmp_path / "x.db")
    inside, release = threading.Event(), threading.Event()

    def hold() -> None:
        with db.transaction("write") as conn:
            conn.execute("CREATE TABLE t (x)")
            inside.set()
            release.wait(10)

    thread = threading.Thread(target=hold)
    thread.start()
    assert inside.wait(10)
    monkeypatch.setattr(_db, "_CLOSE_WAIT", 0.2)
    with pytest.raises(StorageError, match="another thread is still using it"):
        db.close()
    assert not db.closed
    release.set()
    thread.join(10)
    db.close()  # nothing running now
    assert db.closed
    with db.reading("read") as conn:  # reopens, and the other thread's transaction was committed
        assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 0
    db.close()
