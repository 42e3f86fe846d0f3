"""The memory tool: the six commands of ``memory_20250818`` over any `Store`, in SPEC.md's exact words.

`MemoryTool.execute` takes the command the model sent (a dict) and returns a `ToolResult`. It never raises:
bad arguments, unknown commands, refused paths, limits and storage failures all come back as error results
whose text says what was wrong; anything unexpected is logged with its traceback (never shown to the
model) and reported as a short internal error.

The tool keeps the commands' semantics and wording only. Everything it reads and writes goes through the gate
(`memdir.gate.GatedStore`): the write policy, the limits, the review queue and the audit log are enforced there,
the same for every door. On a memdir server's store (`memdir.RemoteStore`) the tool runs nothing itself: each
command is sent to the server's own tool, which runs it behind the server's gate, with the server's settings.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar, assert_never

import anyio.to_thread

from .._format import is_text, split_lines
from .._gc import paused
from ..automemory import AutoMemory, AutoMemoryConfig, load_auto_memory
from ..errors import (
    AlreadyExistsError,
    BlockedError,
    ConflictError,
    CorruptStoreError,
    FileTooLargeError,
    HeldError,
    LimitError,
    NotADirectoryError_,
    NotAFileError,
    NotFoundError,
    PathError,
    QuotaError,
    StorageError,
    StorageUnavailableError,
)
from ..gate import Caller, GatedStore, Receipt, Rules, active
from ..paths import MemoryPath, parse
from ..policy.limits import Limits
from ..store._records import ANY, MISSING, Entry, Origin
from . import _render as render
from ._args import COMMANDS, Args, Refusal, check_range, decode, encodable, occurrences
from ._render import ToolResult, error

if TYPE_CHECKING:
    from types import TracebackType

    from ..policy.pipeline import WritePolicy
    from ..store._base import Store
    from ..store._records import FileData, Op

__all__ = ["COMMANDS", "MemoryTool", "ToolResult"]

log = logging.getLogger("memdir.tool")
F = TypeVar("F", bound=Callable[..., ToolResult])

_Change = Callable[[str], str]  # an edit: old text -> new text


def _recorded(names: tuple[str, ...]) -> Callable[[F], F]:
    """For the command methods: a call made directly (``tool.view(...)``, as the agent's backfill does) is
    recorded like one through `MemoryTool.execute`, which opens the command's audit entry itself."""

    def decorate(method: F) -> F:
        @functools.wraps(method)
        def wrapper(tool: MemoryTool, *args: Any, **kwargs: Any) -> ToolResult:
            if active() is not None:
                return method(tool, *args, **kwargs)
            paths = [*dict(zip(names, args, strict=False)).values(), None, None]
            with tool.gate.call(method.__name__, paths[0], paths[1]) as receipt:
                result = method(tool, *args, **kwargs)
                receipt.failed = result.is_error
                return result

        return wrapper  # type: ignore[return-value]

    return decorate


def _receipt() -> Receipt:
    """The receipt of the command running (every command method runs inside one: see `_recorded`)."""
    found = active()
    assert found is not None
    return found


class MemoryTool:
    """The six memory commands over ``store``.

    ``limits`` (or the same names as keyword options, e.g. ``max_file_bytes=50_000``) bound one file, the
    namespace and one view. ``actor``/``session``/``source`` are recorded on every version this tool writes (a
    ``source`` starting with ``untrusted``, e.g. ``untrusted-context``, marks content that may carry injected
    instructions). ``create_overwrites=True`` lets ``create`` replace an existing file (history keeps the old
    content).

    ``policy`` screens every write before it is committed (`memdir.policy.WritePolicy`; default: the
    ``[policy]`` settings for the store's namespace, which default to redacting secrets and warning about
    injected instructions). ``audit=False`` keeps this tool's commands out of the audit log; ``channel`` names
    the way in (``tool``, ``mcp``...) in it. A store that is already a `GatedStore` keeps its rules unless
    ``policy``/``limits`` say otherwise. Close the tool (or use it as a context manager) to flush the audit log's
    buffered reads.

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
        own = limits or (Limits.from_options(options) if options else None)
        self.store = store
        self.create_overwrites = create_overwrites
        self._remote = store if store.runs_commands else None
        self.gate = _gate(store, Caller(actor, session, source, channel), own, policy, audit)
        self.limits = own or self.gate.rules.limits
        self.auto = None if self._remote is not None else _auto_memory(self.gate, auto_memory, self.limits)

    @property
    def origin(self) -> Origin:
        """Who this tool's changes are recorded as. Assignable: an agent marks a turn that read a web page with
        ``tool.origin = dataclasses.replace(tool.origin, source="untrusted-context")``."""
        caller = self.gate.caller
        return Origin(caller.actor, caller.session, caller.source, caller.request)

    @origin.setter
    def origin(self, value: Origin) -> None:
        self.gate = self.gate.with_caller(
            actor=value.actor, session=value.session, source=value.source, request=value.request
        )

    def close(self) -> None:
        """Flush this tool's audit records (the store stays open: it is the caller's)."""
        self.gate.flush()

    def __enter__(self) -> MemoryTool:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- entry points -------------------------------------------------------------------------------------

    def execute(self, command: Mapping[str, Any] | object) -> ToolResult:
        """Run one command. Never raises. Every command is recorded in the audit log."""
        if self._remote is not None:
            return self._forward(command)
        name, path, new_path = _describe(command)
        try:
            with self.gate.call(name, path, new_path) as receipt:
                result = self._run(command)
                receipt.failed = result.is_error
        except Exception:  # the audit log must never break the command it records
            log.exception("memory tool: could not record the command in the audit log")
            return error("Error: Internal error in the memory tool; the details are in the memdir log.")
        return result

    def _run(self, command: Mapping[str, Any] | object) -> ToolResult:
        raw_name = command.get("command") if type(command) is dict or isinstance(command, Mapping) else None
        name = raw_name[:40] if isinstance(raw_name, str) else "?"
        try:
            return self._dispatch(command)
        except Refusal as refusal:
            return error(refusal.text)
        except PathError as exc:
            return error(exc.tool_text())
        except CorruptStoreError as exc:
            return error(f"Error: The memory store is damaged and nothing was changed: {exc}")
        except StorageError as exc:
            text = f"Error: The memory store could not complete the `{name}` command: {exc}"
            return ToolResult(text, is_error=True, temporary=isinstance(exc, StorageUnavailableError))
        except ConflictError as exc:  # another program wrote the file while the command did (directory store)
            return error(f"Error: {exc}")
        except QuotaError as exc:
            return render.over_quota(exc)
        except FileTooLargeError as exc:
            return render.too_large(exc, "file" if name == "create" else "edited file")
        except LimitError as exc:
            return error(f"Error: {exc}")
        except Exception:
            log.exception("memory tool: unexpected error in command %r", name)
            return error(
                f"Error: Internal error in the memory tool while running `{name}`; the command may not have "
                "completed. The details are in the memdir log."
            )

    async def aexecute(self, command: Mapping[str, Any] | object) -> ToolResult:
        """`execute` for async code: the same core, run in a worker thread."""
        return await anyio.to_thread.run_sync(self.execute, command)

    def _forward(self, command: Mapping[str, Any] | object) -> ToolResult:
        """A command for a memdir server's store: run by the server's own tool (its gate, its settings)."""
        assert self._remote is not None
        unsendable = _unsendable(command)
        if unsendable is not None:
            return error(unsendable)
        try:
            answer = self._remote.run_command(command, origin=self.origin, overwrite=self.create_overwrites)
        except StorageError as exc:
            name = command.get("command") if isinstance(command, Mapping) else None
            text = f"Error: The memory store could not complete the `{str(name)[:40]}` command: {exc}"
            return ToolResult(text, is_error=True, temporary=isinstance(exc, StorageUnavailableError))
        blocks = tuple(answer.get("content") or ())
        if all(block.get("type") == "text" for block in blocks):
            blocks = ()  # the text alone, as the tool answers it here
        return ToolResult(str(answer["text"]), is_error=bool(answer["is_error"]), content=blocks)

    def _dispatch(self, raw: Mapping[str, Any] | object) -> ToolResult:
        args = Args.of(raw)
        if self.auto is None:
            return self._command(args)
        # Auto memory's seam around a command: index upkeep and the index's size, as notes after the result.
        return self.auto.run(args.command, args.values, lambda: self._command(args), self.origin)

    def _command(self, args: Args) -> ToolResult:
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

    @_recorded(("path",))
    def view(self, path: str, view_range: object = None) -> ToolResult:
        target = parse(path)
        if target.is_root:
            return self._directory(path, target)
        try:
            try:
                data = self.gate.read(target)
            except NotAFileError:
                return self._directory(path, target)
        except (NotFoundError, NotADirectoryError_):  # also when the directory went away (or became a file)
            return error(f"The path {path} does not exist. Please provide a valid path.")
        except PathError as exc:  # a symlink met on the way: name the path as sent, as the other commands do
            return error(PathError(path, exc.kind, exc.why).tool_text())
        shown = render.image(path, target, data.content, self.limits.max_image_bytes)
        return shown if shown is not None else self._file_view(path, data, view_range)

    def _directory(self, path: str, target: MemoryPath) -> ToolResult:
        with paused():  # thousands of short-lived objects for a big tree: see memdir._gc
            return render.listing(path, target, self.gate.list_files(target), self.limits.max_view_chars)

    def listing(self, entries: list[Entry]) -> ToolResult:
        """``view /memories`` rendered from ``entries``, a listing of the whole store already read (the agent's
        backfill lists the store once for modification times and shows the model the tool's own text)."""
        with paused():
            return render.listing("/memories", MemoryPath.root(), entries, self.limits.max_view_chars)

    def _file_view(self, path: str, data: FileData, view_range: object) -> ToolResult:
        lines = split_lines(decode(path, data.content))
        if len(lines) > self.limits.max_lines:
            return error(f"File {path} exceeds maximum line limit of {self.limits.max_lines:,} lines.")
        first, last = check_range(path, view_range, len(lines)) if view_range is not None else (1, len(lines))
        return render.file_view(path, lines, first, last, self.limits.max_view_chars)

    # -- create -------------------------------------------------------------------------------------------

    @_recorded(("path",))
    def create(self, path: str, file_text: str) -> ToolResult:
        receipt = _receipt()
        target = parse(path)
        content = encodable(self._stamp(path, file_text), "file_text")
        exists = error(f"Error: File {path} already exists")
        if target.is_root:
            return exists
        expect = ANY if self.create_overwrites else MISSING
        op: Op = "write" if self.create_overwrites and self.gate.stat(target) is not None else "create"
        try:
            self.gate.write(target, content, expect=expect, op=op)
        except HeldError as exc:
            return render.held(path, exc)
        except BlockedError as exc:
            return self._blocked(path, exc, receipt)
        except (AlreadyExistsError, NotAFileError):
            return exists
        except NotADirectoryError_ as exc:
            return error(f"Error: Cannot create {path}: {render.blocker(exc)} is a file, not a directory")
        except PathError as exc:
            return error(PathError(path, exc.kind, exc.why).tool_text())
        return ToolResult(f"File created successfully at: {path}" + render.note(receipt.findings))

    # -- str_replace --------------------------------------------------------------------------------------

    @_recorded(("path",))
    def str_replace(self, path: str, old_str: str, new_str: str) -> ToolResult:
        receipt = _receipt()
        target = parse(path)
        if old_str == "":
            return error("Error: Parameter `old_str` of command `str_replace` must not be empty.")
        encodable(old_str, "old_str")
        encodable(new_str, "new_str")
        before: list[str] = []

        def change(text: str) -> str:
            before[:] = [text]
            found = occurrences(text, old_str)
            if not found:
                raise Refusal(f"No replacement was performed, old_str `{old_str}` did not appear verbatim in {path}.")
            if len(found) > 1:
                numbers = ", ".join(str(n) for n in dict.fromkeys(text.count("\n", 0, i) + 1 for i in found))
                raise Refusal(
                    f"No replacement was performed. Multiple occurrences of old_str `{old_str}` in lines: "
                    f"{numbers}. Please ensure it is unique"
                )
            return text[: found[0]] + new_str + text[found[0] + len(old_str) :]

        missing = f"Error: The path {path} does not exist. Please provide a valid path."
        refused = self._edit(target, path, change, "str_replace", missing, receipt)
        if refused is not None:
            return refused
        text = (receipt.content or b"").decode("utf-8")
        region = render.replaced_region(before[0] if before else "", text, old_str, new_str)
        return ToolResult(render.edited(text, region) + render.note(receipt.findings))

    # -- insert -------------------------------------------------------------------------------------------

    @_recorded(("path",))
    def insert(self, path: str, insert_line: int, insert_text: str) -> ToolResult:
        receipt = _receipt()
        target = parse(path)
        encodable(insert_text, "insert_text")

        def change(text: str) -> str:
            lines = split_lines(text)
            if not 0 <= insert_line <= len(lines):
                raise Refusal(
                    f"Error: Invalid `insert_line` parameter: {insert_line}. It should be within the range of "
                    f"lines of the file: [0, {len(lines)}]"
                )
            # The inserted text becomes whole lines: one trailing newline ends the block, it adds no line.
            block = insert_text[:-1] if insert_text.endswith("\n") else insert_text
            return "\n".join([*lines[:insert_line], block, *lines[insert_line:]]) + "\n"

        refused = self._edit(target, path, change, "insert", f"Error: The path {path} does not exist", receipt)
        if refused is not None:
            return refused
        return ToolResult(f"The file {path} has been edited." + render.note(receipt.findings))

    # -- delete -------------------------------------------------------------------------------------------

    @_recorded(("path",))
    def delete(self, path: str) -> ToolResult:
        target = parse(path)
        if target.is_root:
            return error("Error: Cannot delete the /memories directory itself")
        try:
            self.gate.delete(target)
        except (NotFoundError, NotADirectoryError_):
            return error(f"Error: The path {path} does not exist")
        except PathError as exc:
            return error(PathError(path, exc.kind, exc.why).tool_text())
        return ToolResult(f"Successfully deleted {path}")

    # -- rename -------------------------------------------------------------------------------------------

    @_recorded(("old_path", "new_path"))
    def rename(self, old_path: str, new_path: str) -> ToolResult:
        receipt = _receipt()
        source, dest = parse(old_path), parse(new_path)
        if source.is_root:
            return error("Error: Cannot rename the /memories directory itself")
        if dest.is_within(source) and (dest != source or self._is_dir(source)):
            return error(f"Error: Cannot rename {old_path} to {new_path}: a directory cannot move into itself")
        try:
            self.gate.move(source, dest)
        except NotFoundError:
            return error(f"Error: The path {old_path} does not exist")
        except AlreadyExistsError:
            return error(f"Error: The destination {new_path} already exists")
        except BlockedError as exc:
            return self._blocked(new_path, exc, receipt)
        except NotADirectoryError_ as exc:
            return error(f"Error: Cannot rename to {new_path}: {render.blocker(exc)} is a file, not a directory")
        except PathError as exc:
            blamed = new_path if _on_side(exc.raw, dest) else old_path
            return error(PathError(blamed, exc.kind, exc.why).tool_text())
        return ToolResult(f"Successfully renamed {old_path} to {new_path}")

    def _is_dir(self, path: MemoryPath) -> bool:
        """A file renamed onto itself is a destination that exists (SPEC.md's words), a directory one moved into
        itself: only this tells them apart."""
        found = self.gate.stat(path)
        return found is not None and found.kind == "dir"

    # -- shared -------------------------------------------------------------------------------------------

    def _edit(
        self, target: MemoryPath, path: str, change: _Change, op: Op, missing: str, receipt: Receipt
    ) -> ToolResult | None:
        """Apply ``change`` (old text -> new text) atomically through the gate, which screens what it changed
        and applies the limits: nothing is written when either refuses. None when it was written, else the
        result to answer (held for review, refused)."""
        if target.is_root:
            raise Refusal(missing)

        def apply(before: FileData) -> bytes:
            return encodable(self._stamp(path, change(decode(path, before.content))), "the edited file")

        try:
            self.gate.update(target, apply, op=op)
        except HeldError as exc:
            return render.held(path, exc)
        except BlockedError as exc:
            return self._blocked(path, exc, receipt)
        except (NotFoundError, NotAFileError, NotADirectoryError_):
            raise Refusal(missing) from None
        except PathError as exc:
            raise Refusal(PathError(path, exc.kind, exc.why).tool_text()) from None
        return None

    def _stamp(self, path: str, text: str) -> str:
        """Auto memory's seam for content: ``modified:`` set in a note's frontmatter, so the stamp is part of the
        same version (and screened with it)."""
        return self.auto.stamp(path, text) if self.auto is not None else text

    def _blocked(self, path: str, exc: BlockedError, receipt: Receipt) -> ToolResult:
        if receipt.findings and all(f.kind == "secret" for f in receipt.findings) and "path" in exc.reasons:
            # The path is said back with its secret redacted: a result is kept (a session's transcript) too.
            return render.name_blocked(self.gate.shown(path), exc)
        return render.blocked(path, exc.reasons)


def _unsendable(command: object) -> str | None:
    """The tool's own refusal of a command that cannot even be sent (text that is not UTF-8), else None."""
    if not isinstance(command, Mapping):
        return None
    for name, value in command.items():
        if isinstance(value, str) and not is_text(value):
            return (
                f"Error: Parameter `{name}` is not valid UTF-8 text (it contains an unpaired surrogate). "
                "Nothing was written."
            )
    return None


def _gate(store: Store, caller: Caller, limits: Limits | None, policy: WritePolicy | None, audit: bool) -> GatedStore:
    """The gate the tool works through: the store's own (for this tool's caller), or one made for it."""
    if isinstance(store, GatedStore):
        # No ``source`` given: the gate's stands (a server's gate carries the request's ``X-Memdir-Source``).
        given = {"source": caller.source} if caller.source is not None else {}
        gate = store.with_caller(actor=caller.actor, session=caller.session, channel=caller.channel, **given)
        if limits is None and policy is None and audit:
            return gate
        rules = gate.rules
        return gate.with_rules(Rules(policy or rules.policy, limits or rules.limits, audit and rules.audit))
    if store.runs_commands:  # the server runs the commands behind its own gate: nothing is screened here
        return GatedStore(store, caller, Rules(audit=False))
    if policy is None:
        return GatedStore(store, caller, Rules.for_namespace(store.namespace, limits=limits, audit=audit))
    return GatedStore(store, caller, Rules(policy, limits or Limits(), audit))


def _auto_memory(gate: GatedStore, option: bool | AutoMemoryConfig | None, limits: Limits) -> AutoMemory | None:
    """Auto memory as the option says: None reads the settings (and the environment), a bool forces it."""
    if option is False:
        return None
    config = load_auto_memory() if option is None else AutoMemoryConfig() if option is True else option
    return AutoMemory(gate, config, max_file_bytes=limits.max_file_bytes) if config.enabled else None


def _on_side(raw: str, dest: MemoryPath) -> bool:
    """Whether a store-reported path lies on ``dest``'s side of a rename."""
    try:
        reported = parse(raw)
    except PathError:
        return False
    return dest.is_within(reported) or reported.is_within(dest)


def _describe(command: object) -> tuple[str, str | None, str | None]:
    """(command, path, new path) as sent, for the audit log (the gate normalises and redacts them)."""
    if type(command) is not dict and not isinstance(command, Mapping):  # the common case without an ABC check
        return "?", None, None
    name = command.get("command")
    keys = ("old_path", "new_path") if name == "rename" else ("path", None)
    paths = [command.get(key) if key else None for key in keys]
    shown = [p if isinstance(p, str) else None for p in paths]
    return (name[:40] if isinstance(name, str) else "?"), shown[0], shown[1]
