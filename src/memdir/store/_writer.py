"""The write protocol of a directory store: the writer lock and transaction every command runs under, how each
change is recorded there and made visible after the COMMIT, and what a command notes for the next one to record.

`WriteProtocol._locked` takes an exclusive ``flock`` on the namespace's root directory (all processes, with or
without history) and, when history is kept, a ``BEGIN IMMEDIATE`` transaction on the sidecar; a killed writer's
committed changes are rolled forward first (`memdir.store._visible`). A change (`_put`, `_record_delete`,
`_record_moves`) records its version and the pending operation that makes it visible, in that transaction; the
file operations themselves (`memdir.store._fileops`) wait in the command's `Pending` until the COMMIT. What they
did afterwards (the stamps of the files put in place, the pending rows done) is noted (`Noted`) and recorded by
the next command's transaction, so a write pays for one transaction, not two. A store without history records
nothing: its changes are made at once and reported as untracked versions.

A mixin of `memdir.store.directory.DirectoryStore`: the index, the root, ``read_only`` and the usage cache are the
store's own, declared below for the type checker.
"""

from __future__ import annotations

import contextlib
import fcntl
import time
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

from ..errors import ConflictError, MemdirError, StorageError, storage_error_from_os
from . import _fs
from ._base import key_path
from ._fileops import after_commit, discard, install, rename_noreplace
from ._ondisk import version_token
from ._records import Usage, Version, sha256_hex
from ._sql import PendingOp
from ._visible import Pending, roll_forward

if TYPE_CHECKING:
    import sqlite3
    import threading
    from collections.abc import Callable, Iterator, Mapping

    from ..paths import MemoryPath
    from ._records import FileData, Op, Origin, Quota
    from ._sql import IndexRow, SqlIndex

__all__ = ["Noted", "WriteProtocol"]

_NOTED_MAX = 256  # stamps a command may leave for the next one to record; more are recorded at once


@dataclass(frozen=True, slots=True)
class Noted:
    """What a command did after its COMMIT that the index does not say yet: the versions whose pending rows are
    done (ranges), and the stamp (on-disk identity) of each file it put in place, by key: (version, stamp).

    The next command records both in its own transaction, or `close` does, so a write pays for one transaction,
    not two. Until then this process takes its stamps from here. A process that dies first leaves rows the next
    writer finds done and drops, and files the next read hashes once to check.
    """

    done: tuple[tuple[int, int], ...] = ()
    stamps: Mapping[str, tuple[int | None, str]] = field(default_factory=dict)
    emptied: tuple[MemoryPath, ...] = ()  # directories to prune once the next command is done (`_fileops.emptied`)

    def __bool__(self) -> bool:
        return bool(self.done or self.stamps or self.emptied)


