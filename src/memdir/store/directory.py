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

`DirectoryStore` holds the `Store` methods; its pieces live beside it: `memdir.store._writer` (the writer lock and
transaction, how a change is recorded, what a command notes for the next), `memdir.store._ondisk` (changes found
on disk, recorded before anything else touches them) and `memdir.store._fileops` (the file operations done after
the COMMIT).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
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
    StoreNotFoundError,
    storage_error_from_os,
)
from ..paths import MemoryPath
from . import _fs
from ._base import Store, check_expect, check_move
from ._fileops import prepare_rename, remove
from ._ondisk import ChangesOnDisk, free_at, kind_at, version_token
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
from ._writer import Noted, WriteProtocol

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from ._chain import ChainReport

__all__ = ["DirectoryStore", "namespace_root"]

SIDECAR = ".memdir"
INDEX_NAME = "index.db"
AUX_NAME = "aux.db"  # the auxiliary database (search index, audit log, quarantine...), beside the index

_External = Origin(actor="external")
_USAGE_TTL = 5.0  # seconds a walked usage count stays fresh in a store without an index


def namespace_root(base: Path, namespace: str) -> Path:
    return base / "memories" if namespace == DEFAULT_NAMESPACE else base / "namespaces" / namespace


def _own_root(root: str | os.PathLike[str], namespace: str, history: object) -> Path:
    """The directory a ``root=`` store maps ``/memories`` onto: one namespace, and the sidecar kept elsewhere."""
    if namespace != DEFAULT_NAMESPACE or history is True:
        raise ConfigError("a store over its own root directory has one namespace and needs history=PATH (or False)")
    return Path(root).expanduser().absolute()


_INDEX_PAGE_SIZE = 1024


class DirectoryStore(WriteProtocol, ChangesOnDisk, Store):
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
        if read_only and not os.path.isdir(root):
            # Read-only makes nothing: verify's twin of a Claude Code store made <dir>/memories inside it.
            raise StoreNotFoundError(str(self.base))
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
        self._local = threading.local()  # the `Pending` of the command this thread runs under the lock
        self._noted = Noted()  # what this object's commands did after their COMMIT, for the next one to record
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
                if _fs.empty_tree(parent, target.name):  # not there for memdir (see `kind_at`)
                    raise NotFoundError(f"{target.virtual} does not exist") from None
                raise
        if self._index is None:
            return FileData(target, content, version_token(st), sha256_hex(content), st.mtime)
        row = self._row(target.key)
        if row is not None and self._stamp(row) == st.stamp:
            return FileData(target, content, row.version, row.sha256, st.mtime)
        if self.read_only:  # nothing can be recorded: report the indexed version if the content is the same
            sha = sha256_hex(content)
            version = row.version if row is not None and row.sha256 == sha else version_token(st)
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
                if kind_at(root, target) == "empty":  # not there for memdir, as on every backend
                    raise NotFoundError(f"{target.virtual} does not exist")
        if self._index is None:
            return [Entry(p, st.size, st.mtime, version_token(st)) for p, st in found]
        found, rows = self._reconcile(target, found)
        stamps = self._stamps(rows)
        entries = []
        for path, st in found:
            row = rows.get(path.key)
            known = row is not None and stamps[path.key] == st.stamp  # else changed on a disk we cannot record on
            version, sha = (row.version, row.sha256) if row is not None and known else (version_token(st), None)
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
            self._after_commit(partial(remove, root, target, self._pending()))
        return versions

    def move(self, src: PathLike, dst: PathLike, *, origin: Origin = Origin()) -> list[Version]:
        source, dest = as_path(src), as_path(dst)
        check_move(source, dest)
        with self._locked() as (root, conn):
            rows = self._settle(root, conn, source)  # a missing source is reported first, as on every backend
            if dest.is_root or free_at(root, dest) is not None:
                raise AlreadyExistsError(f"{dest.virtual} already exists")
            prepare_rename(root, rows, source, dest, self._pending())
            return self._record_moves(root, conn, rows, source, dest, origin)

    def import_version(self, version: Version, content: bytes | None, *, quota: Quota | None = None) -> Version:
        self._require_history()
        origin = Origin(version.actor, version.session, version.source)
        target = version.path
        with self._locked() as (root, conn):
            if version.sha256 is None:
                (row,) = self._settle(root, conn, target)
                self._after_commit(partial(remove, root, target, self._pending()))
                return self._record_delete(conn, row, origin, op=version.op, ts=version.timestamp)
            if version.op == "rename" and version.old_path is not None:
                source = version.old_path
                rows = self._settle(root, conn, source)
                if free_at(root, target) is not None:
                    raise AlreadyExistsError(f"{target.virtual} already exists")
                prepare_rename(root, rows, source, target, self._pending())
                (moved,) = self._record_moves(root, conn, rows, source, target, origin, ts=version.timestamp)
                return moved
            if content is None:
                raise NotFoundError(f"no content for version {version.version} of {target.virtual}")
            current = self._current(root, conn, target)
            return self._put(
                root, conn, target, content, origin=origin, op=version.op, ts=version.timestamp, replaces=current,
                quota=quota,
            )  # fmt: skip

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
    def writers_paused(self) -> Iterator[None]:
        """No write of this namespace, from any process, in the ``with`` block: a shared ``flock`` on its root,
        which each writer takes exclusively for its whole change (`_writer.WriteProtocol._locked`). For a check
        that must read the files and the index as one state (`memdir verify`); writers wait for it."""
        with self._open() as root:
            try:
                fcntl.flock(root.fd, fcntl.LOCK_SH)
            except OSError as exc:
                raise storage_error_from_os(exc, "lock the store") from exc
            yield  # the lock goes with the descriptor

    def _row(self, key: str) -> IndexRow | None:
        assert self._index is not None
        return self._index.lookup(key)
