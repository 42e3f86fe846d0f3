"""memdir behind the Anthropic SDK's memory tool classes, so the SDK's tool runner drives it unchanged.

==================================  ====================================================================
class                               replaces
==================================  ====================================================================
`MemoryTool(store)`                 a `BetaAbstractMemoryTool` subclass you would write yourself
`AsyncMemoryTool(store)`            a `BetaAsyncAbstractMemoryTool` subclass
`LocalFilesystemMemoryTool(path)`   `BetaLocalFilesystemMemoryTool` (same constructor, same layout)
`AsyncLocalFilesystemMemoryTool`    `BetaAsyncLocalFilesystemMemoryTool`
==================================  ====================================================================

Every command goes through memdir's core (`memdir.tool.MemoryTool`): these classes only translate. The
runner hands ``call`` the model's raw input, which is passed on untouched, so a malformed call gets the
core's message saying what was wrong instead of a validation traceback. A success returns the core's text
(or its content blocks, for an image); an error raises the SDK's `ToolError` with the core's exact words,
which the runner sends back as a ``tool_result`` with ``is_error: true``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import anyio
import anyio.to_thread
from anthropic.lib.tools import BetaAbstractMemoryTool, BetaAsyncAbstractMemoryTool, ToolError

from ..config import data_dir
from ..errors import PathError
from ..paths import MemoryPath, parse
from ..store import DirectoryStore
from ..store._fs import secure_makedirs
from ..tool import MemoryTool as CoreMemoryTool

if TYPE_CHECKING:
    import os

    from anthropic.lib.tools import BetaFunctionToolResultType
    from anthropic.types.beta import BetaCacheControlEphemeralParam, BetaMemoryTool20250818Command
    from anthropic.types.beta.beta_tool_result_block_param import Content

    from ..store import Origin, Store
    from ..tool import ToolResult

__all__ = [
    "AsyncLocalFilesystemMemoryTool",
    "AsyncMemoryTool",
    "LocalFilesystemMemoryTool",
    "MemoryTool",
    "history_path",
]

_CLEARED = "All memory cleared"  # the SDK's wording for clear_all_memory()


# -- the translation, shared by the sync and async classes -----------------------------------------------


def _as_input(command: BetaMemoryTool20250818Command) -> dict[str, object]:
    """The SDK's command model back in the shape the model sent it (only the fields that were set)."""
    return command.to_dict()


def _returned(result: ToolResult) -> BetaFunctionToolResultType:
    """What the runner expects from a tool: the result on success, a raised `ToolError` on failure."""
    # Only an image view has more than one block; plain text goes back as a string, as the SDK's tools do.
    payload: BetaFunctionToolResultType = cast("list[Content]", list(result.content)) if result.content else result.text
    if result.is_error:
        raise ToolError(payload)
    return payload


def _clear(store: Store, origin: Origin) -> str:
    """Delete everything under ``/memories`` through the store, so a store that keeps history records it."""
    tops = dict.fromkeys(entry.path.parts[0] for entry in store.list_files(MemoryPath.root()))
    for name in tops:
        store.delete(MemoryPath((name,)), origin=origin)
    return _CLEARED


def history_path(base_path: str | os.PathLike[str]) -> Path:
    """Where ``LocalFilesystemMemoryTool(base_path, history=True)`` keeps the history of ``base_path``.

    Outside ``base_path`` on purpose (in memdir's data directory), so the memory directory holds nothing
    but the memory files, exactly as with the SDK's tool; keyed by the resolved path, so two relative
    spellings of one directory share one history.
    """
    digest = hashlib.sha256(str(Path(base_path).expanduser().resolve()).encode()).hexdigest()[:16]
    return data_dir() / "history" / f"{digest}.db"


