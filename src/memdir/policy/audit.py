"""The audit log: an append-only record of every read and write made through the memory tool and the CLI.

Each `AuditEntry` says who (actor, session, source, channel ``tool``/``cli``/``review``/``gc``), what (command,
path, outcome, the findings' rules), when, and the SHA-256 and size of the content read or written. Content is
never stored, only its hash: a secret that reached a write (or was redacted from it) is not in the log.

Rows live in the store's auxiliary database (`Store.aux`), tables made by the ``memdir-audit`` migrations; a
trigger refuses UPDATE and DELETE on them, so the log is append-only for everyone who uses memdir to reach it.
The same flush keeps ``access``: the last time each file was read or written, which expiry (`memdir gc`) reads.

Writing a row per read would put a database transaction on the hot path of every ``view``. So entries are
buffered per store and flushed in one transaction:

- at once after a write the write policy acted on (redacted, warned about, held, refused): which rules it
  matched is recorded nowhere else,
- when the buffer holds `AuditLog.max_records` entries, or its oldest entry is `AuditLog.max_delay` seconds
  old: by a background thread (which runs while the buffer is not empty, so an idle process flushes too, and
  the command that fills the buffer does not wait for the transaction),
- when the tool or the log is closed, and at interpreter exit.

A clean write waits in the buffer like a read: its version, recorded in the write's own transaction, already
says who wrote what and when (actor, session, source, time, SHA-256, size), so its audit row adds nothing a crash
could take away. A transaction of its own per write cost more than the rest of the audit log together.

**Crash window:** a process killed with ``kill -9`` (or losing power) loses the reads and clean writes it buffered
since the last flush: at most ``max_delay`` seconds (1 s by default) or ``max_records`` entries. The writes
themselves, and their versions, are not affected.

**Tamper evidence.** The trigger stops memdir's users, not someone with the database file. So each entry also
records its number in the namespace (``seq``) and a chain value (`memdir.store._chain`): SHA-256 over the previous
entry's value and this entry's columns. The flush reads and moves the namespace's head (``audit_heads``: last
number and value) in its own transaction; the upsert that reads it locks the row, so flushes of several processes
or servers into one database take turns (SQLite's write lock does the same). `verify_chain` walks the chain:
an entry deleted, edited, inserted or moved, or the newest ones cut off, is reported (`memdir verify`). Entries
written before migration ``0002_audit_chain`` have no number and are not checked.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import threading
import time
import weakref
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from ..errors import MemdirError
from ..store._chain import ChainHead, ChainWalk, encode_tail, genesis, link_tail, stored
from ..store._migrations import Migrations, Schema

if TYPE_CHECKING:
    from collections.abc import Iterator

    from ..store._base import Store
    from ..store._chain import ChainReport, Row
    from ..store._db import AuxConnection, AuxDatabase

__all__ = ["AuditEntry", "AuditLog", "audit_log"]

log = logging.getLogger("memdir.audit")

migrations = Migrations("memdir-audit")


@migrations("0001_audit")
def _audit_tables(schema: Schema) -> None:
    schema.script(_POSTGRES_TABLES if schema.dialect == "postgres" else _SQLITE_TABLES)


# Paths compare byte by byte on both engines (COLLATE "C" on PostgreSQL): `entries(path=...)` selects a directory
# by key range, which another collation's ordering of '/' would break.
_SQLITE_TABLES = """
    CREATE TABLE audit (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        ns TEXT NOT NULL,
        ts REAL NOT NULL,
        channel TEXT NOT NULL,
        actor TEXT NOT NULL,
        session TEXT,
        source TEXT,
        command TEXT NOT NULL,
        path TEXT,
        new_path TEXT,
        outcome TEXT NOT NULL,
        sha256 TEXT,
        size INTEGER,
        version INTEGER,
        detail TEXT
    );
    CREATE INDEX audit_by_time ON audit (ns, ts);
    CREATE INDEX audit_by_path ON audit (ns, path, ts);
    CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
        BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
    CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
        BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
    CREATE TABLE access (
        ns TEXT NOT NULL,
        path TEXT NOT NULL,
        last_access REAL NOT NULL,
        PRIMARY KEY (ns, path)
    ) WITHOUT ROWID;
