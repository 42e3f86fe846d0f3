"""SQLite connection handling shared by every SQLite-backed piece of a store.

`SqlDatabase` owns the connections to one database file: one per thread (a SQLite connection must not be used by
two threads at once), or, for an in-memory database, a single one behind a lock (each connection to
``:memory:`` would be a database of its own). Writes run in ``BEGIN IMMEDIATE`` transactions, which are also the
cross-process write lock; reads run in a ``BEGIN`` so several queries see one snapshot. sqlite3 errors are
translated into `StorageError` here, at the boundary.

A store's *auxiliary database* (`Store.aux`) is where features keep what is derived from the store or kept about
it (the search index, the audit log, the quarantine, access times). Each feature creates its own tables with its
own named migration set through ``ensure``. Features code against `AuxDatabase`, which both `SqlDatabase` and
PostgreSQL's `memdir.store._pg.PgDatabase` fulfil: SQL written with ``?`` placeholders, branching on ``dialect``
only where the two engines differ.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import threading
import time
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import CorruptStoreError, StorageError, StorageFullError, storage_error_from_os
from . import _checkpoint
from ._perfile import PerFile
from ._sqltypes import AuxCursor, Dialect

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence
    from contextlib import AbstractContextManager

    from ._migrations import Migrations

__all__ = [
    "AuxConnection",
    "AuxCursor",
    "AuxDatabase",
    "Dialect",
    "SqlDatabase",
    "connect",
    "create_private",
    "translate",
]


class AuxConnection(Protocol):
    """What a transaction yields (`sqlite3.Connection`, `memdir.store._pg.PgConnection`): statements with ``?``
    placeholders (the PostgreSQL adapter rewrites them), rows as tuples. No ``lastrowid``: use ``RETURNING``."""

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> AuxCursor: ...

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> AuxCursor: ...


class AuxDatabase(Protocol):
    """A store's auxiliary database, whichever engine holds it (`Store.aux`)."""

    @property
    def dialect(self) -> Dialect: ...

    @property
    def read_only(self) -> bool: ...

    @property
    def closed(self) -> bool: ...

    def close(self) -> None: ...

    def ensure(self, migrations: Migrations) -> None: ...

    def transaction(self, doing: str) -> AbstractContextManager[AuxConnection]:
        """A write transaction; ``doing`` ("store embeddings") words the error if it fails."""
        ...

    def reading(self, doing: str) -> AbstractContextManager[AuxConnection]:
        """A read transaction: several queries see one snapshot."""
        ...


def create_private(path: Path) -> bool:
    """Make sure a database file exists, created 0600 (its directory 0700); False when it can only be read.

    Created here, before SQLite would create it with the umask's mode (SQLite gives its -wal and -shm files the
    database file's mode, so they stay private too). An EXISTING file is never opened here: on POSIX, closing
    any descriptor of a file drops every lock the process holds on it, SQLite's own included, and another
    process could then checkpoint and delete a WAL this process is still reading ("database disk image is
    malformed"). Whether the file is a database at all is SQLite's to say, through its own descriptor.
    """
    from ._fs import secure_makedirs

    try:
        secure_makedirs(path.parent)
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_CLOEXEC, 0o600))
    except FileExistsError:
        return os.access(path, os.W_OK)  # False on a read-only file system too (EROFS)
    except OSError as exc:
        if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM) and path.is_file():
            return False
        raise storage_error_from_os(exc, "open the store") from exc
    return True


def translate(exc: sqlite3.Error, doing: str) -> StorageError:
    """Map a sqlite3 error to a StorageError whose message carries no host path."""
    text = str(exc).lower()
    if isinstance(exc, sqlite3.DatabaseError) and ("not a database" in text or "malformed" in text):
        return CorruptStoreError(f"could not {doing}: the store's database is damaged; run `memdir doctor`")
    if "locked" in text or "busy" in text:
        return StorageError(f"could not {doing}: the store is locked by another process; try again")
    if "full" in text:
        return StorageFullError(f"could not {doing}: no space left on the device holding the store")
    if "readonly" in text or "read-only" in text:
        return StorageError(f"could not {doing}: the store is read-only")
    if "disk i/o" in text:
        return StorageError(f"could not {doing}: input/output error on the device holding the store")
    if "unable to open" in text:
        return StorageError(f"could not {doing}: the store's database cannot be opened")
    return StorageError(f"could not {doing}: database error ({type(exc).__name__})")


