"""PostgreSQL connection handling for the PostgreSQL store and the features' tables in its database.

`PgDatabase` is `memdir.store._db.SqlDatabase`'s counterpart (both are an `AuxDatabase`): a psycopg 3 connection
pool to one database, ``transaction`` / ``reading`` context managers yielding a `PgConnection`, and ``ensure`` for a
feature's migration set. `PgConnection` speaks the part of ``sqlite3.Connection`` the features use, so one SQL text
serves both engines: ``?`` placeholders are rewritten to psycopg's ``%s`` (outside string literals, identifiers and
comments; ``?NNN`` picks a parameter by number as in SQLite), a literal ``%`` is doubled, and ``True``/``False``
are sent as 1/0 as SQLite stores them.

Errors are translated here, at the boundary, into `StorageUnavailableError` (cannot connect, connection lost,
server shutting down, no pooled connection in time: temporary), `ConfigError` (the login or the database name in
the URL is wrong), `StorageFullError` (the database's disk is full) or `StorageError` (a read-only server,
anything else). No message carries the DSN, the password, or PostgreSQL's own text (which may quote data).
"""

from __future__ import annotations

import contextlib
import functools
import os
import random
import re
import threading
import time
import urllib.parse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import psycopg
from psycopg import errors as pg_errors
from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout

from ..errors import ConfigError, MemdirError, StorageError, StorageFullError, StorageUnavailableError
from ._urls import split_query

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence

    from ._migrations import Migrations

__all__ = ["PgConnection", "PgCursor", "PgDatabase", "PgOptions", "split_url", "translate"]

T = TypeVar("T")
Raw = psycopg.Connection[tuple[Any, ...]]

# The transaction kinds: a write (READ COMMITTED; row locks serialise read-modify-write), and a read that sees one
# snapshot across its queries and can neither write nor fail on a serialization conflict.
_WRITE = "BEGIN"
_READ = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"

# SQLSTATEs a writer retries: the transaction lost a race and nothing of it was kept.
_RETRYABLE = (pg_errors.SerializationFailure, pg_errors.DeadlockDetected)


# -- URLs ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PgOptions:
    """memdir's own query parameters of a ``postgresql://`` URL (removed before libpq sees the URL)."""

    pool_min: int = 1
    pool_max: int = 10
    pool_timeout: float = 10.0  # seconds to wait for a pooled connection before StorageUnavailableError
    retries: int = 10  # attempts of a write transaction that lost a serialization race or a deadlock


_OPTION_TYPES: dict[str, type[int] | type[float]] = {
    "pool_min": int,
    "pool_max": int,
    "pool_timeout": float,
    "retries": int,
}


def split_url(url: str) -> tuple[str, PgOptions]:
    """(the DSN for psycopg, memdir's options) of a ``postgresql://`` / ``postgres://`` URL."""
    # Split by hand, not with urlsplit: urlunsplit wrote "postgresql:///db" (an empty host: libpq's default
    # socket, or host= in the query) back as "postgresql:/db", which libpq refuses.
    base, query = split_query(url)
    kept: list[tuple[str, str]] = []
    found: dict[str, Any] = {}
    for key, value in urllib.parse.parse_qsl(query, keep_blank_values=True):
        kind = _OPTION_TYPES.get(key)
        if kind is None:
            kept.append((key, value))  # libpq's own (sslmode, connect_timeout, options...)
            continue
        try:
            found[key] = kind(value)
        except ValueError:
            raise ConfigError(f"invalid {key}={value!r} in the store URL: expected a number") from None
        if found[key] < (0 if key != "pool_max" else 1):
            raise ConfigError(f"invalid {key}={value!r} in the store URL: too small")
    options = PgOptions(**found)
    if options.pool_min > options.pool_max:
        raise ConfigError("invalid store URL: pool_min is larger than pool_max")
    return base + ("?" + urllib.parse.urlencode(kept) if kept else ""), options


# -- errors -------------------------------------------------------------------------------------------------------

# A refused connection carries no SQLSTATE (libpq reports it as text): these are libpq's and the server's words
# (in English; a server set to another lc_messages language makes such failures read as "unavailable").
_LOGIN_REFUSED = re.compile(r"authentication failed|no password supplied|pg_hba\.conf|role \"[^\"]*\" does not exist")
_NO_DATABASE = re.compile(r"database \"[^\"]*\" does not exist")
_BAD_URL = re.compile(r"invalid (URI|connection option|\w+ value)|missing \"=\"|end of string reached|invalid percent")