def _directory_store(base_path: str | os.PathLike[str], history: bool | str | os.PathLike[str]) -> DirectoryStore:
    """The directory store behind the local-filesystem tools: ``<base_path>/memories/...``, like the SDK's."""
    # history=False writes nothing under base_path but the memory files (the SDK's footprint);
    # history=True keeps versions in memdir's data directory rather than in a sidecar under base_path.
    where: bool | str | os.PathLike[str] = history_path(base_path) if history is True else history
    return DirectoryStore(base_path, history=where)


# -- one implementation for both classes ------------------------------------------------------------------
# The SDK writes its sync and async tools twice, and they drifted (its async local-filesystem tool has helpers the
# sync one lacks). Here every command method of both classes is made from one table, `_COMMANDS`, and the local
# filesystem's helpers are written once (`_LocalFiles`), synchronously; the async class runs them in a thread.
# tests/integrations/test_anthropic.py checks both classes against every method the SDK's own classes have.

_COMMANDS = ("execute", "view", "create", "str_replace", "insert", "delete", "rename")


def _sync_command(name: str) -> Any:
    def command(self: MemoryTool, command: BetaMemoryTool20250818Command) -> BetaFunctionToolResultType:
        return self.call(_as_input(command))

    command.__name__ = command.__qualname__ = name
    command.__doc__ = f"The `{name}` command, through memdir's core."
    return command


def _async_command(name: str) -> Any:
    async def command(self: AsyncMemoryTool, command: BetaMemoryTool20250818Command) -> BetaFunctionToolResultType:
        return await self.call(_as_input(command))

    command.__name__ = command.__qualname__ = name
    command.__doc__ = f"The `{name}` command, through memdir's core (in a worker thread)."
    return command


class _Core:
    """What both tool classes hold: memdir's core tool over a store."""

    def _set_up(self, store: Store, options: dict[str, Any]) -> None:
        self.core = CoreMemoryTool(store, **options)

    @property
    def store(self) -> Store:
        return self.core.store


class MemoryTool(_Core, BetaAbstractMemoryTool):
    """memdir's memory tool over ``store``, for ``client.beta.messages.tool_runner(tools=[...])``.

    ``options`` are the core tool's (limits such as ``max_file_bytes``, ``actor``, ``session``,
    ``create_overwrites``); ``cache_control`` goes into the tool definition as with the SDK's tools.
    The core tool doing the work is ``self.core``.
    """

    def __init__(
        self, store: Store, *, cache_control: BetaCacheControlEphemeralParam | None = None, **options: Any
    ) -> None:
        super().__init__(cache_control=cache_control)
        self._set_up(store, options)

    def call(self, input: object) -> BetaFunctionToolResultType:
        # The raw input, not the SDK's unchecked model of it: the core checks it and says what is wrong.
        return _returned(self.core.execute(input))

    execute, view, create, str_replace, insert, delete, rename = (_sync_command(name) for name in _COMMANDS)

    def clear_all_memory(self) -> str:
        """Delete every memory file (recorded as deletions where the store keeps history)."""
        return _clear(self.core.store, self.core.origin)


class AsyncMemoryTool(_Core, BetaAsyncAbstractMemoryTool):
    """`MemoryTool` for ``AsyncAnthropic``: the same core, each command run in a worker thread."""

    def __init__(
        self, store: Store, *, cache_control: BetaCacheControlEphemeralParam | None = None, **options: Any
    ) -> None:
        super().__init__(cache_control=cache_control)
        self._set_up(store, options)

    async def call(self, input: object) -> BetaFunctionToolResultType:
        return _returned(await self.core.aexecute(input))

    execute, view, create, str_replace, insert, delete, rename = (_async_command(name) for name in _COMMANDS)

    async def clear_all_memory(self) -> str:
        """Delete every memory file (recorded as deletions where the store keeps history)."""
        return await anyio.to_thread.run_sync(_clear, self.core.store, self.core.origin)


