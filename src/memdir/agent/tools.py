"""The tools the agent offers, each a `ToolSpec`: one definition per provider and one executor.

The memory tool comes three ways, all executed by the core `memdir.MemoryTool`, so path rules and result
strings are the same whichever the model sees:

- ``native`` for Anthropic: ``{"type": "memory_20250818", "name": "memory"}`` (the API knows its schema);
- ``native`` for OpenAI-compatible servers: a function ``memory`` with a JSON schema of the same six commands;
- ``simple`` (any provider): the seed lesson's ``read_memory`` / ``write_memory`` / ``forget_memory``, with
  paths relative to the memory root.

Other tools join through `extra_tool` (the ``extra_tools`` of `memdir.Agent`); ``--search`` adds
``memory_search`` from `memdir.search` when that module is installed.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..errors import ConfigError, PathError
from ..paths import parse
from ..tool import MemoryTool, ToolResult

if TYPE_CHECKING:
    from ..automemory import AutoMemoryConfig
    from ..store import Origin, Store

__all__ = [
    "MEMORY_SCHEMA",
    "MemoryAccess",
    "ToolSpec",
    "extra_tool",
    "memory_paths_used",
    "memory_tools",
    "search_tools",
]

Trust = Literal["memory", "trusted", "untrusted"]
_WRITE_COMMANDS = frozenset({"create", "str_replace", "insert", "delete", "rename"})


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its name, description and JSON schema, an optional native Anthropic definition, and the
    executor. ``trust`` says where results come from: ``memory`` and ``trusted`` tools read only what the
    application holds; an ``untrusted`` tool's results (web pages, files...) taint the memory writes made
    after them in the same run (recorded with ``source="untrusted-context"``)."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    execute: Callable[[dict[str, Any]], ToolResult] = field(repr=False)
    trust: Trust = "untrusted"
    native: Mapping[str, Any] | None = None
    writes: Callable[[dict[str, Any]], bool] = field(default=lambda _input: False, repr=False)

    def anthropic(self) -> dict[str, Any]:
        if self.native is not None:
            return dict(self.native)
        return {"name": self.name, "description": self.description, "input_schema": dict(self.parameters)}

    def openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": dict(self.parameters)},
        }


class MemoryAccess:
    """The core memory tool the agent's memory tools share, and the origin recorded on what they write."""

    def __init__(
        self, store: Store, session: str | None, *, auto_memory: AutoMemoryConfig | bool | None = None
    ) -> None:
        self.store = store
        self.tool = MemoryTool(store, actor="model", session=session, auto_memory=auto_memory)
        # `write_memory` replaces a whole file, as in the lesson: the core's create, allowed to overwrite.
        self.overwriting = MemoryTool(
            store, actor="model", session=session, create_overwrites=True, auto_memory=auto_memory
        )

    @property
    def origin(self) -> Origin:
        return self.tool.origin

    @origin.setter
    def origin(self, origin: Origin) -> None:
        for tool in (self.tool, self.overwriting):
            tool.origin = origin  # the tool's gate records it, and screens untrusted sources more strictly

    def close(self) -> None:
        """Flush the tools' audit records."""
        for tool in (self.tool, self.overwriting):
            close = getattr(tool, "close", None)
            if close is not None:
                close()


# -- the six-command memory tool ----------------------------------------------------------------------------

MEMORY_DESCRIPTION = (
    "Your persistent memory: a directory of files under /memories that outlives this conversation. Commands: "
    "`view` (a directory listing, or a file with line numbers; optional view_range [start, end]), "
    "`create` (a new file with file_text), `str_replace` (replace the unique old_str with new_str), "
    "`insert` (insert_text after line insert_line, 0 for the top), `delete` (a file or directory), "
    "`rename` (old_path to new_path). Every path starts with /memories. Keep the directory organised: "
    "update files rather than adding new ones, and delete what is no longer true."
)

