"""The memory tool: the six commands of ``memory_20250818`` over any `Store`, in SPEC.md's exact words.

`MemoryTool.execute` takes the command the model sent (a dict) and returns a `ToolResult`. It never raises:
bad arguments, unknown commands, refused paths, limits and storage failures all come back as error results
whose text says what was wrong; anything unexpected is logged with its traceback (never shown to the
model) and reported as a short internal error.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeGuard, assert_never

import anyio.to_thread

from ._format import human_size, number_lines, split_lines
from ._gc import paused
from .automemory import AutoMemory, AutoMemoryConfig, load_auto_memory
from .errors import (
    AlreadyExistsError,
    CorruptStoreError,
    LimitError,
    MemdirError,
    NotADirectoryError_,
    NotAFileError,
    NotFoundError,
    PathError,
    QuotaError,
    StorageError,
    StorageUnavailableError,
)
from .paths import MemoryPath, parse
from .policy.guard import Guard, Held, Refused, audited, current, note
from .policy.limits import Limits
from .store._base import ANY, MISSING, Entry, FileData, Origin, Quota, Stat, Store, Usage

if TYPE_CHECKING:
    from types import TracebackType

    from .policy.pipeline import Screened, WritePolicy
    from .store._base import Op

__all__ = ["COMMANDS", "MemoryTool", "ToolResult"]

log = logging.getLogger("memdir.tool")

Command = Literal["view", "create", "str_replace", "insert", "delete", "rename"]
COMMANDS: tuple[Command, ...] = ("view", "create", "str_replace", "insert", "delete", "rename")
_IMAGE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg"}
_IMAGE_MAGIC = {"image/png": (b"\x89PNG\r\n\x1a\n",), "image/jpeg": (b"\xff\xd8\xff",)}


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What the model reads: ``text``, whether it is an error, and the content blocks to send (a text block,
    or for an image a text block and an image block, in the Messages API's shape).

    ``temporary``: the command failed only because the store's database could not be reached
    (`StorageUnavailableError`); the same command may well succeed a moment later (a server answers 503)."""

    text: str
    is_error: bool = False
    content: tuple[dict[str, Any], ...] = field(default=())
    temporary: bool = False

    @property
    def blocks(self) -> list[dict[str, Any]]:
        return list(self.content) if self.content else [{"type": "text", "text": self.text}]


_Change = Callable[[str], tuple[str, tuple[int, int]]]  # an edit: old text -> (new text, the changed region)


