"""memdir as an MCP server: the six memory commands and ``memory_search`` as MCP tools, over stdio (``memdir mcp``).

Each tool hands its arguments, unchanged, to the core `MemoryTool` and returns exactly the text the memory
tool returns (SPEC.md's strings). A refused command comes back as an MCP tool error (``is_error: true``)
with that same text; an image view comes back as MCP image content. Nothing here decides what a command
means: that lives in `memdir.tool` alone.

Every change is recorded with actor ``model`` and one session id per server process, so a store's history
shows which writes one MCP session made.
"""

from __future__ import annotations

import os
import signal
import sys
import uuid
from typing import TYPE_CHECKING, Annotated, Any

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, ContentBlock, ImageContent, TextContent, ToolAnnotations
from pydantic import Field, PlainValidator

from .._version import __version__
from ..paths import MemoryPath
from ..search._tool import INPUT_SCHEMA, MAX_QUERY_CHARS, execute_search
from ..tool import MemoryTool, ToolResult

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine, Mapping

    from ..store import Store

    _ToolFn = Callable[..., Coroutine[Any, Any, CallToolResult]]

__all__ = ["INSTRUCTIONS", "build_server", "run_stdio"]

INSTRUCTIONS = """\
IMPORTANT: ALWAYS VIEW YOUR MEMORY DIRECTORY BEFORE DOING ANYTHING ELSE.
MEMORY PROTOCOL:
1. Call the `memory_view` tool with path `/memories` to check for earlier progress.
2. ... (work on the task) ...
   - As you make progress, record status / progress / thoughts etc in your memory.
ASSUME INTERRUPTION: Your context window might be reset at any moment, so you risk losing any progress that \
is not recorded in your memory directory.
Note: when editing your memory folder, always try to keep its content up-to-date, coherent and organized. \
You can rename or delete files that are no longer relevant. Do not create new files unless necessary.
Every memory path starts with /memories."""


def _as_sent(value: object) -> object:
    return value


# How the SDK should treat each argument. It validates arguments against the function's annotations with
# pydantic before a tool runs; left to that, a mistyped argument would be coerced ("3" -> 3) or refused with
# pydantic's message, which quotes the input. PlainValidator passes every value through untouched, so the
# core checks it and answers in its own words. The default None means "absent" (the core reads None as
# absent too), so a missing argument is reported by the core, not by pydantic.
# `_Text` is declared `str` only because the SDK JSON-decodes string arguments of any other declared type:
# a file_text of '["a"]' would arrive as a list. The value may still be any JSON value at run time.
_Text = Annotated[str, PlainValidator(_as_sent), Field(default=None)]
_Value = Annotated[Any, PlainValidator(_as_sent), Field(default=None)]

_PATH_RULES = "Starts with /memories (e.g. /memories/notes.md)."


