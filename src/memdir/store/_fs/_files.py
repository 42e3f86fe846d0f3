"""One file, for `memdir.store._fs`: its stat and the stamp the index keeps (`FileStat`), whether it is a link for
memdir (`linked`), reading it through a descriptor that is checked again once open (`read_at`, at most `MAX_READ`
bytes), and writing it whole through a temporary file renamed into place (`write_temp`, `install`, `atomic_write`).
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import secrets
import stat
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...errors import LimitError, NotAFileError, NotFoundError, PathError, StorageError, storage_error_from_os
from ._dirs import FILE_MODE

if TYPE_CHECKING:
    from ...paths import MemoryPath
    from ._dirs import DirHandle

__all__ = [
    "MAX_READ",
    "TEMP_PREFIX",
    "FileStat",
    "atomic_write",
    "install",
    "linked",
    "lstat_at",
    "read_at",
    "stamp_of",
    "write_temp",
]

TEMP_PREFIX = ".memdir-tmp-"

# O_NONBLOCK: opening a FIFO planted under a file's name must not hang the process.
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
# Nothing legitimately in a memory tree is bigger: a planted giant is refused when named, and left out of listings
# (`scan_tree`) so it cannot stop every command that reads all files.
MAX_READ = 64 * 1024 * 1024


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
        if st.st_size > MAX_READ:
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
    This is the step that needs space: on ENOSPC nothing is left behind.

    Where the file system can (Linux's ``O_TMPFILE``), the file is written and fsynced before it has a name, and
    named after: the ``fsync`` then commits the file alone, not a new directory entry with it (~25% less time on
    ext4), and a process killed before the name leaves nothing behind at all."""
    temp = _temp_names.next()
    fd, named = _new_file(directory, temp)
    try:
        try:
            _fill(fd, data, fsync=fsync)
            if not named:
                named = _name(fd, directory, temp, data, fsync=fsync)
        finally:
            os.close(fd)
    except OSError as exc:
        if named:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=directory.fd)
        raise storage_error_from_os(exc, "write a file") from exc
    return temp


# Whether this process names files written unnamed (`O_TMPFILE`, linked through /proc): turned off for good the
# first time the kernel, the file system or a missing /proc says no, and the named way is taken instead.
_unnamed = {"on": hasattr(os, "O_TMPFILE") and os.path.isdir("/proc/self/fd")}
# What says "not here" rather than "this write failed": a file system without O_TMPFILE (EOPNOTSUPP; EISDIR from
# a kernel that predates it and reads it as O_DIRECTORY); a /proc that will not link (a locked-down container).
_NO_UNNAMED = {errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL}
_NO_LINK = {errno.EOPNOTSUPP, errno.EINVAL, errno.ENOENT, errno.EXDEV, errno.EPERM, errno.EACCES}


def _new_file(directory: DirHandle, temp: str) -> tuple[int, bool]:
    """A new file for `write_temp`: unnamed where it can be (False), else created as ``temp`` (True)."""
    if _unnamed["on"]:
        try:
            flags = os.O_TMPFILE | os.O_WRONLY | os.O_CLOEXEC
            return os.open(".", flags, FILE_MODE, dir_fd=directory.fd), False
        except OSError as exc:
            if exc.errno not in _NO_UNNAMED:
                raise storage_error_from_os(exc, "write a file") from exc
            _unnamed["on"] = False
    try:
        flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC
        return os.open(temp, flags, FILE_MODE, dir_fd=directory.fd), True
    except OSError as exc:
        raise storage_error_from_os(exc, "write a file") from exc


def _name(fd: int, directory: DirHandle, temp: str, data: bytes, *, fsync: bool) -> bool:
    """Give the unnamed file ``fd`` the name ``temp``: a hard link from its /proc entry (``linkat`` with
    ``AT_SYMLINK_FOLLOW``, which needs no privilege, unlike ``AT_EMPTY_PATH``). Where that is refused, the file is
    written again the named way, once: this process then writes every file that way."""
    try:
        os.link(f"/proc/self/fd/{fd}", temp, dst_dir_fd=directory.fd, follow_symlinks=True)
        return True
    except OSError as exc:
        if exc.errno not in _NO_LINK:
            raise
    _unnamed["on"] = False
    named, _ = _new_file(directory, temp)
    try:
        _fill(named, data, fsync=fsync)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=directory.fd)
        raise
    finally:
        os.close(named)
    return True


def _fill(fd: int, data: bytes, *, fsync: bool) -> None:
    """Write all of ``data`` to the new file ``fd``, made ``0600`` whatever the umask, and (``fsync``) to the disk."""
    os.fchmod(fd, FILE_MODE)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    if fsync:
        os.fsync(fd)


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
