"""Running a search: the mode, the index refresh, the retrievers, the hits."""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..errors import ConfigError
from ..settings import load_settings
from ..store._base import as_path, key_path
from ._hit import SearchHit
from ._index import CHUNK_LINES, SearchIndex
from ._providers import SEMANTIC_HINT, SemanticUnavailableError, provider_from_settings, semantic_installed

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..paths import MemoryPath
    from ..store._base import PathLike, Store
    from ._index import Candidate
    from ._providers import EmbeddingProvider
    from ._semantic import VectorIndex

__all__ = ["MAX_LIMIT", "NEIGHBOUR_LINES", "Found", "Mode", "RemoteSearcher", "Searcher", "searcher"]

Mode = Literal["auto", "fts", "hybrid"]
MODES: tuple[Mode, ...] = ("auto", "fts", "hybrid")
MAX_LIMIT = 100
_POOL = 50  # candidates each retriever brings to the fusion, at least
# Hybrid search's neighbour weight (`_semantic.fuse`) is this divided by the passage's lines: a longer passage
# already carries its context. 0.8 for 1-line passages was chosen on LoCoMo conversations 1-2 (turn recall@10);
# for 4-line ones 0.2 is also the best there that keeps session recall@5 within a point (docs/benchmarks.md).
NEIGHBOUR_LINES = 0.8


@dataclass(frozen=True, slots=True)
class Found:
    """Hits and how they were found: ``mode`` is ``fts`` or ``hybrid``; ``note`` says so in a sentence."""

    hits: list[SearchHit]
    mode: Literal["fts", "hybrid"]
    note: str


class Searcher:
    """Search over one store: its index, its settings, its embedding provider (loaded on first use)."""

    def __init__(
        self,
        store: Store,
        *,
        settings: dict[str, Any] | None = None,
        provider: EmbeddingProvider | None = None,
        fts_weight: float | None = None,
        neighbour_weight: float | None = None,
    ) -> None:
        self.store = store
        self.settings = load_settings().section("search") if settings is None else settings
        self.index = SearchIndex(store, chunk_size=_passage_lines(self.settings))
        self.fts_weight = fts_weight
        self.neighbour_weight = _neighbour_weight(self.settings, self.index.chunk_size, neighbour_weight)
        self._provider = provider
        self._vectors: VectorIndex | None = None
        self._lock = threading.Lock()

    def default_mode(self) -> Literal["fts", "hybrid"]:
        mode = self.settings.get("mode", "auto")
        if mode not in MODES:
            raise ConfigError(f"settings: [search] mode must be one of {', '.join(MODES)}, got {mode!r}")
        if mode == "auto":
            return "hybrid" if self.semantic_ready() else "fts"
        return "fts" if mode == "fts" else "hybrid"

    def semantic_ready(self) -> bool:
        return self._provider is not None or (semantic_installed() and self.settings.get("provider") != "none")

    def search(self, query: str, *, limit: int = 10, path_prefix: PathLike | None = None, mode: Mode = "auto") -> Found:
        if not isinstance(query, str):
            raise ConfigError("the search query must be a string")
        limit = max(0, min(int(limit), MAX_LIMIT))
        prefix = as_path(path_prefix) if path_prefix is not None else None
        used = self.default_mode() if mode == "auto" else mode
        with self._lock:  # one refresh at a time per store object; other processes are handled by the index
            self.index.refresh()
            if used == "hybrid":
                vectors = self.vectors()
                vectors.fill()
        if used == "fts":
            hits = [_hit(c, c.score, ("fts",)) for c in self.index.full_text(query, limit, prefix)]
            note = "Full-text search (BM25)" + ("." if semantic_installed() else f"; {SEMANTIC_HINT}.")
            return Found(hits, "fts", note)
        return Found(self._hybrid(vectors, query, limit, prefix), "hybrid", "Hybrid search (BM25 + embeddings).")

    def _hybrid(self, vectors: VectorIndex, query: str, limit: int, prefix: MemoryPath | None) -> list[SearchHit]:
        from ._semantic import FTS_WEIGHT, fuse

        pool = max(_POOL, 5 * limit)
        full_text = self.index.full_text(query, pool, prefix)
        semantic, similarity = vectors.nearest(query, pool, prefix) if query.strip() else ([], {})
        weight = FTS_WEIGHT if self.fts_weight is None else self.fts_weight
        fused = fuse(full_text, semantic, similarity, fts_weight=weight, neighbour_weight=self.neighbour_weight)
        fused = fused[:limit]
        known = {c.chunk: c for c in (*semantic, *full_text)}
        known.update(self.index.chunks(f.chunk for f in fused if f.chunk not in known))  # brought by neighbours
        return [_hit(known[f.chunk], f.score, f.who) for f in fused if f.chunk in known]

    def vectors(self) -> VectorIndex:
        if self._vectors is None:
            from ._semantic import VectorIndex

            self._vectors = VectorIndex(self.index, self.provider())
        return self._vectors

    def provider(self) -> EmbeddingProvider:
        if self._provider is not None:
            return self._provider
        if self.settings.get("provider") == "none":
            raise SemanticUnavailableError("hybrid search is turned off in the settings ([search] provider = 'none')")
        return provider_from_settings(self.settings)

    def reindex(
        self,
        *,
        embed: bool | None = None,
        progress: Callable[[str, int, int], None] | None = None,
    ) -> int:
        """Rebuild the index from the store (and the embeddings, when ``embed`` or hybrid is the default)."""

        def step(label: str) -> Callable[[int, int], None] | None:
            return None if progress is None else lambda done, total: progress(label, done, total)

        with self._lock:
            count = self.index.reindex(progress=step("Indexing files"))
            if embed if embed is not None else self.default_mode() == "hybrid":
                vectors = self.vectors()
                vectors.forget()  # its rows would be kept, their stored vectors are gone
                vectors.fill(progress=step("Embedding passages"))
        return count


