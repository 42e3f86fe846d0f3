"""The store root and the directories below it, for `memdir.store._fs`: opening the root (and checking it is the
one opened before), walking to a directory one component at a time with ``O_NOFOLLOW``, making missing ones
``0700``, and the handles a command keeps open (`Root`, `DirHandle`). Why it is done this way is the package
docstring's subject.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import TYPE_CHECKING

from ...errors import NotADirectoryError_, NotFoundError, PathError, StorageError, storage_error_from_os
from ...paths import MemoryPath

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "DIR_MODE",
    "FILE_MODE",
    "_DIR_FLAGS",
    "DirHandle",
    "Root",
    "identity",
    "open_root",
    "secure_makedirs",
    "walk",
]

# Owner-only. In containers the umask is often 0, which would make memory world-readable (or writable)
# with the default 0o666/0o777 modes. Modes are set with fchmod after creation, because mkdir/open apply the
# umask, and chmod is not subject to it.
FILE_MODE = 0o600
DIR_MODE = 0o700

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


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
