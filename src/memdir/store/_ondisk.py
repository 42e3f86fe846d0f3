"""What a directory store finds on disk, and the index brought in step with it: the changes made outside memdir.

A file whose on-disk identity (its stamp: inode, size, mtime, ctime) differs from the index's is read, hashed and,
if its content differs, recorded as a version by the store's ``outside`` origin (actor ``external`` by default)
before anything else touches it; a file gone from disk is recorded as deleted. `ChangesOnDisk._observe` does it
for a file, `_settle` for a file or a tree under the writer lock, `_reconcile` for a listing (one indexed query
when nothing changed). `kind_at` says what is at a path, refusing links (symlinks and hard links) as escapes.

A mixin of `memdir.store.directory.DirectoryStore`: the index, the root, the writer lock and the stamps noted
(`memdir.store._writer.WriteProtocol`) are the store's own, declared below for the type checker.
"""

from __future__ import annotations

import contextlib
import hashlib
import stat as stat_mod
from typing import TYPE_CHECKING

from ..errors import LimitError, NotADirectoryError_, NotAFileError, NotFoundError, PathError
from . import _fs
from ._records import FileData, sha256_hex
from ._sql import IndexRow

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Mapping
    from contextlib import AbstractContextManager

    from ..paths import MemoryPath
    from ._records import Origin
    from ._sql import SqlIndex

__all__ = ["ChangesOnDisk", "free_at", "kind_at", "version_token"]


def kind_at(root: _fs.DirHandle, target: MemoryPath) -> str | None:
    """'file', 'dir', 'empty' (a directory holding nothing but empty directories: not there for memdir, see
    `_fs.empty_tree`), 'other' (a FIFO, socket or device: never read, never listed) or None for what is on disk
    at ``target``; a link there (hard links too), or a symlink on the way, is an escape. A file over `_fs.MAX_READ`
    is a 'file' (reading it says it is too large), though listings leave it out."""
    try:
        with _fs.walk(root, target.parent) as parent:
            st = _fs.lstat_at(parent, target.name)
            if st is not None and stat_mod.S_ISDIR(st.st_mode):
                return "empty" if _fs.empty_tree(parent, target.name) else "dir"
    except (NotFoundError, NotADirectoryError_):
        return None  # nothing can be below a file: the path does not exist, as on every backend
    if st is None:
        return None
    if _fs.linked(st):  # a symlink, or a file with other names (hard links): may lead out of the tree
        raise PathError(target.virtual, "escape")
    return "file" if stat_mod.S_ISREG(st.st_mode) else "other"


def free_at(root: _fs.DirHandle, target: MemoryPath) -> str | None:
    """`kind_at` for a path about to be written or moved to: an empty tree there is taken away first (under the
    writer lock), as the directory it is not."""
    kind = kind_at(root, target)
    if kind == "empty":
        with _fs.walk(root, target.parent) as parent:
            return None if _fs.clear_empty_tree(parent, target.name) else "dir"
    return kind


def version_token(st: _fs.FileStat) -> int:
    """A version number for a store without history: changes whenever the file does."""
    return int.from_bytes(hashlib.sha256(st.stamp.encode()).digest()[:7], "big")


