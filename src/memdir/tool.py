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
from .errors import (
    AlreadyExistsError,
    CorruptStoreError,
    LimitError,
    MemdirError,
    NotADirectoryError_,
    NotAFileError,
    NotFoundError,
    PathError,
    StorageError,
)
from .paths import MemoryPath, parse
from .policy.limits import Limits
from .store._base import ANY, MISSING, Entry, FileData, Origin, Store, Usage

if TYPE_CHECKING:
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
    or for an image a text block and an image block, in the Messages API's shape)."""

    text: str
    is_error: bool = False
    content: tuple[dict[str, Any], ...] = field(default=())

    @property
    def blocks(self) -> list[dict[str, Any]]:
        return list(self.content) if self.content else [{"type": "text", "text": self.text}]


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
    command may do. ``actor``/``session`` are recorded on every version this tool writes.
    ``create_overwrites=True`` lets ``create`` replace an existing file (history keeps the old content).
    """

    def __init__(
        self,
        store: Store,
        *,
        limits: Limits | None = None,
        actor: str = "model",
        session: str | None = None,
        create_overwrites: bool = False,
        **options: Any,
    ) -> None:
        if limits is not None and options:
            raise TypeError("pass either limits= or individual limit options, not both")
        self.store = store
        self.limits = limits or Limits.from_options(options)
        self.origin = Origin(actor=actor, session=session)
        self.create_overwrites = create_overwrites

    # -- entry points -------------------------------------------------------------------------------------

    def execute(self, command: Mapping[str, Any] | object) -> ToolResult:
        """Run one command. Never raises."""
        raw_name = command.get("command") if isinstance(command, Mapping) else None
        name = raw_name[:40] if isinstance(raw_name, str) else "?"
        try:
            return self._dispatch(command)
        except _Refusal as refusal:
            return _error(refusal.text)
        except PathError as exc:
            return _error(exc.tool_text())
        except CorruptStoreError as exc:
            return _error(f"Error: The memory store is damaged and nothing was changed: {exc}")
        except StorageError as exc:
            return _error(f"Error: The memory store could not complete the `{name}` command: {exc}")
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
        image = self._image(path, target, data)
        return image if image is not None else self._file_view(path, data, view_range)

    def _directory(self, path: str, target: MemoryPath) -> ToolResult:
        with paused():  # thousands of short-lived objects for a big tree: see memdir._gc
            return self._listing(path, target, self.store.list_files(target))

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

    def create(self, path: str, file_text: str) -> ToolResult:
        target = parse(path)
        content = self._encode_within_limit(file_text, "file_text")
        exists = _error(f"Error: File {path} already exists")
        if target.is_root:
            return exists
        try:
            self._check_namespace(1, len(content))
            expect = ANY if self.create_overwrites else MISSING
            op: Op = "write" if self.create_overwrites and self.store.stat(target) else "create"
            self.store.write(target, content, expect=expect, origin=self.origin, op=op)
        except (AlreadyExistsError, NotAFileError):
            return exists
        except NotADirectoryError_ as exc:
            return _error(f"Error: Cannot create {path}: {_blocker(exc)} is a file, not a directory")
        except PathError as exc:
            return _error(PathError(path, exc.kind, exc.why).tool_text())
        return ToolResult(f"File created successfully at: {path}")

    # -- str_replace --------------------------------------------------------------------------------------

    def str_replace(self, path: str, old_str: str, new_str: str) -> ToolResult:
        target = parse(path)
        if old_str == "":
            return _error("Error: Parameter `old_str` of command `str_replace` must not be empty.")
        _encodable(old_str, "old_str")
        _encodable(new_str, "new_str")
        snippet: list[str] = []

        def change(text: str) -> str:
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
            snippet.extend(_snippet(new_text, text.count("\n", 0, found[0]), new_str.count("\n")))
            return new_text

        missing = f"Error: The path {path} does not exist. Please provide a valid path."
        self._edit(target, path, change, "str_replace", missing)
        return ToolResult(
            "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
            + "\n".join(snippet)
        )

    # -- insert -------------------------------------------------------------------------------------------

    def insert(self, path: str, insert_line: int, insert_text: str) -> ToolResult:
        target = parse(path)
        _encodable(insert_text, "insert_text")

        def change(text: str) -> str:
            lines = split_lines(text)
            if not 0 <= insert_line <= len(lines):
                raise _Refusal(
                    f"Error: Invalid `insert_line` parameter: {insert_line}. It should be within the range of "
                    f"lines of the file: [0, {len(lines)}]"
                )
            # The inserted text becomes whole lines: one trailing newline ends the block, it adds no line.
            block = insert_text[:-1] if insert_text.endswith("\n") else insert_text
            return "\n".join([*lines[:insert_line], block, *lines[insert_line:]]) + "\n"

        self._edit(target, path, change, "insert", f"Error: The path {path} does not exist")
        return ToolResult(f"The file {path} has been edited.")

    # -- delete -------------------------------------------------------------------------------------------

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

    def _edit(self, target: MemoryPath, path: str, change: Callable[[str], str], op: Op, missing: str) -> None:
        """Apply ``change`` (old text -> new text) atomically; the limits are checked before anything is
        written. The namespace's usage is read first: a store reads nothing else inside its write lock."""
        if target.is_root:
            raise _Refusal(missing)
        usage = self.store.usage() if self.limits.max_total_bytes is not None else None

        def apply(current: FileData) -> bytes:
            content = self._encode_within_limit(change(_decode(path, current.content)), "the edited file")
            if usage is not None:
                self._check_namespace(0, len(content) - len(current.content), usage)
            return content

        try:
            self.store.update(target, apply, origin=self.origin, op=op)
        except (NotFoundError, NotAFileError, NotADirectoryError_):
            raise _Refusal(missing) from None
        except PathError as exc:
            raise _Refusal(PathError(path, exc.kind, exc.why).tool_text()) from None

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

    def _check_namespace(self, added_files: int, added_bytes: int, usage: Usage | None = None) -> None:
        max_files, max_bytes = self.limits.max_files, self.limits.max_total_bytes
        if (max_files is None or added_files <= 0) and (max_bytes is None or added_bytes <= 0):
            return
        usage = usage or self.store.usage()
        if max_files is not None and added_files > 0 and usage.files + added_files > max_files:
            raise _Refusal(
                f"Error: The memory directory already holds {usage.files:,} files, the limit is {max_files:,} "
                "files. Nothing was written; delete or merge files you no longer need."
            )
        if max_bytes is not None and added_bytes > 0 and usage.bytes + added_bytes > max_bytes:
            raise _Refusal(
                f"Error: The memory directory would hold {human_size(usage.bytes + added_bytes)}, over the limit "
                f"of {human_size(max_bytes)}. Nothing was written; delete or shorten files you no longer need."
            )


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
        if not isinstance(raw, Mapping):
            raise _Refusal("Error: The memory tool expects a JSON object with a `command` field.")
        command = raw.get("command")
        choices = ", ".join(COMMANDS)
        if command is None:
            raise _Refusal(f"Error: Missing required parameter `command`. Use one of: {choices}.")
        if command not in COMMANDS:
            shown = command if isinstance(command, str) else json.dumps(command, default=str)
            raise _Refusal(f"Error: Unknown command `{shown[:100]}`. Use one of: {choices}.")
        return cls(command, raw)

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
