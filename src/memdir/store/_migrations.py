"""Named, transactional schema migrations (the sqlite-utils ``Migrations`` discipline), on SQLite and PostgreSQL.

Each migration runs in its own transaction together with the row that records it (table ``_memdir_migrations``),
so a crash leaves it either applied and recorded or neither. Concurrent openers serialise: on SQLite through the
``BEGIN IMMEDIATE`` write lock, on PostgreSQL through a transaction-scoped advisory lock named after the
migration set (``pg_advisory_xact_lock``), and the second finds the work done.

A step receives a `Schema`; ``schema.dialect`` says which engine it runs on, for the few statements that differ.
Every set is listed in `registered` (what ``memdir migrate`` shows and applies).
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, cast

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from ._sqltypes import AuxCursor, Dialect

__all__ = ["Migrations", "Schema", "advisory_key", "registered"]

Step = Callable[["Schema"], None]

_TABLE = "_memdir_migrations"
_REGISTRY: dict[tuple[str, str | None], Migrations] = {}


class _Connection(Protocol):
    """A `sqlite3.Connection`, or a `memdir.store._pg.PgConnection` (which also has ``dialect`` and ``script``)."""

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> AuxCursor: ...


class _ScriptConnection(_Connection, Protocol):
    def script(self, sql: str, /) -> None: ...


def advisory_key(name: str) -> int:
    """A stable signed 64-bit key for ``pg_advisory_xact_lock`` (Python's ``hash`` differs between processes)."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


def registered() -> list[Migrations]:
    """Every migration set created so far in this process, in creation order."""
    return list(_REGISTRY.values())


def dialect_of(conn: _Connection) -> Dialect:
    return "sqlite" if isinstance(conn, sqlite3.Connection) else "postgres"


class Migrations:
    """A named, ordered set of migrations; ``dialect`` limits it to one engine (None: it runs on both)."""

    def __init__(self, name: str, *, dialect: Dialect | None = None) -> None:
        self.name = name
        self.dialect = dialect
        # The module that made the set (as namedtuple and Enum find theirs): `memdir migrate` applies the sets of
        # the modules whose tables live in a store's databases, not every set a process happens to hold.
        self.module = str(sys._getframe(1).f_globals.get("__name__", ""))
        self._steps: list[tuple[str, Step]] = []
        _REGISTRY[(name, dialect)] = self

    def __call__(self, name: str) -> Callable[[Step], Step]:
        """Register ``fn`` as the migration called ``name`` (applied in registration order)."""

        def register(fn: Step) -> Step:
            if any(existing == name for existing, _ in self._steps):
                raise ValueError(f"duplicate migration name {name!r}")
            self._steps.append((name, fn))
            return fn

        return register

    def names(self) -> list[str]:
        """Every registered migration, in order."""
        return [name for name, _ in self._steps]

    def runs_on(self, dialect: Dialect) -> bool:
        return self.dialect is None or self.dialect == dialect

    def applied(self, conn: _Connection) -> list[str]:
        """The migrations of this set recorded in the database (none when nothing was ever migrated there)."""
        if not _table_exists(conn):
            return []
        rows = conn.execute(
            f"SELECT name FROM {_TABLE} WHERE migration_set = ? ORDER BY applied_at, name", (self.name,)
        ).fetchall()
        return [str(r[0]) for r in rows]

    def pending(self, conn: _Connection) -> list[str]:
        done = set(self.applied(conn))
        return [name for name, _ in self._steps if name not in done]

    def apply(self, conn: _Connection, *, until: str | None = None) -> list[str]:
        """Apply what is pending (up to and including ``until`` when given); return the names applied now."""
        ran: list[str] = []
        _ensure_table(conn)
        for name, step in self._steps:
            if self._apply_one(conn, name, step):
                ran.append(name)
            if name == until:
                break
        return ran

    def _apply_one(self, conn: _Connection, name: str, step: Step) -> bool:
        dialect = dialect_of(conn)
        with _migrating(conn, dialect, advisory_key(f"{_TABLE}:{self.name}")):
            done = conn.execute(
                f"SELECT 1 FROM {_TABLE} WHERE migration_set = ? AND name = ?", (self.name, name)
            ).fetchone()
            if done is None:
                step(Schema(conn, dialect))
                conn.execute(
                    f"INSERT INTO {_TABLE} (migration_set, name, applied_at) VALUES (?, ?, ?)",
                    (self.name, name, time.time()),
                )
        return done is None


@contextlib.contextmanager
def _migrating(conn: _Connection, dialect: Dialect, key: int) -> Iterator[None]:
    """One migration's transaction: SQLite's write lock, or PostgreSQL's advisory lock for ``key``."""
    conn.execute("BEGIN IMMEDIATE" if dialect == "sqlite" else "BEGIN")
    try:
        if dialect == "postgres":
            conn.execute("SELECT pg_advisory_xact_lock(?)", (key,))
        yield
        conn.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(Exception):
            conn.execute("ROLLBACK")
        raise


def _ensure_table(conn: _Connection) -> None:
    dialect = dialect_of(conn)
    if dialect == "sqlite":
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {_TABLE} ("
            "migration_set TEXT NOT NULL, name TEXT NOT NULL, applied_at REAL NOT NULL, "
            "PRIMARY KEY (migration_set, name))"
        )
        return
    # Two servers starting on a new database would both try CREATE TABLE IF NOT EXISTS, and PostgreSQL lets the
    # loser fail on the catalog's unique index rather than wait: the lock makes the second find the table.
    with _migrating(conn, dialect, advisory_key(_TABLE)):
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {_TABLE} ("
            'migration_set TEXT COLLATE "C" NOT NULL, name TEXT COLLATE "C" NOT NULL, '
            "applied_at DOUBLE PRECISION NOT NULL, PRIMARY KEY (migration_set, name))"
        )


def _table_exists(conn: _Connection) -> bool:
    if dialect_of(conn) == "sqlite":
        sql = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
    else:
        sql = "SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = current_schema() AND tablename = ?"
    return conn.execute(sql, (_TABLE,)).fetchone() is not None


class Schema:
    """What a migration step gets: statements run inside the migration's transaction.

    (``sqlite3.Connection.executescript`` would COMMIT the open transaction first, breaking the
    migration-and-its-record-commit-together rule, so SQLite scripts are split and run statement by statement;
    PostgreSQL runs a whole script as one statement group inside the transaction.)
    """

    def __init__(self, conn: _Connection, dialect: Dialect | None = None) -> None:
        self._conn = conn
        self.dialect: Dialect = dialect if dialect is not None else dialect_of(conn)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        self._conn.execute(sql, params)

    def script(self, sql: str) -> None:
        if self.dialect == "postgres":
            cast("_ScriptConnection", self._conn).script(sql)
            return
        for statement in _split_sql(sql):
            self._conn.execute(statement)


def _split_sql(script: str) -> list[str]:
    statements: list[str] = []
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        statements.append(buffer.strip())
    return statements