def connect(
    location: str | Path, *, read_only: bool = False, busy_timeout_ms: int = 30_000, page_size: int | None = None
) -> sqlite3.Connection:
    """Open a connection configured for many readers, one writer at a time, across processes. ``page_size``
    applies to a database created now (an existing one keeps its own)."""
    if read_only:
        return _connect_read_only(Path(location), busy_timeout_ms)
    conn = sqlite3.connect(location, isolation_level=None, check_same_thread=False, timeout=busy_timeout_ms / 1000)
    conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
    if page_size is not None:
        conn.execute(f"PRAGMA page_size = {int(page_size)}")  # a no-op once the file has pages (or is in WAL mode)
    # WAL: readers never block the writer and see a consistent snapshot; a crash (even kill -9) leaves the
    # database at its last committed transaction. synchronous=NORMAL is durable against process crashes;
    # only an OS crash or power loss can lose the last transactions (use synchronous=FULL for that).
    mode = _into_wal(conn, busy_timeout_ms / 1000)
    if mode and str(mode[0]).lower() not in ("wal", "memory"):
        raise StorageError("could not open the store: the database does not support write-ahead logging")
    conn.execute("PRAGMA synchronous = NORMAL")
    # The log is checkpointed beside the writes (`memdir.store._checkpoint`); a COMMIT does it only if those lag.
    conn.execute(f"PRAGMA wal_autocheckpoint = {_checkpoint.FOREGROUND_PAGES}")
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def _into_wal(conn: sqlite3.Connection, timeout: float) -> Any:
    """Switch a connection to WAL, waiting for other connections doing the same.

    Several processes opening a new store at once each read it and then need its exclusive lock to change the
    journal mode; SQLite reports that deadlock as "database is locked" at once, without the busy handler, so
    the wait is here (CI saw one of six racing creators fail to open).
    """
    deadline = time.monotonic() + timeout
    delay = 0.001
    while True:
        try:
            return conn.execute("PRAGMA journal_mode = WAL").fetchone()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc).lower() or time.monotonic() >= deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


def _connect_read_only(path: Path, busy_timeout_ms: int) -> sqlite3.Connection:
    """A connection that never writes, for a store on a read-only disk (a snapshot, a read-only volume).

    ``mode=ro`` still needs the WAL's shared-memory file, which cannot be created on a read-only file system;
    then ``immutable=1`` tells SQLite nothing can change the file, which on such a disk is simply true.
    """
    # realpath: a POSIX path may start with '//', which in a URI would read as a host name.
    base = "file:" + urllib.parse.quote(os.path.realpath(path))
    last: sqlite3.Error | None = None
    for query in ("?mode=ro", "?mode=ro&immutable=1"):
        try:
            conn = sqlite3.connect(
                base + query, uri=True, isolation_level=None, check_same_thread=False, timeout=busy_timeout_ms / 1000
            )
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.Error as exc:
            last = exc
            continue
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        return conn
    assert last is not None
    raise last


_CLOSE_WAIT = 60.0  # seconds `close` waits for other threads' transactions (twice the busy timeout)