"""

# PostgreSQL refuses TRUNCATE too (SQLite has none); an owner can still drop the triggers, as with SQLite's.
_POSTGRES_TABLES = """
    CREATE TABLE audit (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        ns TEXT COLLATE "C" NOT NULL,
        ts DOUBLE PRECISION NOT NULL,
        channel TEXT NOT NULL,
        actor TEXT NOT NULL,
        session TEXT,
        source TEXT,
        command TEXT NOT NULL,
        path TEXT COLLATE "C",
        new_path TEXT COLLATE "C",
        outcome TEXT NOT NULL,
        sha256 TEXT,
        size BIGINT,
        version BIGINT,
        detail TEXT
    );
    CREATE INDEX audit_by_time ON audit (ns, ts);
    CREATE INDEX audit_by_path ON audit (ns, path, ts);
    CREATE FUNCTION memdir_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'the audit log is append-only'; END $$;
    CREATE TRIGGER audit_no_change BEFORE UPDATE OR DELETE ON audit
        FOR EACH ROW EXECUTE FUNCTION memdir_audit_append_only();
    CREATE TRIGGER audit_no_truncate BEFORE TRUNCATE ON audit
        FOR EACH STATEMENT EXECUTE FUNCTION memdir_audit_append_only();
    CREATE TABLE access (
        ns TEXT COLLATE "C" NOT NULL,
        path TEXT COLLATE "C" NOT NULL,
        last_access DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (ns, path)
    );
"""


@migrations("0002_audit_chain")
def _audit_chain(schema: Schema) -> None:
    # Each entry's number and chain value, and each namespace's head (see the module docstring). Not a unique index:
    # a head row removed by hand must not stop the log from recording (verify reports the numbers given out again).
    blob, integer = ("BYTEA", "BIGINT") if schema.dialect == "postgres" else ("BLOB", "INTEGER")
    text = 'TEXT COLLATE "C"' if schema.dialect == "postgres" else "TEXT"
    schema.script(
        f"""
        ALTER TABLE audit ADD COLUMN seq {integer};
        ALTER TABLE audit ADD COLUMN chain {blob};
        CREATE INDEX audit_by_seq ON audit (ns, seq);
        CREATE TABLE audit_heads (ns {text} PRIMARY KEY, last {integer} NOT NULL DEFAULT 0, chain {blob});
        """
    )


_COLUMNS = "ts, channel, actor, session, source, command, path, new_path, outcome, sha256, size, version, detail"
_MAX_PATH = 1100  # paths are echoed as sent, even refused ones: bound what a hostile one can add to the log


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One read or write. ``path``/``new_path`` are virtual paths as sent (a refused one included);
    ``outcome`` is ``ok``, ``error`` or the write policy's action (``warn``, ``redact``, ``quarantine``,
    ``block``); ``detail`` names the findings' rules (``secret:aws-access-key``), never their text."""

    ts: float
    channel: str
    actor: str
    session: str | None
    source: str | None
    command: str
    path: str | None
    new_path: str | None = None
    outcome: str = "ok"
    sha256: str | None = None
    size: int | None = None
    version: int | None = None
    detail: str | None = None

    def row(self) -> tuple[Any, ...]:
        return (
            self.ts, _storable(self.channel), _storable(self.actor), _storable(self.session),
            _storable(self.source), _storable(self.command), _storable(_bounded(self.path)),
            _storable(_bounded(self.new_path)), _storable(self.outcome), self.sha256, self.size, self.version,
            _storable(self.detail),
        )  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _bounded(path: str | None) -> str | None:
    return path if path is None or len(path) <= _MAX_PATH else path[:_MAX_PATH] + "…"


def _storable(text: str | None) -> str | None:
    """``text`` as either engine can store it. Refused paths are logged as sent, and one holding a NUL (which a
    PostgreSQL text value cannot hold) or a lone surrogate (which UTF-8 cannot encode) would otherwise fail
    every flush of the batch it is in, for good: the log would stop recording."""
    if text is None or (text.isprintable() and "\x00" not in text):
        return text
    return text.replace("\x00", "\ufffd").encode("utf-8", "replace").decode("utf-8")


