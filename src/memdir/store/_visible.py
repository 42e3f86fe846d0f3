"""Making a directory store's committed changes visible, and finishing those a killed process left undone.

The memory files and the sidecar index are two stores. A command first does everything that can fail for lack of
space (new content goes to a hidden temporary file, fsynced), records its versions and COMMITs; only then are
the changes made visible with operations that need no space (rename, unlink). A failure anywhere up to the COMMIT
therefore leaves the visible files as they were.

Between the COMMIT and the renames a process can still be killed. So the same transaction records each of those
operations in the index's ``pending`` table (`memdir.store._sql.PendingOp`), and they are deleted once done (by
the same process's next write transaction, see `memdir.store._writer.Noted`). The next writer of the
namespace, which holds the writer lock (so no live process can be half-way through), first
*rolls forward* whatever rows it finds: it renames the temporary file into place, unlinks or moves the file,
provided the disk still holds exactly what the operation expects. Anything else (the file edited by hand
meanwhile, the temporary file gone) is left as it is on disk and the rows are dropped: the usual comparison of
the disk with the index then records the difference as an ``external`` version, as it would any outside edit.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import MemdirError, NotFoundError
from . import _fs
from ._base import key_path
from ._records import sha256_hex

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Callable

    from ..paths import MemoryPath
    from ._sql import PendingOp, SqlIndex

    Rename = Callable[[_fs.DirHandle, str, _fs.DirHandle, str, MemoryPath], None]

__all__ = ["Pending", "roll_forward"]

# Tests only: called after a command's COMMIT, before its first rename, so a test can stop a real process exactly
# in that window. None in production, where it costs one global lookup per command.
between_commit_and_apply: Callable[[], None] | None = None


@dataclass
class Pending:
    """The file changes of one locked command, made visible only once its index transaction has committed."""

    undo: list[Callable[[], None]] = field(default_factory=list)  # on failure: remove temporary files
    apply: list[Callable[[], None]] = field(default_factory=list)  # after COMMIT: make the changes visible
    stamps: list[MemoryPath] = field(default_factory=list)  # files whose on-disk identity to record after
    seen: dict[str, str] = field(default_factory=dict)  # stamps already taken by ``apply`` (key -> stamp)
    emptied: list[MemoryPath] = field(default_factory=list)  # directories ``apply`` may have left empty
    ops: list[PendingOp] = field(default_factory=list)  # ``apply`` as rows, for a roll-forward after a crash
    # What each file a change replaces was on disk when read (key -> stamp; None: no file), checked again just
    # before the COMMIT (`memdir.store._writer.WriteProtocol._unchanged`): another program's edit meanwhile.
    expect: dict[str, str | None] = field(default_factory=dict)

    def roll_back(self) -> None:
        undo = self._take()
        for action in reversed(undo):
            with contextlib.suppress(Exception):
                action()

    def finish(self) -> None:
        apply = self._take(undo=False)
        if apply and between_commit_and_apply is not None:
            between_commit_and_apply()
        for action in apply:
            action()

    def _take(self, *, undo: bool = True) -> list[Callable[[], None]]:
        """The undo (or apply) actions, forgetting both lists: an action may hold this object (to note what it
        did), and a cycle left behind would wait for the cyclic collector, whose full passes cost the embedding
        program tens of milliseconds each."""
        taken = self.undo if undo else self.apply
        self.undo, self.apply = [], []
        return taken

    def span(self) -> tuple[int, int] | None:
        """The first and last version with a pending row (versions are unique per namespace)."""
        if not self.ops:
            return None
        versions = [op.version for op in self.ops]
        return min(versions), max(versions)


def roll_forward(root: _fs.DirHandle, index: SqlIndex, conn: sqlite3.Connection, rename: Rename) -> int:
    """Finish the namespace's pending operations that still apply and drop every row (in transaction ``conn``,
    under the writer lock, where no live process is half-way: a row is a dead writer's, or a live one's whose
    change is done, which finds nothing to do); the number finished.

    Best effort per row: a row that cannot be finished is dropped all the same, so a stale one can never replay
    old content over a later change; the disk keeps what it has and the caller's reconciliation records it.
    """
    ops = index.pending_ops(conn)
    finished = 0
    for op in ops:
        with contextlib.suppress(MemdirError, OSError):
            finished += _FINISH[op.op](root, index, conn, op, rename)
    if ops:
        index.clear_pending(conn)
    return finished


def _install(root: _fs.DirHandle, index: SqlIndex, conn: sqlite3.Connection, op: PendingOp, _: Rename) -> int:
    target = key_path(op.path)
    assert op.temp is not None
    with _fs.walk(root, target.parent) as parent:
        if _fs.lstat_at(parent, op.temp) is not None and _installable(parent, index, conn, op, target):
            _fs.install(parent, op.temp, target.name)
            return 1
        # Not put in place (or put there before the crash): the committed content is in the index's blobs, so
        # a stale copy would only be a leftover for doctor.
        _fs.remove_tree(parent, op.temp)
    _fs.prune_empty(root, target.parent)  # directories made for the file before the COMMIT, if left empty
    return 0


def _installable(
    parent: _fs.DirHandle, index: SqlIndex, conn: sqlite3.Connection, op: PendingOp, target: MemoryPath
) -> bool:
    """The index still says ``op.version`` is current, the temporary file holds it, and the target still holds
    what the version replaces (it was not edited by hand meanwhile)."""
    assert op.temp is not None
    current = index.get(conn, op.path)
    if current is None or current.version != op.version:
        return False
    try:
        return (
            _content_sha(parent, op.temp, target) == op.sha256
            and _content_sha(parent, target.name, target) == op.replaces
        )
    except MemdirError:
        return False  # a directory, a link or something unreadable where a file was expected


def _unlink(root: _fs.DirHandle, index: SqlIndex, conn: sqlite3.Connection, op: PendingOp, _: Rename) -> int:
    target = key_path(op.path)
    if index.get(conn, op.path) is not None:
        return 0  # something was recorded there since: not ours to remove
    with _fs.walk(root, target.parent) as parent:
        if _content_sha(parent, target.name, target) != op.sha256:
            return 0  # removed already, or edited by hand meanwhile (kept, and recorded as `external`)
        _fs.remove_tree(parent, target.name)
    _fs.prune_empty(root, target.parent)
    return 1


def _rename(root: _fs.DirHandle, index: SqlIndex, conn: sqlite3.Connection, op: PendingOp, rename: Rename) -> int:
    assert op.old_path is not None
    source, dest = key_path(op.old_path), key_path(op.path)
    try:
        current = index.get(conn, op.path)
        if current is None or current.version != op.version or index.get(conn, op.old_path) is not None:
            return 0
        with _fs.walk(root, source.parent) as sparent:
            if _content_sha(sparent, source.name, source) != op.sha256:
                return 0  # moved already, or edited by hand meanwhile
            # A directory move is finished file by file (each has its row); RENAME_NOREPLACE keeps a file someone
            # put at the destination meanwhile.
            with _fs.walk(root, dest.parent, create=True) as dparent:
                rename(sparent, source.name, dparent, dest.name, dest)
    finally:
        _fs.prune_empty(root, dest.parent)  # made before the COMMIT: removed again if the move did not happen
    _fs.prune_empty(root, source.parent)
    return 1


_FINISH: dict[str, Callable[[_fs.DirHandle, SqlIndex, sqlite3.Connection, PendingOp, Rename], int]] = {
    "install": _install,
    "unlink": _unlink,
    "rename": _rename,
}


def _content_sha(parent: _fs.DirHandle, name: str, path: MemoryPath) -> str | None:
    """SHA-256 of the regular file ``name``; None when there is none (nothing, or a FIFO or device, which a write
    replaces without opening). A directory or a link there raises."""
    try:
        content, _ = _fs.read_at(parent, name, path)
    except NotFoundError:
        return None
    return sha256_hex(content)