class SqlDatabase:
    """Connections to one SQLite database; ``location=None`` is a private in-memory database."""

    dialect: Dialect = "sqlite"

    def __init__(self, location: str | Path | None, *, read_only: bool = False, page_size: int | None = None) -> None:
        self.read_only = read_only
        self._location = location
        self._page_size = page_size  # for a database this creates (`connect`)
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        # In memory, one connection serves every thread, one statement group at a time.
        self._shared: sqlite3.Connection | None = None
        self._serial = threading.RLock() if location is None else None
        self._writer_key = None if location is None else os.path.realpath(location)  # `_writers_of`
        self._ensured: set[str] = set()
        self._closed = False
        # Transactions running (`_Session`), by thread ident: `close` waits for the other threads' only. A
        # KeyboardInterrupt (raised in the main thread, between any two statements) can leave the interrupted
        # thread's own count wrong, and `close` in that thread must not wait for it: it waited 60 s.
        self._running: dict[int, int] = {}
        self._quiet = threading.Condition(self._lock)
        self._closing = False  # no new transaction starts meanwhile: a busy thread cannot starve `close`
        if location is not None and not read_only:
            self.read_only = not create_private(Path(location))

    @property
    def closed(self) -> bool:
        """True after `close` until a connection is opened again (background work checks it before writing)."""
        return self._closed

    @property
    def conn(self) -> sqlite3.Connection:
        if self._location is None:
            if self._shared is None:
                self._shared = self._connect()
            return self._shared
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
        return conn

    def _connect(self) -> sqlite3.Connection:
        try:
            location = ":memory:" if self._location is None else self._location
            conn = connect(location, read_only=self.read_only, page_size=self._page_size)
        except sqlite3.Error as exc:
            raise translate(exc, "open the store") from exc
        with self._lock:
            self._all.append(conn)
            self._closed = False
        return conn

    def close(self) -> None:
        """Close every thread's connection, once the transactions other threads are running have ended: closing a
        connection under a running statement crashes the interpreter (a tool's audit log flushes on a thread of
        its own, and a store may be closed before the tool)."""
        with self._lock:
            me = threading.get_ident()
            self._closing = True
            try:
                if not self._quiet.wait_for(lambda: not self._others_running(me), timeout=_CLOSE_WAIT):
                    raise StorageError("could not close the store: another thread is still using it")
                for conn in self._all:
                    with contextlib.suppress(sqlite3.Error):
                        conn.close()
                self._all.clear()
                self._closed = True
            finally:
                self._closing = False
                self._quiet.notify_all()
        self._local = threading.local()
        self._shared = None
        if self._writer_key is not None:
            _checkpoint.wait_idle(self._writer_key)  # no connection of ours outlives the database's

    def ensure(self, migrations: Migrations) -> None:
        """Apply a feature's migrations once per process (a read-only database is taken as it is)."""
        if migrations.name in self._ensured or self.read_only:
            return
        with self._exclusive(), self._using() as conn:
            try:
                migrations.apply(conn)
            except sqlite3.Error as exc:
                raise translate(exc, "prepare the store") from exc
        self._ensured.add(migrations.name)

    def transaction(self, doing: str) -> _Session:
        """A write transaction: taken at once (``BEGIN IMMEDIATE``), so two writers never interleave."""
        if self.read_only:
            raise StorageError(f"could not {doing}: the store is read-only")
        return _Session(self, doing, "BEGIN IMMEDIATE")

    def commit_and_continue(self, conn: sqlite3.Connection, doing: str) -> None:
        """Inside `transaction`: commit what it did so far and go on in a new write transaction."""
        try:
            conn.execute("COMMIT")
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise translate(exc, doing) from exc

    def reading(self, doing: str) -> _Session:
        """A read transaction: several queries see one snapshot."""
        return _Session(self, doing, "BEGIN")

    def statement(self, doing: str) -> _Session:
        """One query, no transaction around it: a single statement sees one snapshot of its own (a read of a file
        is one query; its ``BEGIN`` and ``COMMIT`` would double what it costs)."""
        return _Session(self, doing, None)

    @contextlib.contextmanager
    def _using(self) -> Iterator[sqlite3.Connection]:
        """This thread's connection, counted in use until the block ends (`close` waits for other threads')."""
        conn = self._enter()
        try:
            yield conn
        finally:
            self._leave()

    def _enter(self) -> sqlite3.Connection:
        me = threading.get_ident()
        with self._lock:  # counted before the connection is taken: `close` cannot come in between
            depth = self._running.get(me, 0)
            if self._closing and not depth:
                self._quiet.wait_for(lambda: not self._closing)
            self._running[me] = depth + 1
        try:
            return self.conn
        except BaseException:
            self._leave()
            raise

    def _leave(self) -> None:
        me = threading.get_ident()
        with self._lock:
            depth = self._running.get(me, 1) - 1
            if depth > 0:
                self._running[me] = depth
            else:
                self._running.pop(me, None)  # no entry per thread that ever ran one
            self._quiet.notify_all()

    def _others_running(self, me: int) -> bool:
        """(Lock held.) Whether a thread other than ``me`` is in a transaction."""
        return any(thread != me for thread in self._running)

    @contextlib.contextmanager
    def _exclusive(self) -> Iterator[None]:
        if self._serial is None:
            yield
            return
        with self._serial:
            yield