class AuditLog:
    """The buffered audit log of one store (get it with `audit_log`, which shares one per store object)."""

    # Rows a flush writes at most: each flush is a transaction of its own, which the commands of a busy process
    # share the write lock (and the GIL) with. 1,024 rather than 256 made the memory tool on SQLite ~4% faster
    # (docs/benchmarks.md); a command that meets a flush of 1,024 waits ~12 ms. Below ~1,000 entries a second
    # `max_delay` comes first, and it bounds what a crash can lose.
    max_records = 1024
    max_delay = 1.0  # seconds

    def __init__(self, store: Store) -> None:
        self.namespace = store.namespace
        self._db: AuxDatabase = store.aux
        self._buffer: list[AuditEntry] = []
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        # One flush at a time: a `flush` (a tool's close) returns once the background flush in flight is written,
        # so the store can be closed after it without that write opening the database again.
        self._flushing = threading.Lock()
        self._timer = False  # whether the background thread runs (`_start_timer`)
        self._closed = False
        self._ready = False
        self.failure: str | None = None  # why the last flush failed, until one succeeds (`unwritten`)
        _LIVE.add(self)

    # -- recording ----------------------------------------------------------------------------------------------

    def record(self, entry: AuditEntry, *, flush: bool = False) -> None:
        """Buffer ``entry``; ``flush=True`` (a write the policy acted on) writes the buffer out now."""
        with self._lock:
            self._buffer.append(entry)
            if not flush:
                # The background thread writes the buffer out when it is full or old: the command that fills it
                # does not wait for a transaction of 256 rows.
                if not self._timer:  # none yet, or it ended
                    self._start_timer()
                elif len(self._buffer) >= self.max_records or entry.ts - self._buffer[0].ts >= self.max_delay:
                    self._wake.notify()
                return
        self.flush()

    def flush(self) -> None:
        """Write the buffered entries in one transaction. Failures are logged, never raised: the audit log must
        not break the command it records. Entries stay buffered (up to a bound) for the next try."""
        with self._flushing:
            self._flush(background=False)

    def _flush(self, *, background: bool) -> None:
        with self._lock:
            if background and self._db.closed:
                return  # the store was closed meanwhile: the entries wait for a `flush` (or the exit's)
            batch, self._buffer = self._buffer, []
        if not batch or self._db.read_only:
            return
        try:
            self._write(batch)
        except Exception as exc:  # whatever it was, the batch is kept for the next try, never dropped here
            if isinstance(exc, MemdirError):
                log.warning("audit log: could not write %d entries: %s", len(batch), exc)
            else:
                log.exception("audit log: unexpected error writing %d entries", len(batch))
            with self._lock:
                self._buffer = (batch + self._buffer)[-8 * self.max_records :]
                self.failure = exc.reason if isinstance(exc, MemdirError) else "an internal error (see the log)"
        else:
            self.failure = None

    @property
    def unwritten(self) -> int:
        """Entries buffered and not yet written: after a `flush`, those it could not write (`failure` says why)."""
        with self._lock:
            return len(self._buffer)

    def close(self) -> None:
        """Flush and stop the background timer. The log can still be used afterwards (it reopens)."""
        with self._lock:
            self._closed = True
            self._wake.notify_all()
        self.flush()
        with self._lock:
            self._closed = False

    # -- reading ------------------------------------------------------------------------------------------------

    def entries(
        self, *, path: str | None = None, since: float | None = None, limit: int | None = None
    ) -> list[AuditEntry]:
        """Entries oldest first, optionally for one path (or below a directory) and from a time on; the last
        ``limit`` only, when given."""
        self.flush()
        self._ensure()
        query = f"SELECT {_COLUMNS} FROM audit WHERE ns = ?"
        params: list[Any] = [self.namespace]
        if path is not None:
            # Below a directory: keys from "dir/" up to (not including) "dir0", '0' being the character after '/'.
            query += " AND (path = ? OR new_path = ? OR (path >= ? AND path < ?) OR (new_path >= ? AND new_path < ?))"
            below = path.rstrip("/")
            params += [path, path, below + "/", below + "0", below + "/", below + "0"]
        if since is not None:
            query += " AND ts >= ?"
            params.append(since)
        query += " ORDER BY id DESC" + (" LIMIT ?" if limit is not None else "")
        if limit is not None:
            params.append(limit)
        with self._db.reading("read the audit log") as conn:
            rows = conn.execute(query, params).fetchall()
        return [AuditEntry(*row) for row in reversed(rows)]

    def verify_chain(self) -> ChainReport:
        """Walk the namespace's chain of entries (see the module docstring), in one snapshot, after a flush."""
        self.flush()
        self._ensure()
        with self._db.reading("verify the audit log") as conn:
            head = conn.execute("SELECT last, chain FROM audit_heads WHERE ns = ?", (self.namespace,)).fetchone()
            last, value = head if head is not None else (0, None)
            walk = ChainWalk("audit", self.namespace, ChainHead(1, int(last), stored(value)))
            earlier, strays = _unchained(conn, self.namespace)
            return walk.run(_entry_rows(conn, self.namespace), earlier=earlier, strays=strays)

    def highest_version(self) -> int | None:
        """The highest version number an entry records (a write's), after a flush: `memdir verify` compares it with
        the history's last, which it cannot be above unless versions were lost."""
        self.flush()
        self._ensure()
        with self._db.reading("read the audit log") as conn:
            (highest,) = conn.execute("SELECT max(version) FROM audit WHERE ns = ?", (self.namespace,)).fetchone()
        return None if highest is None else int(highest)

    def last_access(self) -> dict[str, float]:
        """The last read or write of each path the log has seen (pending entries included)."""
        self._ensure()
        with self._db.reading("read access times") as conn:
            rows = conn.execute("SELECT path, last_access FROM access WHERE ns = ?", (self.namespace,)).fetchall()
        seen = {str(path): float(ts) for path, ts in rows}
        with self._lock:
            pending = list(self._buffer)
        for entry in pending:
            for path in _touched(entry):
                seen[path] = max(seen.get(path, 0.0), entry.ts)
        return seen

    # -- internals ----------------------------------------------------------------------------------------------

    def _ensure(self) -> None:
        if not self._ready:
            self._db.ensure(migrations)
            self._ready = True

    def _write(self, batch: list[AuditEntry]) -> None:
        self._ensure()
        access: dict[str, float] = {}
        for entry in batch:
            for path in _touched(entry):
                access[path] = max(access.get(path, 0.0), entry.ts)
        # Rows and their encodings are made before the transaction: a command's write waits for it to end.
        rows = [(float(entry.ts), *entry.row()[1:]) for entry in batch]  # the time as the REAL column gives it back
        prepared = [(row, encode_tail(row)) for row in rows]
        with self._db.transaction("write the audit log") as conn:
            _insert(conn, self.namespace, prepared, access)

    def _start_timer(self) -> None:
        """(Lock held.) A daemon thread that flushes the buffer when it is full or its oldest entry is older than
        ``max_delay``; it ends when the buffer is empty, so an idle store costs no thread. ``_timer`` says it runs;
        only the thread clears it, under the lock (and a fork, which does not copy threads, in the child)."""
        self._timer = True
        threading.Thread(target=self._run_timer, name="memdir-audit-flush", daemon=True).start()

    def _run_timer(self) -> None:
        try:
            while self._due():
                with self._flushing:
                    self._flush(background=True)
        except BaseException:
            with self._lock:
                self._timer = False
            raise

    def _due(self) -> bool:
        """(The background thread.) Wait until the buffer is due; False when nothing is left to do, the thread
        then marked as ended under the same lock a `record` checks it with."""
        with self._lock:
            while True:
                # A closed store (its tool not closed) has nothing to write to.
                if not self._buffer or self._closed or self._db.closed:
                    self._timer = False
                    return False
                full = len(self._buffer) >= self.max_records
                wait = 0.0 if full else self._buffer[0].ts + self.max_delay - time.time()
                if wait <= 0:
                    return True
                self._wake.wait(wait)


