"""What a search returns: `SearchHit`, and the text a model or a person reads for a list of hits."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._format import number_lines, shown, split_lines
from ..paths import parse

if TYPE_CHECKING:
    from ..paths import MemoryPath

__all__ = ["QUERY_SHOWN", "SearchHit", "format_hits", "hit_json", "shown_query"]


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

    With ``max_tokens``, the whole text fits that many tokens (about four characters each), the header and the
    last line included: hits are taken best first while they fit, and the last line says how many were left out.
    A first hit too long for the budget is shown without its context, cut, and says so. Lines that an earlier hit
    of the same file already showed are not repeated. The query is shown bounded (`shown_query`)."""
    shown = shown_query(query)
    if not hits:
        return f"No memory matches '{shown}'. {mode_note}"
    budget = None if max_tokens is None else max_tokens * _CHARS_PER_TOKEN
    if budget is not None:  # room for the header and the last line, at their longest
        budget -= len(_head(len(hits), shown, mode_note)) + len(_left_out(len(hits), max_tokens))
    blocks = _blocks(hits, budget, max_tokens)
    tail = [_left_out(len(hits) - len(blocks), max_tokens)] if len(blocks) < len(hits) else []
    return "\n".join([_head(len(blocks), shown, mode_note), *blocks, *tail])


def shown_query(query: str) -> str:
    """A query as a result repeats it: at most `QUERY_SHOWN` characters (then ``… (N characters)``, as a refused
    path is echoed), on one line, with what a terminal would act on escaped as ``\\x00``, ``\\n``, ``\\u202e``
    (`memdir._format.shown`, as ``memdir search`` shows stored text), and an unpaired surrogate as U+FFFD."""
    text = query.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    more = f"… ({len(text):,} characters)" if len(text) > QUERY_SHOWN else ""
    return shown(text[:QUERY_SHOWN], cell=True) + more


QUERY_SHOWN = 200
_CHARS_PER_TOKEN = 4  # English text, as the Messages API's tokenizer counts it on average


def _head(count: int, shown: str, mode_note: str) -> str:
    return f"{count} passage{'s' if count != 1 else ''} matching '{shown}', best first. {mode_note}"


def _left_out(left: int, max_tokens: int | None) -> str:
    return f"\n({left} more matching passage{'s' if left != 1 else ''} left out to fit {max_tokens} tokens.)"


def _blocks(hits: list[SearchHit], budget: int | None, max_tokens: int | None) -> list[str]:
    """The hits' texts, best first, while they fit ``budget`` characters (the first always, cut if need be)."""
    shown: dict[str, set[int]] = {}
    blocks: list[str] = []
    used = 0
    for hit in hits:
        seen = shown.setdefault(hit.path.virtual, set())
        block, numbers = _block(hit, seen)
        if budget is not None and used + len(block) > budget:
            if blocks:
                break
            block, numbers = _cut(hit, budget, max_tokens)  # the best hit is worth its budget, even in part
        blocks.append(block)
        used += len(block)
        seen.update(numbers)
    return blocks


def _cut(hit: SearchHit, budget: int, max_tokens: int | None) -> tuple[str, set[int]]:
    """The best hit in ``budget`` characters: its header line always, then as much of its lines as fits (its
    context left out first), and where to read it whole; and the line numbers it shows."""
    block, numbers = _block(dataclasses.replace(hit, before="", after=""), set())
    if len(block) <= budget:
        return block, numbers
    note = f"… (cut to fit {max_tokens} tokens: view {_lines(hit)} of {hit.path.virtual} to read it whole)"
    keep = max(block.index("\n", 1), budget - len(note))  # the header line, whatever the budget
    return block[:keep] + note, numbers


def _block(hit: SearchHit, shown: set[int]) -> tuple[str, set[int]]:
    """A hit's text (a header, the passage before it, its lines, the passage after; context lines an earlier
    hit showed are left out), and the line numbers it shows."""
    found = "+".join(hit.retrievers)
    rows = []
    for n, part in enumerate((hit.before, hit.passage, hit.after)):
        for row in part.split("\n") if part else []:
            number = int(row.split("\t", 1)[0])
            if n == 1 or number not in shown:
                rows.append((number, row))
    header = f"\n{hit.path.virtual} ({_lines(hit)}, relevance {hit.relevance:.2f}, {found})\n"
    return header + "\n".join(r for _, r in rows), {number for number, _ in rows}


def _lines(hit: SearchHit) -> str:
    return f"lines {hit.first_line}-{hit.last_line}" if hit.last_line > hit.first_line else f"line {hit.first_line}"
