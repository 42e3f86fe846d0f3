"""The PostgreSQL store's rows, and one write transaction of a namespace (`Changes`): the namespace's lock taken
first, versions numbered and chained under it, everything sent in one round trip. `memdir.store.postgres` builds
the store's commands on them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import CorruptStoreError
from ._base import key_path
from ._chain import genesis, link, stored
from ._records import FileData, Origin, Quota, Usage, Version, sha256_hex

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..paths import MemoryPath
    from ._pg import PgConnection

__all__ = [
    "FILE_COLUMNS",
    "HAS_BELOW",
    "READ_FILE",
    "VERSION_COLUMNS",
    "Changes",
    "FileRow",
    "Place",
    "file_data",
    "file_row",
    "key_range",
    "version_of",
]


@dataclass(frozen=True, slots=True)
class FileRow:
    """A ``memdir_files`` row."""

    path: str
    version: int
    sha256: str
    size: int
    modified: float


FILE_COLUMNS = "path, version, sha256, size, modified"
VERSION_COLUMNS = "version, path, op, actor, session, source, ts, sha256, size, old_path"
_EMPTY = Usage(0, 0)


def file_row(row: Sequence[Any]) -> FileRow:
    return FileRow(str(row[0]), int(row[1]), str(row[2]), int(row[3]), float(row[4]))


READ_FILE = (
    "SELECT f.version, f.sha256, f.modified, b.content FROM memdir_files f "
    "LEFT JOIN memdir_blobs b ON b.ns = f.ns AND b.sha256 = f.sha256 WHERE f.ns = ? AND f.path = ?"
)
HAS_BELOW = "SELECT 1 FROM memdir_files WHERE ns = ? AND path >= ? AND path < ? LIMIT 1"


def file_data(target: MemoryPath, row: Sequence[Any]) -> FileData:
    """A `READ_FILE` row as the file it is."""
    version, sha, modified, content = row
    if content is None:
        raise CorruptStoreError("the store's database is damaged (missing content); run `memdir doctor`")
    return FileData(target, bytes(content), int(version), str(sha), float(modified))


def version_of(row: Sequence[Any]) -> Version:
    version, path, op, actor, session, source, ts, sha, size, old = row
    return Version(
        version=int(version),
        path=key_path(str(path)),
        op=str(op),
        actor=str(actor),
        session=session,
        source=source,
        timestamp=float(ts),
        sha256=sha,
        size=int(size),
        old_path=None if old is None else key_path(str(old)),
    )


def key_range(key: str) -> tuple[str, str]:
    """Keys strictly below directory ``key``: ``key/`` <= k < ``key0`` ('0' sorts right after '/')."""
    return (key + "/", key + "0") if key else ("", "\U0010ffff")


@dataclass(slots=True)
class Place:
    """What a write finds at its target: the file there, the file among its ancestors, whether files lie below."""

    row: FileRow | None
    blocker: str | None
    has_below: bool


@dataclass(slots=True)
class Changes:
    """One write transaction of a namespace: holds the namespace's lock, numbers its versions, and sends all its
    changes in one round trip (`flush`)."""

    conn: PgConnection
    ns: str
    last: int = 0
    usage: Usage = _EMPTY  # the namespace's counters when the lock was taken
    chain: bytes | None = None  # the chain's head: the value of version ``last`` (None while nothing is chained)
    added_files: int = 0
    added_bytes: int = 0
    blobs: dict[str, bytes] = field(default_factory=dict)
    gone: list[str] = field(default_factory=list)
    put: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    logged: list[tuple[Any, ...]] = field(default_factory=list)

    @classmethod
    def begin(cls, conn: PgConnection, ns: str) -> Changes:
        # The lock every writer of the namespace takes first (see the module docstring).
        lock = "SELECT last_version, files, bytes, chain FROM memdir_namespaces WHERE ns = ? FOR UPDATE"
        row = conn.execute(lock, (ns,)).fetchone()
        if row is None:  # opened read-only before the namespace had a row, or its row was removed by hand
            conn.execute("INSERT INTO memdir_namespaces (ns) VALUES (?) ON CONFLICT DO NOTHING", (ns,))
            row = conn.execute(lock, (ns,)).fetchone()
        assert row is not None
        chain = stored(row[3])
        return cls(conn, ns, last=int(row[0]), usage=Usage(int(row[1]), int(row[2])), chain=chain)

    def write(
        self,
        key: str,
        content: bytes,
        before: FileRow | None,
        *,
        op: str,
        origin: Origin,
        ts: float | None = None,
        quota: Quota | None = None,
    ) -> Version:
        files, size = 0 if before else 1, len(content) - (before.size if before else 0)
        if quota is not None:  # against the counters read under the namespace's lock: exact
            now = self.usage
            quota.check(Usage(now.files + self.added_files, now.bytes + self.added_bytes), files, size)
        sha = sha256_hex(content)
        self.blobs[sha] = content
        self.added_files += files
        self.added_bytes += size
        return self._record(key, op, origin, ts, sha, len(content), None)

    def delete(self, row: FileRow, *, origin: Origin, op: str = "delete", ts: float | None = None) -> Version:
        self.added_files -= 1
        self.added_bytes -= row.size
        self.gone.append(row.path)
        return self._record(row.path, op, origin, ts, None, 0, None)

    def move(self, row: FileRow, new_key: str, *, origin: Origin, ts: float | None = None) -> Version:
        self.gone.append(row.path)
        return self._record(new_key, "rename", origin, ts, row.sha256, row.size, row.path)

    def _record(
        self, key: str, op: str, origin: Origin, ts: float | None, sha: str | None, size: int, old: str | None
    ) -> Version:
        self.last += 1
        now = time.time() if ts is None else float(ts)  # as DOUBLE PRECISION gives it back
        if sha is not None:
            self.put[key] = (self.ns, key, self.last, sha, size, now)
        row = (self.last, key, op, origin.actor, origin.session, origin.source, now, sha, size, old)
        self.chain = link(self.chain if self.chain is not None else genesis("history", self.ns), row)
        self.logged.append((self.ns, *row, origin.request, self.chain))
        return version_of(row)

    def flush(self) -> None:
        """Send every change as one pipeline: one round trip however many files a delete or a rename touched."""
        conn = self.conn
        with conn.raw.pipeline():
            if self.blobs:
                conn.executemany(
                    # Stored once per namespace; a row left empty by a redaction (`is_redacted`) takes it again.
                    "INSERT INTO memdir_blobs (ns, sha256, content) VALUES (?, ?, ?) ON CONFLICT (ns, sha256) "
                    "DO UPDATE SET content = EXCLUDED.content WHERE octet_length(memdir_blobs.content) = 0",
                    [(self.ns, sha, content) for sha, content in self.blobs.items()],
                )
            if self.gone:
                conn.execute("DELETE FROM memdir_files WHERE ns = ? AND path = ANY(?)", (self.ns, self.gone))
            if self.put:
                conn.executemany(
                    f"INSERT INTO memdir_files (ns, {FILE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT (ns, path) DO UPDATE SET version = excluded.version, sha256 = excluded.sha256, "
                    "size = excluded.size, modified = excluded.modified",
                    list(self.put.values()),
                )
            if self.logged:
                conn.executemany(
                    f"INSERT INTO memdir_versions (ns, {VERSION_COLUMNS}, request, chain) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    self.logged,
                )
                conn.execute(
                    "UPDATE memdir_namespaces SET last_version = ?, files = files + ?, bytes = bytes + ?, chain = ? "
                    "WHERE ns = ?",
                    (self.last, self.added_files, self.added_bytes, self.chain, self.ns),
                )
