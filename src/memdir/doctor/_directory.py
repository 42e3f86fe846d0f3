"""The doctor of a directory store (``PATH``): the sidecar index, the files on disk, and what lies between."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import sqlite3
import stat
import time
from typing import TYPE_CHECKING

from ..errors import MemdirError, PathError, StorageError
from ..paths import ROOT, MemoryPath, is_valid_segment, parse
from ..store._fs import DIR_MODE, MAX_READ, TEMP_PREFIX, linked, open_root, read_at, scan_tree, walk
from ..store._records import DEFAULT_NAMESPACE, Origin, check_namespace, sha256_hex
from ..store._sql import PendingOp, SqlIndex, connect, pending_by_namespace
from ..store.directory import AUX_NAME, INDEX_NAME, SIDECAR, DirectoryStore, namespace_root
from ._shared import (
    BEING_CREATED,
    Unchecked,
    being_created,
    check_mode,
    check_schema,
    create_private,
    damage_of,
    move_aside,
    open_readonly,
    plural,
    salvage,
)

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from ..store._fs import DirHandle
    from ._report import Report

__all__ = ["DirectoryDoctor"]


_REBUILT = Origin(actor="import", source="memdir doctor: index rebuilt from the files on disk")
_IMAGES = (".png", ".jpg", ".jpeg")  # binary on purpose: not reported as non-UTF-8
_MAX_CONTENT_CHECK = 64 * 1024 * 1024
_LOCK_WAIT = 10.0  # seconds to wait for a writer to finish before giving up on a namespace


class DirectoryDoctor:
    def __init__(self, base: Path, report: Report, repair: bool) -> None:
        self.base = base.absolute()
        self.index = self.base / SIDECAR / INDEX_NAME
        self.report = report
        self.repair = repair
        # Operations still pending after this run (namespace -> rows): their temporary files are not leftovers,
        # their paths not outside changes.
        self.pending: dict[str, list[PendingOp]] = {}

    def run(self) -> None:
        if not self.base.is_dir() or not any((self.base / n).exists() for n in ("memories", "namespaces", SIDECAR)):
            self.report.add("error", str(self.base), "no memdir directory store at this location")
            return
        check_mode(self.report, ".", os.stat(self.base), self.base.parent, self.base.name, self.repair)
        try:
            damage = damage_of(self.index) if self.index.exists() else None
            self._check_aux()
        except Unchecked as exc:
            self.report.add("error", f"{SIDECAR}/{INDEX_NAME}", str(exc))
            return
        if self.index.exists() and damage is None and being_created(self.index):
            self.report.add("info", f"{SIDECAR}/{INDEX_NAME}", BEING_CREATED)
            return
        if self.index.exists() and damage is None:
            self._pending_changes()  # first: a repair puts them in place before the walk looks for leftovers
        self._walk_tree()
        if self._index_sound(damage):
            with contextlib.closing(connect(self.index)) as conn:
                check_schema(conn, self.report, f"{SIDECAR}/{INDEX_NAME}", self.repair)
                self._outside_changes(conn)

    # -- changes committed but not yet visible

    def _pending_changes(self) -> None:
        for namespace, rows in _pending_ops(self.index).items():
            # A live writer records that its changes are done with its next command (`memdir.store._writer.Noted`):
            # rows whose change is visibly in place are not news, and the next writer drops them.
            ops = [op for op in rows if self._outstanding(namespace, op)]
            if not ops:
                continue
            problem = (
                f"{plural(len(ops), 'committed change')} not yet put in place on disk (a writer was stopped before it "
                "could; done when the store is next used)"
            )
            index = self.report.add("info", f"namespace {namespace}", problem)
            if self.repair:
                self.report.repaired(index, functools.partial(self._finish_pending, namespace))
            if self.report.findings[index].repaired is None:
                self.pending[namespace] = ops

    def _finish_pending(self, namespace: str) -> str:
        with DirectoryStore(self.base, namespace=namespace):
            pass  # opening a namespace finishes what its writers left undone
        return "put in place (files edited by hand meanwhile are kept, and recorded as versions by actor `external`)"

    def _outstanding(self, namespace: str, op: PendingOp) -> bool:
        """Whether ``op`` is not yet in place: its temporary file, or the file it removes or moves, is still
        there (an existence check: doctor reads a damaged tree without judging content here)."""
        top = self.base / ("memories" if namespace == DEFAULT_NAMESPACE else f"namespaces/{namespace}")
        if op.op == "install":
            assert op.temp is not None
            return os.path.lexists(top / op.path.rpartition("/")[0] / op.temp)
        return os.path.lexists(top / (op.old_path if op.op == "rename" and op.old_path else op.path))

    def _committed_temp(self, here: str) -> bool:
        """Whether ``here`` (as the walk names it) is the temporary file of a pending change."""
        for namespace, ops in self.pending.items():
            top = "memories" if namespace == DEFAULT_NAMESPACE else f"namespaces/{namespace}"
            for op in ops:
                parent = op.path.rpartition("/")[0]
                if op.temp is not None and here == "/".join(filter(None, (top, parent, op.temp))):
                    return True
        return False

    # -- the sidecar index

    def _index_sound(self, damage: str | None) -> bool:
        """``damage``: what `damage` found in the index, if it exists."""
        where = f"{SIDECAR}/{INDEX_NAME}"
        if not self.index.exists():
            index = self.report.add("warning", where, "the history index is missing (the history is lost)")
        else:
            if damage is None:
                return True
            index = self.report.add("error", where, f"the history index is damaged ({damage})")
        if self.repair:
            self.report.repaired(index, self._rebuild)
        return False

    def _rebuild(self) -> str:
        """What can be read of a damaged index is kept (its history: rows on damaged pages aside), and only an
        index nothing can be read of, or none, is rebuilt from the files on disk. Either way the new index is
        complete before the old one is moved aside: a repair that fails (a full disk) changes nothing."""
        if self.index.exists():
            salvaged = salvage(self.index)
            if salvaged is not None:
                rows, aside = salvaged
                kept = f"the damaged one is kept as {aside.name}"
                return f"{plural(rows, 'row')} of history salvaged into a new index; {kept}"
        new = self.index.with_name(f"{INDEX_NAME}.rebuild-{os.getpid()}")
        self.index.parent.mkdir(mode=DIR_MODE, exist_ok=True)
        create_private(new)
        try:
            files = self._record_all(new)
        except BaseException:
            for suffix in ("", "-wal", "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(new.with_name(new.name + suffix))
            raise
        old = move_aside(self.index) if self.index.exists() else None
        os.rename(new, self.index)
        kept = f"the damaged index is kept as {old.name}; " if old is not None else ""
        return f"{kept}index rebuilt from the {plural(files, 'file')} on disk (op and actor `import`)"

    def _record_all(self, path: Path) -> int:
        files = 0
        for namespace, root in self._namespaces():
            index = SqlIndex(path, namespace)
            try:
                files += self._record_files(index, root)
            finally:
                index.close()
        return files

    def _check_aux(self) -> None:
        """The auxiliary database (audit log, review queue, search index): damaged, the commands that use it fail
        and send the user here; a repair keeps what can be read of it."""
        aux = self.base / SIDECAR / AUX_NAME
        damage = damage_of(aux) if aux.exists() else None
        if damage is None:
            return
        index = self.report.add(
            "error", f"{SIDECAR}/{AUX_NAME}", f"the audit, review and search database is damaged ({damage})"
        )
        if self.repair:
            self.report.repaired(index, functools.partial(self._salvage_aux, aux))

    def _salvage_aux(self, aux: Path) -> str:
        salvaged = salvage(aux)
        if salvaged is None:
            aside = move_aside(aux)
            return f"nothing in it could be read: it is kept as {aside.name}, and a new one is made when next used"
        rows, aside = salvaged
        return f"{plural(rows, 'row')} salvaged into a new database; the damaged one is kept as {aside.name}"

    def _record_files(self, index: SqlIndex, root: Path) -> int:
        with _writer_lock(root) as handle, index.transaction("rebuild the index") as conn:
            found = sorted(scan_tree(handle, MemoryPath.root()), key=lambda item: item[0].parts)
            for path, _ in found:
                with walk(handle, path.parent) as parent:
                    content, st = read_at(parent, path.name, path)
                index.record_write(
                    conn, path.key, sha=sha256_hex(content), content=content, op="import",
                    origin=_REBUILT, stamp=st.stamp, ts=st.mtime, replaced=None,  # a new index: no file yet
                )  # fmt: skip
            return len(found)

    def _outside_changes(self, conn: sqlite3.Connection) -> None:
        for namespace, root in self._namespaces():
            unfinished = {key for op in self.pending.get(namespace, []) for key in (op.path, op.old_path) if key}
            changed = _changed_outside(conn, namespace, root, unfinished)
            if not changed:
                continue
            problem = (
                f"{plural(changed, 'file')} changed outside memdir (recorded as versions when the store is next used)"
            )
            index = self.report.add("info", f"namespace {namespace}", problem)
            if self.repair:
                self.report.repaired(index, functools.partial(self._record_outside_changes, namespace))

    def _record_outside_changes(self, namespace: str) -> str:
        with DirectoryStore(self.base, namespace=namespace) as store:
            store.list_files()  # listing records every outside change, as any use of the store would
        return "recorded as versions by actor `external`"

    def _namespaces(self) -> Iterator[tuple[str, Path]]:
        if (self.base / "memories").is_dir():
            yield DEFAULT_NAMESPACE, namespace_root(self.base, DEFAULT_NAMESPACE)
        others = self.base / "namespaces"
        if not others.is_dir():
            return
        with os.scandir(others) as listing:
            names = sorted(e.name for e in listing if e.is_dir(follow_symlinks=False) and _valid_namespace(e.name))
        for name in names:
            yield name, namespace_root(self.base, name)

    # -- the files

    def _walk_tree(self) -> None:
        for name in ("memories", "namespaces", SIDECAR):
            st = _lstat(self.base, name)
            if st is None:
                continue
            if not stat.S_ISDIR(st.st_mode):
                self.report.add("warning", name, "should be a directory; memdir will not use it")
                continue
            check_mode(self.report, name, st, self.base, name, self.repair)
            if name == "namespaces":
                self._walk_namespaces()
            else:
                self._walk_root(self.base / name, name, tree=name == "memories")

    def _walk_namespaces(self) -> None:
        fd = os.open(self.base / "namespaces", _DIR_FLAGS)
        try:
            with os.scandir(fd) as listing:
                entries = sorted(listing, key=lambda e: e.name)
            for entry in entries:
                where = f"namespaces/{_shown(entry.name)}"
                st = entry.stat(follow_symlinks=False)
                if not stat.S_ISDIR(st.st_mode) or not _valid_namespace(entry.name):
                    self.report.add("warning", where, "not a namespace directory memdir can use; left alone")
                    continue
                check_mode(self.report, where, st, fd, entry.name, self.repair)
                self._walk_root(self.base / "namespaces" / entry.name, where, tree=True)
        finally:
            os.close(fd)

    def _walk_root(self, root: Path, where: str, *, tree: bool) -> None:
        """Walk one namespace's tree (``tree``) or the sidecar directory. A namespace is walked with its writers
        kept out (the writer lock when repairing, so a temporary file is removed only when no write can be using
        it; shared when checking, so a write in progress is not reported as one interrupted)."""
        with _writer_lock(root, shared=not self.repair) if tree else _no_lock(root) as handle:
            self._visit(handle.fd, where, tree=tree)

    def _visit(self, fd: int, where: str, *, tree: bool) -> None:
        with os.scandir(fd) as listing:
            entries = sorted(listing, key=lambda e: e.name)
        for entry in entries:
            here = f"{where}/{_shown(entry.name)}"
            try:
                st = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue  # removed while we looked
            self._check_entry(fd, entry.name, here, st, tree=tree)

    def _check_entry(self, fd: int, name: str, here: str, st: os.stat_result, *, tree: bool) -> None:
        if stat.S_ISLNK(st.st_mode):
            self.report.add("warning", here, "a symbolic link: memdir never follows it; the model cannot see it")
        elif tree and linked(st):  # a hard link: never read here either (it may be a file outside the store)
            self.report.add(
                "warning", here, "a file with other names (hard links): memdir never reads it; the model cannot see it"
            )
        elif tree and name.startswith(TEMP_PREFIX) and stat.S_ISREG(st.st_mode):
            if self._committed_temp(here):
                return  # holds a committed change, reported with its namespace
            done = _unlink(fd, name) if self.repair else None
            self.report.add("warning", here, "a temporary file left by an interrupted write", done)
        elif not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
            self.report.add("warning", here, "not a regular file or directory: memdir ignores it")
        elif tree and stat.S_ISREG(st.st_mode) and st.st_size > MAX_READ:  # never read, so its content is not checked
            too_large = f"too large to read ({st.st_size:,} bytes, more than {MAX_READ // (1024 * 1024)} MiB)"
            self.report.add("warning", here, f"{too_large}: memdir ignores it; the model cannot see it")
        else:
            check_mode(self.report, here, st, fd, name, self.repair)
            if tree:
                self._check_name(name, here)
            if stat.S_ISDIR(st.st_mode):
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                try:
                    self._visit(child, here, tree=tree)
                finally:
                    os.close(child)
            elif tree and is_valid_segment(name):
                self._check_content(fd, name, here)

    def _check_name(self, name: str, here: str) -> None:
        why = _refused_name(name)
        if why is not None:
            self.report.add("warning", here, f"a name the path rules refuse ({why}): the model cannot see it")

    def _check_content(self, fd: int, name: str, here: str) -> None:
        if name.lower().endswith(_IMAGES):
            return
        try:
            file_fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd)
        except OSError:
            return  # gone, or swapped for something else: the next run sees it
        with os.fdopen(file_fd, "rb") as fh:
            content = fh.read(_MAX_CONTENT_CHECK)
        try:
            content.decode("utf-8")
        except UnicodeDecodeError:
            self.report.add("warning", here, "the content is not UTF-8 text: the model's text commands refuse it")


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _lstat(parent: Path, name: str) -> os.stat_result | None:
    try:
        return os.lstat(parent / name)
    except FileNotFoundError:
        return None


def _unlink(fd: int, name: str) -> str | None:
    try:
        os.unlink(name, dir_fd=fd)
    except OSError:
        return None
    return "removed"


def _shown(name: str) -> str:
    """A file name fit to print: bytes that are not UTF-8 appear as ``\\xNN``."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def _refused_name(name: str) -> str | None:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return "not valid UTF-8"
    if is_valid_segment(name):
        return None
    try:
        parse(f"{ROOT}/{name}")
    except PathError as exc:
        return exc.why or "it would escape /memories"
    return "not in Unicode normal form C"


