"""Running a search: the mode, the index refresh, the retrievers, the hits."""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..errors import ConfigError
from ..settings import load_settings
from ..store._base import key_path
from ..store._records import as_path
from ._dates import SLACK_DAYS
from ._fusion import NEIGHBOUR_WINDOW, Fused, Query, Weights, fuse, speaker, without_speakers
from ._hit import SearchHit
from ._index import CHUNK_LINES, SearchIndex
from ._lexical import closeness, expansions
from ._providers import SEMANTIC_HINT, SemanticUnavailableError, provider_from_settings, semantic_installed
from ._text import query_terms

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from ..paths import MemoryPath
    from ..store._base import Store
    from ..store._records import PathLike
    from ._index import Candidate
    from ._providers import EmbeddingProvider
    from ._semantic import VectorIndex

__all__ = ["MAX_LIMIT", "Found", "Mode", "RemoteSearcher", "Searcher", "searcher"]

Mode = Literal["auto", "fts", "hybrid"]
MODES: tuple[Mode, ...] = ("auto", "fts", "hybrid")
MAX_LIMIT = 100
_POOL = 50  # candidates each retriever brings to the fusion, at least...
_POOL_SHARE = 5  # ...and this many per hit asked for
# The `Weights` a ``[search]`` table may set, by setting name, and the largest value each may take.
_WEIGHTS = {
    "fts_weight": ("fts", 1.0),
    "neighbour_weight": ("neighbours", 10.0),
    "speaker_weight": ("speaker", 10.0),
    "date_weight": ("date", 10.0),
    "file_weight": ("file", 10.0),
    "answer_weight": ("answer", 10.0),
    "unnamed_weight": ("unnamed", 1.0),
    "expansion_weight": ("expansion", 10.0),
    "proximity_weight": ("proximity", 10.0),
}


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
        weights: Weights | None = None,
    ) -> None:
        self.store = store
        self.settings = load_settings().section("search") if settings is None else settings
        self.index = SearchIndex(store, chunk_size=_passage_lines(self.settings))
        self.weights = weights if weights is not None else weights_from(self.settings)
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
        if not query.isascii():
            # A lone surrogate (JSON's "\ud800", an invalid byte in a command-line argument) is no text the
            # tokenizers take: search for what UTF-8 can say of it, as stored text is.
            query = query.encode("utf-8", "replace").decode("utf-8")
        limit = max(0, min(int(limit), MAX_LIMIT))
        prefix = as_path(path_prefix) if path_prefix is not None else None
        used = self.default_mode() if mode == "auto" else mode
        with self._lock:  # one refresh at a time per store object; other processes are handled by the index
            self.index.refresh()
            if used == "hybrid":
                vectors = self.vectors()
                vectors.fill()
        hits = self._ranked(query, limit, prefix, vectors if used == "hybrid" else None)
        if used == "fts":
            note = "Full-text search (BM25)" + ("." if semantic_installed() else f"; {SEMANTIC_HINT}.")
            return Found(hits, "fts", note)
        return Found(hits, "hybrid", "Hybrid search (BM25 + embeddings).")

    def _ranked(self, text: str, limit: int, prefix: MemoryPath | None, vectors: VectorIndex | None) -> list[SearchHit]:
        """The candidates of each retriever (and of the dates the query names), fused (`_fusion.fuse`)."""
        query, pool = Query.of(text), max(_POOL, _POOL_SHARE * limit)
        full_text = self.index.full_text(text, pool, prefix)
        if vectors is not None and self.weights.expansion:
            full_text = self.index.expanded(full_text, self._expansions(text), pool, prefix)
        passages = {c.chunk: c for c in full_text}
        similarity: Mapping[int, float] | None = None
        if vectors is not None and text.strip():
            semantic, similarity = vectors.nearest(text, pool, prefix, self._blend(text, full_text))
            passages.update((c.chunk, c) for c in semantic if c.chunk not in passages)
        if self.weights.date:
            for span in query.spans:
                if not span.month:  # a month of any year is only looked for among the other candidates
                    dated = self.index.dated(span.first, span.last + SLACK_DAYS, pool, prefix)
                    passages.update(self.index.chunks(c for c in dated if c not in passages))
        bm25 = {c.chunk: c.score for c in full_text}
        lengths: dict[str, int] = {}
        near = self.index.near(passages, NEIGHBOUR_WINDOW, lengths)
        files: dict[str, float] = {}
        close: dict[int, float] = {}
        if self.weights.file or self.weights.proximity:
            counts = self.index.term_counts(text, prefix)
            files = self.index.file_scores(counts, lengths) if self.weights.file else {}
            if self.weights.proximity:
                # Only the full-text candidates can hold two query words. Speakers' names are left out: each
                # line of theirs starts with one, next to whatever it says.
                speakers = frozenset().union(*(speaker(c.text) for c in full_text))
                texts = {c.chunk: c.text for c in full_text}
                close = closeness(texts, counts.document_frequencies(speakers), counts.passages)
        fused = fuse(passages, bm25, similarity, near, query, self.weights, files, close)[:limit]
        best = fused[0].score if fused and fused[0].score > 0 else 1.0
        return [_hit(passages, near, f, rank, best) for rank, f in enumerate(fused, start=1)]

    def _expansions(self, text: str) -> dict[str, float]:
        """The words the query's words also search for (`_lexical.expansions`), weighted; none when the
        embedding provider has no word table (an API's model, a custom provider)."""
        table = getattr(self.provider(), "word_table", None)
        found = table() if callable(table) else None
        if found is None:
            return {}
        weight = self.weights.expansion
        return {word: weight * cosine for word, cosine in expansions(text, query_terms(text), found).items()}

    def _blend(self, text: str, found: list[Candidate]) -> tuple[str, float] | None:
        """The query without the speakers it names, and its share of the similarity (`without_speakers`); the
        speakers are those of the full-text candidates (a query naming someone finds that person's lines)."""
        if not self.weights.unnamed:
            return None
        speakers = frozenset().union(*(speaker(c.text) for c in found))
        other = without_speakers(text, speakers) if speakers else None
        return None if other is None else (other, self.weights.unnamed)

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


def weights_from(settings: dict[str, Any]) -> Weights:
    """The fusion's `Weights` from a ``[search]`` table (``fts_weight``, ``neighbour_weight``...)."""
    chosen: dict[str, float] = {}
    for name, (field, most) in _WEIGHTS.items():
        value = settings.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= most:
            raise ConfigError(f"settings: [search] {name} must be a number from 0 to {most:g}, got {value!r}")
        chosen[field] = float(value)
    return Weights(**chosen)


def _hit(
    passages: Mapping[int, Candidate], near: Mapping[int, list[tuple[int, int]]], fused: Fused, rank: int, best: float
) -> SearchHit:
    candidate = passages[fused.chunk]
    around = {
        distance * (1 if passages[n].first_line > candidate.first_line else -1): passages[n]
        for n, distance in near.get(fused.chunk, [])
    }
    before, after = around.get(-1), around.get(1)
    return SearchHit(
        path=key_path(candidate.path),
        first_line=candidate.first_line,
        last_line=candidate.last_line,
        passage=SearchHit.numbered(candidate.text, candidate.first_line),
        score=fused.score,
        retrievers=fused.who,
        rank=rank,
        relevance=round(max(0.0, min(1.0, fused.score / best)), 3),
        before=SearchHit.numbered(before.text, before.first_line) if before is not None else "",
        after=SearchHit.numbered(after.text, after.first_line) if after is not None else "",
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
