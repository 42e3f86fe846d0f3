"""Search: the passages of the token's namespace that best match a query (`memdir.search`, as `memdir search`).

The query is never search-engine syntax (the index quotes every word), so any text is a valid query; it is bounded
like any query parameter. ``mode`` picks full-text (``fts``), ``hybrid`` or ``auto`` (the settings' choice).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...search import MAX_QUERY_CHARS, hit_json, searcher
from .._endpoint import Call, Endpoint
from .._errors import ApiError, json_response
from .._schemas import json_response as json_doc
from .._schemas import ref

if TYPE_CHECKING:
    from starlette.responses import Response

    from ...gate import GatedStore
    from ...search import Found

__all__ = ["ENDPOINTS"]

MAX_HITS = 100
_MODES = ("auto", "fts", "hybrid")


async def search(call: Call) -> Response:
    query = call.query_text("q", max_chars=MAX_QUERY_CHARS)
    if query is None or not query.strip():
        raise ApiError("invalid_request", "query parameter 'q' (the text to search for) is required")
    limit = call.query_int("limit", 10, minimum=1, maximum=MAX_HITS)
    prefix = call.query_path("prefix")
    mode: Any = call.query_choice("mode", _MODES)

    def run(store: GatedStore) -> Found:
        with store.call("search", prefix.virtual if prefix is not None else None):  # audited, never the query
            return searcher(store.inner).search(query, limit=limit, path_prefix=prefix, mode=mode)

    found = await call.run(run)
    hits = [hit_json(hit) for hit in found.hits]
    return json_response({"query": query, "mode": found.mode, "note": found.note, "hits": hits})


_PARAMETERS = (
    {"name": "q", "in": "query", "required": True, "schema": {"type": "string", "maxLength": MAX_QUERY_CHARS},
     "description": "What to look for, in plain words (never query syntax)."},
    {"name": "limit", "in": "query", "required": False, "schema": {"type": "integer", "minimum": 1,
     "maximum": MAX_HITS}, "description": "At most this many passages (default 10)."},
    {"name": "prefix", "in": "query", "required": False, "schema": {"type": "string"},
     "description": "Only this file, or the files below this directory (`/memories/clients`)."},
    {"name": "mode", "in": "query", "required": False, "schema": {"type": "string", "enum": list(_MODES)},
     "description": "`fts` (BM25), `hybrid` (BM25 + embeddings) or `auto` (default: hybrid when installed)."},
)  # fmt: skip

ENDPOINTS = (
    Endpoint(
        "GET",
        "/v1/search",
        search,
        "search",
        "The passages that best match a query, best first",
        "search",
        description="Full-text (BM25) everywhere; hybrid with embeddings when the `semantic` extra is installed. "
        "The index follows every change before answering. Asking for `hybrid` where it cannot run is `refused`.",
        parameters=_PARAMETERS,
        responses={"200": json_doc(ref("SearchResult"), "The hits, best first, and which search ran.")},
        errors=("path_error",),
    ),
)