class _LocalFiles:
    """The SDK local-filesystem tools' layout and helpers (``<base_path>/memories/...``), written once.

    `_validate_path` and `_ensure_memory_root` are the SDK's own helper names, which code written against the SDK's
    tools (its tests among it) calls: here they apply memdir's path rules first, then the SDK's containment check
    on the resolved path. The commands themselves never use them: the store opens every file with ``O_NOFOLLOW``
    relative to the root (a symlink is never followed, even one swapped in after a check)."""

    memory_root_path: Path

    def _resolve(self, path: str) -> Path:
        try:
            relative = parse(path)
        except PathError as exc:
            raise ToolError(str(exc)) from exc
        full = self.memory_root_path.joinpath(*relative.parts)
        resolved, root = full.resolve(), self.memory_root_path.resolve()
        if resolved != root and not resolved.is_relative_to(root):
            raise ToolError(f"Error: Path {path} would escape /memories directory")
        return resolved

    def _make_root(self) -> None:
        # 0700 on every level created, whatever the umask: memory is private (secure_makedirs chmods each one).
        secure_makedirs(self.memory_root_path)


class LocalFilesystemMemoryTool(_LocalFiles, MemoryTool):
    """A drop-in for the SDK's `BetaLocalFilesystemMemoryTool`: same constructor, attributes and layout
    (``<base_path>/memories/...``), with memdir's path rules, limits and atomic writes.

    Nothing but the memory files is written under ``base_path``. ``history=True`` records every change in
    memdir's data directory (see `history_path`); ``history="some/file.db"`` puts that database there.
    """

    def __init__(
        self,
        base_path: str | os.PathLike[str] = "./memory",
        *,
        history: bool | str | os.PathLike[str] = False,
        cache_control: BetaCacheControlEphemeralParam | None = None,
        **options: Any,
    ) -> None:
        super().__init__(_directory_store(base_path, history), cache_control=cache_control, **options)
        self.base_path = Path(base_path)
        self.memory_root = self.memory_root_path = self.base_path / "memories"

    def _validate_path(self, path: str) -> Path:
        """The resolved host path of a memory path; `ToolError` for one the rules refuse or that escapes."""
        return self._resolve(path)

    def _ensure_memory_root(self) -> None:
        """Create ``<base_path>/memories`` (``0700`` on every level) if it is not there."""
        self._make_root()

    def close(self) -> None:
        """Release the store this tool opened (its history database, when it keeps one)."""
        self.core.store.close()


class AsyncLocalFilesystemMemoryTool(_LocalFiles, AsyncMemoryTool):
    """A drop-in for the SDK's `BetaAsyncLocalFilesystemMemoryTool`; see `LocalFilesystemMemoryTool`.

    As in the SDK, ``base_path`` and ``memory_root`` are `anyio.Path` objects.
    """

    def __init__(
        self,
        base_path: str | os.PathLike[str] = "./memory",
        *,
        history: bool | str | os.PathLike[str] = False,
        cache_control: BetaCacheControlEphemeralParam | None = None,
        **options: Any,
    ) -> None:
        # The store is opened here, not lazily: __init__ cannot await, and creating one directory once is cheap.
        super().__init__(_directory_store(base_path, history), cache_control=cache_control, **options)
        self.base_path = anyio.Path(base_path)
        self.memory_root = self.base_path / "memories"
        self.memory_root_path = Path(base_path) / "memories"

    async def _validate_path(self, path: str) -> anyio.Path:
        """The resolved host path of a memory path; `ToolError` for one the rules refuse or that escapes."""
        return anyio.Path(await anyio.to_thread.run_sync(self._resolve, path))

    async def _ensure_memory_root(self) -> None:
        """Create ``<base_path>/memories`` (``0700`` on every level) if it is not there."""
        await anyio.to_thread.run_sync(self._make_root)

    async def aclose(self) -> None:
        """Release the store this tool opened (its history database, when it keeps one)."""
        await anyio.to_thread.run_sync(self.core.store.close)
