"""The ids of a namespace's memories and versions, kept in step with its change log.

Every door writes to the same namespace (the memory tool, MCP, the web page, the store API, the Memory Stores
API), and only the store's change log sees them all. So ids are not made by the Memory Stores API's writes: they
are *derived from the log*, in its order, by `Lineage.catch_up`, which the requests that look memories up run
first (a no-op when nothing was written since). Each version of the log becomes one memory version, whose id is
keyed by its number (`memdir.memstores._ids.IdKey`); the first write to a path makes a memory, keyed by that
write's number; a rename moves the memory to the new path (the id stays), a delete ends it (its versions stay). A
write after a delete is a new memory. Keyed ids are known as soon as a version is written: a write answers with
them without recording anything, and whichever request catches up next records the same ones.

Catching up is one transaction of the auxiliary database that first takes the namespace's cursor row (on
PostgreSQL ``FOR UPDATE``; SQLite's ``BEGIN IMMEDIATE`` is the lock): two requests never number the same
versions twice, and a process killed in between leaves the cursor where the ids it made stop.
"""

from __future__ import annotations

import secrets
import time
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import NotFoundError
from ._errors import StateConflictError
from ._ids import MEMORY, VERSION, IdKey, is_id
from ._schema import migrations

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from ..store import Store, Version
    from ..store._db import AuxConnection, AuxDatabase

__all__ = ["Lineage", "MemoryRow", "VersionFilter", "VersionRow"]

_CHUNK = 500  # keys per IN (...) query
_VERSION_COLUMNS = "id, version, memory_id, operation, ts, path, sha256, size, actor, session, redacted, redacted_by"


@dataclass(frozen=True, slots=True)
class MemoryRow:
    id: str
    key: str | None  # the file it is now (below /memories); None once deleted
    created: float


@dataclass(frozen=True, slots=True)
class VersionRow:
    id: str
    number: int  # the version's number in the store's change log
    memory_id: str
    operation: str  # created, modified, deleted
    ts: float
    key: str | None  # the memory's path then; None once redacted
    sha256: str | None  # None for a deletion, or once redacted
    size: int | None
    actor: str
    session: str | None
    redacted: float | None = None
    redacted_by: str | None = None  # the id of the token that redacted it


@dataclass(frozen=True, slots=True)
class VersionFilter:
    memory_id: str | None = None
    operation: str | None = None
    actor: str | None = None  # with session: who wrote it (``api`` + ``token-<id>``, ``model`` + a session)
    session: str | None = None
    nobody: bool = False  # a filter nothing matches (a service account: memdir has none)
    created_gte: float | None = None
    created_lte: float | None = None
    before: int | None = None  # versions numbered below this (the previous page's last)


def _version_row(row: Sequence[Any]) -> VersionRow:
    id_, number, memory, operation, ts, key, sha, size, actor, session, redacted, by = row
    return VersionRow(
        str(id_), int(number), str(memory), str(operation), float(ts), key, sha, None if size is None else int(size),
        str(actor), session, None if redacted is None else float(redacted), by,
    )  # fmt: skip


