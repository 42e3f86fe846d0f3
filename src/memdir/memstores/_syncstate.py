"""What `memdir sync` remembers between runs: for each pair of sides, the state both agreed on at the last sync.

A *link* is one memory as both sides last agreed it was: its path, its id on each side (a memory id on a Memory
Stores API, the path in a memdir store) and the SHA-256 of its content on each side (they differ when a side's gate
redacted a secret on the way in: the copy is the redacted text). A side's *cursor* is how far its change log was read
(a memdir store's version number), so renames since then are followed by the log, not guessed.

Kept in a SQLite database of its own (``sync.db`` in memdir's data directory, or ``--state FILE``), created 0600:
each change applied is recorded at once, in its own transaction, so a sync killed at any point resumes where it
stopped (`memdir.memstores._sync`). One run at a time per pair: a second one is refused while the first holds
the pair's lock file.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import ConfigError
from ..store._db import SqlDatabase
from ..store._migrations import Migrations, Schema

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

__all__ = ["Link", "SyncState"]

migrations = Migrations("memdir-sync", dialect="sqlite")


@migrations("0001-links")
def _tables(schema: Schema) -> None:
    schema.script(
        """
        CREATE TABLE sync_pairs (
            pair TEXT PRIMARY KEY,
            a TEXT NOT NULL,
            b TEXT NOT NULL,
            a_cursor INTEGER,
            b_cursor INTEGER
        );
        CREATE TABLE sync_links (
            pair TEXT NOT NULL,
            a TEXT NOT NULL,
            b TEXT NOT NULL,
            key TEXT NOT NULL,
            sha256 TEXT NOT NULL,
            PRIMARY KEY (pair, a)
        );
        CREATE UNIQUE INDEX sync_links_by_b ON sync_links (pair, b);
        """
    )


@migrations("0002-a-hash-per-side")
def _hash_per_side(schema: Schema) -> None:
    # ``sha256`` is side a's hash; b's is kept when it differs (NULL in rows from before: the same). A copy a gate
    # redacted on the way in never matches its source: with one hash, every run saw a change and copied it again.
    schema.script("ALTER TABLE sync_links ADD COLUMN b_sha256 TEXT;")


@dataclass(frozen=True, slots=True)
class Link:
    """One memory as both sides last agreed on it: ``a`` and ``b`` are its ids on each side, ``a_sha256`` and
    ``b_sha256`` the SHA-256 of its content there."""

    a: str
    b: str
    key: str
    a_sha256: str
    b_sha256: str


class SyncState:
    """The links and cursors of one pair of sides (``a`` and ``b``: their identities, in a fixed order)."""

    def __init__(self, location: Path, a: str, b: str) -> None:
        self.a, self.b = a, b
        self.pair = hashlib.sha256(f"{a}\n{b}".encode()).hexdigest()[:32]
        self._db = SqlDatabase(location)
        self._db.ensure(migrations)
        self._lock_path = location.with_name(f"{location.name}-{self.pair}.lock")
        with self._db.transaction("record the sync pair") as conn:
            conn.execute("INSERT OR IGNORE INTO sync_pairs (pair, a, b) VALUES (?, ?, ?)", (self.pair, a, b))

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        """Held for a whole run: a second `memdir sync` of the same pair is refused meanwhile."""
        fd = os.open(self._lock_path, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError as exc:
                raise ConfigError("another memdir sync of these two sides is running; wait for it to end") from exc
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the lock

    def links(self) -> list[Link]:
        with self._db.reading("read the sync state") as conn:
            rows = conn.execute(
                "SELECT a, b, key, sha256, coalesce(b_sha256, sha256) FROM sync_links WHERE pair = ?", (self.pair,)
            ).fetchall()
        return [Link(*(str(value) for value in row)) for row in rows]

    def cursors(self) -> tuple[int | None, int | None]:
        with self._db.reading("read the sync state") as conn:
            row = conn.execute("SELECT a_cursor, b_cursor FROM sync_pairs WHERE pair = ?", (self.pair,)).fetchone()
        return (None, None) if row is None else (row[0], row[1])

    def set_cursors(self, a: int | None, b: int | None) -> None:
        with self._db.transaction("record the sync state") as conn:
            conn.execute("UPDATE sync_pairs SET a_cursor = ?, b_cursor = ? WHERE pair = ?", (a, b, self.pair))

    def put(self, link: Link, replaces: Link | None = None) -> None:
        """Record ``link`` (in place of ``replaces``, whose ids may have changed: a store's id is its path)."""
        with self._db.transaction("record the sync state") as conn:
            if replaces is not None:
                conn.execute("DELETE FROM sync_links WHERE pair = ? AND a = ?", (self.pair, replaces.a))
            conn.execute("DELETE FROM sync_links WHERE pair = ? AND (a = ? OR b = ?)", (self.pair, link.a, link.b))
            conn.execute(
                "INSERT INTO sync_links (pair, a, b, key, sha256, b_sha256) VALUES (?, ?, ?, ?, ?, ?)",
                (self.pair, link.a, link.b, link.key, link.a_sha256, link.b_sha256),
            )

    def drop(self, link: Link) -> None:
        with self._db.transaction("record the sync state") as conn:
            conn.execute("DELETE FROM sync_links WHERE pair = ? AND a = ?", (self.pair, link.a))

    def close(self) -> None:
        self._db.close()