def _insert(conn: AuxConnection, ns: str, batch: list[_Prepared], access: dict[str, float]) -> None:
    marks = ", ".join("?" * (_COLUMNS.count(",") + 4))  # ns, the columns, seq, chain
    conn.executemany(f"INSERT INTO audit (ns, {_COLUMNS}, seq, chain) VALUES ({marks})", _chained(conn, ns, batch))
    # Sorted: two servers flushing at once take the rows' locks in one order (PostgreSQL would otherwise detect a
    # deadlock and abort one). CASE rather than max()/greatest(): each engine has only one of them.
    conn.executemany(
        "INSERT INTO access (ns, path, last_access) VALUES (?, ?, ?) ON CONFLICT (ns, path) DO UPDATE SET "
        "last_access = CASE WHEN excluded.last_access > access.last_access "
        "THEN excluded.last_access ELSE access.last_access END",
        [(ns, _storable(path), ts) for path, ts in sorted(access.items())],
    )


_Prepared = tuple[tuple[Any, ...], str]  # an entry's columns, and their encoding for its chain value (`encode_tail`)


def _chained(conn: AuxConnection, ns: str, batch: list[_Prepared]) -> list[tuple[Any, ...]]:
    """The batch's rows with their numbers and chain values, the namespace's head moved past them. The upsert
    that reads the head also locks its row until the flush commits: concurrent flushes number one after another."""
    last, value = conn.execute(
        "INSERT INTO audit_heads (ns) VALUES (?) ON CONFLICT (ns) DO UPDATE SET last = audit_heads.last "
        "RETURNING last, chain",
        (ns,),
    ).fetchone()
    seq, chain = int(last), stored(value) or genesis("audit", ns)
    rows: list[tuple[Any, ...]] = []
    for row, tail in batch:
        seq += 1
        chain = link_tail(chain, seq, tail)  # `link` of (seq, *row)
        rows.append((ns, *row, seq, chain))
    conn.execute("UPDATE audit_heads SET last = ?, chain = ? WHERE ns = ?", (seq, chain, ns))
    return rows