def _changed_outside(conn: sqlite3.Connection, namespace: str, root: Path, unfinished: set[str]) -> int:
    """How many files were created, edited or deleted on disk since memdir last saw them. A file whose
    on-disk identity changed (a chmod, a touch) but whose content did not is not counted, nor are the paths of
    ``unfinished`` changes (committed, not yet put in place)."""
    rows = conn.execute("SELECT path, stamp, sha256 FROM files WHERE ns = ?", (namespace,)).fetchall()
    known = {str(path): (stamp, sha) for path, stamp, sha in rows if str(path) not in unfinished}
    changed = 0
    with open_root(root) as handle:
        on_disk = {p: st for p, st in scan_tree(handle, MemoryPath.root()) if p.key not in unfinished}
        for path, st in on_disk.items():
            stamp, sha = known.get(path.key, (None, None))
            if stamp != st.stamp and (sha is None or _hash_at(handle, path) != sha):
                changed += 1
    return changed + len(known.keys() - {p.key for p in on_disk})


def _pending_ops(index: Path) -> dict[str, list[PendingOp]]:
    """The pending file operations in the index, by namespace (none in an index from before they existed)."""
    try:
        with contextlib.closing(open_readonly(index)) as conn:
            return pending_by_namespace(conn)
    except sqlite3.Error:
        return {}  # no such table yet (an index from before it existed); damage is the index check's to report


def _hash_at(root: DirHandle, path: MemoryPath) -> str | None:
    try:
        with walk(root, path.parent) as parent:
            return sha256_hex(read_at(parent, path.name, path)[0])
    except MemdirError:
        return None  # gone or swapped meanwhile: counted as changed


def _valid_namespace(name: str) -> bool:
    try:
        check_namespace(name)
    except MemdirError:
        return False
    return True


@contextlib.contextmanager
def _writer_lock(root: Path, *, shared: bool = False) -> Iterator[DirHandle]:
    """The directory store's writer lock (an exclusive flock on the namespace root; ``shared``: writers kept out,
    other readers let in), waited for a while."""
    mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
    with _no_lock(root) as handle:
        deadline = time.monotonic() + _LOCK_WAIT
        while True:
            try:
                fcntl.flock(handle.fd, mode | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise StorageError(f"{root.name} is busy: a memdir writer holds it; try again") from None
                time.sleep(0.05)
        yield handle


@contextlib.contextmanager
def _no_lock(root: Path) -> Iterator[DirHandle]:
    with open_root(root) as handle:
        yield handle