class WriteProtocol:
    """The writer lock, the changes recorded under it, their file operations and what was noted (see the module
    docstring)."""

    _noted: Noted  # what this object's commands did after their COMMIT, for the next one to record
    _local: threading.local  # the `Pending` of the command this thread runs under the lock

    if TYPE_CHECKING:  # the store's own, used here
        read_only: bool
        _index: SqlIndex | None
        _fsync: bool
        _usage_cache: tuple[Usage, float]

        def _open(self) -> _fs.DirHandle: ...
        def usage(self) -> Usage: ...

    @contextlib.contextmanager
    def _locked(self) -> Iterator[tuple[_fs.DirHandle, sqlite3.Connection | None]]:
        """The writer lock: flock on the namespace root (all processes, with or without history), then the
        sidecar's IMMEDIATE transaction (which also makes the index change atomic)."""
        if self.read_only:
            raise StorageError("could not change the store: the store is read-only")
        with self._open() as root:
            try:
                fcntl.flock(root.fd, fcntl.LOCK_EX)
            except OSError as exc:
                raise storage_error_from_os(exc, "lock the store") from exc
            if self._index is None:
                yield root, None
                return
            noted = self._noted
            pending = Pending()
            self._local.pending = pending
            try:
                with self._index.transaction("update the store") as conn:
                    if self._index.begin_change(conn, ignoring=noted.done):
                        # Before anything reads the disk, a killed writer's committed changes are put in place,
                        # committed on their own: this command failing must not bring back the rows of work done.
                        roll_forward(root, self._index, conn, rename_noreplace)
                        self._index.commit_and_continue(conn, "finish an interrupted change")
                        self._index.begin_change(conn)
                    self._record_noted(conn, noted, clear=False)
                    yield root, conn
                    _unchanged(root, pending)
                    # Committed with the versions they make visible, in place of those noted done (which is all
                    # there can be: any other was finished above).
                    self._index.end_change(conn, pending.ops)
            except BaseException:
                pending.roll_back()  # the index is unchanged: the visible files were never touched
                raise
            finally:
                self._index.drop_change()  # what a failed change counted is rolled back with it
                self._local.pending = None
            self._noted = Noted()  # recorded by that COMMIT
            pending.finish()
            self._note(root, pending)
            for directory in noted.emptied:  # after this command: one that wrote there again keeps it
                with contextlib.suppress(MemdirError, OSError):
                    _fs.prune_empty(root, directory)

    def _pending(self) -> Pending | None:
        pending: Pending | None = getattr(self._local, "pending", None)
        return pending

    def _expect(self, target: MemoryPath, stamp: str | None) -> None:
        """Note what ``target`` was on disk when the command read it (``stamp``; None: no file), for `_unchanged`."""
        pending = self._pending()
        if pending is not None:
            pending.expect[target.key] = stamp

    def _will_apply(self, op: PendingOp) -> None:
        pending = self._pending()
        if pending is not None:
            pending.ops.append(op)

    def _after_commit(self, action: Callable[[], None]) -> None:
        """Run ``action`` once the index has committed (at once in a store without an index)."""
        after_commit(self._pending(), action)

    def _note(self, root: _fs.DirHandle, pending: Pending) -> None:
        """Note what a command just did after its COMMIT: the on-disk identity (stamp) of each file it put in
        place, and that its pending rows are done. The next command's transaction records both (`Noted`); a
        command with too much to note records it now, in a transaction of its own."""
        if self._index is None or (not pending.stamps and not pending.ops and not pending.emptied):
            return
        versions = {op.path: op.version for op in pending.ops}
        stamps: dict[str, tuple[int | None, str]] = {}
        for path in pending.stamps:
            seen = pending.seen.get(path.key)
            if seen is not None:
                stamps[path.key] = (versions.get(path.key), seen)
                continue
            with contextlib.suppress(MemdirError, OSError), _fs.walk(root, path.parent) as parent:
                st = _fs.lstat_at(parent, path.name)
                if st is not None:
                    stamps[path.key] = (versions.get(path.key), _fs.stamp_of(st).stamp)
        span = pending.span()
        noted = Noted(((span,) if span is not None else ()), stamps, tuple(pending.emptied))
        if len(stamps) > _NOTED_MAX or None in (v for v, _ in stamps.values()):
            # Best effort: a missing stamp only means the next read hashes the file to check it; a row left
            # behind is checked against the disk, found done and dropped by the next writer.
            with contextlib.suppress(MemdirError), self._index.transaction("update the store") as conn:
                self._record_noted(conn, noted)
            noted = Noted(emptied=noted.emptied)
        self._noted = noted

    def _record_noted(self, conn: sqlite3.Connection, noted: Noted, *, clear: bool = True) -> None:
        """Record the stamps noted, and (``clear``) forget the pending operations noted done (a command's
        transaction replaces them with its own instead)."""
        assert self._index is not None
        for first, last in noted.done if clear else ():
            self._index.clear_pending(conn, first, last)
        for key, (version, stamp) in noted.stamps.items():
            self._index.set_stamp(conn, key, stamp, version=version)

    def _stamps(self, rows: Mapping[str, IndexRow]) -> dict[str, str | None]:
        """The stamps of ``rows`` by key, with those this process noted and has not recorded yet."""
        stamps = {key: row.stamp for key, row in rows.items()}
        for key in self._noted.stamps.keys() & rows.keys():  # a few noted, against a listing's thousands of rows
            stamps[key] = self._stamp(rows[key])
        return stamps

    def _stamp(self, row: IndexRow) -> str | None:
        """``row``'s stamp, or the one this process noted for its version and has not recorded yet."""
        noted = self._noted.stamps.get(row.path)
        if row.stamp is None and noted is not None and noted[0] == row.version:
            return noted[1]
        return row.stamp

    # -- a change, recorded in the command's transaction --------------------------------------------------

    def _put(
        self,
        root: _fs.DirHandle,
        conn: sqlite3.Connection | None,
        target: MemoryPath,
        content: bytes,
        *,
        origin: Origin,
        op: Op | str,
        ts: float | None = None,
        replaces: FileData | None = None,
        quota: Quota | None = None,
    ) -> Version:
        """Write ``target``, which holds ``replaces`` (None: no file; as the index has it, outside edits recorded
        first) until the new content is in place."""
        sha = sha256_hex(content)
        size = None if replaces is None else len(replaces.content)
        if self._index is None or conn is None:
            if quota is not None:
                quota.check(self.usage(), 0 if size is not None else 1, len(content) - (size or 0))
            with _fs.walk(root, target.parent, create=True) as parent:
                st = _fs.atomic_write(parent, target.name, content, fsync=self._fsync)
            usage, taken = self._usage_cache
            self._usage_cache = (Usage(usage.files + 1, usage.bytes + len(content)), taken)
            return _untracked(version_token(st), target, op, origin, sha, len(content))
        # The new bytes go to a hidden temporary file first (this is where a full disk fails), the version is
        # recorded, and the file is renamed into place only after the COMMIT (see `Pending`).
        with _fs.walk(root, target.parent, create=True) as parent:
            temp = _fs.write_temp(parent, content, fsync=self._fsync)
        pending = self._pending()
        if pending is not None:
            pending.undo.append(partial(discard, root, target, temp))
            pending.stamps.append(target)
        version = self._index.record_write(
            conn,
            target.key,
            sha=sha,
            content=content,
            op=op,
            origin=origin,
            stamp=None,
            ts=ts,
            replaced=size,
            quota=quota,
        )
        old = None if replaces is None else replaces.sha256
        self._will_apply(PendingOp(version.version, "install", target.key, sha, temp=temp, replaces=old))
        self._after_commit(partial(install, root, target, temp, pending))
        return version

    def _record_delete(
        self,
        conn: sqlite3.Connection | None,
        row: IndexRow,
        origin: Origin,
        *,
        op: str = "delete",
        ts: float | None = None,
    ) -> Version:
        if self._index is None or conn is None:
            return _untracked(row.version, key_path(row.path), op, origin, None, 0)
        version = self._index.record_delete(conn, row, origin=origin, op=op, ts=ts)
        self._will_apply(PendingOp(version.version, "unlink", row.path, row.sha256))
        return version

    def _record_moves(
        self,
        root: _fs.DirHandle,
        conn: sqlite3.Connection | None,
        rows: list[IndexRow],
        source: MemoryPath,
        dest: MemoryPath,
        origin: Origin,
        *,
        ts: float | None = None,
    ) -> list[Version]:
        versions: list[Version] = []
        moved = self._pending() is None  # else the rename waits for the COMMIT, and stamps are noted after it
        for row in rows:
            new = key_path(row.path).rebase(source, dest)
            st = None
            if moved:
                with _fs.walk(root, new.parent) as parent:
                    st = _fs.lstat_at(parent, new.name)
            stamp = _fs.stamp_of(st).stamp if st is not None else None
            if self._index is None or conn is None:
                token = version_token(_fs.stamp_of(st)) if st is not None else row.version
                versions.append(_untracked(token, new, "rename", origin, row.sha256 or None, row.size, row))
                continue
            version = self._index.record_move(conn, row, new.key, origin=origin, stamp=stamp, ts=ts)
            self._will_apply(PendingOp(version.version, "rename", new.key, row.sha256, old_path=row.path))
            versions.append(version)
        return versions


def _untracked(
    token: int, path: MemoryPath, op: str, origin: Origin, sha: str | None, size: int, moved: IndexRow | None = None
) -> Version:
    """The Version a store without history reports for a change it does not record."""
    return Version(
        token,
        path,
        op,
        origin.actor,
        origin.session,
        origin.source,
        time.time(),
        sha,
        size,
        key_path(moved.path) if moved is not None else None,
    )


def _unchanged(root: _fs.DirHandle, pending: Pending) -> None:
    """`ConflictError` when a file the command read has changed on disk since (another program wrote it: the
    writer lock keeps out memdir's writers only), so the COMMIT does not go on to rename over that edit unseen.
    Checked after the slow part (the temporary file's ``fsync``): what is left is the COMMIT and the rename."""
    for key, stamp in pending.expect.items():
        target = key_path(key)
        with _fs.walk(root, target.parent) as parent:
            st = _fs.lstat_at(parent, target.name)
        if (None if st is None else _fs.stamp_of(st).stamp) != stamp:
            raise ConflictError(
                f"{target.virtual} was changed on disk by another program while it was being written; nothing was "
                "written: read it again"
            )