_WRITE_WAIT = 30.0  # seconds a write waits for this process's other writers (SQLite's busy timeout)
# The child of a fork takes new locks: the parent's other threads are not in the child, so a lock one of them
# held would never be let go (`_writers_of` looks its lock up per transaction).
_WRITERS = PerFile(lambda _: threading.RLock())


def _writers_of(key: str | None) -> threading.RLock | None:
    """The lock this process's write transactions on the database file ``key`` (its real path) take before
    ``BEGIN IMMEDIATE``, shared by every `SqlDatabase` on the file (a store's index and its auxiliary database are
    two). SQLite makes a writer that finds the file locked sleep and retry, a millisecond or more each time: a
    command that met the audit log's background flush would wait out a sleep long after the flush ended. A lock in
    the process wakes it the moment the other writer commits; other processes are still kept out by SQLite's own
    lock."""
    if key is None:
        return None  # in memory: `_serial` already runs one statement group at a time
    return _WRITERS[key]


class _Session:
    """`SqlDatabase.transaction`, `reading` and `statement` as one small context manager (the stacked
    generator-based ones it replaces cost more than the queries of a read): the serial lock of an in-memory
    database, this thread's connection counted in use, ``begin`` (None: no transaction), and on the way out
    ``COMMIT``, or a rollback and the error translated."""

    __slots__ = ("_begin", "_conn", "_db", "_doing", "_serial")

    def __init__(self, db: SqlDatabase, doing: str, begin: str | None) -> None:
        self._db, self._doing, self._begin = db, doing, begin
        writes = db._serial is None and begin == "BEGIN IMMEDIATE"
        self._serial = _writers_of(db._writer_key) if writes else db._serial

    def __enter__(self) -> sqlite3.Connection:
        if self._serial is not None and not self._serial.acquire(timeout=_WRITE_WAIT):
            raise StorageError(f"could not {self._doing}: the store is busy with another write; try again")
        try:
            self._conn = conn = self._db._enter()
        except BaseException:
            self._unlock()
            raise
        if self._begin is not None:
            try:
                conn.execute(self._begin)
            except sqlite3.Error as exc:
                self._release()
                raise translate(exc, self._doing) from exc
        return conn

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        try:
            self._end(exc)
        finally:
            self._release()

    def _end(self, exc: BaseException | None) -> None:
        if self._begin is None:
            if isinstance(exc, sqlite3.Error):
                raise translate(exc, self._doing) from exc
            return
        if exc is None:
            self._commit()
            return
        self._rollback()
        if isinstance(exc, sqlite3.Error):
            raise translate(exc, self._doing) from exc

    def _commit(self) -> None:
        try:
            self._conn.execute("COMMIT")
        except sqlite3.Error as failed:
            self._rollback()
            raise translate(failed, self._doing) from failed
        if self._begin == "BEGIN IMMEDIATE" and self._db._writer_key is not None:
            _checkpoint.committed(self._db._writer_key)  # a write: the log grew

    def _rollback(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self._conn.execute("ROLLBACK" if self._begin == "BEGIN IMMEDIATE" else "COMMIT")

    def _release(self) -> None:
        self._db._leave()
        self._unlock()

    def _unlock(self) -> None:
        if self._serial is not None:
            self._serial.release()
