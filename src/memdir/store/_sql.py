"""The SQLite layer shared by the SQLite store (content in the database) and the directory store's sidecar
(content on disk, the index and the history here): `SqlIndex`, the current state, the changes and the history
of a namespace, over the schema of `memdir.store._schema`."""

from __future__ import annotations

import sqlite3
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._chain import encode_tail, genesis, link, link_tail, stored
from ._db import SqlDatabase, connect, translate
from ._pending import (
    PENDING_COLUMNS,
    PendingOp,
    decode_ops,
    other_pending,
    pending_by_namespace,
    pending_columns,
)
from ._records import Origin, Quota, Usage, Version
from ._schema import check_schema_current, migrations
from ._sqlhistory import VERSION_COLUMNS, SqlHistory, version_of_row

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

__all__ = ["IndexRow", "PendingOp", "SqlIndex", "connect", "pending_by_namespace", "translate"]


@dataclass(frozen=True, slots=True)
class IndexRow:
    path: str
    version: int
    sha256: str
    size: int
    modified: float
    stamp: str | None


def _range(key: str) -> tuple[str, str]:
    """Keys strictly below directory ``key``: ``key/`` <= k < ``key0`` ('0' sorts right after '/')."""
    return (key + "/", key + "0") if key else ("", "\U0010ffff")


_Value = bytes | None  # a chain value (`_Counters` has a field named ``bytes``)


@dataclass(slots=True)
class _Counters:
    """A namespace's counters as a change under way has them (`SqlIndex.begin_change`)."""

    last_version: int
    files: int
    bytes: int
    chain: _Value  # the chain value of version ``last_version`` (the head; None while nothing is chained)


def _sql_link(previous: object, namespace: str, number: int, tail: str) -> bytes:
    """SQL function ``memdir_chain(chain, ns, version, tail)``: the chain value of a version numbered in SQL
    (`SqlIndex._bump`), computed in the UPDATE that gives out its number instead of a statement of its own."""
    return link_tail(stored(previous) or genesis("history", namespace), number, tail)


_BUMP = (
    "UPDATE namespaces SET last_version = last_version + 1, files = files + ?, bytes = bytes + ?, "
    "chain = memdir_chain(chain, ns, last_version + 1, ?) WHERE ns = ? RETURNING last_version, files, bytes, chain"
)


def _bumped(conn: sqlite3.Connection, args: tuple[Any, ...]) -> Any:
    """The namespace's row after `_BUMP`. sqlite3 turns any exception raised in a SQL function into one
    OperationalError and drops it: Ctrl-C arriving while `_sql_link` runs (a KeyboardInterrupt raised at its
    first instruction) would reach the user as a database error. The function cannot fail on its own inputs, so
    the statement is asked again: when it succeeds, what it met was the interruption, and it is raised as such
    (the write's transaction rolls back); when it fails again, the error is the statement's."""
    try:
        return conn.execute(_BUMP, args).fetchone()
    except sqlite3.OperationalError as exc:
        if "user-defined function raised exception" not in str(exc):
            raise
        conn.execute(_BUMP, args).fetchone()
        raise KeyboardInterrupt from None


