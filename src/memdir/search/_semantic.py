"""Semantic retrieval: the embeddings of a namespace's passages, and the passages nearest a query.

Each passage's embedding is stored in ``search_vectors`` under the model's name and the SHA-256 of the passage
text, so an unchanged passage is never embedded twice (a renamed file, a file edited elsewhere) and switching
models keeps both sets. Passages without a vector for the model are embedded before a hybrid search answers
(`VectorIndex.fill`; ``memdir reindex`` does it up front with a progress bar).

Search is brute force: the namespace's vectors are one C-contiguous float32 matrix of normalised rows, kept in
memory per process and brought up to date (not reloaded) when the index changes; one matrix-vector product
scores every passage (~6 ms per 250,000 passages here) and ``argpartition`` picks the best.
How the nearest passages are fused with BM25's: `_fusion`.
"""

from __future__ import annotations

import dataclasses
import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from numpy.typing import NDArray

    from ..paths import MemoryPath
    from ..store._db import AuxDatabase
    from ._index import Candidate, SearchIndex
    from ._providers import EmbeddingProvider

__all__ = ["VectorIndex"]

_EMBED_BATCH = 512  # passages per embed call and per transaction (from `_torch.BULK` on, torch embeds)


@dataclass
class _Matrix:
    """A namespace's passages with their vectors: row ``n`` is chunk ``ids[n]`` (ids ascending). A file's
    passages are indexed together, in line order, so neighbouring rows of one path are neighbouring passages."""

    generation: int
    ids: NDArray[np.int64]
    paths: list[str]
    shas: list[str]
    vectors: NDArray[np.float32]  # (passages, dim), C-contiguous float32, rows L2-normalised
    rows: dict[int, int]  # chunk id -> row


class _Lookup(Mapping[int, float]):
    """Similarity by chunk id, read from the row on demand (building a dict of every passage costs more)."""

    def __init__(self, matrix: _Matrix, sims: NDArray[np.float32]) -> None:
        self._matrix, self._sims = matrix, sims

    def __getitem__(self, chunk: int) -> float:
        return float(self._sims[self._matrix.rows[chunk]])

    def __iter__(self) -> Iterator[int]:
        return iter(self._matrix.rows)

    def __len__(self) -> int:
        return len(self._matrix.rows)


# Per auxiliary database (weakly: a closed store's matrices go with it; an id() key could be reused by the next
# store and hand it another store's matrix), then per (namespace, model).
_matrices: weakref.WeakKeyDictionary[AuxDatabase, dict[tuple[str, str], _Matrix]] = weakref.WeakKeyDictionary()
_matrices_lock = threading.Lock()
_SCAN_ABOVE = 5_000  # new passages beyond which the model's vectors are read in one scan, not looked up
_PAGE = 20_000  # vectors per query of that scan (~30 MB of 384-dimension vectors)
_PAGE_SQL = (
    "SELECT text_sha, vector FROM search_vectors WHERE ns = ? AND model = ? AND text_sha > ? ORDER BY text_sha LIMIT ?"
)


