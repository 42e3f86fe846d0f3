"""What a search returns: `SearchHit`, and the text a model or a person reads for a list of hits."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._format import number_lines, split_lines
from ..paths import parse

if TYPE_CHECKING:
    from ..paths import MemoryPath

__all__ = ["SearchHit", "format_hits", "hit_json"]


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One ranked passage.

    ``passage`` is the matching lines in the ``view`` format (``{n:>6}\\t{line}``, real line numbers),
    ``first_line``/``last_line`` their range; ``rank`` is 1 for the best hit; ``relevance`` is the hit's score
    over the best hit's (1.0 for the best, from 0 to 1); ``score`` is the fused score itself (higher is better:
    comparable within one search only); ``retrievers`` names what found it: ``"fts"`` (it holds a query word),
    ``"semantic"`` (its embedding is near the query's) or both. ``before`` and ``after`` are the passages just
    before and just after it in its file (numbered the same way; empty at the file's edges): context to read
    it by, not part of the hit.
    """

    path: MemoryPath
    first_line: int
    last_line: int
    passage: str
    score: float
    retrievers: tuple[str, ...]
    rank: int = 1
    relevance: float = 1.0
    before: str = ""
    after: str = ""

    @staticmethod
    def numbered(text: str, first: int) -> str:
        return "\n".join(number_lines(split_lines(text) or [""], first))


def hit_json(hit: SearchHit) -> dict[str, Any]:
    """A hit as JSON (the HTTP API's and ``memdir search --json``'s shape)."""
    return {
        "path": hit.path.virtual,
        "first_line": hit.first_line,
        "last_line": hit.last_line,
        "rank": hit.rank,
        "relevance": hit.relevance,
        "score": hit.score,
        "retrievers": list(hit.retrievers),
        "passage": hit.passage,
        "before": hit.before,
        "after": hit.after,
    }


def hit_from_json(data: dict[str, Any]) -> SearchHit:
    """A hit from `hit_json` (a memdir server's search answer, read by `memdir.RemoteStore`). `KeyError`,
    `TypeError` or `ValueError` for anything else."""
    return SearchHit(
        path=parse(str(data["path"])),
        first_line=int(data["first_line"]),
        last_line=int(data["last_line"]),
        passage=str(data["passage"]),
        score=float(data["score"]),
        retrievers=tuple(str(r) for r in data.get("retrievers", ())),
        rank=int(data.get("rank", 1)),
        relevance=float(data.get("relevance", 1.0)),
        before=str(data.get("before") or ""),
        after=str(data.get("after") or ""),
    )


def format_hits(query: str, hits: list[SearchHit], mode_note: str, *, max_tokens: int | None = None) -> str:
    """The text result of a search: a header line, then each hit's path, lines and relevance and its lines in the
    ``view`` format, between the lines just before and after it.

    With ``max_tokens``, hits are taken best first while their text fits that many tokens (about four
    characters each; the first hit always), and the last line says how many were left out. Lines that an
    earlier hit of the same file already showed are not repeated."""
    if not hits:
        return f"No memory matches {query!r}. {mode_note}"
    shown: dict[str, set[int]] = {}
    blocks: list[str] = []
    budget = None if max_tokens is None else max_tokens * _CHARS_PER_TOKEN
    used = 0
    for hit in hits:
        seen = shown.setdefault(hit.path.virtual, set())
        block, numbers = _block(hit, seen)
        if budget is not None and blocks and used + len(block) > budget:
            break
        blocks.append(block)
        used += len(block)
        seen.update(numbers)
    count = len(blocks)
    head = f"{count} passage{'s' if count != 1 else ''} matching {query!r}, best first. {mode_note}"
    left = len(hits) - count
    tail = (
        [f"\n({left} more matching passage{'s' if left != 1 else ''} left out to fit {max_tokens} tokens.)"]
        if left
        else []
    )
    return "\n".join([head, *blocks, *tail])


_CHARS_PER_TOKEN = 4  # English text, as the Messages API's tokenizer counts it on average


def _block(hit: SearchHit, shown: set[int]) -> tuple[str, set[int]]:
    """A hit's text (a header, the passage before it, its lines, the passage after; context lines an earlier
    hit showed are left out), and the line numbers it shows."""
    found = "+".join(hit.retrievers)
    where = f"lines {hit.first_line}-{hit.last_line}" if hit.last_line > hit.first_line else f"line {hit.first_line}"
    rows = []
    for n, part in enumerate((hit.before, hit.passage, hit.after)):
        for row in part.split("\n") if part else []:
            number = int(row.split("\t", 1)[0])
            if n == 1 or number not in shown:
                rows.append((number, row))
    text = f"\n{hit.path.virtual} ({where}, relevance {hit.relevance:.2f}, {found})\n" + "\n".join(r for _, r in rows)
    return text, {number for number, _ in rows}
