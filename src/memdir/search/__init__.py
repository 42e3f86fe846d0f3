"""Search over a store's memories: full-text (BM25: SQLite FTS5, or PostgreSQL's full-text search on a PostgreSQL
store) everywhere, hybrid with embeddings as an extra.

    >>> import memdir
    >>> store = memdir.open_store("memory:")
    >>> _ = store.write("/memories/trips.md", b"# Trips\\n- hiked the Dolomites in June\\n")
    >>> [(hit.path.virtual, hit.first_line) for hit in store.search("hiking", limit=1)]
    [('/memories/trips.md', 2)]

The index lives in the store's auxiliary database and follows the store's change log, so it is current on
every backend, including edits made outside memdir in a directory store (noticed within `RESCAN_SECONDS`).
Without the ``[semantic]`` extra, search is full-text and says so. How it works: docs/search.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..store._base import register_search
from ._hit import SearchHit, format_hits, hit_json
from ._index import RESCAN_SECONDS
from ._providers import (
    APIEmbeddings,
    EmbeddingError,
    EmbeddingProvider,
    LocalModel,
    SemanticUnavailableError,
    semantic_installed,
)
from ._search import Found, Mode, Searcher, searcher
from ._tool import MAX_QUERY_CHARS, TOOL_NAME, ToolText, execute_search, search_tool

if TYPE_CHECKING:
    from ..store._base import Store
    from ..store._records import PathLike

__all__ = [
    "MAX_QUERY_CHARS",
    "RESCAN_SECONDS",
    "TOOL_NAME",
    "APIEmbeddings",
    "EmbeddingError",
    "EmbeddingProvider",
    "Found",
    "LocalModel",
    "Mode",
    "SearchHit",
    "Searcher",
    "SemanticUnavailableError",
    "ToolText",
    "execute_search",
    "format_hits",
    "hit_json",
    "reindex",
    "search",
    "search_tool",
    "searcher",
    "semantic_installed",
]


def search(
    store: Store, query: str, *, limit: int = 10, path_prefix: PathLike | None = None, mode: Mode = "auto"
) -> list[SearchHit]:
    """The best passages for ``query`` in ``store`` (see `Store.search`); ``mode`` ``fts``, ``hybrid`` or
    ``auto`` (the settings' choice: hybrid when the semantic extra is installed)."""
    return searcher(store).search(query, limit=limit, path_prefix=path_prefix, mode=mode).hits


def reindex(store: Store, *, embed: bool | None = None) -> int:
    """Rebuild ``store``'s search index from its files; return how many files were indexed."""
    return searcher(store).reindex(embed=embed)


def _store_search(store: Store, query: str, limit: int, path_prefix: PathLike | None) -> list[SearchHit]:
    return search(store, query, limit=limit, path_prefix=path_prefix)


register_search(_store_search)  # `Store.search` runs this engine (the store contract does not import it)