def _touched(entry: AuditEntry) -> list[str]:
    """The paths an entry counts as an access of: those of successful reads and writes."""
    if entry.outcome in ("error", "block", "quarantine") or entry.command == "delete":
        return []
    return [p for p in (entry.path, entry.new_path) if p]


def _entry_rows(conn: AuxConnection, ns: str) -> Iterator[Row]:
    """Every numbered entry as (number, chain value, the columns it covers), a page at a time, by number (and id,
    should a number have been given out twice)."""
    seq, last_id = -1, -1
    while True:
        rows = conn.execute(
            f"SELECT id, seq, chain, {_COLUMNS} FROM audit WHERE ns = ? AND (seq > ? OR (seq = ? AND id > ?)) "
            "ORDER BY seq, id LIMIT 2000",
            (ns, seq, seq, last_id),
        ).fetchall()
        if not rows:
            return
        for row in rows:
            last_id, seq = int(row[0]), int(row[1])
            yield seq, stored(row[2]), (seq, *row[3:])


def _unchained(conn: AuxConnection, ns: str) -> tuple[int, list[int]]:
    """How many entries have no number, and for those written after the first numbered one (none can be: memdir
    numbers every entry since the chain began) the number of the entry before each."""
    (count,) = conn.execute("SELECT count(*) FROM audit WHERE ns = ? AND seq IS NULL", (ns,)).fetchone()
    strays = conn.execute(
        "SELECT (SELECT max(b.seq) FROM audit b WHERE b.ns = a.ns AND b.id < a.id) FROM audit a "
        "WHERE a.ns = ? AND a.seq IS NULL AND a.id > (SELECT min(id) FROM audit WHERE ns = ? AND seq IS NOT NULL) "
        "ORDER BY a.id",
        (ns, ns),
    ).fetchall()
    return int(count), [int(r[0] or 0) for r in strays]


_LOGS: weakref.WeakKeyDictionary[Store, AuditLog] = weakref.WeakKeyDictionary()
_LIVE: weakref.WeakSet[AuditLog] = weakref.WeakSet()
_LOGS_LOCK = threading.Lock()


def audit_log(store: Store) -> AuditLog:
    """The audit log of ``store``'s backend: one per store object, so every gate and tool on a store shares one
    buffer."""
    store = store.backend
    with _LOGS_LOCK:
        found = _LOGS.get(store)
        if found is None:
            found = _LOGS[store] = AuditLog(store)
        return found


def _after_fork_in_child() -> None:
    for audit in list(_LIVE):  # their background threads stayed in the parent
        audit._timer = False


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_after_fork_in_child)


@atexit.register
def _flush_all() -> None:
    for audit in list(_LIVE):
        with contextlib.suppress(Exception):
            audit.flush()
