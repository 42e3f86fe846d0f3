"""`AutoMemory`: what the memory tool does around a command when auto memory is on.

The tool calls it at its two seams (see `memdir.tool`): `stamp` where a write's new text is made (before the gate
screens it), so ``modified:`` lands in the same version as the change; and `run` around the whole command, which
afterwards keeps MEMORY.md's lines in step with created, renamed and deleted topic files and reports the index's size.
Index upkeep writes through the same gate as the command (a call of its own in the audit log). Both only ever *add* to
SPEC.md's result: notes after a blank line, and for an index past its load limit an error flag on a write that did
succeed.
"""

from __future__ import annotations

import contextvars
import datetime as dt
import logging
from typing import TYPE_CHECKING, Any, Protocol, Self, TypeVar

from ..errors import AlreadyExistsError, MemdirError, NotFoundError
from ..gate import active
from ..paths import MemoryPath, parse
from ..store._records import MISSING, FileData, Origin
from ._frontmatter import read_frontmatter, stamp_modified
from ._index import INDEX, add_entry, entry_line, move_pointers, points_at, remove_entries, size_report

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from ..gate import GatedStore
    from ._switch import AutoMemoryConfig

__all__ = ["INDEX_SOURCE", "AutoMemory"]

log = logging.getLogger("memdir.tool")

INDEX_SOURCE = "index upkeep"
"""The source recorded on MEMORY.md versions written by index upkeep (unless the command had its own)."""


class _Result(Protocol):
    """What a command answers (the memory tool's `ToolResult`)."""

    @property
    def text(self) -> str: ...

    @property
    def is_error(self) -> bool: ...

    def with_notes(self, text: str, *, is_error: bool) -> Self: ...


R = TypeVar("R", bound=_Result)

_NOTES: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("memdir_auto_notes", default=None)


class _Unchanged(Exception):
    """(Internal.) The index needs no change: nothing is written."""


class _IndexProblem(Exception):
    """(Internal.) The index could not be updated, with the reason for the model."""


