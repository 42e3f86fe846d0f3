"""The schema of a store's databases: what ``memdir migrate`` shows and applies.

Every table memdir keeps in a database is made by a named migration set (`memdir.store._migrations`): the
store's own (``memdir``) and each feature's (search index, audit log, quarantine, tokens). A store applies its own
set when it is opened and a feature its set on first use; `migrate` applies them all at once, up front: before a
fleet of servers starts on a PostgreSQL database a new release reads, or to see what an upgrade would do
(``apply=False`` changes nothing).
"""

from __future__ import annotations

import importlib
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import ConfigError
from .store import check_url, url_scheme
from .store._migrations import registered

if TYPE_CHECKING:
    from collections.abc import Callable

    from .store._db import Dialect
    from .store._migrations import Migrations

__all__ = ["MigrationSet", "migrate"]

# The modules whose migration sets make tables in a store's databases (importing one registers its sets).
_STORE_MODULES = {"sqlite": "memdir.store._schema", "postgres": "memdir.store._pgschema"}
_FEATURE_MODULES = {
    "sqlite": (
        "memdir.memstores._schema",
        "memdir.policy.audit",
        "memdir.policy.quarantine",
        "memdir.search._fts5",
        "memdir.server.tokens",
    ),
    "postgres": (
        "memdir.memstores._schema",
        "memdir.policy.audit",
        "memdir.policy.quarantine",
        "memdir.search._pg",
        "memdir.server.tokens",
    ),
}


@dataclass(frozen=True, slots=True)
class MigrationSet:
    """One migration set in one database: what was applied before, what is still pending, what ran now."""

    name: str
    applied: tuple[str, ...]
    pending: tuple[str, ...]
    ran: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _Database:
    """A database to migrate: its dialect, which sets belong in it, and how to read and apply them."""

    dialect: Dialect
    store_set: bool  # the store's own tables live here
    feature_sets: bool  # the features' tables live here
    status: Callable[[Migrations], tuple[list[str], list[str]]]
    apply: Callable[[Migrations], object]
    close: Callable[[], None]


def migrate(url: str, *, apply: bool = True) -> list[MigrationSet]:
    """Apply every pending migration to the databases of the store at ``url`` (SQLite, directory or PostgreSQL),
    or only report with ``apply=False``; the store's own set first, then the features' by name."""
    found: list[MigrationSet] = []
    for database in _databases(url, create=apply):
        try:
            for migrations in _sets_for(database):
                applied, pending = database.status(migrations)
                if apply and pending:
                    database.apply(migrations)
                    now, still = database.status(migrations)
                    found.append(MigrationSet(migrations.name, tuple(now), tuple(still), tuple(pending)))
                else:
                    found.append(MigrationSet(migrations.name, tuple(applied), tuple(pending)))
        finally:
            database.close()
    return found


def _sets_for(database: _Database) -> list[Migrations]:
    """The store's own set first (when its tables live here), then the features' by name."""
    own = [_STORE_MODULES[database.dialect]] if database.store_set else []
    features = list(_FEATURE_MODULES[database.dialect]) if database.feature_sets else []
    for module in own + features:
        importlib.import_module(module)
    sets = [m for m in registered() if m.runs_on(database.dialect)]
    return [m for m in sets if m.module in own] + sorted(
        (m for m in sets if m.module in features), key=lambda m: m.name
    )


def _databases(url: str, *, create: bool) -> list[_Database]:
    check_url(url)  # `sqlite:` alone names no file: an error, not a store with everything pending
    scheme = url_scheme(url)
    if scheme in ("postgresql", "postgres"):
        return [_postgres(url)]
    if scheme == "sqlite":
        path = Path(url.split(":", 1)[1].removeprefix("//")).expanduser()
        if path.is_dir():
            raise ConfigError(f"{url} is a directory, not a SQLite database file")
        return [_sqlite(path, store_set=True, feature_sets=True, create=create)]
    if scheme is None or scheme == "file":
        from .store.directory import AUX_NAME, INDEX_NAME, SIDECAR

        folder = Path(url.split(":", 1)[1].removeprefix("//") if scheme == "file" else url).expanduser()
        if folder.exists() and not folder.is_dir():
            raise ConfigError(f"{url} is a file, not a directory store")
        base = folder / SIDECAR
        return [
            _sqlite(base / INDEX_NAME, store_set=True, feature_sets=False, create=create),
            _sqlite(base / AUX_NAME, store_set=False, feature_sets=True, create=create),
        ]
    raise ConfigError(f"{scheme}: stores keep no database schema to migrate")


def _postgres(url: str) -> _Database:
    from .store._pg import PgDatabase, split_url

    db = PgDatabase(*split_url(url))
    return _Database("postgres", True, True, db.status, db.migrate, db.close)


def _sqlite(path: Path, *, store_set: bool, feature_sets: bool, create: bool) -> _Database:
    from .store._db import SqlDatabase
    from .store._sql import translate

    if not create and not path.is_file():  # nothing there yet: everything is pending, and nothing is created

        def nothing(migrations: Migrations) -> tuple[list[str], list[str]]:
            return [], migrations.names()

        return _Database("sqlite", store_set, feature_sets, nothing, nothing, lambda: None)
    db = SqlDatabase(path)

    def status(migrations: Migrations) -> tuple[list[str], list[str]]:
        try:
            return migrations.applied(db.conn), migrations.pending(db.conn)
        except sqlite3.Error as exc:
            raise translate(exc, "read the schema version") from exc

    def apply(migrations: Migrations) -> None:
        if db.read_only:
            raise ConfigError("the store's database is read-only: it cannot be migrated")
        db.ensure(migrations)

    return _Database("sqlite", store_set, feature_sets, status, apply, db.close)
