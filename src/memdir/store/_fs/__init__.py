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

The primitives are in three private modules, all imported from here: `_dirs` (the root and the directories below
it: opening, walking, making), `_files` (one file: its stamp, reading it, writing it through a temporary file) and
`_trees` (what is below a directory: removing, emptiness, pruning, scanning).
"""

from __future__ import annotations

from ._dirs import DIR_MODE, FILE_MODE, DirHandle, Root, identity, open_root, secure_makedirs, walk
from ._files import (
    MAX_READ,
    TEMP_PREFIX,
    FileStat,
    atomic_write,
    install,
    linked,
    lstat_at,
    read_at,
    stamp_of,
    write_temp,
)
from ._trees import clear_empty_tree, empty_tree, prune_empty, remove_tree, scan_tree

__all__ = [
    "DIR_MODE",
    "FILE_MODE",
    "MAX_READ",
    "TEMP_PREFIX",
    "DirHandle",
    "FileStat",
    "Root",
    "atomic_write",
    "clear_empty_tree",
    "empty_tree",
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