class ChangesOnDisk:
    """Outside edits found and recorded (see the module docstring)."""

    if TYPE_CHECKING:  # the store's own, used here
        read_only: bool
        _index: SqlIndex | None
        _outside: Origin

        def _open(self) -> _fs.DirHandle: ...
        def _locked(self) -> AbstractContextManager[tuple[_fs.DirHandle, sqlite3.Connection | None]]: ...
        def _stamps(self, rows: Mapping[str, IndexRow]) -> dict[str, str | None]: ...
        def _expect(self, target: MemoryPath, stamp: str | None) -> None: ...

    def _observe(self, root: _fs.DirHandle, conn: sqlite3.Connection | None, target: MemoryPath) -> FileData:
        """Read ``target`` under the lock, recording an outside edit as a version first."""
        with _fs.walk(root, target.parent) as parent:
            content, st = _fs.read_at(parent, target.name, target)
        self._expect(target, st.stamp)
        sha = sha256_hex(content)
        if self._index is None or conn is None:
            return FileData(target, content, version_token(st), sha, st.mtime)
        row = self._index.get(conn, target.key)
        if row is not None and row.sha256 == sha:
            if row.stamp != st.stamp:
                self._index.set_stamp(conn, target.key, st.stamp)
            return FileData(target, content, row.version, sha, st.mtime)
        version = self._index.record_write(
            conn,
            target.key,
            sha=sha,
            content=content,
            op="create" if row is None else "write",
            origin=self._outside,
            stamp=st.stamp,
            replaced=None if row is None else row.size,
        )
        return FileData(target, content, version.version, sha, st.mtime)

    def _current(self, root: _fs.DirHandle, conn: sqlite3.Connection | None, target: MemoryPath) -> FileData | None:
        """What a write to ``target`` replaces (None when free), with outside edits recorded first."""
        kind = free_at(root, target)
        if kind == "dir":
            raise NotAFileError(f"{target.virtual} is a directory")
        if kind == "file":
            return self._observe(root, conn, target)
        # Nothing there, or a FIFO/socket/device, which `view` reports as missing: the write's rename(2)
        # replaces that entry without ever opening it. Nothing there is what the write expects to stay so.
        if kind is None:
            self._expect(target, None)
        if self._index is not None and conn is not None:
            gone = self._index.get(conn, target.key)
            if gone is not None:  # deleted outside memdir since we last looked
                self._index.record_delete(conn, gone, origin=self._outside)
        return None

    def _settle(self, root: _fs.DirHandle, conn: sqlite3.Connection | None, target: MemoryPath) -> list[IndexRow]:
        """Bring the index in step with what is on disk at ``target`` (a file or a tree) and return its rows.
        `NotFoundError` when nothing is there."""
        kind = kind_at(root, target)
        if kind is None or kind in ("other", "empty"):
            raise NotFoundError(f"{target.virtual} does not exist")
        if kind == "file":
            data = self._observe(root, conn, target)
            return [IndexRow(target.key, data.version, data.sha256, len(data.content), data.modified, None)]
        with _fs.walk(root, target) as directory:
            found = sorted(_fs.scan_tree(directory, target), key=lambda item: item[0].parts)
        if self._index is None or conn is None:
            return [IndexRow(p.key, version_token(st), "", st.size, st.mtime, st.stamp) for p, st in found]
        self._apply_differences(root, conn, target, found)
        return self._index.below(conn, target.key)

    def _scan(self, target: MemoryPath) -> list[tuple[MemoryPath, _fs.FileStat]]:
        with self._open() as root, _fs.walk(root, target) as directory:
            return sorted(_fs.scan_tree(directory, target), key=lambda item: item[0].parts)

    def _reconcile(
        self, target: MemoryPath, found: list[tuple[MemoryPath, _fs.FileStat]]
    ) -> tuple[list[tuple[MemoryPath, _fs.FileStat]], dict[str, IndexRow]]:
        """Record what changed outside memdir below ``target`` and return the index rows there; cheap when
        nothing did (one indexed query)."""
        assert self._index is not None
        with self._index.reading("read the store") as conn:
            rows = {r.path: r for r in self._index.below(conn, target.key, ordered=False)}
        on_disk = {p.key: st.stamp for p, st in found}
        if self.read_only or self._stamps(rows) == on_disk:
            return found, rows
        with self._locked() as (root, conn):
            assert conn is not None
            with _fs.walk(root, target) as directory:
                found = sorted(_fs.scan_tree(directory, target), key=lambda item: item[0].parts)
            self._apply_differences(root, conn, target, found)
            rows = {r.path: r for r in self._index.below(conn, target.key, ordered=False)}
        return found, rows

    def _apply_differences(
        self,
        root: _fs.DirHandle,
        conn: sqlite3.Connection,
        target: MemoryPath,
        found: list[tuple[MemoryPath, _fs.FileStat]],
    ) -> None:
        assert self._index is not None
        rows = {r.path: r for r in self._index.below(conn, target.key)}
        for path, st in found:
            row = rows.pop(path.key, None)
            if row is None or row.stamp != st.stamp:
                # LimitError: grown past `_fs.MAX_READ` since the scan; left for the next look, as a swapped file is
                with contextlib.suppress(NotFoundError, NotAFileError, NotADirectoryError_, PathError, LimitError):
                    self._observe(root, conn, path)
        for row in rows.values():  # in the index, gone from disk
            self._index.record_delete(conn, row, origin=self._outside)
