"""What is below a directory, for `memdir.store._fs`: removing a tree without following links, telling a tree of
nothing but empty directories (not there for memdir) and clearing it, pruning the empty directories a removal
leaves, and scanning for the regular files a listing shows.
"""

from __future__ import annotations

import os
import shutil
import stat
from typing import TYPE_CHECKING

from ...errors import NotADirectoryError_, NotFoundError, PathError, storage_error_from_os
from ...paths import MemoryPath, is_valid_segment
from ._dirs import _DIR_FLAGS, DirHandle, walk
from ._files import MAX_READ, linked, lstat_at, stamp_of

if TYPE_CHECKING:
    from collections.abc import Iterator

    from ._files import FileStat

__all__ = ["clear_empty_tree", "empty_tree", "prune_empty", "remove_tree", "scan_tree"]


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
    names the path rules refuse are skipped (the model could never address them; `memdir doctor` lists them), and
    so are files over `MAX_READ` (reading one fails, which would stop every listing and outside-edit check)."""
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
        if stat.S_ISREG(st.st_mode) and not linked(st) and st.st_size <= MAX_READ:
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
