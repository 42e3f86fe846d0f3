"""What a full-text engine gives the search index, and the SQL both engines share.

The index (`SearchIndex`) keeps itself in step with the store's change log the same way on every database; what
differs is where a passage's words are kept and how passages are ranked: SQLite's FTS5 (`_fts5`) or
PostgreSQL's full-text search (`_pg`). Both keep the passages themselves in ``search_chunks`` (id, ns, path,
first_line, last_line, text, text_sha), which the index and the vector search read with portable SQL.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..paths import MemoryPath
    from ..store._db import AuxConnection
    from ..store._migrations import Migrations

__all__ = ["File", "Passage", "Scored", "TextEngine", "below", "prefix_clause", "text_sha"]

Scored = tuple[int, float]  # (chunk id, score: higher is better)
# (path, passages: (first line, last line, text, context, day)): a passage is also found by its context, the words
# of its file's name, first line and section headings (`_index._context`); ``day`` is its date (`_dates`) or None.
Passage = tuple[int, int, str, str, int | None]
File = tuple[str, list[Passage]]


class TextEngine(Protocol):
    """The words of one namespace's passages, and their ranking."""

    migrations: Migrations

    def forget(self, conn: AuxConnection, paths: list[str] | None) -> None:
        """Drop the passages of ``paths`` (None: of every path in the namespace)."""
        ...

    def add(self, conn: AuxConnection, files: list[File]) -> None:
        """Index files' passages, in order, each with its context."""
        ...

    def rank(self, conn: AuxConnection, terms: list[str], limit: int, prefix: MemoryPath | None) -> list[Scored]:
        """The best ``limit`` passages for the query ``terms`` (see `_text.query_terms`), best first."""
        ...

    def file_counts(self, conn: AuxConnection, term: str, prefix: MemoryPath | None, cap: int) -> dict[str, int] | None:
        """How many passages of each file (below ``prefix``) hold ``term``; None when more than ``cap`` do."""
        ...


def below(path: str, key: str) -> bool:
    return path == key or path.startswith(key + "/")


def prefix_clause(prefix: MemoryPath | None, column: str = "c.path") -> tuple[str, tuple[str, ...]]:
    """SQL limiting passages to the file ``prefix`` or the files below the directory ``prefix``.

    Paths compare byte by byte on both engines (PostgreSQL's path columns are ``COLLATE "C"``), so the directory
    is a key range: from "key/" up to (not including) "key0", '0' being the character after '/'."""
    if prefix is None or prefix.is_root:
        return "", ()
    key = prefix.key
    return f" AND ({column} = ? OR ({column} >= ? AND {column} < ?))", (key, key + "/", key + "0")


def text_sha(text: str) -> str:
    """The SHA-256 of a passage's text: what its embedding is stored under (`_semantic`)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
