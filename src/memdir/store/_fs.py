"""File-system primitives for the directory store, safe against symlinks and partial writes.

Every operation below the store root works relative to an open directory descriptor and opens each
component with ``O_NOFOLLOW``: a symlink planted anywhere inside the tree, even one swapped in between a check
and its use, makes the operation fail (``ELOOP`` / ``ENOTDIR``) instead of following it out of the root.
Checking a resolved path first and then opening it by name would leave exactly that window open.

A regular file with more than one name (a hard link) is treated as a symlink is (`linked`): it may be a file
outside the tree given a name inside it (reading it would put that file's bytes in memory and in the history), or
a memory file given a name outside it. It is never read (its link count is checked before the open and again on
the open descriptor, so one swapped in between is caught), never listed, and every command on it is an escape.
Writes never go through any name: they rename a new file into place.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import secrets
import shutil
import stat
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import (
    LimitError,
    NotADirectoryError_,
    NotAFileError,
    NotFoundError,
    PathError,
    StorageError,
    storage_error_from_os,
)
from ..paths import MemoryPath, is_valid_segment

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

__all__ = [
    "DIR_MODE",
    "FILE_MODE",
    "TEMP_PREFIX",
    "DirHandle",
    "FileStat",
    "Root",
    "atomic_write",
    "identity",
    "install",
    "linked",
    "lstat_at",
    "open_root",
    "prune_empty",
    "read_at",
    "remove_tree",
    "scan_tree",
    "secure_makedirs",
    "stamp_of",
    "walk",
    "write_temp",
]

# Owner-only. In containers the umask is often 0, which would make memory world-readable (or writable)
# with the default 0o666/0o777 modes. Modes are set with fchmod after creation, because mkdir/open apply the
# umask, and chmod is not subject to it.
FILE_MODE = 0o600
DIR_MODE = 0o700
TEMP_PREFIX = ".memdir-tmp-"

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO planted under a file's name must not hang the process.
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_MAX_READ = 64 * 1024 * 1024  # nothing legitimately in a memory tree is bigger; a planted giant is refused


@dataclass(frozen=True, slots=True)
class FileStat:
    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int
    # The identity of one on-disk state of a file, as the index keeps it. A write through memdir replaces the
    # inode; an editor writing in place changes mtime/ctime; ``cp -p`` keeps mtime but not ctime.
    stamp: str

    @property
    def mtime(self) -> float:
        return self.mtime_ns / 1e9


def stamp_of(st: os.stat_result) -> FileStat:
    ino, size, mtime, ctime = st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns
    return FileStat(ino, size, mtime, ctime, f"{ino}:{size}:{mtime}:{ctime}")


class DirHandle:
    """An open directory descriptor (closed on exit), or one borrowed from the `Root` it was opened below (which
    closes it)."""

    def __init__(self, fd: int, root: Root | None = None) -> None:
        self.fd = fd
        self.root = root

    def __enter__(self) -> DirHandle:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        if self.fd >= 0 and self.root is None:
            os.close(self.fd)
        self.fd = -1

    def changed(self) -> None:
        """A directory below this one was removed or renamed: what its root keeps open may be elsewhere now."""
        if self.root is not None:
            self.root.forget()


class Root(DirHandle):
    """The store root, open for one command, and the directories below it the command opened.

    A command walks to the same directory several times (to check, to write the temporary file, to rename it
    into place, to note its stamp); each walk is an ``open`` per component. The root keeps what it opened and
    hands out borrowed handles, all closed with it. They stay as safe as a fresh walk: a descriptor names the
    directory it was opened on (with ``O_NOFOLLOW``, component by component), whatever is renamed or swapped
    above it later. A directory removed or renamed through memdir makes the root forget them all (`changed`), so
    a later walk opens the path again; the descriptors themselves stay open until the root closes, as a caller
    may still hold one.
    """

    def __init__(self, fd: int) -> None:
        super().__init__(fd)
        self._below: dict[tuple[str, ...], int] = {}
        self._forgotten: list[int] = []

    def below(self, path: MemoryPath, *, create: bool) -> DirHandle:
        if not path.parts:
            return DirHandle(self.fd, self)
        fd = self._below.get(path.parts)
        if fd is None:
            fd = _walk(self.fd, path, create)
            self._below[path.parts] = fd
        return DirHandle(fd, self)

    def forget(self) -> None:
        self._forgotten += self._below.values()
        self._below.clear()

    def close(self) -> None:
        self.forget()
        for fd in self._forgotten:
            os.close(fd)
        self._forgotten.clear()
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def secure_makedirs(path: Path) -> None:
    """Create ``path`` and missing parents ``0700``; existing directories are left as they are."""
    missing: list[Path] = []
    current = path
    while not current.exists():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=DIR_MODE)
        except FileExistsError:
            continue  # created concurrently
        os.chmod(directory, DIR_MODE)


def identity(path: Path) -> tuple[int, int]:
    """(device, inode) of a directory: what `open_root` checks it still finds."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise storage_error_from_os(exc, "open the store") from exc
    return st.st_dev, st.st_ino


