"""``memory_search`` as a custom tool for an agent: its definition (Anthropic and OpenAI shapes) and executor.

The executor never raises: a bad argument, a refused path or a failing store comes back as an ``is_error``
result whose text says what was wrong; anything unexpected is logged with its traceback (never shown to the
model) and reported as a short internal error, as the memory tool does.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from .._result import ToolResult
from ..errors import MemdirError, PathError
from ..paths import parse
from ._hit import format_hits
from ._search import searcher

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..store._base import Store

__all__ = ["DESCRIPTION", "INPUT_SCHEMA", "TOOL_NAME", "execute_search", "search_tool"]

log = logging.getLogger("memdir.search")

TOOL_NAME = "memory_search"
MAX_TOOL_LIMIT = 50
DESCRIPTION = (
    "Search the memory directory for passages relevant to a query (words, a question, a name; any language). "
    "Returns the best passages, best first, each with its file path, its line numbers as `view` shows them, and "
    "a score. Use it to find memories before viewing whole files; view a file for more context around a hit."
)
INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "What to look for: keywords or a natural-language question."},
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_TOOL_LIMIT,
            "description": "How many passages to return (default 10).",
        },
        "path_prefix": {
            "type": "string",
            "description": "Optional: search only this file or the files below this directory "
            "(e.g. /memories/projects).",
        },
    },
    "required": ["query"],
}


def search_tool(store: Store) -> tuple[dict[str, Any], dict[str, Any], Callable[[dict[str, Any]], ToolResult]]:
    """(Anthropic custom tool definition, OpenAI function tool definition, executor) for ``memory_search``."""
    anthropic = {"name": TOOL_NAME, "description": DESCRIPTION, "input_schema": INPUT_SCHEMA}
    openai = {
        "type": "function",
        "function": {"name": TOOL_NAME, "description": DESCRIPTION, "parameters": INPUT_SCHEMA},
    }

    def execute(arguments: dict[str, Any]) -> ToolResult:
        return execute_search(store, arguments)

    return anthropic, openai, execute


def execute_search(store: Store, arguments: object) -> ToolResult:
    """Run one ``memory_search`` call; errors come back as ``is_error`` results."""
    try:
        query, limit, prefix = _arguments(arguments)
        found = searcher(store).search(query, limit=limit, path_prefix=prefix)
        return ToolResult(format_hits(query, found.hits, found.note))
    except _Invalid as exc:
        return ToolResult(f"Error: {exc}", is_error=True)
    except PathError as exc:
        return ToolResult(exc.tool_text(), is_error=True)
    except MemdirError as exc:
        return ToolResult(f"Error: search failed: {exc}", is_error=True)
    except Exception:
        log.exception("memory_search: unexpected error")
        return ToolResult("Error: Internal error in memory_search. The details are in the memdir log.", is_error=True)


class _Invalid(Exception):
    pass


def _arguments(arguments: object) -> tuple[str, int, Any]:
    if not isinstance(arguments, dict):
        raise _Invalid("the input of memory_search must be an object with a `query` string")
    query = arguments.get("query")
    if not isinstance(query, str) or not query.strip():
        raise _Invalid("Missing required parameter `query` (a non-empty string) for memory_search.")
    limit = arguments.get("limit")
    if limit is None:
        limit = 10
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_TOOL_LIMIT:
        raise _Invalid(f"Parameter `limit` of memory_search must be an integer from 1 to {MAX_TOOL_LIMIT}.")
    prefix = arguments.get("path_prefix")
    if prefix is not None and not isinstance(prefix, str):
        raise _Invalid("Parameter `path_prefix` of memory_search must be a string starting with /memories.")
    return query, limit, None if prefix is None else parse(prefix)