def translate(exc: psycopg.Error, doing: str) -> MemdirError:
    """The memdir error for a psycopg error; the message names what failed, never the DSN or the server's text."""
    if isinstance(exc, PoolTimeout):
        return StorageUnavailableError(f"could not {doing}: no database connection became free in time; retry later")
    if isinstance(exc, PoolClosed):
        return StorageError(f"could not {doing}: the store is closed")
    state = exc.sqlstate or ""
    if state in ("28P01", "28000") or (not state and _LOGIN_REFUSED.search(str(exc))):
        return ConfigError(f"could not {doing}: the database refused the login (check the user name and password)")
    if state == "3D000" or (not state and _NO_DATABASE.search(str(exc))):
        return ConfigError(f"could not {doing}: the database named in the store URL does not exist")
    if not state and _BAD_URL.search(str(exc)):
        return ConfigError(f"could not {doing}: the PostgreSQL URL is malformed or has a parameter libpq does not know")
    if isinstance(exc, _RETRYABLE):
        return StorageUnavailableError(f"could not {doing}: too much contention on the database; retry later")
    if state == "53100":
        return StorageFullError(f"could not {doing}: the database's disk is full")
    if state.startswith("53"):
        return StorageUnavailableError(f"could not {doing}: the database is out of resources; retry later")
    if state == "25006":
        return StorageError(f"could not {doing}: the database is read-only (a standby server?)")
    if state == "42501":
        return StorageError(f"could not {doing}: the database user lacks a permission memdir needs")
    if state == "42P07":  # a migration's CREATE TABLE met another application's table of that name
        return ConfigError(
            f"could not {doing}: the database already holds a table {_relation(exc)}that memdir did not make; give "
            "memdir a database of its own, or a schema (CREATE SCHEMA memdir, then ?options=-csearch_path%3Dmemdir "
            "in the store URL)"
        )
    if state.startswith(("08", "57P")) or isinstance(exc, psycopg.OperationalError):
        # Connection exceptions, admin/crash shutdown, "cannot connect now", and libpq's own failures (refused,
        # lost connection), which have no SQLSTATE.
        return StorageUnavailableError(f"could not {doing}: the database server is unavailable; retry later")
    return StorageError(f"could not {doing}: database error ({state or type(exc).__name__})")


def _relation(exc: psycopg.Error) -> str:
    """``"audit" `` from the server's 'relation "audit" already exists' (the name only, never the rest)."""
    found = re.search(r'"([A-Za-z0-9_]{1,63})"', exc.diag.message_primary or "")
    return f'"{found.group(1)}" ' if found else ""


# -- the connection adapter ---------------------------------------------------------------------------------------


class PgCursor:
    """A psycopg cursor as the features read one: fetching after a statement without rows gives nothing."""

    __slots__ = ("_cursor",)

    def __init__(self, cursor: psycopg.Cursor[tuple[Any, ...]]) -> None:
        self._cursor = cursor

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount

    def fetchone(self) -> tuple[Any, ...] | None:
        return self._cursor.fetchone() if self._cursor.description is not None else None

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self._cursor.fetchall() if self._cursor.description is not None else []

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return iter(self.fetchall())


class PgConnection:
    """One pooled connection, inside a transaction, speaking ``?`` placeholders (see the module docstring)."""

    __slots__ = ("raw",)
    dialect: Literal["postgres"] = "postgres"

    def __init__(self, raw: Raw) -> None:
        self.raw = raw

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> PgCursor:
        query, order = _pyformat(sql)
        return PgCursor(self.raw.execute(query, _arrange(parameters, order)))

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> PgCursor:
        query, order = _pyformat(sql)
        cursor = self.raw.cursor()
        cursor.executemany(query, [_arrange(row, order) for row in parameters])
        return PgCursor(cursor)

    def script(self, sql: str, /) -> None:
        """Run several ``;``-separated statements without parameters (a migration's DDL)."""
        self.raw.execute(sql.encode())


@functools.lru_cache(maxsize=1024)
def _pyformat(sql: str) -> tuple[str, tuple[int | None, ...]]:
    """SQLite-style SQL as psycopg wants it, and which parameter each placeholder takes (None: the next one)."""
    out: list[str] = []
    order: list[int | None] = []
    i, n = 0, len(sql)
    while i < n:
        ch = sql[i]
        if ch in "'\"":  # a string literal or a quoted identifier, doubled quotes included
            end = i + 1
            while end < n and not (sql[end] == ch and not sql.startswith(ch * 2, end)):
                end += 2 if sql.startswith(ch * 2, end) else 1
            out.append(sql[i : end + 1].replace("%", "%%"))
            i = end + 1
        elif sql.startswith("--", i):
            end = sql.find("\n", i)
            end = n if end < 0 else end
            out.append(sql[i:end].replace("%", "%%"))
            i = end
        elif ch == "?":
            end = i + 1
            while end < n and sql[end].isdigit():
                end += 1
            order.append(int(sql[i + 1 : end]) - 1 if end > i + 1 else None)
            out.append("%s")
            i = end
        elif ch == "%":
            out.append("%%")
            i += 1
        else:
            out.append(ch)
            i += 1
    return "".join(out), tuple(order)


