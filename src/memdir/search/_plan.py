"""Full-text query plans: which terms FTS5 ranks, and which only adjust the best candidates.

FTS5 computes BM25 for every passage an OR query matches before it takes the best few, about a microsecond
each. A query holding a word found in a third of 250,000 passages ("prefer", "meeting") makes it score
~80,000 passages (50-150 ms), although BM25 weighs such a word little: its idf is ~1 against ~8 for a word in
a hundred passages. So, as MaxScore-style pruning in search engines does:

- each term's passage count (document frequency, df) is estimated by counting at most `DF_SAMPLE` of its
  passages, unranked (cheap: FTS5 reads its posting list without scoring);
- the rarest terms whose passages add up to at most `RANKED_BUDGET` (the rarest alone: `RANKED_LIMIT`) are
  *ranked*: every passage holding one of them gets its BM25 for them, in FTS5;
- every other (*common*) term only adjusts those passages: each one that contains it gains the term's idf
  (its BM25 weight for one occurrence in a passage of average length), found with one unranked query per
  term that FTS5 answers by skipping through the common term's list instead of scoring it;
- when the ranked terms' passages are fewer than asked for, the newest passages holding a common term fill
  the rest (scored by the same idf);
- when even the rarest term is too common to rank all its passages (a query of nothing but common words,
  which says little: recent notes first), only passages from the rarest term's newest ~`RANKED_BUDGET` on
  are ranked: those holding every term (``AND``) when there are enough, else those holding the rarest term,
  adjusted as above.

Below the budget (any store of a few thousand passages, and most queries on a large one) the plan is exactly
BM25 over the OR of all terms. Above it, a passage holding only common terms can be missed and common terms
count as one occurrence each; measured against exact BM25 in docs/benchmarks.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._text import match_expression

if TYPE_CHECKING:
    from ..store._db import AuxConnection

__all__ = ["DF_SAMPLE", "RANKED_BUDGET", "Plan", "choose", "extrapolate", "idf", "plan"]

RANKED_BUDGET = 4_000  # passages FTS5 may score per query (~1 µs each)...
RANKED_LIMIT = 12_000  # ...or up to this many when the rarest term alone has more
DF_SAMPLE = 2_000  # passages counted per term before its df is extrapolated


@dataclass(frozen=True, slots=True)
class Plan:
    """``ranked``: the terms FTS5 ranks (their passages: about ``ranked_df``); ``common``: (term, idf) pairs
    that only adjust the candidates."""

    ranked: list[str]
    common: list[tuple[str, float]]
    all_terms: list[str]
    ranked_df: int = 0
    newest_from: int = 0  # over budget: the rowid from which about `RANKED_BUDGET` of the rarest term's lie
    limit: int | None = None  # the engine's `RANKED_LIMIT` (None: this module's)

    @property
    def exact(self) -> bool:
        """BM25 over every passage of every term (what FTS5 would do on its own)."""
        return not self.common and not self.over_budget

    @property
    def over_budget(self) -> bool:
        """Even the rarest term is common: ranking all its passages would cost too much."""
        return self.ranked_df > (RANKED_LIMIT if self.limit is None else self.limit)

    @property
    def ranked_expression(self) -> str:
        return match_expression(self.ranked)

    def and_expression(self) -> str:
        return " AND ".join(match_expression([term]) for term in self.all_terms)

    def presence_expression(self, term: str) -> str:
        """Passages matching a ranked term that also contain ``term`` (read unranked)."""
        return f"({self.ranked_expression}) AND {match_expression([term])}"


def plan(conn: AuxConnection, terms: list[str]) -> Plan:
    """The plan for ``terms`` over the FTS5 table ``search_fts`` (every namespace's passages: BM25's too)."""
    span = _rowid_span(conn)
    return choose(terms, [_df(conn, term, span) for term in terms], _row_count(conn, span), span)


def choose(terms: list[str], dfs: list[int], rows: int, span: tuple[int, int], *, share: float = 1.0) -> Plan:
    """The plan for ``terms`` given each one's passage count (``dfs``), the passages in all (``rows``) and the
    span of passage ids; shared by the FTS5 index and the PostgreSQL one (`memdir.search._pg`), whose passages
    cost more each to score: it ranks ``share`` of the budgets."""
    budget, limit = max(1, int(RANKED_BUDGET * share)), max(1, int(RANKED_LIMIT * share))
    counted = sorted((df, n, term) for n, (term, df) in enumerate(zip(terms, dfs, strict=True)))
    ranked: list[str] = []
    total = 0
    for df, _, term in counted:
        if ranked and total + df > budget:
            break
        ranked.append(term)
        total += df
    common = [(term, idf(df, rows)) for df, _, term in counted[len(ranked) :]]
    newest = span[1] - int((span[1] - span[0] + 1) * budget / max(total, 1))
    return Plan(ranked, common, terms, total, newest, limit)


def extrapolate(count: int, last: int, span: tuple[int, int]) -> int:
    """A term's passage count from a sample: ``count`` passages (at most `DF_SAMPLE`) read in id order up to id
    ``last`` (ids follow indexing order, which mixes old and new notes well enough)."""
    if count < DF_SAMPLE:
        return count
    low, high = span
    return int(DF_SAMPLE * (high - low + 1) / max(1, last - low + 1))


def _df(conn: AuxConnection, term: str, span: tuple[int, int]) -> int:
    """Passages holding ``term``: counted up to `DF_SAMPLE` (FTS5 reads them in rowid order), then extrapolated."""
    last, count = conn.execute(
        "SELECT max(rowid), count(*) FROM (SELECT rowid FROM search_fts WHERE search_fts MATCH ? LIMIT ?)",
        (match_expression([term]), DF_SAMPLE),
    ).fetchone()
    return extrapolate(int(count), int(last or 0), span)


def _rowid_span(conn: AuxConnection) -> tuple[int, int]:
    # Two lookups at the ends of the chunks table's b-tree. (min and max in one SELECT, or over the FTS5
    # table, would read every row.)
    low, high = conn.execute(
        "SELECT (SELECT min(id) FROM search_chunks), (SELECT max(id) FROM search_chunks)"
    ).fetchone()
    return (int(low or 0), int(high or 0))


def _row_count(conn: AuxConnection, span: tuple[int, int]) -> int:
    """The passage count BM25 uses: the first varint of FTS5's averages record (row 1 of ``search_fts_data``);
    ``count(*)`` would read every row. Falls back to the rowid span if the record is not as expected."""
    row = conn.execute("SELECT block FROM search_fts_data WHERE id = 1").fetchone()
    if row is not None and isinstance(row[0], bytes) and row[0]:
        return _varint(row[0])
    return span[1] - span[0] + 1


def _varint(data: bytes) -> int:
    """SQLite's variable-length integer (big-endian 7-bit groups, a ninth byte of 8 bits), as FTS5 stores it."""
    value = 0
    for n, byte in enumerate(data[:9]):
        if n == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            break
    return value


def idf(df: int, rows: int) -> float:
    """FTS5's BM25 idf (``log((N - df + 0.5) / (df + 0.5))``, floored at 1e-6 as FTS5 does)."""
    return max(1e-6, math.log((rows - df + 0.5) / (df + 0.5)))