def _string(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


def _schema(*required: str, **properties: dict[str, Any]) -> dict[str, Any]:
    """The input schema the client sees. Written by hand: the SDK's own, derived from the pass-through
    annotations above, would say nothing about types or which arguments are required."""
    return {"type": "object", "properties": properties, "required": list(required)}


_SCHEMAS: dict[str, dict[str, Any]] = {
    "memory_view": _schema(
        "path",
        path=_string(f"The directory or file to view. {_PATH_RULES} View /memories to see everything."),
        view_range={
            "type": "array",
            "items": {"type": "integer"},
            "minItems": 2,
            "maxItems": 2,
            "description": "Text files only, optional: the lines to show, [start, end] (numbered from 1, "
            "end included), or [start, -1] to read to the end.",
        },
    ),
    "memory_create": _schema(
        "path",
        "file_text",
        path=_string(f"The file to create; missing parent directories are created. {_PATH_RULES}"),
        file_text=_string("The whole content of the new file."),
    ),
    "memory_str_replace": _schema(
        "path",
        "old_str",
        path=_string(f"The file to edit. {_PATH_RULES}"),
        old_str=_string("The exact text to replace. It must occur exactly once in the file."),
        new_str=_string("The text to put in its place. Omit it to delete old_str."),
    ),
    "memory_insert": _schema(
        "path",
        "insert_line",
        "insert_text",
        path=_string(f"The file to edit. {_PATH_RULES}"),
        insert_line={
            "type": "integer",
            "minimum": 0,
            "description": "Insert after this line (numbered from 1); 0 inserts at the top of the file.",
        },
        insert_text=_string("The text to insert; it becomes whole lines."),
    ),
    "memory_delete": _schema(
        "path",
        path=_string(f"The file or directory to delete, with everything under it. {_PATH_RULES}"),
    ),
    "memory_rename": _schema(
        "old_path",
        "new_path",
        old_path=_string(f"The file or directory to rename or move. {_PATH_RULES}"),
        new_path=_string(f"Its new path; it must not exist yet. {_PATH_RULES}"),
    ),
    "memory_search": _schema(
        "query",
        query={
            **_string("What to look for: keywords or a natural-language question, in any language."),
            "maxLength": MAX_QUERY_CHARS,
        },
        limit={"type": "integer", "minimum": 1, "maximum": 50, "description": "How many passages (default 10)."},
        max_tokens=INPUT_SCHEMA["properties"]["max_tokens"],  # the agent's: the result fits the budget
        path_prefix=_string(f"Optional: search only this file or the files below this directory. {_PATH_RULES}"),
    ),
}

_DESCRIPTIONS = {
    "memory_view": "Show a memory directory (its files and directories two levels deep, with sizes) or a "
    "memory file (its lines, numbered). Images (.png, .jpg, .jpeg) come back as images. "
    "Always view /memories before doing anything else.",
    "memory_create": "Create a new memory file with the given text. An existing file is not overwritten: "
    "change it with memory_str_replace or memory_insert.",
    "memory_str_replace": "Replace the one occurrence of old_str in a memory file with new_str, and show the "
    "lines around the change.",
    "memory_insert": "Insert text into a memory file after a given line (0 = at the top).",
    "memory_delete": "Delete a memory file, or a directory and everything under it.",
    "memory_rename": "Rename or move a memory file or directory. The destination must not exist.",
    "memory_search": "Search memory for the passages that best match a query, best first: each with its file "
    "path, its numbered lines and a score. View the file for more context around a hit.",
}
_CREATE_OVERWRITING = (
    "Create a memory file with the given text, replacing the file if it exists (its history keeps the old text)."
)


def _annotations(memory: MemoryTool) -> dict[str, ToolAnnotations]:
    """Hints for hosts deciding what to confirm with the user. None of the tools reaches beyond the store,
    so all are closed-world."""

    def hints(title: str, *, destructive: bool, idempotent: bool) -> ToolAnnotations:
        return ToolAnnotations(
            title=title,
            read_only_hint=False,
            destructive_hint=destructive,
            idempotent_hint=idempotent,
            open_world_hint=False,
        )

    overwrites = memory.create_overwrites
    return {
        # Read-only makes the other two hints moot under the MCP spec; they are set for hosts that read them
        # without checking read_only_hint first.
        "memory_view": ToolAnnotations(
            title="View memory",
            read_only_hint=True,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        ),
        # Create refuses an existing file, so it only adds, and repeating it changes nothing more. Switched
        # to overwriting, it replaces content (history keeps the old), and each repeat records a version.
        "memory_create": hints("Create memory file", destructive=overwrites, idempotent=not overwrites),
        "memory_str_replace": hints("Edit memory file", destructive=True, idempotent=False),
        "memory_insert": hints("Insert into memory file", destructive=True, idempotent=False),
        # Repeating a delete finds nothing left to delete.
        "memory_delete": hints("Delete memory", destructive=True, idempotent=True),
        # Not destructive: rename never overwrites (an existing destination is refused), so every byte
        # survives under the new name, the change is undone by renaming back, and history records the move.
        # Idempotent: repeated, it finds the source gone and changes nothing.
        "memory_rename": hints("Rename memory", destructive=False, idempotent=True),
        # Search only reads (its index is derived data the store rebuilds at will).
        "memory_search": ToolAnnotations(
            title="Search memory",
            read_only_hint=True,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        ),
    }


def _to_mcp(result: ToolResult) -> CallToolResult:
    return CallToolResult(content=[_block(block) for block in result.blocks], is_error=result.is_error)


def _block(block: Mapping[str, Any]) -> ContentBlock:
    """A Messages API content block as MCP content: only text and base64 images occur."""
    if block["type"] == "image":
        source = block["source"]
        return ImageContent(data=source["data"], mime_type=source["media_type"])
    return TextContent(text=block["text"])


def _functions(memory: MemoryTool) -> dict[str, _ToolFn]:
    """One function per command, each building the command the core takes. The parameter names are the
    tool's argument names; aexecute runs the blocking store call in a worker thread."""

    async def run(command: dict[str, object]) -> CallToolResult:
        return _to_mcp(await memory.aexecute(command))

    async def memory_view(path: _Text, view_range: _Value) -> CallToolResult:
        return await run({"command": "view", "path": path, "view_range": view_range})

    async def memory_create(path: _Text, file_text: _Text) -> CallToolResult:
        return await run({"command": "create", "path": path, "file_text": file_text})

    async def memory_str_replace(path: _Text, old_str: _Text, new_str: _Text) -> CallToolResult:
        return await run({"command": "str_replace", "path": path, "old_str": old_str, "new_str": new_str})

    async def memory_insert(path: _Text, insert_line: _Value, insert_text: _Text) -> CallToolResult:
        command = {"command": "insert", "path": path, "insert_line": insert_line, "insert_text": insert_text}
        return await run(command)

    async def memory_delete(path: _Text) -> CallToolResult:
        return await run({"command": "delete", "path": path})

    async def memory_rename(old_path: _Text, new_path: _Text) -> CallToolResult:
        return await run({"command": "rename", "old_path": old_path, "new_path": new_path})

    async def memory_search(query: _Text, limit: _Value, max_tokens: _Value, path_prefix: _Text) -> CallToolResult:
        # The same executor an agent gets (`memdir.search.search_tool`): the same words, errors as tool errors;
        # search returns its own plain result, made a ToolResult here.
        arguments = {"query": query, "limit": limit, "max_tokens": max_tokens, "path_prefix": path_prefix}
        result = await anyio.to_thread.run_sync(_search, memory, arguments)
        return _to_mcp(result)

    functions: list[_ToolFn] = [
        memory_view,
        memory_create,
        memory_str_replace,
        memory_insert,
        memory_delete,
        memory_rename,
        memory_search,
    ]
    return {fn.__name__: fn for fn in functions}


def _tools(memory: MemoryTool) -> list[Tool]:
    annotations = _annotations(memory)
    overwrites = memory.create_overwrites
    tools = []
    for name, fn in _functions(memory).items():
        tool = Tool.from_function(
            fn,
            name=name,
            title=annotations[name].title,
            description=_CREATE_OVERWRITING if name == "memory_create" and overwrites else _DESCRIPTIONS[name],
            annotations=annotations[name],
            structured_output=False,  # the result is the memory tool's text, not data
        )
        tools.append(tool.model_copy(update={"parameters": _SCHEMAS[name]}))
    return tools


def _search(memory: MemoryTool, arguments: dict[str, object]) -> ToolResult:
    """``memory_search`` through the tool's gate: the search audits itself as this server's caller."""
    found = execute_search(memory.gate, arguments)
    return ToolResult(found.text, is_error=found.is_error)


def build_server(store: Store, *, name: str = "memdir", session: str | None = None, **options: Any) -> MCPServer:
    """An MCP server with the six memory tools over ``store`` (a backend, or a `memdir.gate.GatedStore` whose
    caller and rules it keeps).

    Writes are recorded with actor ``model`` and ``session`` (a fresh id for each server when not given), in the
    audit log by channel ``mcp``. ``options`` go to `MemoryTool` (limits such as ``max_file_bytes``,
    ``create_overwrites``).
    """
    memory = MemoryTool(store, actor="model", session=session or uuid.uuid4().hex, channel="mcp", **options)
    return MCPServer(name, instructions=INSTRUCTIONS, version=__version__, tools=_tools(memory))


def run_stdio(store: Store, *, name: str | None = None) -> None:
    """Serve ``store`` to one MCP client over stdin/stdout until the client disconnects.

    The store is read once first: a store that cannot be used raises its `MemdirError` here, before any
    protocol starts, so the CLI can report it in one line rather than failing every tool call.

    Started from a terminal rather than by an MCP client, it says on stderr what it is waiting for (``name``: the
    store as the user may see it), and the first Ctrl-C ends it.
    """
    store.stat(MemoryPath.root())
    server = build_server(store)
    if not sys.stdin.isatty():
        server.run("stdio")
        return
    previous = signal.signal(signal.SIGINT, _stop_at_once(store))  # before the notice: Ctrl-C may follow it
    print(  # noqa: T201 - for the person at the terminal, on stderr (stdout is the protocol's)
        f"memdir mcp: serving {name or repr(store)} over stdio, waiting for an MCP client's JSON-RPC messages on "
        "stdin.\nMCP clients start this command themselves (claude mcp add memdir -- memdir mcp --store ...). "
        "Ctrl-C ends it.",
        file=sys.stderr,
        flush=True,
    )
    try:
        server.run("stdio")
    finally:
        signal.signal(signal.SIGINT, previous)


def _stop_at_once(store: Store) -> Callable[[int, Any], None]:
    """Ctrl-C at a terminal: end now. Python's own handling would cancel the server and then wait, for ever, for the
    thread blocked reading the terminal (a second Ctrl-C printed "Aborted!" and the process still waited for
    Ctrl-D). Every write is atomic, so ending mid-command loses nothing; the store is closed first."""

    def stop(_sig: int, _frame: Any) -> None:
        print("\nmemdir mcp: stopped.", file=sys.stderr, flush=True)  # noqa: T201 - see run_stdio
        try:
            store.close()
        finally:
            os._exit(128 + signal.SIGINT)  # the status a shell shows for Ctrl-C

    return stop
