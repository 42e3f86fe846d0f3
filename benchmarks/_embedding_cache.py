"""An embedding provider that keeps every vector it computed on disk, for benchmarks run again and again.

Embedding the LoCoMo dev split takes minutes on this project's two shared cores; the benchmark's stores are in
memory and fresh each run, so without this every run would embed everything again. Vectors are keyed by the
model's name, the query flag and the SHA-256 of the text, in a SQLite file outside the repository (by default
``$TMPDIR/memdir-bench-embeddings.sqlite``; ``MEMDIR_BENCH_CACHE`` names another).
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from memdir.search import EmbeddingProvider

__all__ = ["CachedEmbeddings", "cache_file"]


def cache_file() -> Path:
    given = os.environ.get("MEMDIR_BENCH_CACHE")
    return Path(given) if given else Path(tempfile.gettempdir()) / "memdir-bench-embeddings.sqlite"


class CachedEmbeddings:
    """``inner``'s embeddings, each computed once per text and kept in ``path``."""

    def __init__(self, inner: EmbeddingProvider, path: Path | None = None) -> None:
        self.inner = inner
        self.name = inner.name
        self._db = sqlite3.connect(path or cache_file(), check_same_thread=False)
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")
        self._lock = threading.Lock()
        self.computed = 0  # texts embedded by ``inner`` (not found in the cache)

    def word_table(self) -> Any:
        """The inner model's word table (query expansion), if it has one: it is read from the weights, not cached."""
        table = getattr(self.inner, "word_table", None)
        return table() if callable(table) else None

    def embed(self, texts: list[str], *, query: bool = False) -> NDArray[np.float32]:
        keys = [hashlib.sha256(f"{self.name}\0{int(query)}\0{text}".encode()).hexdigest() for text in texts]
        found = self._read(keys)
        missing = [n for n, key in enumerate(keys) if key not in found]
        if missing:
            vectors = self.inner.embed([texts[n] for n in missing], query=query).astype(np.float32)
            fresh = {keys[n]: vector for n, vector in zip(missing, vectors, strict=True)}
            with self._lock:
                self._db.executemany(
                    "INSERT OR REPLACE INTO vectors VALUES (?, ?)", [(k, v.tobytes()) for k, v in fresh.items()]
                )
                self._db.commit()
            found.update(fresh)
            self.computed += len(missing)
        if not keys:
            return np.zeros((0, 1), dtype=np.float32)
        return np.stack([found[key] for key in keys])

    def _read(self, keys: list[str]) -> dict[str, NDArray[np.float32]]:
        found: dict[str, NDArray[np.float32]] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                part = keys[start : start + 500]
                rows = self._db.execute(
                    f"SELECT key, vector FROM vectors WHERE key IN ({','.join('?' * len(part))})", part
                )
                found.update((key, np.frombuffer(blob, dtype=np.float32)) for key, blob in rows)
        return found
