"""The file operations that make a directory store command's change visible, done once its index has committed.

`memdir.store.directory.DirectoryStore` writes new content to a hidden temporary file and records its versions
first; these put the temporary file in place, remove a file or tree, or rename one, each taking the command's
`memdir.store._visible.Pending` (None in a store without an index, where they run at once) to note what they did.
A directory left empty is pruned after the next command (`emptied`). The rename never replaces a file that is
there (`rename_noreplace`): the roll-forward of a killed writer's changes uses it too.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
from functools import partial
from typing import TYPE_CHECKING

from ..errors import AlreadyExistsError, storage_error_from_os
from . import _fs
from ._base import key_path

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..paths import MemoryPath
    from ._sql import IndexRow
    from ._visible import Pending

__all__ = ["after_commit", "discard", "emptied", "install", "prepare_rename", "remove", "rename", "rename_noreplace"]


def after_commit(pending: Pending | None, action: Callable[[], None]) -> None:
    """Run ``action`` once the index has committed (at once in a store without an index)."""
    if pending is None:
        action()
    else:
        pending.apply.append(action)


def install(root: _fs.DirHandle, target: MemoryPath, temp: str, pending: Pending | None = None) -> None:
    with _fs.walk(root, target.parent) as parent:
        installed = _fs.install(parent, temp, target.name)
    if pending is not None:
        pending.seen[target.key] = installed.stamp  # taken right after the rename: `_note` need not look again


def discard(root: _fs.DirHandle, target: MemoryPath, temp: str) -> None:
    """Remove an unused temporary file, and the directories made for it if they are now empty."""
    with _fs.walk(root, target.parent) as parent:
        _fs.remove_tree(parent, temp)
    _fs.prune_empty(root, target.parent)


def remove(root: _fs.DirHandle, target: MemoryPath, pending: Pending | None = None) -> None:
    with _fs.walk(root, target.parent) as parent:
        _fs.remove_tree(parent, target.name)
    emptied(root, target.parent, pending)


def emptied(root: _fs.DirHandle, directory: MemoryPath, pending: Pending | None) -> None:
    """``directory`` may have just lost its last file: it is pruned after the next command (`_writer.Noted`), so a
    note deleted and written again (a common rewrite) does not remove and re-make its directory each time.
    Meanwhile an empty directory is not there for memdir (`_ondisk.kind_at`)."""
    if pending is None:
        _fs.prune_empty(root, directory)
    elif not directory.is_root:
        pending.emptied.append(directory)


def prepare_rename(
    root: _fs.DirHandle, rows: list[IndexRow], source: MemoryPath, dest: MemoryPath, pending: Pending | None
) -> None:
    """Make the destination's parents now (a file on the way fails here, before anything moved) and move
    the tree once the index has committed."""
    with _fs.walk(root, dest.parent, create=True):
        pass
    if pending is not None:
        pending.undo.append(partial(_fs.prune_empty, root, dest.parent))
        pending.stamps.extend(key_path(r.path).rebase(source, dest) for r in rows)
    after_commit(pending, partial(rename, root, source, dest, pending))


def rename(root: _fs.DirHandle, source: MemoryPath, dest: MemoryPath, pending: Pending | None = None) -> None:
    with _fs.walk(root, source.parent) as sparent, _fs.walk(root, dest.parent, create=True) as dparent:
        rename_noreplace(sparent, source.name, dparent, dest.name, dest)
    if not dest.is_within(source.parent):  # else the source's directory holds the destination: not empty
        emptied(root, source.parent, pending)


_libc: ctypes.CDLL | None
try:
    _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    _renameat2 = _libc.renameat2
    _renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
except (OSError, AttributeError):
    _libc = None
_RENAME_NOREPLACE = 1


def rename_noreplace(sparent: _fs.DirHandle, sname: str, dparent: _fs.DirHandle, dname: str, dest: MemoryPath) -> None:
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
