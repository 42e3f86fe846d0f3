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
from ..paths import MemoryPath
from ..store import DirectoryStore
from ..tool import MemoryTool as CoreMemoryTool

if TYPE_CHECKING:
    import os

    from anthropic.lib.tools import BetaFunctionToolResultType
    from anthropic.types.beta import (
        BetaCacheControlEphemeralParam,
        BetaMemoryTool20250818Command,
        BetaMemoryTool20250818CreateCommand,
        BetaMemoryTool20250818DeleteCommand,
        BetaMemoryTool20250818InsertCommand,
        BetaMemoryTool20250818RenameCommand,
        BetaMemoryTool20250818StrReplaceCommand,
        BetaMemoryTool20250818ViewCommand,
    )
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


# -- sync --------------------------------------------------------------------------------------------------


class MemoryTool(BetaAbstractMemoryTool):
    """memdir's memory tool over ``store``, for ``client.beta.messages.tool_runner(tools=[...])``.

    ``options`` are the core tool's (limits such as ``max_file_bytes``, ``actor``, ``session``,
    ``create_overwrites``); ``cache_control`` goes into the tool definition as with the SDK's tools.
    The core tool doing the work is ``self.core``.
    """

    def __init__(
        self, store: Store, *, cache_control: BetaCacheControlEphemeralParam | None = None, **options: Any
    ) -> None:
        super().__init__(cache_control=cache_control)
        self.core = CoreMemoryTool(store, **options)

    @property
    def store(self) -> Store:
        return self.core.store

    def call(self, input: object) -> BetaFunctionToolResultType:
        # The raw input, not the SDK's unchecked model of it: the core checks it and says what is wrong.
        return _returned(self.core.execute(input))

    def execute(self, command: BetaMemoryTool20250818Command) -> BetaFunctionToolResultType:
        return self.call(_as_input(command))

    def view(self, command: BetaMemoryTool20250818ViewCommand) -> BetaFunctionToolResultType:
        return self.call(_as_input(command))

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> BetaFunctionToolResultType:
        return self.call(_as_input(command))

    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> BetaFunctionToolResultType:
        return self.call(_as_input(command))

    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> BetaFunctionToolResultType:
        return self.call(_as_input(command))

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> BetaFunctionToolResultType:
        return self.call(_as_input(command))

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> BetaFunctionToolResultType:
        return self.call(_as_input(command))

    def clear_all_memory(self) -> str:
        """Delete every memory file (recorded as deletions where the store keeps history)."""
        return _clear(self.core.store, self.core.origin)


class LocalFilesystemMemoryTool(MemoryTool):
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
        self.memory_root = self.base_path / "memories"

    def close(self) -> None:
        """Release the store this tool opened (its history database, when it keeps one)."""
        self.core.store.close()


# -- async -------------------------------------------------------------------------------------------------


class AsyncMemoryTool(BetaAsyncAbstractMemoryTool):
    """`MemoryTool` for ``AsyncAnthropic``: the same core, each command run in a worker thread."""

    def __init__(
        self, store: Store, *, cache_control: BetaCacheControlEphemeralParam | None = None, **options: Any
    ) -> None:
        super().__init__(cache_control=cache_control)
        self.core = CoreMemoryTool(store, **options)

    @property
    def store(self) -> Store:
        return self.core.store

    async def call(self, input: object) -> BetaFunctionToolResultType:
        return _returned(await self.core.aexecute(input))

    async def execute(self, command: BetaMemoryTool20250818Command) -> BetaFunctionToolResultType:
        return await self.call(_as_input(command))

    async def view(self, command: BetaMemoryTool20250818ViewCommand) -> BetaFunctionToolResultType:
        return await self.call(_as_input(command))

    async def create(self, command: BetaMemoryTool20250818CreateCommand) -> BetaFunctionToolResultType:
        return await self.call(_as_input(command))

    async def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> BetaFunctionToolResultType:
        return await self.call(_as_input(command))

    async def insert(self, command: BetaMemoryTool20250818InsertCommand) -> BetaFunctionToolResultType:
        return await self.call(_as_input(command))

    async def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> BetaFunctionToolResultType:
        return await self.call(_as_input(command))

    async def rename(self, command: BetaMemoryTool20250818RenameCommand) -> BetaFunctionToolResultType:
        return await self.call(_as_input(command))

    async def clear_all_memory(self) -> str:
        """Delete every memory file (recorded as deletions where the store keeps history)."""
        return await anyio.to_thread.run_sync(_clear, self.core.store, self.core.origin)


class AsyncLocalFilesystemMemoryTool(AsyncMemoryTool):
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

    async def aclose(self) -> None:
        """Release the store this tool opened (its history database, when it keeps one)."""
        await anyio.to_thread.run_sync(self.core.store.close)