def _arrange(parameters: Sequence[Any], order: tuple[int | None, ...]) -> list[Any]:
    values = [int(v) if isinstance(v, bool) else v for v in parameters]
    if all(at is None for at in order):
        return values
    arranged: list[Any] = []
    following = 0
    for at in order:
        if at is None:
            arranged.append(values[following])
            following += 1
        else:
            arranged.append(values[at])
            following = at + 1  # SQLite: a bare ? after ?N takes parameter N+1
    return arranged


# -- the database -------------------------------------------------------------------------------------------------


class _Shared:
    """One process's pool for one (DSN, options): every store opened on that URL in the process uses it, so a
    server with a hundred namespaces open holds ``pool_max`` connections, not a hundred pools."""

    def __init__(self, dsn: str, options: PgOptions) -> None:
        self.dsn = dsn
        self.options = options
        self.users = 0
        self.ensured: set[str] = set()
        self.read_only = _probe(dsn)
        self._pool: ConnectionPool[Raw] | None = None
        self._pid = os.getpid()
        self._lock = threading.Lock()

    def pool(self) -> ConnectionPool[Raw]:
        with self._lock:
            if self._pid != os.getpid():  # a forked child must not share (or close) its parent's sockets
                self._pool, self._pid = None, os.getpid()
            if self._pool is None:
                self._pool = ConnectionPool(
                    self.dsn,
                    min_size=self.options.pool_min,
                    max_size=self.options.pool_max,
                    timeout=self.options.pool_timeout,
                    kwargs={"autocommit": True, **_connect_defaults(self.dsn)},
                    open=False,
                    name="memdir",
                    # While the server is down the pool retries in the background, waiting 1, 2, 4... s between
                    # attempts; after reconnect_timeout it gives up, and the next request starts again at once.
                    # Kept short, so a server back from a restart is found within seconds, not minutes.
                    reconnect_timeout=max(5.0, 2 * self.options.pool_timeout),
                )
                self._pool.open(wait=False)
            return self._pool

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None and self._pid == os.getpid():
            pool.close()


_SHARED: dict[tuple[str, PgOptions], _Shared] = {}
_SHARED_LOCK = threading.Lock()


def _probe(dsn: str) -> bool:
    """Connect once, so a wrong login or an unreachable server fails at open with its own clear error (a pool
    would only retry in the background and time out); True when the server accepts reads only (a standby)."""
    try:
        with psycopg.connect(dsn, autocommit=True, **_connect_defaults(dsn)) as conn:
            row = conn.execute("SELECT current_setting('transaction_read_only')").fetchone()
    except psycopg.Error as exc:
        raise translate(exc, "open the store") from exc
    return row is not None and row[0] == "on"