def _passage_lines(settings: dict[str, Any]) -> int:
    value = settings.get("passage_lines", CHUNK_LINES)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 50:
        raise ConfigError(f"settings: [search] passage_lines must be an integer from 1 to 50, got {value!r}")
    return value


def _neighbour_weight(settings: dict[str, Any], passage_lines: int, given: float | None) -> float:
    """``[search] neighbour_weight``, by default `NEIGHBOUR_LINES` divided by the passage's lines."""
    value = settings.get("neighbour_weight", NEIGHBOUR_LINES / passage_lines) if given is None else given
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 10:
        raise ConfigError(f"settings: [search] neighbour_weight must be a number from 0 to 10, got {value!r}")
    return float(value)


def _hit(candidate: Candidate, score: float, who: tuple[str, ...]) -> SearchHit:
    return SearchHit(
        path=key_path(candidate.path),
        first_line=candidate.first_line,
        last_line=candidate.last_line,
        passage=SearchHit.numbered(candidate.text, candidate.first_line),
        score=score,
        retrievers=who,
    )


_searchers: weakref.WeakKeyDictionary[Store, Searcher] = weakref.WeakKeyDictionary()
_searchers_lock = threading.Lock()


class RemoteSearcher:
    """Search on a memdir server's store: the server's index, one request per search (nothing is indexed here)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def search(self, query: str, *, limit: int = 10, path_prefix: PathLike | None = None, mode: Mode = "auto") -> Found:
        page = getattr(self.store, "search_page")  # noqa: B009 - RemoteStore's, which search cannot import
        hits, used, note = page(query, limit=limit, path_prefix=path_prefix, mode=mode)
        return Found(hits, "hybrid" if used == "hybrid" else "fts", note)

    def reindex(self, **_: Any) -> int:
        raise ConfigError("a memdir server keeps its own search index: run `memdir reindex` where it runs")


def searcher(store: Store) -> Searcher | RemoteSearcher:
    """The `Searcher` of ``store``'s backend (one per store object: it keeps the rescan clock and the loaded
    model); a memdir server's store searches on the server. A gate's backend is the store it guards: searching
    through a gate is audited by the gate (`Store.search`), not by the index."""
    store = store.backend
    if store.runs_commands:
        return RemoteSearcher(store)
    with _searchers_lock:
        found = _searchers.get(store)
        if found is None:
            found = _searchers[store] = Searcher(store)
        return found