MEMORY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {
            "type": "string",
            "enum": ["view", "create", "str_replace", "insert", "delete", "rename"],
            "description": "The operation to perform.",
        },
        "path": {"type": "string", "description": "A path under /memories (all commands but rename)."},
        "view_range": {
            "type": "array",
            "items": {"type": "integer"},
            "minItems": 2,
            "maxItems": 2,
            "description": "view: optional [start_line, end_line]; end_line -1 reads to the end.",
        },
        "file_text": {"type": "string", "description": "create: the content of the new file."},
        "old_str": {"type": "string", "description": "str_replace: the exact text to replace (must be unique)."},
        "new_str": {"type": "string", "description": "str_replace: the replacement (omit to delete old_str)."},
        "insert_line": {"type": "integer", "description": "insert: the line to insert after (0 = the top)."},
        "insert_text": {"type": "string", "description": "insert: the text to insert."},
        "old_path": {"type": "string", "description": "rename: the current path."},
        "new_path": {"type": "string", "description": "rename: the new path."},
    },
    "required": ["command"],
}


def _native(memory: MemoryAccess) -> ToolSpec:
    return ToolSpec(
        name="memory",
        description=MEMORY_DESCRIPTION,
        parameters=MEMORY_SCHEMA,
        execute=memory.tool.execute,
        trust="memory",
        native={"type": "memory_20250818", "name": "memory"},
        writes=lambda command: command.get("command") in _WRITE_COMMANDS,
    )


# -- the lesson's small tool set ----------------------------------------------------------------------------

_PATH = {"type": "string", "description": 'A file path relative to the memory root, e.g. "preferences.md".'}


def memory_path(relative: object) -> object:
    """``preferences.md`` -> ``/memories/preferences.md``. A path already under ``/memories`` is taken as
    it is; any other absolute path goes to the core unchanged, which refuses it in SPEC.md's words. Anything
    that is not a string is passed on for the core to report."""
    if not isinstance(relative, str) or relative.startswith("/"):
        return relative
    return "/memories/" + relative


def _simple(memory: MemoryAccess) -> list[ToolSpec]:
    def read(args: dict[str, Any]) -> ToolResult:
        return memory.tool.execute({"command": "view", "path": memory_path(args.get("path"))})

    def write(args: dict[str, Any]) -> ToolResult:
        command = {"command": "create", "path": memory_path(args.get("path")), "file_text": args.get("content")}
        return memory.overwriting.execute(command)

    def forget(args: dict[str, Any]) -> ToolResult:
        return memory.tool.execute({"command": "delete", "path": memory_path(args.get("path"))})

    return [
        ToolSpec(
            name="read_memory",
            description=(
                "Read a memory file (or list a memory directory) under the memory root. The path is relative to "
                "the memory root; files outside the memory directory cannot be read. Use it to recall what "
                "earlier sessions saved."
            ),
            parameters={"type": "object", "properties": {"path": _PATH}, "required": ["path"]},
            execute=read,
            trust="memory",
        ),
        ToolSpec(
            name="write_memory",
            description=(
                "Write a memory file under the memory root, replacing it if it exists. The path is relative to "
                "the memory root. Only write content that is clear, stable and worth keeping across sessions "
                "(for example a preference the user confirmed); never write raw, unvetted text you read while "
                "working."
            ),
            parameters={
                "type": "object",
                "properties": {"path": _PATH, "content": {"type": "string", "description": "The text to write."}},
                "required": ["path", "content"],
            },
            execute=write,
            trust="memory",
            writes=lambda _args: True,
        ),
        ToolSpec(
            name="forget_memory",
            description=(
                "Delete a memory file (or directory) under the memory root that is wrong or no longer needed. "
                "The path is relative to the memory root; nothing outside it can be deleted."
            ),
            parameters={"type": "object", "properties": {"path": _PATH}, "required": ["path"]},
            execute=forget,
            trust="memory",
            writes=lambda _args: True,
        ),
    ]