class SqlIndex(SqlHistory, SqlDatabase):
    """Files, versions and blobs of one namespace in a SQLite database shared with other namespaces."""

    def __init__(
        self, location: str | Path, namespace: str, *, read_only: bool = False, page_size: int | None = None
    ) -> None:
        super().__init__(location, read_only=read_only, page_size=page_size)
        self.namespace = namespace
        self._genesis = genesis("history", namespace)
        self._change = threading.local()  # `_Counters` of the change this thread runs (`begin_change`), if any
        conn = self.conn
        try:
            if self.read_only:  # asked for, or the file turned out not to be writable
                check_schema_current(conn)
            else:
                migrations.apply(conn)
                conn.execute("INSERT OR IGNORE INTO namespaces (ns) VALUES (?)", (namespace,))
        except sqlite3.Error as exc:
            raise translate(exc, "open the store") from exc

    def _connect(self) -> sqlite3.Connection:
        conn = super()._connect()
        conn.create_function("memdir_chain", 4, _sql_link, deterministic=True)
        return conn

    # -- current state ------------------------------------------------------------------------------------

    def get(self, conn: sqlite3.Connection, key: str) -> IndexRow | None:
        row = conn.execute(
            "SELECT path, version, sha256, size, modified, stamp FROM files WHERE ns = ? AND path = ?",
            (self.namespace, key),
        ).fetchone()
        return None if row is None else IndexRow(*row)

    def file_among(self, conn: sqlite3.Connection, keys: list[str]) -> str | None:
        """The first of ``keys`` (ancestors of a path) that is a file, if any."""
        if not keys:
            return None
        marks = ",".join("?" * len(keys))
        row = conn.execute(
            f"SELECT path FROM files WHERE ns = ? AND path IN ({marks}) ORDER BY length(path) LIMIT 1",
            (self.namespace, *keys),
        ).fetchone()
        return None if row is None else str(row[0])

    def has_below(self, conn: sqlite3.Connection, key: str) -> bool:
        low, high = _range(key)
        row = conn.execute(
            "SELECT 1 FROM files WHERE ns = ? AND path >= ? AND path < ? LIMIT 1", (self.namespace, low, high)
        ).fetchone()
        return row is not None

    def below(self, conn: sqlite3.Connection, key: str, *, ordered: bool = True) -> list[IndexRow]:
        """The rows below directory ``key``; in tree order (by segments) unless ``ordered`` is False."""
        low, high = _range(key)
        # Tree order: '/' sorts as char(1), below every character a name may hold.
        order = " ORDER BY replace(path, '/', char(1))" if ordered else ""
        rows = conn.execute(
            "SELECT path, version, sha256, size, modified, stamp FROM files "
            f"WHERE ns = ? AND path >= ? AND path < ?{order}",
            (self.namespace, low, high),
        ).fetchall()
        return [IndexRow(*r) for r in rows]

    def size_below(self, conn: sqlite3.Connection, key: str) -> int:
        low, high = _range(key)
        row = conn.execute(
            "SELECT coalesce(sum(size), 0) FROM files WHERE ns = ? AND path >= ? AND path < ?",
            (self.namespace, low, high),
        ).fetchone()
        return int(row[0])

    def usage(self, conn: sqlite3.Connection) -> Usage:
        row = conn.execute("SELECT files, bytes FROM namespaces WHERE ns = ?", (self.namespace,)).fetchone()
        return Usage(files=int(row[0]), bytes=int(row[1])) if row else Usage(0, 0)

    def namespaces(self) -> list[str]:
        """Every namespace of the database that has recorded a version (opening one records its name only)."""
        try:
            rows = self.conn.execute("SELECT ns FROM namespaces WHERE last_version > 0 ORDER BY ns").fetchall()
        except sqlite3.Error as exc:
            raise translate(exc, "list the namespaces") from exc
        return [str(r[0]) for r in rows]

    def with_content(self, conn: sqlite3.Connection, key: str) -> tuple[IndexRow, bytes | None] | None:
        """``key``'s row and its content (None when the blob is missing) in one statement: a read needs no
        transaction around two."""
        row = conn.execute(
            "SELECT f.path, f.version, f.sha256, f.size, f.modified, f.stamp, b.content FROM files f "
            "LEFT JOIN blobs b ON b.ns = f.ns AND b.sha256 = f.sha256 WHERE f.ns = ? AND f.path = ?",
            (self.namespace, key),
        ).fetchone()
        if row is None:
            return None
        return IndexRow(*row[:6]), None if row[6] is None else bytes(row[6])

    def blob(self, conn: sqlite3.Connection, sha: str) -> bytes | None:
        row = conn.execute("SELECT content FROM blobs WHERE ns = ? AND sha256 = ?", (self.namespace, sha)).fetchone()
        return None if row is None else bytes(row[0])

    # -- changes ------------------------------------------------------------------------------------------

    def record_write(
        self,
        conn: sqlite3.Connection,
        key: str,
        *,
        sha: str,
        content: bytes | None,
        op: str,
        origin: Origin,
        stamp: str | None = None,
        old_key: str | None = None,
        ts: float | None = None,
        replaced: int | None,
        quota: Quota | None = None,
    ) -> Version:
        """Record ``key``'s new content (stored as a blob when given) as the next version. ``replaced``: the size
        of the content it replaces (None: no file), from the row every caller has just read to check the write.
        `QuotaError` when the write would take the namespace over ``quota`` (the caller's rollback undoes it)."""
        now = time.time() if ts is None else float(ts)  # a float, as the REAL column gives it back
        if content is not None:
            # Stored once per namespace; a row left empty by a redaction (`is_redacted`) takes the content again.
            conn.execute(
                "INSERT INTO blobs (ns, sha256, content) VALUES (?, ?, ?) ON CONFLICT (ns, sha256) "
                "DO UPDATE SET content = excluded.content WHERE length(blobs.content) = 0",
                (self.namespace, sha, content),
            )
            size = len(content)
        else:
            size = int(
                conn.execute(
                    "SELECT length(content) FROM blobs WHERE ns = ? AND sha256 = ?", (self.namespace, sha)
                ).fetchone()[0]
            )
        added = (0 if replaced is not None else 1, size - (replaced or 0))
        version = self._log(conn, added, (key, op, origin.actor, origin.session, origin.source, now, sha, size,
                                          old_key), origin.request, quota)  # fmt: skip
        conn.execute(
            "INSERT OR REPLACE INTO files (ns, path, version, sha256, size, modified, stamp) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (self.namespace, key, version.version, sha, size, now, stamp),
        )
        return version

    def record_delete(
        self, conn: sqlite3.Connection, row: IndexRow, *, origin: Origin, op: str = "delete", ts: float | None = None
    ) -> Version:
        now = time.time() if ts is None else float(ts)  # a float, as the REAL column gives it back
        fields = (row.path, op, origin.actor, origin.session, origin.source, now, None, 0, None)
        version = self._log(conn, (-1, -row.size), fields, origin.request)
        conn.execute("DELETE FROM files WHERE ns = ? AND path = ?", (self.namespace, row.path))
        return version

    def record_move(
        self,
        conn: sqlite3.Connection,
        row: IndexRow,
        new_key: str,
        *,
        origin: Origin,
        stamp: str | None = None,
        ts: float | None = None,
    ) -> Version:
        now = time.time() if ts is None else float(ts)  # a float, as the REAL column gives it back
        fields = (new_key, "rename", origin.actor, origin.session, origin.source, now, row.sha256, row.size, row.path)
        version = self._log(conn, (0, 0), fields, origin.request)
        conn.execute("DELETE FROM files WHERE ns = ? AND path = ?", (self.namespace, row.path))
        conn.execute(
            "INSERT OR REPLACE INTO files (ns, path, version, sha256, size, modified, stamp) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (self.namespace, new_key, version.version, row.sha256, row.size, now, stamp),
        )
        return version

    def set_stamp(self, conn: sqlite3.Connection, key: str, stamp: str, *, version: int | None = None) -> None:
        """Note ``key``'s on-disk identity; with ``version``, only while that version is still the current one."""
        if version is None:
            conn.execute("UPDATE files SET stamp = ? WHERE ns = ? AND path = ?", (stamp, self.namespace, key))
        else:
            conn.execute(
                "UPDATE files SET stamp = ? WHERE ns = ? AND path = ? AND version = ?",
                (stamp, self.namespace, key, version),
            )

    # -- pending file operations (the directory store) ------------------------------------------------------

    def set_pending(self, conn: sqlite3.Connection, ops: Sequence[PendingOp]) -> None:
        """Make ``ops`` the namespace's pending operations, replacing those there (the caller's own, done: a writer
        finds no other there, see `has_pending`). One UPDATE of the row the change's versions updated already."""
        conn.execute(
            "UPDATE namespaces SET pending = ?, pending_first = ?, pending_last = ? WHERE ns = ?",
            (*pending_columns(ops), self.namespace),
        )

    def lookup(self, key: str) -> IndexRow | None:
        """``key``'s row: one statement outside any transaction (a snapshot of its own, without BEGIN/COMMIT)."""
        try:
            with self._exclusive():  # a connection shared by threads (in memory) runs one statement group at once
                return self.get(self.conn, key)
        except sqlite3.Error as exc:
            raise translate(exc, "read the store") from exc

    def current_usage(self) -> Usage:
        """The namespace's usage: one statement outside any transaction, like `lookup` (a transaction around one
        SELECT costs two more statements and, on disk, two more locks)."""
        try:
            with self._exclusive():
                return self.usage(self.conn)
        except sqlite3.Error as exc:
            raise translate(exc, "read the store") from exc

    def begin_change(self, conn: sqlite3.Connection, ignoring: Sequence[tuple[int, int]] = ()) -> bool:
        """In a write transaction (`transaction`): whether the namespace has pending operations other than those
        of the version ranges ``ignoring`` (see `has_pending`). When it has none, its counters are read in the
        same statement and kept in memory for the rest of the change: versions are numbered and counted there,
        and `end_change` writes them back with the change's pending operations, one UPDATE of the row instead of
        one per version and another for the operations (the write lock keeps every other writer out meanwhile).
        With pending operations, counting stays in the database: the caller finishes them and commits first."""
        row = self._namespace_row(conn)
        self._change.counters = None
        if row is None:
            return False  # no row (removed by hand): counted in the database, as without `begin_change`
        first, last, in_table, last_version, files, size, chain = row
        pending = other_pending(first, last, in_table, ignoring)
        if not pending:
            head = stored(chain)
            self._change.counters = _Counters(int(last_version), int(files), int(size), head)
        return pending

    def end_change(self, conn: sqlite3.Connection, ops: Sequence[PendingOp]) -> None:
        """Write back what `begin_change` kept in memory, with ``ops`` as the namespace's pending operations
        (replacing those there, as `set_pending`)."""
        counters = self.drop_change()
        if counters is None:
            self.set_pending(conn, ops)
            return
        conn.execute(
            "UPDATE namespaces SET last_version = ?, files = ?, bytes = ?, chain = ?, pending = ?, pending_first = ?, "
            "pending_last = ? WHERE ns = ?",
            (counters.last_version, counters.files, counters.bytes, counters.chain, *pending_columns(ops),
             self.namespace),
        )  # fmt: skip

    def drop_change(self) -> _Counters | None:
        """Stop counting in memory (the change ended, or failed and is rolled back); what was counted."""
        counters: _Counters | None = getattr(self._change, "counters", None)
        self._change.counters = None
        return counters

    def has_pending(self) -> bool:
        """Whether this namespace has pending operations (one statement, outside any transaction)."""
        row = self._namespace_row(self.conn)
        return row is not None and other_pending(row[0], row[1], row[2], ())

    def _namespace_row(self, conn: sqlite3.Connection) -> tuple[Any, ...] | None:
        """The namespace's pending span, whether the legacy table holds any of its operations, its counters and
        its chain's head."""
        try:
            row: tuple[Any, ...] | None = conn.execute(
                "SELECT pending_first, pending_last, EXISTS (SELECT 1 FROM pending WHERE ns = ?), last_version, "
                "files, bytes, chain FROM namespaces WHERE ns = ?",
                (self.namespace, self.namespace),
            ).fetchone()
        except sqlite3.Error as exc:
            raise translate(exc, "read the store") from exc
        return row

    def pending_ops(self, conn: sqlite3.Connection) -> list[PendingOp]:
        """This namespace's pending operations, oldest first."""
        rows = conn.execute(
            f"SELECT {PENDING_COLUMNS} FROM pending WHERE ns = ? ORDER BY version", (self.namespace,)
        ).fetchall()
        return sorted([PendingOp(*r) for r in rows] + self._row_ops(conn), key=lambda op: op.version)

    def clear_pending(self, conn: sqlite3.Connection, first: int = 0, last: int = 1 << 62) -> None:
        """Forget the operations of versions ``first``..``last`` (all of them by default): they are done."""
        conn.execute("DELETE FROM pending WHERE ns = ? AND version BETWEEN ? AND ?", (self.namespace, first, last))
        everything = first <= 0 and last >= 1 << 62  # no need to read what is all dropped
        kept = [] if everything else [op for op in self._row_ops(conn) if not first <= op.version <= last]
        self.set_pending(conn, kept)

    def _row_ops(self, conn: sqlite3.Connection) -> list[PendingOp]:
        """The pending operations kept in the namespace's row."""
        (text,) = conn.execute("SELECT pending FROM namespaces WHERE ns = ?", (self.namespace,)).fetchone() or (None,)
        return [] if text is None else decode_ops(conn, self.namespace, text)

    def _log(
        self,
        conn: sqlite3.Connection,
        added: tuple[int, int],
        fields: tuple[str, str, str, str | None, str | None, float, str | None, int, str | None],
        request: str | None,
        quota: Quota | None = None,
    ) -> Version:
        """Record the next version, with ``fields`` (path, op, actor, session, source, time, SHA-256, size, old
        path), its chain value, and the namespace's counters moved by ``added`` (files, bytes)."""
        number, chain = self._bump(conn, added, fields, quota)
        row = (number, *fields)
        conn.execute(
            f"INSERT INTO versions (ns, {VERSION_COLUMNS}, request, chain) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
            "?, ?)",
            (self.namespace, *row, request, chain),
        )
        return version_of_row(row)

    def _bump(
        self, conn: sqlite3.Connection, added: tuple[int, int], fields: tuple[Any, ...], quota: Quota | None
    ) -> tuple[int, bytes]:
        """The next version number and its chain value, the counters and the chain's head moved on."""
        files, size = added
        counters: _Counters | None = getattr(self._change, "counters", None)
        if counters is not None:  # a change of `begin_change`: counted in memory, written back by `end_change`
            if quota is not None:
                quota.check(Usage(counters.files, counters.bytes), files, size)
            counters.last_version += 1
            counters.files += files
            counters.bytes += size
            counters.chain = link(counters.chain or self._genesis, (counters.last_version, *fields))
            return counters.last_version, counters.chain
        # The chain value is computed by the UPDATE that gives out the number (`_sql_link`): no statement of its own,
        # and the head moves in the same row, under the same write lock.
        row = _bumped(conn, (files, size, encode_tail(fields), self.namespace))
        if quota is not None:
            # The counters this write transaction holds: exact however many writers race (a check before the
            # write lock lets two of them pass together), and no statement of its own.
            quota.check(Usage(int(row[1]) - files, int(row[2]) - size), files, size)
        return int(row[0]), row[3]
