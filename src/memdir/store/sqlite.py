"""The SQLite store: every namespace, file, version and blob in one database file (``sqlite:///path.db``).

WAL mode with a busy timeout, so any number of processes can read and write one file safely: each write is a
``BEGIN IMMEDIATE`` transaction, which is both atomic (a crash leaves the last committed state) and the
cross-process lock that makes read-modify-write commands lose no update.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import (
    AlreadyExistsError,
    CorruptStoreError,
    NotADirectoryError_,
    NotAFileError,
    NotFoundError,
    PathError,
    RedactedError,
)
from ..paths import MemoryPath
from ._base import Store, check_expect, check_move, key_path
from ._db import create_private
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
    sha256_hex,
)
from ._sql import IndexRow, SqlIndex

if TYPE_CHECKING:
    import os
    import sqlite3
    from collections.abc import Callable, Iterator

    from ._chain import ChainReport

__all__ = ["SQLiteStore"]


class SQLiteStore(Store):
    """A namespace in a SQLite database file (created ``0600`` in a ``0700`` directory if new)."""

    checks_quota = True  # by the counters of each write's own transaction

    def __init__(
        self, path: str | os.PathLike[str], *, namespace: str = DEFAULT_NAMESPACE, read_only: bool = False
    ) -> None:
        self.namespace = check_namespace(namespace)
        self.path = Path(path).expanduser()
        # A database on a read-only disk still opens, for reading: writes then fail with a clear error.
        writable = not read_only and create_private(self.path)
        try:
            self._index = SqlIndex(self.path, self.namespace, read_only=not writable)
        except CorruptStoreError as exc:
            # The URL named a file that SQLite says is no database at all (it wrote nothing to it): say that,
            # rather than that a memdir database is damaged.
            if "not a database" in str(exc.__cause__):
                raise CorruptStoreError("could not open the store: the file is not a memdir SQLite database") from exc
            raise

    @property
    def read_only(self) -> bool:
        return self._index.read_only

    def __repr__(self) -> str:
        return f"SQLiteStore({str(self.path)!r}, namespace={self.namespace!r})"

    def close(self) -> None:
        self._index.close()
        super().close()

    def _aux_location(self) -> tuple[str | Path | None, bool]:
        return self.path, self.read_only  # one store, one file

    # -- reading ------------------------------------------------------------------------------------------

    def stat(self, path: PathLike) -> Stat | None:
        target = as_path(path)
        with self._index.reading("read the store") as conn:
            if target.is_root:
                return Stat(target, "dir", self._index.usage(conn).bytes)
            row = self._index.get(conn, target.key)
            if row is not None:
                return Stat(target, "file", row.size, row.version, row.sha256, row.modified)
            if self._index.has_below(conn, target.key):
                return Stat(target, "dir", self._index.size_below(conn, target.key))
        return None

    def read(self, path: PathLike) -> FileData:
        target = as_path(path)
        with self._index.statement("read a file") as conn:
            found = None if target.is_root else self._index.with_content(conn, target.key)
            if found is None:  # as of that statement: nothing, or a directory
                raise self._missing(conn, target)
        row, content = found
        if content is None:
            raise CorruptStoreError("the store's database is damaged (missing content); run `memdir doctor`")
        return FileData(target, content, row.version, row.sha256, row.modified)

    def list_files(self, path: PathLike = MemoryPath(())) -> list[Entry]:
        target = as_path(path)
        with self._index.reading("list files") as conn:
            if not target.is_root:
                if self._index.get(conn, target.key) is not None:
                    raise NotADirectoryError_(f"{target.virtual} is a file")
                if not self._index.has_below(conn, target.key):
                    raise NotFoundError(f"{target.virtual} does not exist")
            rows = self._index.below(conn, target.key)
        return [Entry(key_path(r.path), r.size, r.modified, r.version, r.sha256) for r in rows]

    def usage(self) -> Usage:
        return self._index.current_usage()

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
        with self._index.transaction("write a file") as conn:
            row = self._writable(conn, target)
            check_expect(target, None if row is None else row.version, expect)
            replaced = None if row is None else row.size
            return self._index.record_write(
                conn,
                target.key,
                sha=sha256_hex(content),
                content=content,
                op=op,
                origin=origin,
                replaced=replaced,
                quota=quota,
            )

    def update(
        self,
        path: PathLike,
        change: Callable[[FileData], bytes],
        *,
        origin: Origin = Origin(),
        op: Op = "write",
        quota: Quota | None = None,
    ) -> Version:
        # The read, the change and the write share one IMMEDIATE transaction: no other writer, in this
        # process or another, can slip in between, so nothing needs retrying.
        target = as_path(path)
        with self._index.transaction("edit a file") as conn:
            found = None if target.is_root else self._index.with_content(conn, target.key)
            if found is None:
                raise self._missing(conn, target)
            row, content = found
            if content is None:
                raise CorruptStoreError("the store's database is damaged (missing content); run `memdir doctor`")
            new = change(FileData(target, content, row.version, row.sha256, row.modified))
            return self._index.record_write(
                conn, target.key, sha=sha256_hex(new), content=new, op=op, origin=origin, replaced=row.size, quota=quota
            )

    def delete(self, path: PathLike, *, origin: Origin = Origin()) -> list[Version]:
        target = as_path(path)
        if target.is_root:
            raise PathError(target.virtual, "not_allowed", "the root cannot be deleted")
        with self._index.transaction("delete") as conn:
            row = self._index.get(conn, target.key)
            rows = [row] if row is not None else self._index.below(conn, target.key)
            if not rows:
                raise NotFoundError(f"{target.virtual} does not exist")
            return [self._index.record_delete(conn, r, origin=origin) for r in rows]

    def move(self, src: PathLike, dst: PathLike, *, origin: Origin = Origin()) -> list[Version]:
        source, dest = as_path(src), as_path(dst)
        check_move(source, dest)
        with self._index.transaction("rename") as conn:
            row = self._index.get(conn, source.key)
            rows = [row] if row is not None else self._index.below(conn, source.key)
            if not rows:
                raise NotFoundError(f"{source.virtual} does not exist")
            if dest.is_root or self._index.get(conn, dest.key) or self._index.has_below(conn, dest.key):
                raise AlreadyExistsError(f"{dest.virtual} already exists")
            blocker = self._index.file_among(conn, [a.key for a in dest.ancestors()])
            if blocker is not None:
                raise NotADirectoryError_(f"/memories/{blocker} is a file")
            return [
                self._index.record_move(conn, r, key_path(r.path).rebase(source, dest).key, origin=origin) for r in rows
            ]

    def import_version(self, version: Version, content: bytes | None, *, quota: Quota | None = None) -> Version:
        origin = Origin(version.actor, version.session, version.source)
        with self._index.transaction("import a version") as conn:
            if version.sha256 is None:
                row = self._index.get(conn, version.path.key)
                if row is None:
                    raise NotFoundError(f"{version.path.virtual} does not exist")
                return self._index.record_delete(conn, row, origin=origin, op=version.op, ts=version.timestamp)
            if version.op == "rename" and version.old_path is not None:
                row = self._index.get(conn, version.old_path.key)
                if row is None:
                    raise NotFoundError(f"{version.old_path.virtual} does not exist")
                if self._writable(conn, version.path) is not None:
                    raise AlreadyExistsError(f"{version.path.virtual} already exists")
                return self._index.record_move(conn, row, version.path.key, origin=origin, ts=version.timestamp)
            if content is None:
                raise NotFoundError(f"no content for version {version.version} of {version.path.virtual}")
            row = self._writable(conn, version.path)
            return self._index.record_write(
                conn,
                version.path.key,
                sha=sha256_hex(content),
                content=content,
                op=version.op,
                origin=origin,
                ts=version.timestamp,
                replaced=None if row is None else row.size,
                quota=quota,
            )

    # -- history ------------------------------------------------------------------------------------------

    def log(self, since: int = 0, *, rescan: bool = True) -> Iterator[Version]:
        del rescan  # every change is recorded as it is made
        return self._index.log(since)

    def _versions_touching(self, path: MemoryPath, before: int | None) -> list[Version]:
        return self._index.touching(path.key, before)

    def prune_history(self, before: float) -> int:
        return self._index.prune(before)

    def verify_chain(self) -> ChainReport:
        return self._index.chain_report()

    def namespaces(self) -> list[str]:
        return self._index.namespaces()

    records_requests = True  # each change and its versions (with origin.request) are one transaction

    def requested(self, key: str) -> list[Version]:
        return self._index.requested(key)

    def redact_content(self, sha256: str) -> bool:
        return self._index.redact(sha256)

    def read_blob(self, sha256: str) -> bytes:
        with self._index.reading("read a version") as conn:
            content = self._index.blob(conn, sha256)
        if content is None:
            raise NotFoundError("no version of this namespace has that content")
        if is_redacted(sha256, content):
            raise RedactedError("that content was redacted: it is no longer stored")
        return content

    # -- helpers ------------------------------------------------------------------------------------------

    def _missing(self, conn: sqlite3.Connection, target: MemoryPath) -> NotAFileError | NotFoundError:
        """The error for reading ``target``, which is no file: it is a directory, or nothing."""
        if target.is_root or self._index.has_below(conn, target.key):
            return NotAFileError(f"{target.virtual} is a directory")
        return NotFoundError(f"{target.virtual} does not exist")

    def _writable(self, conn: sqlite3.Connection, target: MemoryPath) -> IndexRow | None:
        """The current row at ``target`` (None if free), after checking a file may live there."""
        if target.is_root:
            raise NotAFileError("/memories is a directory")
        blocker = self._index.file_among(conn, [a.key for a in target.ancestors()])
        if blocker is not None:
            raise NotADirectoryError_(f"/memories/{blocker} is a file")
        row = self._index.get(conn, target.key)
        if row is None and self._index.has_below(conn, target.key):
            raise NotAFileError(f"{target.virtual} is a directory")
        return row
