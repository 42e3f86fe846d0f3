"""Checkpoints of a SQLite database's write-ahead log, run beside the writes instead of inside one of them.

SQLite copies the log back into the database file (a *checkpoint*) when a COMMIT leaves it longer than
``wal_autocheckpoint`` pages. That COMMIT then also writes every page back and fsyncs the log and the file: a few
milliseconds on a quiet disk, tens while another program writes, all on the time of the command that happened to
commit. So the connections memdir opens set the threshold high (`FOREGROUND_PAGES`, a safety net), and every
`EVERY` write commits of a process to one database file start one checkpoint on a thread of its own, on a
connection of its own:

- PASSIVE: it never waits for, nor blocks, a reader or a writer; what a long reader still needs is copied by a
  later one. A writer that starts after a complete checkpoint begins the log again from its start, so the log's
  file stays about as long as `EVERY` commits write.
- sqlite3 lets go of the GIL while SQLite works, so the copy and the fsyncs overlap the next commands.
- Best effort: a checkpoint that fails (the file gone, the disk full) is left to the next one, and to the
  committing connections' own threshold.
- At most one runs per database file, and `wait_idle` (a database's close) waits for it: no connection of this
  module outlives the store's. The connection opens the file ``mode=rw``, so it never creates one that was removed.
- `held`: none runs while a checkpoint of memdir's own must find the lock free (a redaction empties the log:
  SQLite refuses a second checkpointer at once, without waiting, and the log would keep the redacted bytes).
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import urllib.parse
from typing import TYPE_CHECKING

from ._perfile import PerFile

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["EVERY", "FOREGROUND_PAGES", "committed", "held", "wait_idle"]

EVERY = 128  # write commits between two background checkpoints (a write dirties ~4-8 pages)
FOREGROUND_PAGES = 4_000  # the committing connection's own threshold (SQLite's default: 1,000), should these lag

_IDLE_WAIT = 60.0  # seconds a close waits for a checkpoint in flight (one takes milliseconds)


class _File:
    """The checkpoints of one database file in this process: commits counted, one checkpoint at a time."""

    __slots__ = ("busy", "commits", "held", "idle", "uri")

    def __init__(self, path: str) -> None:
        self.uri = "file:" + urllib.parse.quote(path) + "?mode=rw"
        self.commits = 0
        self.busy = False  # a checkpoint runs
        self.held = 0  # blocks of `held` running: none may start
        self.idle = threading.Condition(threading.Lock())


_FILES = PerFile(_File)  # a forked child starts afresh: a checkpoint the parent ran is no thread of the child's


def committed(path: str) -> None:
    """A write transaction on the database file ``path`` (its real path) committed: every `EVERY`th starts a
    checkpoint, unless one is running."""
    entry = _FILES[path]
    entry.commits += 1  # under the GIL; a count lost to a race only moves the next checkpoint by one commit
    if entry.commits < EVERY:
        return
    with entry.idle:
        if entry.busy or entry.held:
            return  # counted on: the next commit tries again
        entry.busy, entry.commits = True, 0
    try:
        threading.Thread(target=_run, args=(entry,), name="memdir-checkpoint", daemon=True).start()
    except RuntimeError:  # no thread can be started (interpreter shutdown): the foreground threshold remains
        _done(entry)


def _run(entry: _File) -> None:
    try:
        with contextlib.closing(sqlite3.connect(entry.uri, uri=True, isolation_level=None, timeout=0)) as conn:
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    except sqlite3.Error:
        pass  # best effort (see the module docstring)
    finally:
        _done(entry)


def _done(entry: _File) -> None:
    with entry.idle:
        entry.busy = False
        entry.idle.notify_all()


def wait_idle(path: str) -> None:
    """Return once no checkpoint of ``path`` is running (a database closes: nothing of ours may keep it open)."""
    entry = _FILES.get(path)
    if entry is not None:
        with entry.idle:
            entry.idle.wait_for(lambda: not entry.busy, timeout=_IDLE_WAIT)


@contextlib.contextmanager
def held(path: str) -> Iterator[None]:
    """No background checkpoint of ``path`` runs inside the block (one in flight is waited for first)."""
    entry = _FILES[path]
    with entry.idle:
        entry.held += 1
        entry.idle.wait_for(lambda: not entry.busy, timeout=_IDLE_WAIT)
    try:
        yield
    finally:
        with entry.idle:
            entry.held -= 1