class PgDatabase:
    """Connections to one PostgreSQL database, from the process's pool for its URL (thread-safe; usable again
    after `close`, which only gives the pool back)."""

    dialect: Literal["postgres"] = "postgres"

    def __init__(self, dsn: str, options: PgOptions = PgOptions()) -> None:
        self._key = (dsn, options)
        self._closed = True
        self._shared = self._acquire()
        self.options = options

    def _acquire(self) -> _Shared:
        with _SHARED_LOCK:
            shared = _SHARED.get(self._key)
            if shared is None:
                shared = _SHARED[self._key] = _Shared(*self._key)
            shared.users += 1
            self._closed = False
            return shared

    @property
    def read_only(self) -> bool:
        return self._shared.read_only

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        with _SHARED_LOCK:
            if self._closed:
                return
            self._closed = True
            self._shared.users -= 1
            last = self._shared.users == 0
            if last and _SHARED.get(self._key) is self._shared:
                del _SHARED[self._key]
        if last:
            self._shared.close()

    def ensure(self, migrations: Migrations) -> None:
        """Apply a feature's migrations once per process (a read-only server is taken as it is)."""
        if migrations.name in self._shared.ensured or self.read_only:
            return
        self.migrate(migrations)
        self._shared.ensured.add(migrations.name)

    def migrate(self, migrations: Migrations, *, until: str | None = None) -> list[str]:
        """Apply what is pending of a migration set now; the names applied."""
        try:
            with self._connection() as raw:
                return migrations.apply(PgConnection(raw), until=until)
        except psycopg.Error as exc:
            raise translate(exc, "prepare the store") from exc

    def status(self, migrations: Migrations) -> tuple[list[str], list[str]]:
        """(applied, pending) names of a migration set."""
        try:
            with self._connection() as raw:
                conn = PgConnection(raw)
                return migrations.applied(conn), migrations.pending(conn)
        except psycopg.Error as exc:
            raise translate(exc, "read the schema version") from exc

    @contextlib.contextmanager
    def transaction(self, doing: str) -> Iterator[PgConnection]:
        """A READ COMMITTED write transaction; ``SELECT ... FOR UPDATE`` serialises a read-modify-write."""
        if self.read_only:
            raise StorageError(f"could not {doing}: the database is read-only (a standby server?)")
        try:
            with self._session(_WRITE) as conn:
                yield conn
        except psycopg.Error as exc:
            raise translate(exc, doing) from exc

    @contextlib.contextmanager
    def reading(self, doing: str) -> Iterator[PgConnection]:
        """A read-only transaction on one snapshot (REPEATABLE READ)."""
        try:
            with self._session(_READ) as conn:
                yield conn
        except psycopg.Error as exc:
            raise translate(exc, doing) from exc

    def query(self, doing: str, sql: str, parameters: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """The rows of one read-only statement, in autocommit: one round trip (a `reading` transaction takes three),
        and one statement is one snapshot. A pooled connection found dead is replaced and the statement sent again,
        as a read is safe to repeat."""
        text, order = _pyformat(sql)
        values = _arrange(parameters, order)
        pool = self._pool()
        try:
            for attempt in (1, 2):
                raw = pool.getconn()
                try:
                    return PgCursor(raw.execute(text, values)).fetchall()
                except psycopg.OperationalError:
                    if attempt == 2 or not raw.broken:
                        raise
                finally:
                    pool.putconn(raw)
                pool.check()  # its idle neighbours died with the same server: drop them too
        except psycopg.Error as exc:
            raise translate(exc, doing) from exc
        raise AssertionError("unreachable")

    def run(self, doing: str, work: Callable[[PgConnection], T]) -> T:
        """``work`` in a write transaction, run again (a bounded number of times, with jittered backoff) when
        PostgreSQL aborted it for a serialization failure or a deadlock: nothing of an aborted attempt was kept,
        so ``work`` must only depend on what it reads in the transaction."""
        if self.read_only:
            raise StorageError(f"could not {doing}: the database is read-only (a standby server?)")
        attempt = 0
        while True:
            attempt += 1
            try:
                with self._session(_WRITE) as conn:
                    return work(conn)
            except _RETRYABLE as exc:
                if attempt >= max(1, self.options.retries):
                    raise translate(exc, doing) from exc
                time.sleep(random.uniform(0, min(0.2, 0.002 * 2**attempt)))
            except psycopg.Error as exc:
                raise translate(exc, doing) from exc

    # -- connections ----------------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _session(self, begin: str) -> Iterator[PgConnection]:
        """A pooled connection inside a transaction, committed when the block ends, rolled back if it raises.
        psycopg errors pass through untranslated (callers translate, or retry)."""
        with self._connection(begin) as raw:
            try:
                yield PgConnection(raw)
                raw.execute(b"COMMIT")
            except BaseException:
                with contextlib.suppress(psycopg.Error):
                    raw.execute(b"ROLLBACK")
                raise

    def _pool(self) -> ConnectionPool[Raw]:
        if self._closed:
            self._shared = self._acquire()  # used again after close, as a SQLite database reopens
        return self._shared.pool()

    @contextlib.contextmanager
    def _connection(self, first: str = "") -> Iterator[Raw]:
        """A live pooled connection (autocommit between transactions) on which ``first`` has run.

        A connection that sat in the pool while PostgreSQL restarted is dead, and nothing tells until it is used.
        So when ``first`` (BEGIN, or an empty query: one round trip either way) fails on a connection, the pool
        checks its idle connections, dropping the dead, and the caller gets one more try. Nothing ran yet, so
        trying again is safe.
        """
        pool = self._pool()
        raw = pool.getconn()
        try:
            raw.execute(first.encode())
        except psycopg.OperationalError:
            pool.putconn(raw)  # broken: the pool discards it and opens another
            pool.check()
            raw = pool.getconn()
            try:
                raw.execute(first.encode())
            except BaseException:
                pool.putconn(raw)
                raise
        try:
            yield raw
        finally:
            pool.putconn(raw)


def _connect_defaults(dsn: str) -> dict[str, Any]:
    """libpq settings memdir chooses unless the URL does: a name in ``pg_stat_activity``, a bounded connect."""
    given = psycopg.conninfo.conninfo_to_dict(dsn)
    defaults: dict[str, Any] = {"fallback_application_name": "memdir"}
    if "connect_timeout" not in given:
        defaults["connect_timeout"] = 10
    return defaults