def open_root(root: Path, expected: tuple[int, int] | None = None) -> Root:
    """Open the store root. O_NOFOLLOW refuses a link in its last component; the identity check refuses a
    root reached through a directory above it that was swapped (for a link or another tree) since opening."""
    replaced = "could not open the store: its root has been replaced by a link or a file"
    try:
        fd = os.open(root, _DIR_FLAGS)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise StorageError(replaced) from exc
        raise storage_error_from_os(exc, "open the store") from exc
    if expected is not None:
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != expected:
            os.close(fd)
            raise StorageError("could not open the store: its root has been replaced by another directory")
    return Root(fd)


def walk(root: DirHandle, path: MemoryPath, *, create: bool = False) -> DirHandle:
    """Open the directory ``path`` below ``root`` one component at a time, never following a link.

    With ``create``, missing directories are made ``0700``. `NotFoundError` when one is missing,
    `NotADirectoryError_` when a component is a file, `PathError` (escape) when one is a symlink.
    """
    if isinstance(root, Root):
        return root.below(path, create=create)
    if not path.parts:
        return DirHandle(os.dup(root.fd))
    return DirHandle(_walk(root.fd, path, create))


def _walk(root: int, path: MemoryPath, create: bool) -> int:
    fd = _step(root, path.parts[0], path, 0, create, close=False)  # the first step needs no copy of the root
    for depth, name in enumerate(path.parts[1:], 1):
        fd = _step(fd, name, path, depth, create)
    return fd


def _step(fd: int, name: str, path: MemoryPath, depth: int, create: bool, *, close: bool = True) -> int:
    """Open ``name`` below ``fd`` and close ``fd`` (on success and on failure alike) unless ``close`` is False."""
    try:
        child = os.open(name, _DIR_FLAGS, dir_fd=fd)
    except FileNotFoundError:
        here = MemoryPath(path.parts[: depth + 1])
        if not create:
            _close_if(fd, close)
            raise NotFoundError(f"{here.virtual} does not exist") from None
        try:
            child = _make_dir(fd, name, here)
        finally:
            _close_if(fd, close)
        return child
    except OSError as exc:
        if exc.errno == errno.ENOTDIR:
            exc = _not_a_directory(fd, name, exc)
        _close_if(fd, close)
        _raise_for_component(exc, MemoryPath(path.parts[: depth + 1]))
    _close_if(fd, close)
    return child


def _close_if(fd: int, close: bool) -> None:
    if close:
        os.close(fd)


def _not_a_directory(fd: int, name: str, exc: OSError) -> OSError:
    """Why opening ``name`` as a directory failed with ENOTDIR. O_DIRECTORY|O_NOFOLLOW on a symlink gives
    ENOTDIR, not ELOOP, so a link to a directory would pass for "a file" and hide that the path tried to leave
    the tree. Only an entry that is a plain non-directory now keeps ENOTDIR; a link, or a directory (the entry
    was swapped since the open), is reported as the escape it was."""
    try:
        mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return OSError(errno.ENOENT, os.strerror(errno.ENOENT))
    except OSError:
        return exc
    if stat.S_ISLNK(mode) or stat.S_ISDIR(mode):
        return OSError(errno.ELOOP, os.strerror(errno.ELOOP))
    return exc


def _make_dir(fd: int, name: str, here: MemoryPath) -> int:
    """Make and open directory ``name`` below ``fd`` (which the caller closes)."""
    try:
        os.mkdir(name, DIR_MODE, dir_fd=fd)
    except FileExistsError:
        pass  # made concurrently; the open below checks what it is
    except OSError as exc:
        raise storage_error_from_os(exc, "create a directory") from exc
    try:
        child = os.open(name, _DIR_FLAGS, dir_fd=fd)
    except OSError as exc:
        if exc.errno == errno.ENOTDIR:
            exc = _not_a_directory(fd, name, exc)
        _raise_for_component(exc, here)
    os.fchmod(child, DIR_MODE)
    return child