class Lineage:
    """Memory and version ids of one namespace (``store``'s), in ``store.aux``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.ns = store.namespace
        self._db = store.aux
        self._db.ensure(migrations)
        self.ids = IdKey(_key(self._db), self.ns)

    # -- keeping up with the log --------------------------------------------------------------------------

    def catch_up(self, *, rescan: bool = False) -> None:
        """Record the ids of every version the log gained since the last call. ``rescan``: let a directory store
        look for edits made outside memdir first (what a listing wants)."""
        with self._db.reading("read the memory ids") as conn:
            row = conn.execute("SELECT last FROM memstore_cursor WHERE ns = ?", (self.ns,)).fetchone()
        if next(iter(self.store.log(0 if row is None else int(row[0]), rescan=rescan)), None) is None:
            return
        with self._db.transaction("record the memory ids") as conn:
            last = self._lock_cursor(conn)
            for version in self.store.log(last, rescan=False):
                self._take(conn, version)
                last = version.version
            conn.execute("UPDATE memstore_cursor SET last = ? WHERE ns = ?", (last, self.ns))

    def _lock_cursor(self, conn: AuxConnection) -> int:
        lock = " FOR UPDATE" if self._db.dialect == "postgres" else ""
        row = conn.execute(f"SELECT last FROM memstore_cursor WHERE ns = ?{lock}", (self.ns,)).fetchone()
        if row is not None:
            return int(row[0])
        conn.execute("INSERT INTO memstore_cursor (ns, last) VALUES (?, 0) ON CONFLICT DO NOTHING", (self.ns,))
        row = conn.execute(f"SELECT last FROM memstore_cursor WHERE ns = ?{lock}", (self.ns,)).fetchone()
        return int(row[0])

    def _take(self, conn: AuxConnection, version: Version) -> None:
        key = version.path.key
        if version.op == "rename" and version.old_path is not None:
            memory = self._live(conn, version.old_path.key)
            operation = "modified" if memory is not None else "created"
            self._vacate(conn, key)
            if memory is None:
                memory = self._new(conn, key, version)
            else:
                conn.execute("UPDATE memstore_memories SET path = ? WHERE ns = ? AND id = ?", (key, self.ns, memory))
        elif version.sha256 is None:
            memory, operation = self._live(conn, key), "deleted"
            if memory is None:  # a deletion of a file whose writes were pruned from the log: a memory of its own
                memory = self._new(conn, key, version)
            self._vacate(conn, key)
        else:
            memory, operation = self._live(conn, key), "modified"
            if memory is None:
                memory, operation = self._new(conn, key, version), "created"
        size = None if version.sha256 is None else version.size
        version_id = self.ids.version(version.version)
        conn.execute(
            f"INSERT INTO memstore_versions (ns, {_VERSION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (self.ns, version_id, version.version, memory, operation, version.timestamp, key, version.sha256,
             size, version.actor, version.session, None, None),
        )  # fmt: skip

    def _live(self, conn: AuxConnection, key: str) -> str | None:
        row = conn.execute("SELECT id FROM memstore_memories WHERE ns = ? AND path = ?", (self.ns, key)).fetchone()
        return None if row is None else str(row[0])

    def _vacate(self, conn: AuxConnection, key: str) -> None:
        conn.execute("UPDATE memstore_memories SET path = NULL WHERE ns = ? AND path = ?", (self.ns, key))

    def _new(self, conn: AuxConnection, key: str, first: Version) -> str:
        memory = self.ids.memory(first.version)
        conn.execute(
            "INSERT INTO memstore_memories (ns, id, path, created) VALUES (?, ?, ?, ?)",
            (self.ns, memory, key, first.timestamp),
        )
        return memory

    # -- memories -----------------------------------------------------------------------------------------

    def memory(self, memory_id: object) -> MemoryRow:
        """The memory with this id (deleted ones too); `NotFoundError` for any other value."""
        if is_id(MEMORY, memory_id):
            with self._db.reading("read a memory") as conn:
                row = conn.execute(
                    "SELECT id, path, created FROM memstore_memories WHERE ns = ? AND id = ?", (self.ns, memory_id)
                ).fetchone()
            if row is not None:
                return MemoryRow(str(row[0]), row[1], float(row[2]))
        shown = memory_id[:80] if isinstance(memory_id, str) else ""
        raise NotFoundError(f"no memory {shown!r} in this memory store")

    def latest(self, memory_id: object) -> tuple[MemoryRow, int, str]:
        """The memory with this id, and the number and id of its latest version taken in (one query: what a
        retrieve checks the file against). `NotFoundError` for any other value."""
        if is_id(MEMORY, memory_id):
            with self._db.reading("read a memory") as conn:
                row = conn.execute(
                    "SELECT m.path, m.created, v.version, v.id FROM memstore_memories m JOIN memstore_versions v "
                    "ON v.ns = m.ns AND v.memory_id = m.id WHERE m.ns = ? AND m.id = ? ORDER BY v.version DESC LIMIT 1",
                    (self.ns, memory_id),
                ).fetchone()
            if row is not None:
                return MemoryRow(str(memory_id), row[0], float(row[1])), int(row[2]), str(row[3])
        return self.memory(memory_id), 0, ""  # raises NotFoundError, or: a memory without versions (none left)

    def memories_at(self, keys: Iterable[str]) -> dict[str, MemoryRow]:
        """The live memories at these paths."""
        rows = self._rows_in("SELECT id, path, created FROM memstore_memories", "path", list(keys))
        return {str(r[1]): MemoryRow(str(r[0]), str(r[1]), float(r[2])) for r in rows}

    # -- versions -----------------------------------------------------------------------------------------

    def version_ids(self, numbers: Iterable[int]) -> dict[int, str]:
        """The ids of the versions with these numbers in the store's log."""
        rows = self._rows_in("SELECT version, id FROM memstore_versions", "version", sorted(set(numbers)))
        return {int(r[0]): str(r[1]) for r in rows}

    def _rows_in(self, select: str, column: str, values: Sequence[object]) -> list[Any]:
        """``select`` for the namespace's rows whose ``column`` is one of ``values`` (a bounded IN list at a time)."""
        found: list[Any] = []
        with self._db.reading("read the memory ids") as conn:
            for at in range(0, len(values), _CHUNK):
                chunk = values[at : at + _CHUNK]
                marks = ",".join("?" * len(chunk))
                found += conn.execute(f"{select} WHERE ns = ? AND {column} IN ({marks})", (self.ns, *chunk)).fetchall()
        return found

    def version(self, version_id: object) -> VersionRow:
        if is_id(VERSION, version_id):
            with self._db.reading("read a memory version") as conn:
                row = conn.execute(
                    f"SELECT {_VERSION_COLUMNS} FROM memstore_versions WHERE ns = ? AND id = ?", (self.ns, version_id)
                ).fetchone()
            if row is not None:
                return _version_row(row)
        shown = version_id[:80] if isinstance(version_id, str) else ""
        raise NotFoundError(f"no memory version {shown!r} in this memory store")

    def versions(self, where: VersionFilter, limit: int) -> list[VersionRow]:
        """Versions matching ``where``, newest first."""
        if where.nobody:
            return []
        clauses: list[str] = ["ns = ?"]
        params: list[Any] = [self.ns]
        for column, value in (("memory_id", where.memory_id), ("operation", where.operation),
                              ("actor", where.actor), ("session", where.session)):  # fmt: skip
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        for clause, bound in (("ts >= ?", where.created_gte), ("ts <= ?", where.created_lte),
                              ("version < ?", where.before)):  # fmt: skip
            if bound is not None:
                clauses.append(clause)
                params.append(bound)
        sql = (
            f"SELECT {_VERSION_COLUMNS} FROM memstore_versions WHERE {' AND '.join(clauses)} "
            "ORDER BY version DESC LIMIT ?"
        )
        with self._db.reading("list memory versions") as conn:
            rows = conn.execute(sql, (*params, limit)).fetchall()
        return [_version_row(r) for r in rows]

    def redact(self, version_id: object, current: int | None, by: str) -> tuple[VersionRow, bool]:
        """Mark a version redacted (its path, hash and size nulled); (the row as it was, whether any version
        not redacted still has its content). A memory's current version (number ``current``) is refused: its
        content is the memory's."""
        found = self.version(version_id)
        if found.redacted is not None:
            return found, True  # redacted before: nothing more to do
        if found.number == current:
            raise StateConflictError(
                f"{found.id} is the current version of memory {found.memory_id}: update or delete the memory first"
            )
        with self._db.transaction("redact a memory version") as conn:
            conn.execute(
                "UPDATE memstore_versions SET redacted = ?, redacted_by = ?, path = NULL, sha256 = NULL, size = NULL "
                "WHERE ns = ? AND id = ? AND redacted IS NULL",
                (time.time(), by, self.ns, found.id),
            )
            kept = (
                found.sha256 is not None
                and conn.execute(
                    "SELECT 1 FROM memstore_versions WHERE ns = ? AND sha256 = ? AND redacted IS NULL LIMIT 1",
                    (self.ns, found.sha256),
                ).fetchone()
                is not None
            )
        return found, kept

    def contents(self) -> list[str]:
        """Every content hash a version of the namespace has (not redacted)."""
        with self._db.reading("list memory contents") as conn:
            rows = conn.execute(
                "SELECT DISTINCT sha256 FROM memstore_versions WHERE ns = ? AND sha256 IS NOT NULL", (self.ns,)
            ).fetchall()
        return [str(r[0]) for r in rows]

    def forget(self) -> None:
        """Drop every id of the namespace (its memory store is deleted)."""
        with self._db.transaction("delete the memory ids") as conn:
            for table in ("memstore_versions", "memstore_memories", "memstore_cursor"):
                conn.execute(f"DELETE FROM {table} WHERE ns = ?", (self.ns,))


_KEYS: weakref.WeakKeyDictionary[AuxDatabase, bytes] = weakref.WeakKeyDictionary()  # read once per database object


def _key(db: AuxDatabase) -> bytes:
    """The database's id key, made on first use (two processes racing agree: the first insert wins)."""
    found = _KEYS.get(db)
    if found is not None:
        return found
    with db.transaction("read the memory id key") as conn:
        conn.execute(
            "INSERT INTO memstore_keys (name, key) VALUES ('ids', ?) ON CONFLICT DO NOTHING", (secrets.token_hex(32),)
        )
        row = conn.execute("SELECT key FROM memstore_keys WHERE name = 'ids'").fetchone()
    key = bytes.fromhex(str(row[0]))
    _KEYS[db] = key
    return key
