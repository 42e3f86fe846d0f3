"""``memory_search`` as a tool: its definition (Anthropic and OpenAI shapes) and executor.

The executor never raises: a bad argument, a refused path or a failing store comes back as an error result whose
text says what was wrong; anything unexpected is logged with its traceback (never shown to the model) and
reported as a short internal error, as the memory tool does. Results are this module's `ToolText` (text and
whether it is an error): the doors that offer the tool (the agent's ``--search``, the MCP server) turn it into
their own result type, so search depends on none of them. Each call through a gate is one ``search`` entry of
its audit log, as the gate's caller (`execute_search`): the doors hand over their gate and audit nothing themselves.

The result holds what fits ``max_tokens`` (best hits first, each between the lines just before and after it),
not a fixed number of hits: a model asking about one fact gets a few lines, one asking about a topic gets the
budget's worth.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import MemdirError, PathError
from ..gate import Caller, GatedStore
from ..paths import parse
from ._hit import format_hits
from ._search import searcher

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..store._base import Store

__all__ = [
    "DESCRIPTION",
    "INPUT_SCHEMA",
    "MAX_QUERY_CHARS",
    "TOOL_NAME",
    "ToolText",
    "execute_search",
    "search_tool",
]

log = logging.getLogger("memdir.search")

TOOL_NAME = "memory_search"
MAX_TOOL_LIMIT = 50
DEFAULT_TOKENS = 1_500
MAX_TOKENS = 20_000
# The longest query any door takes (this tool, MCP's, `GET /v1/search`): a question or a few names is far shorter,
# and a longer one is text pasted by mistake (or sent to flood the index and the result with its echo).
MAX_QUERY_CHARS = 1000
DESCRIPTION = (
    "Search the memory directory for the lines relevant to a query (words, a question, a name, a date; any "
    "language). Returns the best passages, best first, each with its file path, its line numbers as `view` shows "
    "them, a relevance from 0 to 1 (1 for the best hit) and the lines just before and after it, as many as fit "
    "`max_tokens`. Use it to find memories before viewing whole files; view a file for more context."
)
INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "maxLength": MAX_QUERY_CHARS,
            "description": "What to look for: keywords or a natural-language question.",
        },
        "max_tokens": {
            "type": "integer",
            "minimum": 100,
            "maximum": MAX_TOKENS,
            "description": f"About how many tokens of results to return (default {DEFAULT_TOKENS}).",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_TOOL_LIMIT,
            "description": f"At most this many passages (default: as many as fit max_tokens, up to {MAX_TOOL_LIMIT}).",
        },
        "path_prefix": {
            "type": "string",
            "description": "Optional: search only this file or the files below this directory "
            "(e.g. /memories/projects).",
        },
    },
    "required": ["query"],
}


@dataclass(frozen=True, slots=True)
class ToolText:
    """A ``memory_search`` result: the text the model reads, and whether it reports an error."""

    text: str
    is_error: bool = False


def search_tool(store: Store) -> tuple[dict[str, Any], dict[str, Any], Callable[[dict[str, Any]], ToolText]]:
    """(Anthropic custom tool definition, OpenAI function tool definition, executor) for ``memory_search``.

    Searches are audited as the caller of ``store`` when it is a gate (`memdir.gate.GatedStore`: a door's, with its
    actor and session); a bare backend gets a gate of its own for actor ``model``, as `memdir.MemoryTool` does."""
    anthropic = {"name": TOOL_NAME, "description": DESCRIPTION, "input_schema": INPUT_SCHEMA}
    openai = {
        "type": "function",
        "function": {"name": TOOL_NAME, "description": DESCRIPTION, "parameters": INPUT_SCHEMA},
    }
    gated = _gated(store)

    def execute(arguments: dict[str, Any]) -> ToolText:
        return execute_search(gated, arguments)

    return anthropic, openai, execute


def execute_search(store: Store, arguments: object) -> ToolText:
    """Run one ``memory_search`` call; errors come back as error results.

    Every door's search runs here: through a gate, the call is one ``search`` entry of its audit log (the path
    prefix as sent, never the query), ``error`` when refused."""
    if not isinstance(store, GatedStore):
        return _execute(store, arguments)
    prefix = arguments.get("path_prefix") if isinstance(arguments, dict) else None
    try:
        with store.call("search", prefix if isinstance(prefix, str) else None) as receipt:
            found = _execute(store, arguments)
            receipt.failed = found.is_error
    except Exception:  # the audit log must never break the command it records
        log.exception("memory_search: could not record the search in the audit log")
        return _INTERNAL
    return found


def _gated(store: Store) -> Store:
    """The store a search tool works through: a gate as given; a memdir server's store as it is (the server
    audits its searches); any other backend behind a gate for the model."""
    if isinstance(store, GatedStore) or store.runs_commands:
        return store
    return GatedStore(store, Caller(actor="model", channel="tool"))


def _execute(store: Store, arguments: object) -> ToolText:
    try:
        query, limit, tokens, prefix = _arguments(arguments)
        found = searcher(store).search(query, limit=limit, path_prefix=prefix)
        return ToolText(format_hits(query, found.hits, found.note, max_tokens=tokens))
    except _Invalid as exc:
        return ToolText(f"Error: {exc}", is_error=True)
    except PathError as exc:
        return ToolText(exc.tool_text(), is_error=True)
    except MemdirError as exc:
        return ToolText(f"Error: search failed: {exc}", is_error=True)
    except Exception:
        log.exception("memory_search: unexpected error")
        return _INTERNAL


_INTERNAL = ToolText("Error: Internal error in memory_search. The details are in the memdir log.", is_error=True)


class _Invalid(Exception):
    pass


def _integer(arguments: dict[str, Any], name: str, default: int, low: int, high: int) -> int:
    value = arguments.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _Invalid(f"Parameter `{name}` of memory_search must be an integer from {low} to {high}.")
    return value


def _arguments(arguments: object) -> tuple[str, int, int, Any]:
    if not isinstance(arguments, dict):
        raise _Invalid("the input of memory_search must be an object with a `query` string")
    query = arguments.get("query")
    if not isinstance(query, str) or not query.strip():
        raise _Invalid("Missing required parameter `query` (a non-empty string) for memory_search.")
    if len(query) > MAX_QUERY_CHARS:
        raise _Invalid(
            f"Parameter `query` of memory_search is {len(query):,} characters, over the limit of {MAX_QUERY_CHARS:,}: "
            "search for a few words or a short question."
        )
    limit = _integer(arguments, "limit", MAX_TOOL_LIMIT, 1, MAX_TOOL_LIMIT)
    tokens = _integer(arguments, "max_tokens", DEFAULT_TOKENS, 100, MAX_TOKENS)
    prefix = arguments.get("path_prefix")
    if prefix is not None and not isinstance(prefix, str):
        raise _Invalid("Parameter `path_prefix` of memory_search must be a string starting with /memories.")
    return query, limit, tokens, None if prefix is None else parse(prefix)
