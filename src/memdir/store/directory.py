"""The directory store: the Markdown files on disk *are* the memory; a hidden sidecar keeps the history.

Layout of a store at ``PATH`` (a plain path or ``file:`` URL)::

    PATH/memories/...            namespace "default" (the same layout as the SDK's base_path="PATH")
    PATH/namespaces/<ns>/...     any other namespace
    PATH/.memdir/index.db        the sidecar: current index, change log and the content of every version

A person may open and edit the files with any editor. memdir notices: each file's on-disk identity
(inode, size, mtime, ctime) is kept in the index, and a file whose identity changed is read, hashed and, if
its content differs, recorded as a version by the actor ``external`` before anything else touches it.

Safety: every access below the root goes through `memdir.store._fs`, one ``O_NOFOLLOW`` component at a time
from an open directory descriptor, so symlinks planted inside the tree are never followed. Writes go to a
temporary file that is fsynced and renamed over the target once the change's version is committed; a process
killed in between leaves a pending row the next writer finishes (`memdir.store._visible`). Writers take an
exclusive ``flock`` on the namespace's root directory and, when history is kept, a ``BEGIN IMMEDIATE``
transaction on the sidecar, so read-modify-write commands from any number of processes lose no update.

``history=False`` keeps no sidecar at all (nothing but the memory files is written under ``PATH``); version
numbers are then tokens derived from the file's on-disk identity, and `history` raises
`HistoryUnavailableError`.

``root=DIR`` maps ``/memories`` straight onto ``DIR`` (no ``memories/`` level, one namespace) and needs
``history=`` to name the index elsewhere, so memdir writes nothing inside ``DIR`` but what memory commands write
(used for directories another program owns: `memdir.claudecode`). ``outside=`` is the `Origin` recorded for
changes found on disk (actor ``external`` by default).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import fcntl
import hashlib
import os
import stat as stat_mod
import threading
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import (
    AlreadyExistsError,
    ConfigError,
    HistoryUnavailableError,
    MemdirError,
    NotADirectoryError_,
    NotAFileError,
    NotFoundError,
    PathError,
    RedactedError,
    StorageError,
    storage_error_from_os,
)
from ..paths import MemoryPath
from . import _fs
from ._base import (
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
    Store,
    Usage,
    Version,
    as_path,
    check_expect,
    check_move,
    check_namespace,
    is_redacted,
    key_path,
    sha256_hex,
)
from ._sql import IndexRow, PendingOp, SqlIndex
from ._visible import Pending, roll_forward

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Callable, Iterator, Mapping

    from ._chain import ChainReport

__all__ = ["DirectoryStore", "namespace_root"]

SIDECAR = ".memdir"
INDEX_NAME = "index.db"
AUX_NAME = "aux.db"  # the auxiliary database (search index, audit log, quarantine...), beside the index

_External = Origin(actor="external")
_USAGE_TTL = 5.0  # seconds a walked usage count stays fresh in a store without an index
_NOTED_MAX = 256  # stamps a command may leave for the next one to record; more are recorded at once


@dataclass(frozen=True, slots=True)
class _Noted:
    """What a command did after its COMMIT that the index does not say yet: the versions whose pending rows are
    done (ranges), and the stamp (on-disk identity) of each file it put in place, by key: (version, stamp).

    The next command records both in its own transaction, or `close` does, so a write pays for one transaction,
    not two. Until then this process takes its stamps from here. A process that dies first leaves rows the next
    writer finds done and drops, and files the next read hashes once to check.
    """

    done: tuple[tuple[int, int], ...] = ()
    stamps: Mapping[str, tuple[int | None, str]] = field(default_factory=dict)
    emptied: tuple[MemoryPath, ...] = ()  # directories to prune once the next command is done (`_emptied`)

    def __bool__(self) -> bool:
        return bool(self.done or self.stamps or self.emptied)


def namespace_root(base: Path, namespace: str) -> Path:
    return base / "memories" if namespace == DEFAULT_NAMESPACE else base / "namespaces" / namespace


def _own_root(root: str | os.PathLike[str], namespace: str, history: object) -> Path:
    """The directory a ``root=`` store maps ``/memories`` onto: one namespace, and the sidecar kept elsewhere."""
    if namespace != DEFAULT_NAMESPACE or history is True:
        raise ConfigError("a store over its own root directory has one namespace and needs history=PATH (or False)")
    return Path(root).expanduser().absolute()


_INDEX_PAGE_SIZE = 1024


class DirectoryStore(Store):
    """A namespace kept as plain files under a directory, with history in a hidden sidecar."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        namespace: str = DEFAULT_NAMESPACE,
        history: bool | str | os.PathLike[str] = True,
        fsync: bool = True,
        read_only: bool = False,
        root: str | os.PathLike[str] | None = None,
        outside: Origin = _External,
    ) -> None:
        self.namespace = check_namespace(namespace)
        self.base = Path(path).expanduser().absolute()
        self._outside = outside
        root = namespace_root(self.base, self.namespace) if root is None else _own_root(root, namespace, history)
        try:
            _fs.secure_makedirs(root)
        except OSError as exc:
            raise storage_error_from_os(exc, "create the store") from exc
        # Resolved once: a link in the caller's own path is the caller's choice. From here on the root is
        # opened with O_NOFOLLOW and checked to be the same directory, so swapping it (or a directory above
        # it) for a link or another directory later is refused.
        self.root = Path(os.path.realpath(root))
        self._identity = _fs.identity(self.root)
        # A store on a read-only disk (a snapshot, a read-only volume) opens for reading; writes fail cleanly.
        self.read_only = read_only or not os.access(self.root, os.W_OK)
        self._fsync = fsync
        self._usage_cache = (Usage(0, 0), float("-inf"))
        self._local = threading.local()  # the `_Pending` of the command this thread runs under the lock
        self._noted = _Noted()  # what this object's commands did after their COMMIT, for the next one to record
        self.index_path: Path | None = None
        self._index: SqlIndex | None = None
        if history is not False:
            self.index_path = self.base / SIDECAR / INDEX_NAME if history is True else Path(history).expanduser()
            self._index = self._open_index(self.index_path)
            self._finish_interrupted()
        # Exact with an index (its counters, in the write's transaction); without one, against the cached walk.
        self.checks_quota = self._index is not None

    def _open_index(self, path: Path) -> SqlIndex | None:
        if self.read_only:
            # Nothing can be recorded on a read-only disk: use the history that is there, if any.
            return SqlIndex(path, self.namespace, read_only=True) if path.is_file() else None
        # Created 0600 if new, never opened by hand (see create_private). Pages of 1 KiB: a change rewrites a page
        # of each of four b-trees (the file's row, its version, the versions' path index, the namespace's row with
        # its counters and pending operations), each row a few dozen bytes, so 4 KiB pages put four times the bytes
        # through the write-ahead log and its checkpoints (measured: commits 219 -> 160 us per benchmark sequence,
        # about 2% of the memory tool's time on the directory store).
        return SqlIndex(path, self.namespace, page_size=_INDEX_PAGE_SIZE)

    def _finish_interrupted(self) -> None:
        """Put in place the committed changes of a writer killed before it could (see `memdir.store._visible`).
        A store that cannot write leaves them: it reads the disk as it is."""
        if self._index is None or self.read_only or self._index.read_only or not self._index.has_pending():
            return
        with self._locked():
            pass  # the writer lock rolls forward first thing

    def __repr__(self) -> str:
        return f"DirectoryStore({str(self.base)!r}, namespace={self.namespace!r})"

    def close(self) -> None:
        if self._index is not None:
            if self._noted and not self._index.closed:
                # Best effort: what is not recorded, the next writer finds done (rows) or the next read checks.
                with contextlib.suppress(MemdirError), self._locked():
                    pass  # the writer lock's transaction records what was noted
            self._index.close()
        super().close()

    def _aux_location(self) -> tuple[str | Path | None, bool]:
        """Beside the history index, in the sidecar; in memory when the store keeps no sidecar."""
        if self.index_path is None or (self.read_only and self._index is None):
            return None, False
        location = self.index_path.with_name(AUX_NAME)
        if self.read_only:
            return (location, True) if location.is_file() else (None, False)
        return location, False

    @property
    def keeps_history(self) -> bool:
        return self._index is not None

    # -- reading ------------------------------------------------------------------------------------------

    def read(self, path: PathLike) -> FileData:
        target = as_path(path)
        if target.is_root:
            raise NotAFileError("/memories is a directory")
        with self._open() as root, _fs.walk(root, target.parent) as parent:
            try:
                content, st = _fs.read_at(parent, target.name, target)
            except NotAFileError:
                if _fs.empty_tree(parent, target.name):  # not there for memdir (see `_kind`)
                    raise NotFoundError(f"{target.virtual} does not exist") from None
                raise
        if self._index is None:
            return FileData(target, content, _token(st), sha256_hex(content), st.mtime)
        row = self._row(target.key)
        if row is not None and self._stamp(row) == st.stamp:
            return FileData(target, content, row.version, row.sha256, st.mtime)
        if self.read_only:  # nothing can be recorded: report the indexed version if the content is the same
            sha = sha256_hex(content)
            version = row.version if row is not None and row.sha256 == sha else _token(st)
            return FileData(target, content, version, sha, st.mtime)
        with self._locked() as (root, conn):
            return self._observe(root, conn, target)

    def stat(self, path: PathLike) -> Stat | None:
        target = as_path(path)
        try:
            data = self.read(target)
        except NotAFileError:
            return Stat(target, "dir", sum(e.size for e in self.list_files(target)))
        except (NotFoundError, NotADirectoryError_):
            return None
        return Stat(target, "file", len(data.content), data.version, data.sha256, data.modified)

    def list_files(self, path: PathLike = MemoryPath(())) -> list[Entry]:
        target = as_path(path)
        found = self._scan(target)
        if not found and not target.is_root:
            with self._open() as root:
                if self._kind(root, target) == "empty":  # not there for memdir, as on every backend
                    raise NotFoundError(f"{target.virtual} does not exist")
        if self._index is None:
            return [Entry(p, st.size, st.mtime, _token(st)) for p, st in found]
        found, rows = self._reconcile(target, found)
        stamps = self._stamps(rows)
        entries = []
        for path, st in found:
            row = rows.get(path.key)
            known = row is not None and stamps[path.key] == st.stamp  # else changed on a disk we cannot record on
            version, sha = (row.version, row.sha256) if row is not None and known else (_token(st), None)
            entries.append(Entry(path, st.size, st.mtime, version, sha))
        return entries

    def usage(self) -> Usage:
        if self._index is not None:
            return self._index.current_usage()
        # Without an index, usage means a walk of the whole tree; the tool asks before every write, so the walk is
        # cached for a few seconds (our own writes are added to it; deletions make it overestimate, which only
        # errs on the safe side of a limit).
        cached, taken = self._usage_cache
        if time.monotonic() - taken > _USAGE_TTL:
            entries = self.list_files()
            cached = Usage(len(entries), sum(e.size for e in entries))
            self._usage_cache = (cached, time.monotonic())
        return cached

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
        if target.is_root:
            raise NotAFileError("/memories is a directory")
        with self._locked() as (root, conn):
            current = self._current(root, conn, target)
            check_expect(target, None if current is None else current.version, expect)
            return self._put(root, conn, target, content, origin=origin, op=op, replaces=current, quota=quota)

    def update(
        self,
        path: PathLike,
        change: Callable[[FileData], bytes],
        *,
        origin: Origin = Origin(),
        op: Op = "write",
        quota: Quota | None = None,
    ) -> Version:
        # Read, change and write under the writer lock: no other memdir writer can come in between.
        target = as_path(path)
        if target.is_root:
            raise NotAFileError("/memories is a directory")
        with self._locked() as (root, conn):
            current = self._observe(root, conn, target)
            return self._put(root, conn, target, change(current), origin=origin, op=op, replaces=current, quota=quota)

    def delete(self, path: PathLike, *, origin: Origin = Origin()) -> list[Version]:
        target = as_path(path)
        if target.is_root:
            raise PathError(target.virtual, "not_allowed", "the root cannot be deleted")
        with self._locked() as (root, conn):
            rows = self._settle(root, conn, target)
            versions = [self._record_delete(conn, r, origin) for r in rows]
            self._after_commit(partial(self._remove, root, target, self._pending()))
        return versions

    def move(self, src: PathLike, dst: PathLike, *, origin: Origin = Origin()) -> list[Version]:
        source, dest = as_path(src), as_path(dst)
        check_move(source, dest)
        with self._locked() as (root, conn):
            rows = self._settle(root, conn, source)  # a missing source is reported first, as on every backend
            if dest.is_root or self._free(root, dest) is not None:
                raise AlreadyExistsError(f"{dest.virtual} already exists")
            self._prepare_rename(root, rows, source, dest)
            return self._record_moves(root, conn, rows, source, dest, origin)

    def import_version(self, version: Version, content: bytes | None) -> Version:
        self._require_history()
        origin = Origin(version.actor, version.session, version.source)
        target = version.path
        with self._locked() as (root, conn):
            if version.sha256 is None:
                (row,) = self._settle(root, conn, target)
                self._after_commit(partial(self._remove, root, target, self._pending()))
                return self._record_delete(conn, row, origin, op=version.op, ts=version.timestamp)
            if version.op == "rename" and version.old_path is not None:
                source = version.old_path
                rows = self._settle(root, conn, source)
                if self._free(root, target) is not None:
                    raise AlreadyExistsError(f"{target.virtual} already exists")
                self._prepare_rename(root, rows, source, target)
                (moved,) = self._record_moves(root, conn, rows, source, target, origin, ts=version.timestamp)
                return moved
            if content is None:
                raise NotFoundError(f"no content for version {version.version} of {target.virtual}")
            current = self._current(root, conn, target)
            return self._put(
                root, conn, target, content, origin=origin, op=version.op, ts=version.timestamp, replaces=current
            )

    # -- history ------------------------------------------------------------------------------------------

    def history(self, path: PathLike) -> list[Version]:
        target = as_path(path)
        self._require_history()
        with contextlib.suppress(NotFoundError, NotADirectoryError_, NotAFileError):
            self.read(target)  # an edit made outside memdir becomes a version before we answer
        return super().history(target)

    def log(self, since: int = 0, *, rescan: bool = True) -> Iterator[Version]:
        index = self._require_history()
        if rescan:  # outside edits become versions first (a walk of the whole tree)
            with contextlib.suppress(NotFoundError):
                self.list_files()
        return index.log(since)

    def _versions_touching(self, path: MemoryPath, before: int | None) -> list[Version]:
        return self._require_history().touching(path.key, before)

    def prune_history(self, before: float) -> int:
        index = self._require_history()
        with contextlib.suppress(NotFoundError):
            self.list_files()  # edits made outside memdir become versions first, as for `log`
        return index.prune(before)

    def verify_chain(self) -> ChainReport:
        return self._require_history().chain_report()  # as recorded: outside edits are `memdir verify`'s to report

    def namespaces(self) -> list[str]:
        """The namespaces with history, and those whose directory holds files memdir has not seen yet (written
        by hand before the namespace was ever opened: opening it makes them versions)."""
        found = set(self._require_history().namespaces())
        candidates = [DEFAULT_NAMESPACE]
        with contextlib.suppress(OSError), os.scandir(self.base / "namespaces") as listing:
            candidates += [e.name for e in listing if e.is_dir(follow_symlinks=False)]
        for name in candidates:
            with contextlib.suppress(OSError, MemdirError):
                root = namespace_root(self.base, check_namespace(name))
                with os.scandir(root) as entries:
                    if any(True for _ in entries):
                        found.add(name)
        return sorted(found)

    def redact_content(self, sha256: str) -> bool:
        # The current files' bytes are on disk, not in the sidecar: the index refuses content a current file holds.
        return self._require_history().redact(sha256)

    def read_blob(self, sha256: str) -> bytes:
        index = self._require_history()
        with index.reading("read a version") as conn:
            content = index.blob(conn, sha256)
        if content is None:
            raise NotFoundError("no version of this namespace has that content")
        if is_redacted(sha256, content):
            raise RedactedError("that content was redacted: it is no longer stored")
        return content

    # -- internals ----------------------------------------------------------------------------------------

    def _require_history(self) -> SqlIndex:
        if self._index is None:
            raise HistoryUnavailableError("this directory store was opened without history")
        return self._index

    def _open(self) -> _fs.DirHandle:
        return _fs.open_root(self.root, self._identity)

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
                        roll_forward(root, self._index, conn, _rename_noreplace)
                        self._index.commit_and_continue(conn, "finish an interrupted change")
                        self._index.begin_change(conn)
                    self._record_noted(conn, noted, clear=False)
                    yield root, conn
                    # Committed with the versions they make visible, in place of those noted done (which is all
                    # there can be: any other was finished above).
                    self._index.end_change(conn, pending.ops)
            except BaseException:
                pending.roll_back()  # the index is unchanged: the visible files were never touched
                raise
            finally:
                self._index.drop_change()  # what a failed change counted is rolled back with it
                self._local.pending = None
            self._noted = _Noted()  # recorded by that COMMIT
            pending.finish()
            self._note(root, pending)
            for directory in noted.emptied:  # after this command: one that wrote there again keeps it
                with contextlib.suppress(MemdirError, OSError):
                    _fs.prune_empty(root, directory)

    def _pending(self) -> Pending | None:
        pending: Pending | None = getattr(self._local, "pending", None)
        return pending

    def _will_apply(self, op: PendingOp) -> None:
        pending = self._pending()
        if pending is not None:
            pending.ops.append(op)

    def _after_commit(self, action: Callable[[], None]) -> None:
        """Run ``action`` once the index has committed (at once in a store without an index)."""
        pending = self._pending()
        if pending is None:
            action()
        else:
            pending.apply.append(action)

    def _note(self, root: _fs.DirHandle, pending: Pending) -> None:
        """Note what a command just did after its COMMIT: the on-disk identity (stamp) of each file it put in
        place, and that its pending rows are done. The next command's transaction records both (`_Noted`); a
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
        noted = _Noted(((span,) if span is not None else ()), stamps, tuple(pending.emptied))
        if len(stamps) > _NOTED_MAX or None in (v for v, _ in stamps.values()):
            # Best effort: a missing stamp only means the next read hashes the file to check it; a row left
            # behind is checked against the disk, found done and dropped by the next writer.
            with contextlib.suppress(MemdirError), self._index.transaction("update the store") as conn:
                self._record_noted(conn, noted)
            noted = _Noted(emptied=noted.emptied)
        self._noted = noted

    def _record_noted(self, conn: sqlite3.Connection, noted: _Noted, *, clear: bool = True) -> None:
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

    def _install(self, root: _fs.DirHandle, target: MemoryPath, temp: str, pending: Pending | None = None) -> None:
        with _fs.walk(root, target.parent) as parent:
            installed = _fs.install(parent, temp, target.name)
        if pending is not None:
            pending.seen[target.key] = installed.stamp  # taken right after the rename: `_note` need not look again

    def _discard(self, root: _fs.DirHandle, target: MemoryPath, temp: str) -> None:
        """Remove an unused temporary file, and the directories made for it if they are now empty."""
        with _fs.walk(root, target.parent) as parent:
            _fs.remove_tree(parent, temp)
        _fs.prune_empty(root, target.parent)

    def _remove(self, root: _fs.DirHandle, target: MemoryPath, pending: Pending | None = None) -> None:
        with _fs.walk(root, target.parent) as parent:
            _fs.remove_tree(parent, target.name)
        self._emptied(root, target.parent, pending)

    def _emptied(self, root: _fs.DirHandle, directory: MemoryPath, pending: Pending | None) -> None:
        """``directory`` may have just lost its last file: it is pruned after the next command (`_Noted`), so a
        note deleted and written again (a common rewrite) does not remove and re-make its directory each time.
        Meanwhile an empty directory is not there for memdir (`_kind`)."""
        if pending is None:
            _fs.prune_empty(root, directory)
        elif not directory.is_root:
            pending.emptied.append(directory)

    def _prepare_rename(self, root: _fs.DirHandle, rows: list[IndexRow], source: MemoryPath, dest: MemoryPath) -> None:
        """Make the destination's parents now (a file on the way fails here, before anything moved) and move
        the tree once the index has committed."""
        with _fs.walk(root, dest.parent, create=True):
            pass
        pending = self._pending()
        if pending is not None:
            pending.undo.append(partial(_fs.prune_empty, root, dest.parent))
            pending.stamps.extend(key_path(r.path).rebase(source, dest) for r in rows)
        self._after_commit(partial(self._rename, root, source, dest, pending))

    def _rename(
        self, root: _fs.DirHandle, source: MemoryPath, dest: MemoryPath, pending: Pending | None = None
    ) -> None:
        with _fs.walk(root, source.parent) as sparent, _fs.walk(root, dest.parent, create=True) as dparent:
            _rename_noreplace(sparent, source.name, dparent, dest.name, dest)
        if not dest.is_within(source.parent):  # else the source's directory holds the destination: not empty
            self._emptied(root, source.parent, pending)

    def _row(self, key: str) -> IndexRow | None:
        assert self._index is not None
        return self._index.lookup(key)

    def _kind(self, root: _fs.DirHandle, target: MemoryPath) -> str | None:
        """'file', 'dir', 'empty' (a directory holding nothing but empty directories: not there for memdir, see
        `_fs.empty_tree`), 'other' (a FIFO, socket or device: never read, never listed) or None for what is on disk
        at ``target``; a link there (hard links too), or a symlink on the way, is an escape."""
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

    def _free(self, root: _fs.DirHandle, target: MemoryPath) -> str | None:
        """`_kind` for a path about to be written or moved to: an empty tree there is taken away first (under the
        writer lock), as the directory it is not."""
        kind = self._kind(root, target)
        if kind == "empty":
            with _fs.walk(root, target.parent) as parent:
                return None if _fs.clear_empty_tree(parent, target.name) else "dir"
        return kind

    def _observe(self, root: _fs.DirHandle, conn: sqlite3.Connection | None, target: MemoryPath) -> FileData:
        """Read ``target`` under the lock, recording an outside edit as a version first."""
        with _fs.walk(root, target.parent) as parent:
            content, st = _fs.read_at(parent, target.name, target)
        sha = sha256_hex(content)
        if self._index is None or conn is None:
            return FileData(target, content, _token(st), sha, st.mtime)
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
        kind = self._free(root, target)
        if kind == "dir":
            raise NotAFileError(f"{target.virtual} is a directory")
        if kind == "file":
            return self._observe(root, conn, target)
        # Nothing there, or a FIFO/socket/device, which `view` reports as missing: the write's rename(2)
        # replaces that entry without ever opening it.
        if self._index is not None and conn is not None:
            gone = self._index.get(conn, target.key)
            if gone is not None:  # deleted outside memdir since we last looked
                self._index.record_delete(conn, gone, origin=self._outside)
        return None

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
            return _untracked(_token(st), target, op, origin, sha, len(content))
        # The new bytes go to a hidden temporary file first (this is where a full disk fails), the version is
        # recorded, and the file is renamed into place only after the COMMIT (see `_Pending`).
        with _fs.walk(root, target.parent, create=True) as parent:
            temp = _fs.write_temp(parent, content, fsync=self._fsync)
        pending = self._pending()
        if pending is not None:
            pending.undo.append(partial(self._discard, root, target, temp))
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
        self._after_commit(partial(self._install, root, target, temp, pending))
        return version

    def _settle(self, root: _fs.DirHandle, conn: sqlite3.Connection | None, target: MemoryPath) -> list[IndexRow]:
        """Bring the index in step with what is on disk at ``target`` (a file or a tree) and return its rows.
        `NotFoundError` when nothing is there."""
        kind = self._kind(root, target)
        if kind is None or kind in ("other", "empty"):
            raise NotFoundError(f"{target.virtual} does not exist")
        if kind == "file":
            data = self._observe(root, conn, target)
            return [IndexRow(target.key, data.version, data.sha256, len(data.content), data.modified, None)]
        with _fs.walk(root, target) as directory:
            found = sorted(_fs.scan_tree(directory, target), key=lambda item: item[0].parts)
        if self._index is None or conn is None:
            return [IndexRow(p.key, _token(st), "", st.size, st.mtime, st.stamp) for p, st in found]
        self._apply_differences(root, conn, target, found)
        return self._index.below(conn, target.key)

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
                token = _token(_fs.stamp_of(st)) if st is not None else row.version
                versions.append(_untracked(token, new, "rename", origin, row.sha256 or None, row.size, row))
                continue
            version = self._index.record_move(conn, row, new.key, origin=origin, stamp=stamp, ts=ts)
            self._will_apply(PendingOp(version.version, "rename", new.key, row.sha256, old_path=row.path))
            versions.append(version)
        return versions

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
                with contextlib.suppress(NotFoundError, NotAFileError, NotADirectoryError_, PathError):
                    self._observe(root, conn, path)
        for row in rows.values():  # in the index, gone from disk
            self._index.record_delete(conn, row, origin=self._outside)


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


def _token(st: _fs.FileStat) -> int:
    """A version number for a store without history: changes whenever the file does."""
    return int.from_bytes(hashlib.sha256(st.stamp.encode()).digest()[:7], "big")


_libc: ctypes.CDLL | None
try:
    _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    _renameat2 = _libc.renameat2
    _renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
except (OSError, AttributeError):
    _libc = None
_RENAME_NOREPLACE = 1


def _rename_noreplace(sparent: _fs.DirHandle, sname: str, dparent: _fs.DirHandle, dname: str, dest: MemoryPath) -> None:
    """rename(2) that never replaces the destination (``RENAME_NOREPLACE``): the existence check done under
    our lock cannot stop an editor outside memdir from creating the destination a moment later."""
    sparent.changed()  # it may be a directory: what the command's root keeps open is walked again
    if _libc is not None:
        result = _renameat2(sparent.fd, os.fsencode(sname), dparent.fd, os.fsencode(dname), _RENAME_NOREPLACE)
        if result == 0:
            return
        code = ctypes.get_errno()
        if code == errno.EEXIST:
            raise AlreadyExistsError(f"{dest.virtual} already exists")
        if code not in (errno.ENOSYS, errno.EINVAL):
            raise storage_error_from_os(OSError(code, os.strerror(code)), "rename")
    try:
        os.rename(sname, dname, src_dir_fd=sparent.fd, dst_dir_fd=dparent.fd)
    except OSError as exc:
        raise storage_error_from_os(exc, "rename") from exc