class VectorIndex:
    """The embeddings of one namespace's passages, for one provider.

    The matrix is kept in memory per process and brought up to date when the index changes: passages
    still there keep their rows, new ones get their stored vector (or are embedded), so a write followed by
    a search costs a read of the chunk ids (~0.2 s per 250,000 passages), not a reload of every vector.
    """

    def __init__(self, index: SearchIndex, provider: EmbeddingProvider) -> None:
        self.index = index
        self.provider = provider

    def fill(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Embed the passages that have no vector for this model yet; return how many were embedded."""
        return self._sync(progress)[1]

    def forget(self) -> None:
        """Drop this process's matrix (after ``reindex`` emptied the stored vectors it was built from)."""
        with _matrices_lock:
            _matrices.get(self.index.store.aux, {}).pop((self.index.ns, self.provider.name), None)

    def similarities(self, query: str, blend: tuple[str, float] | None = None) -> tuple[_Matrix, NDArray[np.float32]]:
        """The namespace's matrix and the cosine similarity of every passage to ``query``; with ``blend`` (a second
        text, a share), that share of each similarity is the similarity to the second text instead."""
        matrix = self._sync(None)[0]
        texts = [query] if blend is None else [query, blend[0]]
        embedded = self.provider.embed(texts, query=True).astype(np.float32)
        vector = embedded[0] if blend is None else (1 - blend[1]) * embedded[0] + blend[1] * embedded[1]
        vector = np.ascontiguousarray(vector, dtype=np.float32)
        if matrix.vectors.shape[0] == 0:
            return matrix, np.zeros(0, dtype=np.float32)
        sims: NDArray[np.float32] = matrix.vectors @ vector  # one BLAS matrix-vector product
        return matrix, sims

    def nearest(
        self, query: str, k: int, prefix: MemoryPath | None, blend: tuple[str, float] | None = None
    ) -> tuple[list[Candidate], Mapping[int, float]]:
        """The ``k`` passages closest to ``query`` (as candidates), and the similarity of every passage by id
        (``blend``: see `similarities`)."""
        matrix, sims = self.similarities(query, blend)
        if sims.size == 0 or k < 1:
            return [], {}
        scores = sims
        if prefix is not None and not prefix.is_root:
            scores = np.where(_below(matrix.paths, prefix), sims, np.float32(-np.inf))
        k = min(k, len(scores))
        top = np.argpartition(scores, len(scores) - k)[len(scores) - k :]  # the k largest, unordered
        top = top[np.argsort(-scores[top])]
        top = top[np.isfinite(scores[top])]
        ids = [int(matrix.ids[i]) for i in top]
        found = self.index.chunks(ids)
        return [_with_score(found[i], float(sims[matrix.rows[i]])) for i in ids if i in found], _Lookup(matrix, sims)

    def _sync(self, progress: Callable[[int, int], None] | None) -> tuple[_Matrix, int]:
        """The up-to-date matrix, and how many passages had to be embedded for it."""
        aux, key = self.index.store.aux, (self.index.ns, self.provider.name)
        generation = self.index.generation()
        with _matrices_lock:
            cached = _matrices.get(aux, {}).get(key)
        if cached is not None and cached.generation == generation:
            return cached, 0
        # SQLite: `+ns`, one pass over the table in id order rather than a lookup per row through (ns, path);
        # PostgreSQL plans that itself (and has no unary + for text).
        ns = "+ns" if aux.dialect == "sqlite" else "ns"
        with aux.reading("read the search index") as conn:
            current = conn.execute(
                f"SELECT id, path, text_sha FROM search_chunks WHERE {ns} = ? ORDER BY id", (self.index.ns,)
            ).fetchall()
        old = cached.rows if cached is not None else {}
        kept = {r[0] for r in current if r[0] in old and cached is not None and cached.shas[old[r[0]]] == r[2]}
        fresh = self._vectors_of([r for r in current if r[0] not in kept], progress)
        matrix = _build(generation, current, cached, kept, fresh)
        with _matrices_lock:
            _matrices.setdefault(aux, {})[key] = matrix
        return matrix, fresh.embedded

    def _vectors_of(self, rows: list[tuple[int, str, str]], progress: Callable[[int, int], None] | None) -> _Fresh:
        """Vectors for new passages by the SHA-256 of their text: stored ones, then the rest embedded."""
        chunk_of = {sha: chunk for chunk, _, sha in rows}
        found = self._stored(list(chunk_of))
        missing = [sha for sha in chunk_of if sha not in found]
        for start in range(0, len(missing), _EMBED_BATCH):
            part = missing[start : start + _EMBED_BATCH]
            texts = self.index.chunks(chunk_of[sha] for sha in part)
            vectors = self.provider.embed([texts[chunk_of[sha]].text for sha in part]).astype(np.float32)
            blobs = [vector.tobytes() for vector in vectors]
            # Sorted: two servers embedding the same passages take the rows' locks in one order (PostgreSQL would
            # abort one of them as a deadlock otherwise).
            with self.index.store.aux.transaction("store embeddings") as conn:
                conn.executemany(
                    "INSERT INTO search_vectors (ns, model, text_sha, vector) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT (ns, model, text_sha) DO UPDATE SET vector = excluded.vector",
                    [
                        (self.index.ns, self.provider.name, sha, blob)
                        for sha, blob in sorted(zip(part, blobs, strict=True))
                    ],
                )
            found.update(zip(part, blobs, strict=True))
            if progress is not None:
                progress(min(start + _EMBED_BATCH, len(missing)), len(missing))
        return _Fresh(found, len(missing))

    def _stored(self, shas: list[str]) -> dict[str, bytes]:
        args = (self.index.ns, self.provider.name)
        with self.index.store.aux.reading("read the search index") as conn:
            found: dict[str, bytes] = {}
            if len(shas) > _SCAN_ABOVE:  # one sequential pass beats that many b-tree lookups
                wanted, after = set(shas), ""
                while True:  # in pages: a PostgreSQL cursor holds its whole result in memory
                    rows = conn.execute(_PAGE_SQL, (*args, after, _PAGE)).fetchall()
                    found.update((sha, bytes(blob)) for sha, blob in rows if sha in wanted)
                    if len(rows) < _PAGE:
                        return found
                    after = rows[-1][0]
            for start in range(0, len(shas), 500):
                part = shas[start : start + 500]
                marks = ",".join("?" * len(part))
                sql = (
                    f"SELECT text_sha, vector FROM search_vectors WHERE ns = ? AND model = ? AND text_sha IN ({marks})"
                )
                found.update(conn.execute(sql, (*args, *part)))
            return found


@dataclass(frozen=True, slots=True)
class _Fresh:
    blobs: dict[str, bytes]  # sha -> float32 vector bytes
    embedded: int


def _build(generation: int, current: list[Any], cached: _Matrix | None, kept: set[int], fresh: _Fresh) -> _Matrix:
    """The matrix for ``current`` (id, path, sha) rows: kept rows copied from ``cached``, others from
    ``fresh``. Rows are normalised here too (a provider's vectors should be, but a stored one may not be)."""
    dim = cached.vectors.shape[1] if cached is not None and cached.vectors.shape[0] else 0
    if not dim and fresh.blobs:
        dim = len(next(iter(fresh.blobs.values()))) // 4
    vectors = np.empty((len(current), max(dim, 1)), dtype=np.float32)
    if cached is not None and kept:
        mine = np.array([n for n, r in enumerate(current) if r[0] in kept], dtype=np.int64)
        vectors[mine] = cached.vectors[[cached.rows[current[n][0]] for n in mine]]
    new = [n for n, r in enumerate(current) if r[0] not in kept]
    if new:
        raw = b"".join(fresh.blobs[current[n][2]] for n in new)
        block = np.frombuffer(raw, dtype=np.float32).reshape(len(new), -1)
        norms = np.linalg.norm(block, axis=1, keepdims=True)
        vectors[np.array(new, dtype=np.int64)] = block / np.maximum(norms, np.float32(1e-12))
    ids = np.array([r[0] for r in current], dtype=np.int64)
    return _Matrix(
        generation,
        ids,
        [r[1] for r in current],
        [r[2] for r in current],
        vectors,
        {int(i): n for n, i in enumerate(ids)},
    )


def _below(paths: list[str], prefix: MemoryPath) -> NDArray[np.bool_]:
    key = prefix.key
    return np.array([p == key or p.startswith(key + "/") for p in paths], dtype=bool)


def _with_score(candidate: Candidate, score: float) -> Candidate:
    return dataclasses.replace(candidate, score=score)