class AutoMemory:
    """Auto memory for one `MemoryTool` over ``store``."""

    def __init__(self, store: GatedStore, config: AutoMemoryConfig, *, max_file_bytes: int | None = None) -> None:
        self.store = store
        self.config = config
        self.max_file_bytes = max_file_bytes

    # -- the content seam -------------------------------------------------------------------------------------

    def stamp(self, path: str, text: str) -> str:
        """``text`` with ``modified:`` set in its frontmatter, when ``path`` is a note that has one. A frontmatter
        that cannot be read is left as written and reported."""
        target = parse(path)
        if target == INDEX or not target.name.lower().endswith(".md"):
            return text
        front = read_frontmatter(text)
        if front is None:
            return text  # a plain Markdown file (docs/decisions.md, "Auto memory")
        if front.fields is None:
            _note(
                f"Note: the frontmatter of {path} could not be read ({front.error}), so it was saved as written, "
                "without `modified:`. Fix the block: a `---` line, `name:`, `description:` and `type:` lines, "
                "then a `---` line."
            )
            return text
        when = dt.datetime.fromtimestamp(self.config.clock(), dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        stamped, _span, _length = stamp_modified(front, when)
        if front.problems:
            _note(f"Note: the frontmatter of {path} is incomplete: {'; '.join(front.problems)}.")
        return stamped

    # -- around a command -------------------------------------------------------------------------------------

    def run(self, command: str, args: Mapping[str, Any], execute: Callable[[], R], origin: Origin) -> R:
        """Run the command, then keep the index in step and report its size."""
        notes: list[str] = []
        token = _NOTES.set(notes)
        try:
            result = execute()
        finally:
            _NOTES.reset(token)
        receipt = active()
        if result.is_error or (receipt is not None and receipt.outcome == "quarantine"):
            return result  # nothing was written
        over = False
        written = receipt.content if receipt is not None and receipt.path == _virtual(args.get("path")) else None
        try:
            index = self._upkeep(command, args, origin, written)
            report = size_report(index) if index is not None else None
            if report is not None:
                notes.append(report.text)
                over = report.over
        except _IndexProblem as problem:
            notes.append(f"Note: /memories/MEMORY.md was not updated: {problem}.")
        except MemdirError as exc:
            log.warning("auto memory: index upkeep failed: %s", exc)
            notes.append(f"Note: /memories/MEMORY.md was not updated: {exc}.")
        if not notes:
            return result
        return result.with_notes(result.text + "\n\n" + "\n".join(notes), is_error=over)

    def _upkeep(self, command: str, args: Mapping[str, Any], origin: Origin, written: bytes | None) -> str | None:
        """Index upkeep for a command that succeeded; the index's text when the command or the upkeep wrote it
        (to check its size), else None."""
        if command == "rename":
            old, new = parse(args["old_path"]), parse(args["new_path"])
            if new == INDEX:
                return self._index_text()
            if old == INDEX or not self.config.index_upkeep:
                return None
            return self._rewrite(lambda text: move_pointers(text, old, new), origin)
        target = parse(args["path"])
        if command in ("create", "str_replace", "insert") and target == INDEX:
            return self._index_text()
        if not self.config.index_upkeep or target == INDEX:
            return None
        if command == "create":
            return self._add_line(target, origin, written)
        if command == "delete":
            return self._rewrite(lambda text: remove_entries(text, target), origin)
        return None

    def _add_line(self, target: MemoryPath, origin: Origin, written: bytes | None) -> str | None:
        """The note's line added to the index; ``written`` is what the command stored (no re-read)."""
        if not target.name.lower().endswith(".md"):
            return None
        front = read_frontmatter(_decoded(self.store.read(target) if written is None else (target, written)))
        name = front.text("name") if front is not None else None
        if front is None or name is None:
            return None  # a plain file, or a note without a name: nothing to index it by
        line = entry_line(target, name, front.text("description"))
        return self._rewrite(lambda text: None if points_at(text, target) else add_entry(text, line), origin, line)

    def _index_text(self) -> str | None:
        try:
            return _decoded(self.store.read(INDEX))
        except NotFoundError:
            return None

    def _rewrite(
        self, change: Callable[[str], str | None], origin: Origin, first_line: str | None = None
    ) -> str | None:
        """Apply ``change`` to the index atomically (None from it: leave the index alone); create the index
        holding ``first_line`` when there is none. Returns the new text, or None when nothing was written."""
        written: list[str] = []

        def apply(before: FileData) -> bytes:
            new = change(_decoded(before))
            if new is None:
                raise _Unchanged
            content = new.encode("utf-8")
            if self.max_file_bytes is not None and len(content) > self.max_file_bytes:
                raise _IndexProblem(f"it would be over the limit of {self.max_file_bytes:,} bytes per file")
            written[:] = [new]
            return content

        if first_line is None and not self._may_change(change):
            return None
        upkeep = Origin(origin.actor, origin.session, origin.source or INDEX_SOURCE)
        with self.store.call("index", INDEX.virtual) as receipt:  # upkeep is a write of its own in the audit log
            try:
                self.store.update(INDEX, apply, origin=upkeep)
            except _Unchanged:
                receipt.discard()  # nothing to change after all
                return None
            except NotFoundError:
                if first_line is None:
                    receipt.discard()
                    return None
                text = add_entry("", first_line)
                try:
                    self.store.write(INDEX, text.encode("utf-8"), expect=MISSING, origin=upkeep, op="create")
                except AlreadyExistsError:  # another writer made it a moment ago: add to theirs
                    receipt.discard()
                    return self._rewrite(change, origin)
                return text
        return written[0]

    def _may_change(self, change: Callable[[str], str | None]) -> bool:
        """Whether ``change`` would change the index as it is now: read without the write lock, so that a rename
        or delete that no index line points at (most of them) costs a read, not a locked write. The locked
        update re-applies ``change`` to what it finds, so a line added meanwhile is still handled."""
        try:
            text = _decoded(self.store.read(INDEX))
        except NotFoundError:
            return False
        return change(text) is not None


def _note(text: str) -> None:
    notes = _NOTES.get()
    if notes is not None and text not in notes:  # an edit retried after a race stamps twice: say it once
        notes.append(text)


def _decoded(data: FileData | tuple[MemoryPath, bytes]) -> str:
    path, content = (data.path, data.content) if isinstance(data, FileData) else data
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        raise _IndexProblem(f"{path.virtual} is not UTF-8 text") from None


def _virtual(raw: object) -> str | None:
    """A command's path in its normal form (as the command's receipt names it), None when it does not parse."""
    if not isinstance(raw, str):
        return None
    try:
        return parse(raw).virtual
    except MemdirError:
        return None