def memory_tools(memory: MemoryAccess, style: str) -> list[ToolSpec]:
    """The memory tool(s) for ``style``: ``native`` (the six commands) or ``simple`` (the lesson's three)."""
    return [_native(memory)] if style == "native" else _simple(memory)


# -- other tools --------------------------------------------------------------------------------------------


def extra_tool(
    definition: Mapping[str, Any],
    schema: Mapping[str, Any] | None,
    execute: Callable[[dict[str, Any]], ToolResult],
    *,
    trusted: bool = False,
) -> ToolSpec:
    """A tool the application adds: its Anthropic ``tools`` entry, its JSON schema (the definition's
    ``input_schema`` when None) and its executor. ``trusted=False`` (the default) marks its results as
    untrusted content, see `ToolSpec`."""
    name = definition.get("name")
    if not isinstance(name, str) or not name:
        raise ConfigError("an extra tool's definition needs a `name`")
    parameters = _parameters(schema, definition)
    return ToolSpec(
        name=name,
        description=str(definition.get("description") or ""),
        parameters=parameters,
        execute=execute,
        trust="trusted" if trusted else "untrusted",
        native=dict(definition),  # Anthropic gets the definition as given (cache_control and all)
    )


def _parameters(schema: Mapping[str, Any] | None, definition: Mapping[str, Any]) -> Mapping[str, Any]:
    """The JSON schema: given bare, or inside an OpenAI function definition, or the definition's own."""
    if schema is not None and isinstance(schema.get("function"), Mapping):
        schema = schema["function"].get("parameters")
    if schema is None:
        schema = definition.get("input_schema")
    return schema if isinstance(schema, Mapping) else {"type": "object"}


def search_tools(memory: MemoryAccess) -> list[ToolSpec]:
    """``memory_search`` from `memdir.search` (built separately), over the memory tools' store; a clear
    `ConfigError` when it is missing."""
    try:
        module = importlib.import_module("memdir.search")
        definition, schema, _ = module.search_tool(memory.tool.gate)
        execute = module.execute_search
    except (ImportError, AttributeError) as exc:
        raise ConfigError(
            "--search needs memdir's search module (memdir.search.search_tool), which is not installed here"
        ) from exc

    def run(arguments: dict[str, Any]) -> ToolResult:
        # Through the memory tool's gate as it is now (the agent's actor and session, and the source a tainted
        # turn set): the search is audited as the model's, like its views. Search returns its own plain result
        # (text, is_error): it depends on no door's types.
        found = execute(memory.tool.gate, arguments)
        return found if isinstance(found, ToolResult) else ToolResult(found.text, is_error=found.is_error)

    # It reads only this store: its results are memory, not outside content.
    return [extra_tool(definition, schema, run, trusted=True)]


def check_unique(tools: Sequence[ToolSpec]) -> None:
    names = [t.name for t in tools]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ConfigError(f"two tools are named {duplicates[0]!r}: tool names must be unique")


def memory_paths_used(name: str, tool_input: dict[str, Any], result: ToolResult) -> tuple[list[str], list[str]]:
    """The memory files a successful memory-tool call used, and the paths it removed (normal form)."""
    if name in ("read_memory", "write_memory", "forget_memory"):  # the small tool set's view / create / delete
        simple = {"read_memory": "view", "write_memory": "create", "forget_memory": "delete"}[name]
        tool_input = {"command": simple, "path": memory_path(tool_input.get("path"))}
    command = tool_input.get("command")
    if command == "rename":
        return _normal_path(tool_input.get("new_path")), _normal_path(tool_input.get("old_path"))
    paths = _normal_path(tool_input.get("path"))
    if command == "delete":
        return [], paths
    if command == "view" and not result.text.startswith("Here's the content of"):
        return [], []  # a directory listing or an image
    return paths, []


def _normal_path(raw: object) -> list[str]:
    if not isinstance(raw, str):
        return []
    try:
        path = parse(raw)
    except PathError:
        return []
    return [] if path.is_root else [path.virtual]
