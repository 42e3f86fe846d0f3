"""The PostgreSQL store: every namespace, file, version and blob in one PostgreSQL database
(``postgresql://user:password@host/db``), shared by any number of memdir servers and agents: one truth.

Tables (``memdir_`` prefixed, so the database can be shared with other applications), made by the named
migrations of `memdir.store._pgschema`, recorded in ``_memdir_migrations``:

- ``memdir_files``: the current state, one row per file (version, SHA-256, size, time);
- ``memdir_versions``: the append-only change log, numbered 1, 2, 3... per namespace;
- ``memdir_blobs``: the content of every version, by namespace and SHA-256 (deduplicated within a namespace);
- ``memdir_namespaces``: per namespace, the last version number and the file and byte counts, and the head of the
  history's hash chain (``chain``, ``chain_from``: as in the SQLite schema, `memdir.store._sql`);
- ``memdir_pruned``: the runs of versions `memdir gc` pruned, each with its last version's chain value.

Each version's chain value (``memdir_versions.chain``, `memdir.store._chain`) is computed under the namespace's
lock from the head read with it, and the head written back in the same transaction.

Paths are ``COLLATE "C"``: directory ranges (``path >= 'a/' AND path < 'a0'``) and tree order need byte order,
whatever the database's own collation.

Concurrency. Every write transaction starts by locking its namespace's row (``SELECT ... FOR UPDATE``), then
reads, checks and writes under READ COMMITTED, whose every statement sees what committed before it. Version
numbers are contiguous per namespace, so writes to one namespace are ordered by that row anyway; taking it first
also makes each read-modify-write (``update``: str_replace, insert; ``move``; a write with a precondition) and each
structural check (a file where a directory is being made) atomic across servers: no lost update, no file below a
file. Namespaces write in parallel; reads never wait. A transaction PostgreSQL aborts for a serialization failure
or a deadlock is run again (a bounded number of times) by `PgDatabase.run`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import (
    AlreadyExistsError,
    ConflictError,
    NotADirectoryError_,
    NotAFileError,
    NotFoundError,
    PathError,
    RedactedError,
)
from ..paths import MemoryPath
from ._base import Store, check_expect, check_move, key_path, prunable_versions
from ._chain import ChainReport, history_report, record_pruned
from ._pg import PgDatabase, split_url
from ._pgchanges import (
    FILE_COLUMNS,
    HAS_BELOW,
    READ_FILE,
    VERSION_COLUMNS,
    Changes,
    FileRow,
    Place,
    file_data,
    file_row,
    key_range,
    version_of,
)
from ._pgschema import migrations
from ._records import (
    ANY,
    DEFAULT_NAMESPACE,
    Entry,
    Expect,
    FileData,
    Op,
    Origin,
    PathLike,
    Quota,
    Stat,
    Usage,
    Version,
    as_path,
    check_namespace,
    is_redacted,
)
from ._urls import redact_url

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from ._pg import PgConnection

__all__ = ["PostgresStore", "migrations"]


class PostgresStore(Store):
    """A namespace in a PostgreSQL database. ``url``: ``postgresql://user:password@host:port/dbname`` with libpq's
    parameters and memdir's own (``pool_min``, ``pool_max``, ``pool_timeout``, ``retries``) in the query."""

    checks_quota = True  # against the counters read under the namespace's row lock

    def __init__(self, url: str, *, namespace: str = DEFAULT_NAMESPACE) -> None:
        self.namespace = check_namespace(namespace)
        self.url = redact_url(url)  # what may be shown; the password stays with the pool only
        dsn, options = split_url(url)
        self._db = PgDatabase(dsn, options)
        try:
            self._db.ensure(migrations)
            if not self._db.read_only:
                with self._db.transaction("open the store") as conn:
                    conn.execute("INSERT INTO memdir_namespaces (ns) VALUES (?) ON CONFLICT DO NOTHING", (namespace,))
        except BaseException:
            self._db.close()
            raise
        # The features' tables live in the same database, on the same pool: one truth for every server.
        self.__dict__["_aux_db"] = self._db

    @property
    def read_only(self) -> bool:
        return self._db.read_only

    def __repr__(self) -> str:
        return f"PostgresStore({self.url!r}, namespace={self.namespace!r})"

    def close(self) -> None:
        super().close()
        self._db.close()

    # -- reading ------------------------------------------------------------------------------------------

    # Reads are single statements (`PgDatabase.query`): one round trip, one snapshot, never waiting for a writer.

    def stat(self, path: PathLike) -> Stat | None:
        target = as_path(path)
        if target.is_root:
            return Stat(target, "dir", self.usage().bytes)
        low, high = key_range(target.key)
        rows = self._db.query(
            "read the store",
            f"SELECT {FILE_COLUMNS} FROM memdir_files WHERE ns = ? AND path = ? "
            "UNION ALL SELECT NULL, count(*), NULL, coalesce(sum(size), 0)::bigint, NULL FROM memdir_files "
            "WHERE ns = ? AND path >= ? AND path < ?",
            (self.namespace, target.key, self.namespace, low, high),
        )
        for path_, version, sha, size, modified in rows:
            if path_ is not None:
                return Stat(target, "file", int(size), int(version), str(sha), float(modified))
            if version:  # files below: a directory
                return Stat(target, "dir", int(size))
        return None

    def read(self, path: PathLike) -> FileData:
        target = as_path(path)
        rows = [] if target.is_root else self._db.query("read a file", READ_FILE, (self.namespace, target.key))
        if not rows:
            if target.is_root or self._has_below(None, target.key):
                raise NotAFileError(f"{target.virtual} is a directory")
            raise NotFoundError(f"{target.virtual} does not exist")
        return file_data(target, rows[0])

    def list_files(self, path: PathLike = MemoryPath(())) -> list[Entry]:
        target = as_path(path)
        low, high = key_range(target.key)
        found = [
            file_row(r)
            for r in self._db.query(
                "list files",
                # Tree order: '/' sorts as chr(1), below every character a name may hold (and "C": byte order).
                f"SELECT {FILE_COLUMNS} FROM memdir_files WHERE ns = ? AND (path = ? OR path >= ? AND path < ?) "
                "ORDER BY replace(path, '/', chr(1))",
                (self.namespace, target.key, low, high),
            )
        ]
        if not target.is_root:
            if any(r.path == target.key for r in found):
                raise NotADirectoryError_(f"{target.virtual} is a file")
            if not found:
                raise NotFoundError(f"{target.virtual} does not exist")
        return [Entry(key_path(r.path), r.size, r.modified, r.version, r.sha256) for r in found]

    def usage(self) -> Usage:
        rows = self._db.query(
            "read the store", "SELECT files, bytes FROM memdir_namespaces WHERE ns = ?", (self.namespace,)
        )
        return Usage(files=int(rows[0][0]), bytes=int(rows[0][1])) if rows else Usage(0, 0)

    records_requests = True  # each change and its versions (with origin.request) are one transaction

    def requested(self, key: str) -> list[Version]:
        with self._db.reading("read the history") as conn:
            rows = conn.execute(
                f"SELECT {VERSION_COLUMNS} FROM memdir_versions WHERE ns = ? AND request = ? ORDER BY version",
                (self.namespace, key),
            ).fetchall()
        return [version_of(r) for r in rows]

    def namespaces(self) -> list[str]:
        rows = self._db.query(
            "list the namespaces", "SELECT ns FROM memdir_namespaces WHERE last_version > 0 ORDER BY ns"
        )
        return [str(r[0]) for r in rows]

    # -- writing ------------------------------------------------------------------------------------------

    def write(
        self,
        path: PathLike,
        content: bytes,
        *,
        expect: Expect = ANY,
        origin: Origin = Origin(),
        op: Op = "write",
        quota: Quota | None = None,
    ) -> Version:
        target = as_path(path)

        def work(conn: PgConnection) -> Version:
            changes = Changes.begin(conn, self.namespace)
            before = self._writable(conn, target)
            check_expect(target, None if before is None else before.version, expect)
            version = changes.write(target.key, content, before, op=op, origin=origin, quota=quota)
            changes.flush()
            return version

        return self._db.run("write a file", work)

    def update(
        self,
        path: PathLike,
        change: Callable[[FileData], bytes],
        *,
        origin: Origin = Origin(),
        op: Op = "write",
        quota: Quota | None = None,
    ) -> Version:
        # Read, change and write under the namespace's lock, in one transaction: no other writer, on this server
        # or another, can slip in between, so nothing is lost (a deadlock retry runs ``change`` again on what is
        # then current, as the base contract allows).
        target = as_path(path)

        def work(conn: PgConnection) -> Version:
            changes = Changes.begin(conn, self.namespace)
            current = self._fetch(conn, target)
            before = FileRow(target.key, current.version, current.sha256, len(current.content), current.modified)
            version = changes.write(target.key, change(current), before, op=op, origin=origin, quota=quota)
            changes.flush()
            return version

        return self._db.run("edit a file", work)

    def delete(self, path: PathLike, *, origin: Origin = Origin()) -> list[Version]:
        target = as_path(path)
        if target.is_root:
            raise PathError(target.virtual, "not_allowed", "the root cannot be deleted")

        def work(conn: PgConnection) -> list[Version]:
            changes = Changes.begin(conn, self.namespace)
            rows = self._file_or_below(conn, target)
            if not rows:
                raise NotFoundError(f"{target.virtual} does not exist")
            versions = [changes.delete(r, origin=origin) for r in rows]
            changes.flush()
            return versions

        return self._db.run("delete", work)

    def move(self, src: PathLike, dst: PathLike, *, origin: Origin = Origin()) -> list[Version]:
        source, dest = as_path(src), as_path(dst)
        check_move(source, dest)

        def work(conn: PgConnection) -> list[Version]:
            changes = Changes.begin(conn, self.namespace)
            rows = self._file_or_below(conn, source)
            if not rows:
                raise NotFoundError(f"{source.virtual} does not exist")
            place = self._place(conn, dest)
            if dest.is_root or place.row is not None or place.has_below:
                raise AlreadyExistsError(f"{dest.virtual} already exists")
            if place.blocker is not None:
                raise NotADirectoryError_(f"/memories/{place.blocker} is a file")
            versions = [changes.move(r, key_path(r.path).rebase(source, dest).key, origin=origin) for r in rows]
            changes.flush()
            return versions

        return self._db.run("rename", work)

    def import_version(self, version: Version, content: bytes | None, *, quota: Quota | None = None) -> Version:
        origin = Origin(version.actor, version.session, version.source)

        def work(conn: PgConnection) -> Version:
            changes = Changes.begin(conn, self.namespace)
            made = self._import(conn, changes, version, content, origin, quota)
            changes.flush()
            return made

        return self._db.run("import a version", work)

    def _import(
        self,
        conn: PgConnection,
        changes: Changes,
        version: Version,
        content: bytes | None,
        origin: Origin,
        quota: Quota | None,
    ) -> Version:
        at = version.timestamp
        if version.sha256 is None:
            row = self._get(conn, version.path.key)
            if row is None:
                raise NotFoundError(f"{version.path.virtual} does not exist")
            return changes.delete(row, origin=origin, op=version.op, ts=at)
        if version.op == "rename" and version.old_path is not None:
            row = self._get(conn, version.old_path.key)
            if row is None:
                raise NotFoundError(f"{version.old_path.virtual} does not exist")
            if self._writable(conn, version.path) is not None:
                raise AlreadyExistsError(f"{version.path.virtual} already exists")
            return changes.move(row, version.path.key, origin=origin, ts=at)
        if content is None:
            raise NotFoundError(f"no content for version {version.version} of {version.path.virtual}")
        before = self._writable(conn, version.path)
        return changes.write(version.path.key, content, before, op=version.op, origin=origin, ts=at, quota=quota)

    # -- history ------------------------------------------------------------------------------------------

    def log(self, since: int = 0, *, rescan: bool = True) -> Iterator[Version]:
        del rescan  # every change is recorded as it is made
        last = since
        while True:
            rows = self._db.query(
                "read the history",
                f"SELECT {VERSION_COLUMNS} FROM memdir_versions WHERE ns = ? AND version > ? "
                "ORDER BY version LIMIT 500",
                (self.namespace, last),
            )
            if not rows:
                return
            for row in rows:
                item = version_of(row)
                last = item.version
                yield item

    def _versions_touching(self, path: MemoryPath, before: int | None) -> list[Version]:
        limit = before if before is not None else 1 << 62
        rows = self._db.query(
            "read the history",
            f"SELECT {VERSION_COLUMNS} FROM memdir_versions WHERE ns = ? AND path = ? AND version < ? "
            f"UNION SELECT {VERSION_COLUMNS} FROM memdir_versions WHERE ns = ? AND old_path = ? AND version < ? "
            "ORDER BY version",
            (self.namespace, path.key, limit, self.namespace, path.key, limit),
        )
        return [version_of(r) for r in rows]

    def read_blob(self, sha256: str) -> bytes:
        rows = self._db.query(
            "read a version", "SELECT content FROM memdir_blobs WHERE ns = ? AND sha256 = ?", (self.namespace, sha256)
        )
        if not rows:
            raise NotFoundError("no version of this namespace has that content")
        if is_redacted(sha256, bytes(rows[0][0])):
            raise RedactedError("that content was redacted: it is no longer stored")
        return bytes(rows[0][0])

    def redact_content(self, sha256: str) -> bool:
        def work(conn: PgConnection) -> bool:
            Changes.begin(conn, self.namespace)  # the namespace's lock: no write can take the content meanwhile
            held = "SELECT 1 FROM memdir_files WHERE ns = ? AND sha256 = ?"
            if conn.execute(held, (self.namespace, sha256)).fetchone() is not None:
                raise ConflictError("a current file holds this content: change or delete the file first")
            # The row keeps its hash; its old bytes leave the table's files when PostgreSQL vacuums it (autovacuum).
            emptied = conn.execute(
                "UPDATE memdir_blobs SET content = ''::bytea WHERE ns = ? AND sha256 = ? AND octet_length(content) > 0",
                (self.namespace, sha256),
            )
            return emptied.rowcount > 0

        return self._db.run("redact content", work)

    def prune_history(self, before: float) -> int:
        def work(conn: PgConnection) -> int:
            Changes.begin(conn, self.namespace)  # the namespace's lock: no write lands while the log is judged
            rows = conn.execute(
                f"SELECT {VERSION_COLUMNS}, chain FROM memdir_versions WHERE ns = ? ORDER BY version",
                (self.namespace,),
            ).fetchall()
            gone = sorted(prunable_versions((version_of(r[:-1]) for r in rows), before))
            if not gone:
                return 0
            record_pruned(conn, "memdir_", self.namespace, gone, {int(r[0]): r[-1] for r in rows})
            conn.execute("DELETE FROM memdir_versions WHERE ns = ? AND version = ANY(?)", (self.namespace, gone))
            # Content no remaining version (nor a current file) needs; the namespace's counters are unchanged.
            conn.execute(
                "DELETE FROM memdir_blobs b WHERE b.ns = ?1 "
                "AND NOT EXISTS (SELECT 1 FROM memdir_versions v WHERE v.ns = ?1 AND v.sha256 = b.sha256) "
                "AND NOT EXISTS (SELECT 1 FROM memdir_files f WHERE f.ns = ?1 AND f.sha256 = b.sha256)",
                (self.namespace,),
            )
            return len(gone)

        return self._db.run("prune the history", work)

    def verify_chain(self) -> ChainReport:
        with self._db.reading("verify the history") as conn:  # one REPEATABLE READ snapshot
            return history_report(conn, "memdir_", self.namespace)

    # -- helpers ------------------------------------------------------------------------------------------

    def _get(self, conn: PgConnection, key: str) -> FileRow | None:
        row = conn.execute(
            f"SELECT {FILE_COLUMNS} FROM memdir_files WHERE ns = ? AND path = ?", (self.namespace, key)
        ).fetchone()
        return None if row is None else file_row(row)

    def _has_below(self, conn: PgConnection | None, key: str) -> bool:
        """Whether files lie below ``key`` (a directory), in ``conn``'s transaction or on its own."""
        low, high = key_range(key)
        params = (self.namespace, low, high)
        if conn is None:
            return bool(self._db.query("read the store", HAS_BELOW, params))
        return conn.execute(HAS_BELOW, params).fetchone() is not None

    def _file_or_below(self, conn: PgConnection, target: MemoryPath) -> list[FileRow]:
        """The file at ``target``, or every file below the directory ``target``."""
        row = self._get(conn, target.key)
        if row is not None:
            return [row]
        low, high = key_range(target.key)
        rows = conn.execute(
            f"SELECT {FILE_COLUMNS} FROM memdir_files WHERE ns = ? AND path >= ? AND path < ? "
            "ORDER BY replace(path, '/', chr(1))",
            (self.namespace, low, high),
        ).fetchall()
        return [file_row(r) for r in rows]

    def _place(self, conn: PgConnection, target: MemoryPath) -> Place:
        """The file at ``target``, the nearest-the-root file among its ancestors, and whether a file lies below it:
        one query."""
        low, high = key_range(target.key)
        rows = conn.execute(
            f"SELECT {FILE_COLUMNS} FROM memdir_files WHERE ns = ? AND path = ANY(?) "
            f"UNION ALL (SELECT {FILE_COLUMNS} FROM memdir_files WHERE ns = ? AND path >= ? AND path < ? LIMIT 1)",
            (self.namespace, [target.key, *(a.key for a in target.ancestors())], self.namespace, low, high),
        ).fetchall()
        found = [file_row(r) for r in rows]
        ancestors = sorted((r.path for r in found if r.path != target.key and not r.path.startswith(low)), key=len)
        return Place(
            row=next((r for r in found if r.path == target.key), None),
            blocker=ancestors[0] if ancestors else None,
            has_below=any(r.path.startswith(low) for r in found),
        )

    def _writable(self, conn: PgConnection, target: MemoryPath) -> FileRow | None:
        """The current row at ``target`` (None if free), after checking a file may live there."""
        if target.is_root:
            raise NotAFileError("/memories is a directory")
        place = self._place(conn, target)
        if place.blocker is not None:
            raise NotADirectoryError_(f"/memories/{place.blocker} is a file")
        if place.row is None and place.has_below:
            raise NotAFileError(f"{target.virtual} is a directory")
        return place.row

    def _fetch(self, conn: PgConnection, target: MemoryPath) -> FileData:
        """The file at ``target`` with its content, inside a write transaction."""
        found = None if target.is_root else conn.execute(READ_FILE, (self.namespace, target.key)).fetchone()
        if found is None:
            raise self._missing_file(conn, target)
        return file_data(target, found)

    def _missing_file(self, conn: PgConnection, target: MemoryPath) -> NotAFileError | NotFoundError:
        if target.is_root or self._has_below(conn, target.key):
            return NotAFileError(f"{target.virtual} is a directory")
        return NotFoundError(f"{target.virtual} does not exist")
