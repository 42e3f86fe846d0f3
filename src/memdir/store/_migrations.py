"""Named, transactional schema migrations (the sqlite-utils ``Migrations`` discipline).

Each migration runs in its own ``BEGIN IMMEDIATE`` transaction together with the row that records it, so a
crash leaves it either applied and recorded or neither; two processes opening a new database at once
serialise on the transaction and the second finds the work done.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Callable

__all__ = ["Migrations", "Schema"]

Step = Callable[["Schema"], None]

_TABLE = "_memdir_migrations"


class Migrations:
    def __init__(self, name: str) -> None:
        self.name = name
        self._steps: list[tuple[str, Step]] = []

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

    def applied(self, conn: sqlite3.Connection) -> list[str]:
        self._ensure_table(conn)
        rows = conn.execute(
            f"SELECT name FROM {_TABLE} WHERE migration_set = ? ORDER BY applied_at, name", (self.name,)
        ).fetchall()
        return [str(r[0]) for r in rows]

    def pending(self, conn: sqlite3.Connection) -> list[str]:
        done = set(self.applied(conn))
        return [name for name, _ in self._steps if name not in done]

    def apply(self, conn: sqlite3.Connection) -> list[str]:
        """Apply what is pending; return the names applied now."""
        ran: list[str] = []
        for name, step in self._steps:
            if self._apply_one(conn, name, step):
                ran.append(name)
        return ran

    def _apply_one(self, conn: sqlite3.Connection, name: str, step: Step) -> bool:
        self._ensure_table(conn)
        conn.execute("BEGIN IMMEDIATE")
        try:
            done = conn.execute(
                f"SELECT 1 FROM {_TABLE} WHERE migration_set = ? AND name = ?", (self.name, name)
            ).fetchone()
            if done is None:
                step(Schema(conn))
                conn.execute(
                    f"INSERT INTO {_TABLE} (migration_set, name, applied_at) VALUES (?, ?, ?)",
                    (self.name, name, time.time()),
                )
            conn.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise
        return done is None

    @staticmethod
    def _ensure_table(conn: sqlite3.Connection) -> None:
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {_TABLE} ("
            "migration_set TEXT NOT NULL, name TEXT NOT NULL, applied_at REAL NOT NULL, "
            "PRIMARY KEY (migration_set, name))"
        )


class Schema:
    """What a migration step gets: statements run inside the migration's transaction.

    (``sqlite3.Connection.executescript`` would COMMIT the open transaction first, breaking the
    migration-and-its-record-commit-together rule, so scripts are split and run statement by statement.)
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def execute(self, sql: str, params: tuple[object, ...] = ()) -> None:
        self._conn.execute(sql, params)

    def script(self, sql: str) -> None:
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