def _raise_for_component(exc: OSError, here: MemoryPath) -> None:
    if exc.errno == errno.ELOOP:
        raise PathError(here.virtual, "escape") from exc
    if exc.errno == errno.ENOTDIR:
        raise NotADirectoryError_(f"{here.virtual} is a file") from exc
    if exc.errno == errno.ENOENT:
        raise NotFoundError(f"{here.virtual} does not exist") from exc
    raise storage_error_from_os(exc, "open a directory") from exc


def linked(st: os.stat_result) -> bool:
    """Whether an entry is a link for memdir: a symlink, or a regular file with other names (hard links), which
    may lead outside the tree as a symlink would (see the module docstring)."""
    return stat.S_ISLNK(st.st_mode) or (stat.S_ISREG(st.st_mode) and st.st_nlink > 1)


def lstat_at(directory: DirHandle, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=directory.fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise storage_error_from_os(exc, "inspect a file") from exc


def read_at(directory: DirHandle, name: str, path: MemoryPath) -> tuple[bytes, FileStat]:
    """Read a regular file. A link (a symlink, or a file with other names) is an escape; a directory is
    `NotAFileError`; anything else that is not a regular file (a FIFO, a socket, a device) is `NotFoundError`, as
    it is in listings."""
    before = lstat_at(directory, name)
    if before is None:  # as if the open below had come first: a file made since is read by the next look
        raise NotFoundError(f"{path.virtual} does not exist")
    if linked(before):
        raise PathError(path.virtual, "escape")
    if not (stat.S_ISREG(before.st_mode) or stat.S_ISDIR(before.st_mode)):
        # Checked before open(): opening a device node can have side effects, and a socket cannot be opened
        # at all (ENXIO). The fstat below still catches one swapped in after this check.
        raise NotFoundError(f"{path.virtual} is not a regular file")
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=directory.fd)
    except FileNotFoundError:
        raise NotFoundError(f"{path.virtual} does not exist") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PathError(path.virtual, "escape") from exc
        if exc.errno == errno.EISDIR:
            raise NotAFileError(f"{path.virtual} is a directory") from exc
        if exc.errno == errno.ENXIO:  # a socket swapped in after the check above
            raise NotFoundError(f"{path.virtual} is not a regular file") from exc
        raise storage_error_from_os(exc, "read a file") from exc
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise NotAFileError(f"{path.virtual} is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise NotFoundError(f"{path.virtual} is not a regular file")
        if st.st_nlink > 1:  # a hard link made (or swapped in) since the check above: never read through it
            raise PathError(path.virtual, "escape")
        if st.st_size > _MAX_READ:
            raise LimitError(f"{path.virtual} is {st.st_size:,} bytes, too large to read")
        chunks: list[bytes] = []
        while chunk := os.read(fd, max(st.st_size, 65536)):
            chunks.append(chunk)
        return b"".join(chunks), stamp_of(st)
    except OSError as exc:
        raise storage_error_from_os(exc, "read a file") from exc
    finally:
        os.close(fd)


class _TempNames:
    """Names for temporary files: the process id and a random part drawn once per process (again after a fork),
    then a counter. No system call per name (``getpid`` and ``getrandom`` were two per write); a name left by a
    killed process whose id comes back is still told apart by the random part, and ``O_EXCL`` refuses the rest."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._prefix = f"{TEMP_PREFIX}{os.getpid()}-{secrets.token_hex(6)}-"
        self._count = itertools.count()

    def next(self) -> str:
        return f"{self._prefix}{next(self._count)}"


_temp_names = _TempNames()
if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_temp_names._reset)


def write_temp(directory: DirHandle, data: bytes, *, fsync: bool = True) -> str:
    """Write ``data`` to a new hidden temporary file in ``directory`` (``0600``, fsynced) and return its name.
    This is the step that needs space: on ENOSPC nothing is left behind."""
    temp = _temp_names.next()
    try:
        fd = os.open(
            temp, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE, dir_fd=directory.fd
        )
    except OSError as exc:
        raise storage_error_from_os(exc, "write a file") from exc
    try:
        try:
            os.fchmod(fd, FILE_MODE)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=directory.fd)
        raise storage_error_from_os(exc, "write a file") from exc
    return temp


def install(directory: DirHandle, temp: str, name: str) -> FileStat:
    """Rename a file made by `write_temp` over ``name``: readers see the old bytes or the new, never a mix.

    rename() replaces a symlink at ``name`` rather than following it, so a planted link is simply overwritten,
    never written through.
    """
    try:
        os.rename(temp, name, src_dir_fd=directory.fd, dst_dir_fd=directory.fd)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=directory.fd)
        raise storage_error_from_os(exc, "write a file") from exc
    # ctime moves with the rename on some file systems; stat after it for the stamp the index keeps.
    after = lstat_at(directory, name)
    if after is None:
        raise StorageError("could not write a file: it disappeared as it was written")
    return stamp_of(after)


def atomic_write(directory: DirHandle, name: str, data: bytes, *, fsync: bool = True) -> FileStat:
    """Replace ``name`` with ``data`` all at once: `write_temp`, then `install`.

    A crash (kill -9) leaves the old file intact and at worst a hidden temporary file, which `memdir doctor`
    removes.
    """
    return install(directory, write_temp(directory, data, fsync=fsync), name)


def remove_tree(directory: DirHandle, name: str) -> None:
    """Remove a file, or a directory tree without following links (shutil.rmtree's fd-based walk)."""
    st = lstat_at(directory, name)
    if st is None:
        return
    try:
        if stat.S_ISDIR(st.st_mode):
            directory.changed()
            shutil.rmtree(name, dir_fd=directory.fd)
        else:
            os.unlink(name, dir_fd=directory.fd)
    except OSError as exc:
        raise storage_error_from_os(exc, "delete") from exc


def empty_tree(directory: DirHandle, name: str) -> bool:
    """Whether the directory ``name`` holds nothing but (recursively) empty directories: no file, no link, no
    hidden entry. Such a tree is not there for memdir (a directory exists while it holds a file, on every backend:
    SQLite has no directories of its own), and `clear_empty_tree` can take it away."""
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=directory.fd)
    except OSError:
        return False
    try:
        return _holds_only_empty_dirs(fd)
    finally:
        os.close(fd)


def _holds_only_empty_dirs(fd: int) -> bool:
    try:
        entries = list(os.scandir(fd))
    except OSError:
        return False
    for entry in entries:  # the first file (the usual case) answers at once
        if not entry.is_dir(follow_symlinks=False):
            return False
        try:
            child = os.open(entry.name, _DIR_FLAGS, dir_fd=fd)
        except OSError:
            return False
        try:
            if not _holds_only_empty_dirs(child):
                return False
        finally:
            os.close(child)
    return True


def clear_empty_tree(directory: DirHandle, name: str) -> bool:
    """Remove the directory ``name`` if it holds nothing but empty directories, bottom up with rmdir(2) (which
    refuses a directory that is not empty, so nothing written meanwhile is lost); whether it is gone."""
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=directory.fd)
    except OSError:
        return False
    try:
        for entry in list(os.scandir(fd)):
            if not entry.is_dir(follow_symlinks=False) or not clear_empty_tree(DirHandle(fd), entry.name):
                return False
    except OSError:
        return False
    finally:
        os.close(fd)
    try:
        os.rmdir(name, dir_fd=directory.fd)
    except OSError:
        return False
    directory.changed()
    return True