class _Refusal(Exception):
    """A command refused with a finished message (internal: becomes an error result)."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def _error(text: str) -> ToolResult:
    return ToolResult(text, is_error=True)


class MemoryTool:
    """The six memory commands over ``store``.

    ``limits`` (or the same names as keyword options, e.g. ``max_file_bytes=50_000``) bound what one
    command may do. ``actor``/``session``/``source`` are recorded on every version this tool writes (a
    ``source`` starting with ``untrusted``, e.g. ``untrusted-context``, marks content that may carry injected
    instructions). ``create_overwrites=True`` lets ``create`` replace an existing file (history keeps the old
    content).

    ``policy`` screens every write before it is committed (`memdir.policy.WritePolicy`; default: the
    ``[policy]`` settings for the store's namespace, which default to redacting secrets and warning about
    injected instructions). ``audit=False`` keeps this tool's commands out of the audit log; ``channel`` names
    the way in (``tool``, ``review``...) in it. Close the tool (or use it as a context manager) to flush the
    audit log's buffered reads.

    ``auto_memory`` (`memdir.automemory`): the MEMORY.md index's size warnings, ``modified:`` in notes'
    frontmatter and index upkeep; a bool or an `AutoMemoryConfig`, by default the ``[memory]`` settings and
    ``MEMDIR_DISABLE_AUTO_MEMORY``. It only adds notes after SPEC.md's result line.
    """

    def __init__(
        self,
        store: Store,
        *,
        limits: Limits | None = None,
        actor: str = "model",
        session: str | None = None,
        source: str | None = None,
        create_overwrites: bool = False,
        policy: WritePolicy | None = None,
        audit: bool = True,
        channel: str = "tool",
        auto_memory: bool | AutoMemoryConfig | None = None,
        **options: Any,
    ) -> None:
        if limits is not None and options:
            raise TypeError("pass either limits= or individual limit options, not both")
        self.store = store
        self.limits = limits or Limits.from_options(options)
        self.create_overwrites = create_overwrites
        if policy is None:
            from .policy.config import load_policy  # reads the settings files: only when no policy is given

            policy = load_policy(store.namespace).write
        self.guard = Guard(store, policy, Origin(actor, session, source), audit=audit, channel=channel)
        self.auto = _auto_memory(store, auto_memory, self.limits)

    @property
    def origin(self) -> Origin:
        """Who this tool's changes are recorded as. Assignable: an agent marks a turn that read a web page with
        ``tool.origin = dataclasses.replace(tool.origin, source="untrusted-context")``."""
        return self.guard.origin

    @origin.setter
    def origin(self, value: Origin) -> None:
        self.guard.origin = value

    def close(self) -> None:
        """Flush this tool's audit records (the store stays open: it is the caller's)."""
        self.guard.close()

    def __enter__(self) -> MemoryTool:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- entry points -------------------------------------------------------------------------------------

    def execute(self, command: Mapping[str, Any] | object) -> ToolResult:
        """Run one command. Never raises. Every command is recorded in the audit log."""
        token = self.guard.begin(command)
        result = self._run(command)
        try:
            self.guard.end(token, result.is_error)
        except Exception:  # the audit log must never break the command it records
            log.exception("memory tool: could not record the command in the audit log")
        return result

    def _run(self, command: Mapping[str, Any] | object) -> ToolResult:
        raw_name = command.get("command") if type(command) is dict or isinstance(command, Mapping) else None
        name = raw_name[:40] if isinstance(raw_name, str) else "?"
        try:
            return self._dispatch(command)
        except (_Refusal, Refused) as refusal:
            return _error(refusal.text)
        except PathError as exc:
            return _error(exc.tool_text())
        except CorruptStoreError as exc:
            return _error(f"Error: The memory store is damaged and nothing was changed: {exc}")
        except StorageError as exc:
            text = f"Error: The memory store could not complete the `{name}` command: {exc}"
            return ToolResult(text, is_error=True, temporary=isinstance(exc, StorageUnavailableError))
        except LimitError as exc:
            return _error(f"Error: {exc}")
        except Exception:
            log.exception("memory tool: unexpected error in command %r", name)
            return _error(
                f"Error: Internal error in the memory tool while running `{name}`; the command may not have "
                "completed. The details are in the memdir log."
            )

    async def aexecute(self, command: Mapping[str, Any] | object) -> ToolResult:
        """`execute` for async code: the same core, run in a worker thread."""
        return await anyio.to_thread.run_sync(self.execute, command)

    def _dispatch(self, raw: Mapping[str, Any] | object) -> ToolResult:
        args = _Args.of(raw)
        if self.auto is None:
            return self._command(args)
        # Auto memory's seam around a command: index upkeep and the index's size, as notes after the result.
        return self.auto.run(args.command, args.values, lambda: self._command(args), self.origin)

    def _command(self, args: _Args) -> ToolResult:
        command = args.command
        if command == "view":
            return self.view(args.text("path"), args.raw("view_range"))
        elif command == "create":
            return self.create(args.text("path"), args.text("file_text"))
        elif command == "str_replace":
            return self.str_replace(args.text("path"), args.text("old_str"), args.text("new_str", default=""))
        elif command == "insert":
            return self.insert(args.text("path"), args.integer("insert_line"), args.text("insert_text"))
        elif command == "delete":
            return self.delete(args.text("path"))
        elif command == "rename":
            return self.rename(args.text("old_path"), args.text("new_path"))
        else:
            assert_never(command)

    # -- view ---------------------------------------------------------------------------------------------

    @audited
    def view(self, path: str, view_range: object = None) -> ToolResult:
        target = parse(path)
        missing = _error(f"The path {path} does not exist. Please provide a valid path.")
        if target.is_root:
            return self._directory(path, target)
        try:
            try:
                data = self.store.read(target)
            except NotAFileError:
                return self._directory(path, target)
        except (NotFoundError, NotADirectoryError_):  # also when the directory went away (or became a file) since
            return missing
        except PathError as exc:  # a symlink met on the way: name the path as sent, as the other commands do
            return _error(PathError(path, exc.kind, exc.why).tool_text())
        current().read(data.content, data.version)
        image = self._image(path, target, data)
        return image if image is not None else self._file_view(path, data, view_range)

    def _directory(self, path: str, target: MemoryPath) -> ToolResult:
        with paused():  # thousands of short-lived objects for a big tree: see memdir._gc
            return self._listing(path, target, self.store.list_files(target))

    def listing(self, entries: list[Entry]) -> ToolResult:
        """``view /memories`` rendered from ``entries``, a listing of the whole store already read (the agent's
        backfill lists the store once for modification times and shows the model the tool's own text)."""
        with paused():
            return self._listing("/memories", MemoryPath.root(), entries)

    def _listing(self, path: str, target: MemoryPath, entries: list[Entry]) -> ToolResult:
        header = (
            f"Here're the files and directories up to 2 levels deep in {path}, excluding hidden items and node_modules:"
        )
        rows = _tree_rows(target, entries)
        lines = [f"{human_size(sum(e.size for e in entries))}\t{target.virtual}"]
        # Each row costs its text and the newline before it: the listing (footer aside) stays within the limit.
        budget = self.limits.max_view_chars - len(header) - 1 - len(lines[0])
        for shown, (size, line) in enumerate(rows):
            text = f"{human_size(size)}\t{line}"
            budget -= len(text) + 1
            if budget < 0:
                lines.append(
                    f"[{len(rows) - shown:,} more entries not shown: the listing is cut at "
                    f"{self.limits.max_view_chars:,} characters. View a subdirectory to see them.]"
                )
                break
            lines.append(text)
        return ToolResult(header + "\n" + "\n".join(lines))

    def _image(self, path: str, target: MemoryPath, data: FileData) -> ToolResult | None:
        suffix = "." + target.name.rsplit(".", 1)[-1].lower() if "." in target.name else ""
        media_type = _IMAGE_TYPES.get(suffix)
        if media_type is None or not data.content.startswith(_IMAGE_MAGIC[media_type]):
            return None  # text that happens to be named .png is shown as text
        limit = self.limits.max_image_bytes
        if limit is not None and len(data.content) > limit:
            return _error(
                f"Error: The image {path} is {len(data.content):,} bytes, over the limit of {limit:,} bytes "
                "for one image; it cannot be shown."
            )
        text = f"Here's the image {path} ({media_type}, {human_size(len(data.content))}):"
        image = {
            "type": "image",
            "source": {"type": "base64", "media_type": media_type, "data": base64.b64encode(data.content).decode()},
        }
        return ToolResult(text, content=({"type": "text", "text": text}, image))

    def _file_view(self, path: str, data: FileData, view_range: object) -> ToolResult:
        lines = split_lines(_decode(path, data.content))
        if len(lines) > self.limits.max_lines:
            return _error(f"File {path} exceeds maximum line limit of {self.limits.max_lines:,} lines.")
        first, last = 1, len(lines)
        if view_range is not None:
            first, last = _check_range(path, view_range, len(lines))
        header = f"Here's the content of {path} with line numbers:"
        numbered = number_lines(lines[first - 1 : last], first)
        # `_cut` charges each line one newline, the one that precedes it here: a view of exactly
        # max_view_chars characters is not cut.
        body, shown = _cut(numbered, self.limits.max_view_chars - len(header))
        text = header + "\n" + "\n".join(body)
        if shown < len(numbered):
            end = first + shown - 1
            text += (
                f"\n[Showing lines {first}-{end} of {len(lines)}: the view is cut at "
                f"{self.limits.max_view_chars:,} characters. Use view_range, e.g. [{end + 1}, -1], "
                "to see the rest.]"
            )
        return ToolResult(text)

    # -- create -------------------------------------------------------------------------------------------

    @audited
    def create(self, path: str, file_text: str) -> ToolResult:
        target = parse(path)
        self._encode_within_limit(file_text, "file_text")  # an oversize text is refused before it is scanned
        exists = _error(f"Error: File {path} already exists")
        if target.is_root:
            return exists
        screened = self._screen(path, file_text)
        content = self._encode_within_limit(screened.text, "file_text")
        quota = self._store_quota()
        try:
            if quota is None or screened.outcome == "quarantine":
                self._check_namespace(1, len(content))
            expect = ANY if self.create_overwrites else MISSING
            before = self.store.stat(target) if self.create_overwrites or screened.outcome == "quarantine" else None
            if screened.outcome == "quarantine":
                return self._hold_create(path, screened, before)
            op: Op = "write" if self.create_overwrites and before else "create"
            version = self.store.write(target, content, expect=expect, origin=self.origin, op=op, quota=quota)
        except QuotaError as exc:
            raise _over_quota(exc) from None
        except (AlreadyExistsError, NotAFileError):
            return exists
        except NotADirectoryError_ as exc:
            return _error(f"Error: Cannot create {path}: {_blocker(exc)} is a file, not a directory")
        except PathError as exc:
            return _error(PathError(path, exc.kind, exc.why).tool_text())
        current().wrote(content, version.version)
        return ToolResult(f"File created successfully at: {path}" + note(screened))

    def _hold_create(self, path: str, screened: Screened, before: Stat | None) -> ToolResult:
        if before is not None and (before.kind == "dir" or not self.create_overwrites):
            raise AlreadyExistsError(path)  # the command would fail anyway: say so rather than hold it
        command = {"command": "create", "path": path, "file_text": screened.text}
        return ToolResult(self.guard.hold(path, command, Held(screened, before.sha256 if before else None)))

    # -- str_replace --------------------------------------------------------------------------------------

    @audited
    def str_replace(self, path: str, old_str: str, new_str: str) -> ToolResult:
        target = parse(path)
        if old_str == "":
            return _error("Error: Parameter `old_str` of command `str_replace` must not be empty.")
        _encodable(old_str, "old_str")
        _encodable(new_str, "new_str")

        def change(text: str) -> tuple[str, tuple[int, int]]:
            found = _occurrences(text, old_str)
            if not found:
                raise _Refusal(f"No replacement was performed, old_str `{old_str}` did not appear verbatim in {path}.")
            if len(found) > 1:
                numbers = ", ".join(str(n) for n in dict.fromkeys(text.count("\n", 0, i) + 1 for i in found))
                raise _Refusal(
                    f"No replacement was performed. Multiple occurrences of old_str `{old_str}` in lines: "
                    f"{numbers}. Please ensure it is unique"
                )
            new_text = text[: found[0]] + new_str + text[found[0] + len(old_str) :]
            return new_text, (found[0], found[0] + len(new_str))

        missing = f"Error: The path {path} does not exist. Please provide a valid path."
        try:
            screened = self._edit(target, path, change, "str_replace", missing)
        except Held as held:
            command = {"command": "str_replace", "path": path, "old_str": old_str, "new_str": new_str}
            return ToolResult(self.guard.hold(path, command, held))
        text, (start, end) = screened.text, screened.region
        snippet = _snippet(text, text.count("\n", 0, start), text.count("\n", start, end))
        return ToolResult(
            "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
            + "\n".join(snippet)
            + note(screened)
        )

    # -- insert -------------------------------------------------------------------------------------------

    @audited
    def insert(self, path: str, insert_line: int, insert_text: str) -> ToolResult:
        target = parse(path)
        _encodable(insert_text, "insert_text")

        def change(text: str) -> tuple[str, tuple[int, int]]:
            lines = split_lines(text)
            if not 0 <= insert_line <= len(lines):
                raise _Refusal(
                    f"Error: Invalid `insert_line` parameter: {insert_line}. It should be within the range of "
                    f"lines of the file: [0, {len(lines)}]"
                )
            # The inserted text becomes whole lines: one trailing newline ends the block, it adds no line.
            block = insert_text[:-1] if insert_text.endswith("\n") else insert_text
            start = len("\n".join(lines[:insert_line])) + (1 if insert_line else 0)
            return "\n".join([*lines[:insert_line], block, *lines[insert_line:]]) + "\n", (start, start + len(block))

        try:
            screened = self._edit(target, path, change, "insert", f"Error: The path {path} does not exist")
        except Held as held:
            command = {"command": "insert", "path": path, "insert_line": insert_line, "insert_text": insert_text}
            return ToolResult(self.guard.hold(path, command, held))
        return ToolResult(f"The file {path} has been edited." + note(screened))

    # -- delete -------------------------------------------------------------------------------------------

    @audited
    def delete(self, path: str) -> ToolResult:
        target = parse(path)
        if target.is_root:
            return _error("Error: Cannot delete the /memories directory itself")
        try:
            self.store.delete(target, origin=self.origin)
        except (NotFoundError, NotADirectoryError_):
            return _error(f"Error: The path {path} does not exist")
        except PathError as exc:
            return _error(PathError(path, exc.kind, exc.why).tool_text())
        return ToolResult(f"Successfully deleted {path}")

    # -- rename -------------------------------------------------------------------------------------------

    @audited
    def rename(self, old_path: str, new_path: str) -> ToolResult:
        source, dest = parse(old_path), parse(new_path)
        if source.is_root:
            return _error("Error: Cannot rename the /memories directory itself")
        if dest.is_within(source):
            return _error(f"Error: Cannot rename {old_path} to {new_path}: a directory cannot move into itself")
        try:
            self.store.move(source, dest, origin=self.origin)
        except NotFoundError:
            return _error(f"Error: The path {old_path} does not exist")
        except AlreadyExistsError:
            return _error(f"Error: The destination {new_path} already exists")
        except NotADirectoryError_ as exc:
            return _error(f"Error: Cannot rename to {new_path}: {_blocker(exc)} is a file, not a directory")
        except PathError as exc:
            blamed = new_path if _on_side(exc.raw, dest) else old_path
            return _error(PathError(blamed, exc.kind, exc.why).tool_text())
        return ToolResult(f"Successfully renamed {old_path} to {new_path}")

    # -- shared -------------------------------------------------------------------------------------------

    def _edit(self, target: MemoryPath, path: str, change: _Change, op: Op, missing: str) -> Screened:
        """Apply ``change`` (old text -> new text and the changed region) atomically, after the write policy
        and the limits: nothing is written when either refuses (`Held` propagates for a quarantined edit). The
        namespace's size is checked by the store in the edit's own transaction where it can (`_store_quota`);
        else its usage is read first: a store reads nothing else inside its write lock."""
        if target.is_root:
            raise _Refusal(missing)
        quota = self._store_quota()
        usage = self.store.usage() if quota is None and self.limits.max_total_bytes is not None else None
        result: list[Screened] = []

        def apply(before: FileData) -> bytes:
            screened = self._screen(path, *change(_decode(path, before.content)))
            if screened.outcome == "quarantine":
                raise Held(screened, before.sha256)
            content = self._encode_within_limit(screened.text, "the edited file")
            if usage is not None:
                self._check_namespace(0, len(content) - len(before.content), usage)
            result[:] = [screened]
            current().wrote(content, None)
            return content

        try:
            current().version = self.store.update(target, apply, origin=self.origin, op=op, quota=quota).version
        except QuotaError as exc:
            raise _over_quota(exc) from None
        except (NotFoundError, NotAFileError, NotADirectoryError_):
            raise _Refusal(missing) from None
        except PathError as exc:
            raise _Refusal(PathError(path, exc.kind, exc.why).tool_text()) from None
        return result[0]

    def _screen(self, path: str, text: str, region: tuple[int, int] | None = None) -> Screened:
        """A write's final text: screened by the write policy, then (auto memory's seam for content)
        ``modified:`` set in a note's frontmatter, so the stamp is part of the same version."""
        screened = self.guard.screen(path, text, region)
        return self.auto.stamp(path, screened) if self.auto is not None else screened

    def _encode_within_limit(self, text: str, what: str) -> bytes:
        content = _encodable(text, what)
        limit = self.limits.max_file_bytes
        if limit is not None and len(content) > limit:
            noun = "file" if what == "file_text" else "edited file"
            raise _Refusal(
                f"Error: The {noun} would be {len(content):,} bytes, over the limit of {limit:,} bytes "
                f"({human_size(limit)}) per memory file. Nothing was written."
            )
        return content

    def _quota(self) -> Quota | None:
        """The namespace limits (None: there are none)."""
        max_files, max_bytes = self.limits.max_files, self.limits.max_total_bytes
        return None if max_files is None and max_bytes is None else Quota(max_files, max_bytes)

    def _store_quota(self) -> Quota | None:
        """The namespace limits, for a store that checks them in the write's own transaction: exact however many
        writers race, and no read of the usage before each write. None: the tool checks them itself."""
        return self._quota() if self.store.checks_quota else None

    def _check_namespace(self, added_files: int, added_bytes: int, usage: Usage | None = None) -> None:
        """The namespace limits checked before a write, against ``usage`` (read now when not given)."""
        quota = self._quota()
        if quota is None or not quota.can_refuse(added_files, added_bytes):
            return
        try:
            quota.check(usage or self.store.usage(), added_files, added_bytes)
        except QuotaError as exc:
            raise _over_quota(exc) from None


def _over_quota(exc: QuotaError) -> _Refusal:
    """A namespace limit's refusal, from the store's check or the tool's own, in the tool's words."""
    if exc.limit == "files":
        return _Refusal(
            f"Error: The memory directory already holds {exc.held_files:,} files, the limit is {exc.maximum:,} "
            "files. Nothing was written; delete or merge files you no longer need."
        )
    return _Refusal(
        f"Error: The memory directory would hold {human_size(exc.held_bytes + exc.added_bytes)}, over the limit "
        f"of {human_size(exc.maximum)}. Nothing was written; delete or shorten files you no longer need."
    )


def _auto_memory(store: Store, option: bool | AutoMemoryConfig | None, limits: Limits) -> AutoMemory | None:
    """Auto memory as the option says: None reads the settings (and the environment), a bool forces it."""
    if option is False:
        return None
    config = load_auto_memory() if option is None else AutoMemoryConfig() if option is True else option
    return AutoMemory(store, config, max_file_bytes=limits.max_file_bytes) if config.enabled else None


def _on_side(raw: str, dest: MemoryPath) -> bool:
    """Whether a store-reported path lies on ``dest``'s side of a rename."""
    try:
        reported = parse(raw)
    except PathError:
        return False
    return dest.is_within(reported) or reported.is_within(dest)


class _Args:
    """The model's arguments, checked for presence and type with messages that say what was wrong."""

    def __init__(self, command: Command, values: Mapping[str, Any]) -> None:
        self.command = command
        self._values = values

    @classmethod
    def of(cls, raw: Mapping[str, Any] | object) -> _Args:
        if type(raw) is not dict and not isinstance(raw, Mapping):  # the common case without an ABC check
            raise _Refusal("Error: The memory tool expects a JSON object with a `command` field.")
        command = raw.get("command")
        if command in COMMANDS:
            return cls(command, raw)
        choices = ", ".join(COMMANDS)
        if command is None:
            raise _Refusal(f"Error: Missing required parameter `command`. Use one of: {choices}.")
        shown = command if isinstance(command, str) else json.dumps(command, default=str)
        raise _Refusal(f"Error: Unknown command `{shown[:100]}`. Use one of: {choices}.")

    @property
    def values(self) -> Mapping[str, Any]:
        return self._values

    def raw(self, name: str) -> object:
        return self._values.get(name)

    def text(self, name: str, *, default: str | None = None) -> str:
        value = self._values.get(name)
        if value is None:
            if default is not None:
                return default
            raise _Refusal(f"Error: Missing required parameter `{name}` for command `{self.command}`.")
        if not isinstance(value, str):
            raise _Refusal(
                f"Error: Parameter `{name}` of command `{self.command}` must be a string, got {_kind(value)}."
            )
        return value

    def integer(self, name: str) -> int:
        value = self._values.get(name)
        if value is None:
            raise _Refusal(f"Error: Missing required parameter `{name}` for command `{self.command}`.")
        if isinstance(value, bool) or not isinstance(value, int):
            raise _Refusal(
                f"Error: Parameter `{name}` of command `{self.command}` must be an integer, got {_kind(value)}."
            )
        return value


def _kind(value: object) -> str:
    names = {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "an array",
        dict: "an object",
    }
    return next((text for typ, text in names.items() if isinstance(value, typ)), "an unsupported value")


def _encodable(text: str, what: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise _Refusal(
            f"Error: Parameter `{what}` is not valid UTF-8 text (it contains an unpaired surrogate). "
            "Nothing was written."
        ) from None


def _decode(path: str, content: bytes) -> str:
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _Refusal(
            f"Error: The file {path} is not valid UTF-8 text (invalid byte at offset {exc.start:,}), so it "
            "cannot be shown or edited as text. Its bytes are unchanged."
        ) from None


def _check_range(path: str, view_range: object, n_lines: int) -> tuple[int, int]:
    """``[start, end]`` or ``[start, -1]`` within the file; an ``end`` past the last line reads to the end."""
    if isinstance(view_range, list | tuple) and len(view_range) == 2:
        start, end = view_range[0], view_range[1]
        if _is_int(start) and _is_int(end):
            end = n_lines if end == -1 else min(end, n_lines)
            if 1 <= start <= n_lines and start <= end:
                return start, end
    shown = json.dumps(view_range, default=str)[:100]
    if n_lines == 0:
        raise _Refusal(f"Error: Invalid `view_range` parameter: {shown}. The file {path} is empty.")
    raise _Refusal(
        f"Error: Invalid `view_range` parameter: {shown}. It should be two integers [start, end] with "
        f"1 <= start <= end <= {n_lines}, or [start, -1] to read to the end; {path} has {n_lines} lines."
    )


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _cut(lines: list[str], budget: int) -> tuple[list[str], int]:
    """As many whole lines as fit in ``budget`` characters, and how many that is. A first line longer than
    the whole budget is shown cut, so a view never comes back empty."""
    out: list[str] = []
    for line in lines:
        cost = len(line) + 1
        if cost > budget:
            if not out:
                out.append(line[: max(budget - 12, 0)] + " [line cut]")
            break
        budget -= cost
        out.append(line)
    return out, len(out)


def _occurrences(text: str, needle: str) -> list[int]:
    """Start offsets of ``needle``, overlapping ones included (``aa`` occurs twice in ``aaa``: ambiguous)."""
    found: list[int] = []
    start = text.find(needle)
    while start != -1:
        found.append(start)
        if len(found) > 1000:
            break
        start = text.find(needle, start + 1)
    return found


def _snippet(text: str, first_changed: int, extra_lines: int) -> list[str]:
    """Two lines before the change, the changed lines, two after, in the view format."""
    lines = split_lines(text)
    start = max(0, first_changed - 2)
    end = min(len(lines), first_changed + extra_lines + 3)
    return number_lines(lines[start:end], start + 1)


def _tree_rows(target: MemoryPath, entries: list[Entry]) -> list[tuple[int, str]]:
    """(size, path line) for what lies one and two levels below ``target``, depth first, by name; a
    directory's size is the total of the files below it, at any depth."""
    sizes: dict[tuple[str, ...], int] = {}
    dirs: set[tuple[str, ...]] = set()
    for entry in entries:
        rel = entry.path.relative_to(target)
        if rel[0] == "node_modules":
            continue
        for depth in (1, 2):
            if len(rel) < depth or (depth == 2 and rel[1] == "node_modules"):
                break
            key = rel[:depth]
            sizes[key] = sizes.get(key, 0) + entry.size
            if len(rel) > depth:
                dirs.add(key)
    base = target.virtual
    return [(sizes[key], f"{base}/{'/'.join(key)}{'/' if key in dirs else ''}") for key in sorted(sizes)]


def _blocker(exc: MemdirError) -> str:
    """The path named by a NotADirectoryError_ message (``/memories/a.md is a file``)."""
    return str(exc).removesuffix(" is a file")
