"""What a search returns: `SearchHit`, and the text a model or a person reads for a list of hits."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._format import number_lines, split_lines

if TYPE_CHECKING:
    from ..paths import MemoryPath

__all__ = ["SearchHit", "format_hits"]


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One ranked passage.

    ``passage`` is the matching lines in the ``view`` format (``{n:>6}\\t{line}``, real line numbers),
    ``first_line``/``last_line`` their range; ``score`` is higher for a better match (BM25 for full-text,
    the fused score for hybrid search); ``retrievers`` names what found it: ``"fts"``, ``"semantic"`` or both,
    or ``"neighbours"`` for a passage that hybrid search brought in because the passages next to it matched.
    """

    path: MemoryPath
    first_line: int
    last_line: int
    passage: str
    score: float
    retrievers: tuple[str, ...]

    @staticmethod
    def numbered(text: str, first: int) -> str:
        return "\n".join(number_lines(split_lines(text) or [""], first))


def format_hits(query: str, hits: list[SearchHit], mode_note: str) -> str:
    """The text result of a search: a header line, then each hit's path, lines, score and passage."""
    if not hits:
        return f"No memory matches {query!r}. {mode_note}"
    head = f"{len(hits)} passage{'s' if len(hits) != 1 else ''} matching {query!r}, best first. {mode_note}"
    parts = [head]
    for hit in hits:
        found = "+".join(hit.retrievers)
        where = (
            f"lines {hit.first_line}-{hit.last_line}" if hit.last_line > hit.first_line else f"line {hit.first_line}"
        )
        parts.append(f"\n{hit.path.virtual} ({where}, score {hit.score:.4g}, {found})\n{hit.passage}")
    return "\n".join(parts)