def prune_empty(root: DirHandle, path: MemoryPath) -> None:
    """Remove ``path`` and its ancestors while they are empty (never the root): a directory exists while it
    holds a file, on every backend."""
    for depth in range(len(path.parts), 0, -1):
        here = MemoryPath(path.parts[:depth])
        try:
            with walk(root, here.parent) as parent:
                os.rmdir(here.name, dir_fd=parent.fd)
                parent.changed()
        except (OSError, NotFoundError, NotADirectoryError_, PathError):
            return


def scan_tree(directory: DirHandle, prefix: MemoryPath) -> Iterator[tuple[MemoryPath, FileStat]]:
    """Every regular file below ``directory``, as (path, stat), unsorted; links (hard links too), hidden names and
    names the path rules refuse are skipped (the model could never address them; `memdir doctor` lists them)."""
    yield from _scan(directory.fd, prefix)


def _scan(fd: int, prefix: MemoryPath) -> Iterator[tuple[MemoryPath, FileStat]]:
    try:
        entries = list(os.scandir(fd))
    except OSError as exc:
        raise storage_error_from_os(exc, "list a directory") from exc
    for entry in entries:
        name = entry.name
        if not is_valid_segment(name):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue  # removed while we looked
        except OSError as exc:
            raise storage_error_from_os(exc, "list a directory") from exc
        here = MemoryPath((*prefix.parts, name))
        if stat.S_ISREG(st.st_mode) and not linked(st):
            yield here, stamp_of(st)
        elif stat.S_ISDIR(st.st_mode):
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError:
                continue  # replaced by a link or removed between scandir and open
            try:
                yield from _scan(child, here)
            finally:
                os.close(child)
