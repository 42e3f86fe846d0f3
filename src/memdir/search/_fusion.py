"""Scoring a search's candidates: BM25 and embeddings fused, then what the query and the file's structure add.

Each candidate passage (a line, in the default index) gets a *base* score: its BM25 divided by the best BM25 among
the candidates, and with embeddings (hybrid search) its cosine similarity min-max scaled over the candidates, the
two summed with weights (`Weights.fts`). Unlike reciprocal rank fusion this keeps how *much* better the top hits
are. Then, each measured on LoCoMo (docs/benchmarks.md):

- **neighbours**: a passage gains a share (`Weights.neighbours`) of the best base score among the passages up
  to `NEIGHBOUR_WINDOW` before or after it in its file (the second counted `NEIGHBOUR_DECAY` as much): a line
  whose neighbours match is in the right part of a note even when few of its own words match ("it was rich and
  creamy" after the question it answers). Neighbours change the ranking; they are shown around a hit, never
  returned as hits of their own.
- **file**: a passage gains a share (`Weights.file`) of its file's BM25 as a whole document, scaled to the best
  file's: a session or a note that holds more of the query's words, over more of its lines, is more likely the
  one asked about than a single look-alike line elsewhere (`SearchIndex.file_scores`).
- **speaker**: in a transcript or a chat log (``Caroline: ...``, ``[D1:3] Caroline: ...``), a line said by
  someone the query names gains `Weights.speaker`: "what did Caroline research?" is most often answered by
  Caroline.
- **date**: a passage whose date (`_dates`) falls in a span of time the query names gains `Weights.date`.
- **answer**: a line right after a line that asks (ends with ``?``) gains a share (`Weights.answer`) of the asking
  line's base score: in a conversation the answer is the line after the question, and the question is what
  shares the query's words ("how long have you had them?" -> "3 years now!"). The lift reorders lines within
  their file but never puts the file above another: a lifted line scores at most just above its file's best
  line before the lift (on LoCoMo the uncapped lift found more evidence in the first ten turns but put the wrong
  session first more often).
- **proximity**: a passage holding two of the query's words within a few words of each other gains a share
  (`Weights.proximity`) of its proximity (`_lexical.closeness`, 0-1): "support group" said together is more
  likely what is asked about than "support" and "group" at the two ends of a line. (The full-text candidates
  themselves may hold words close in meaning to the query's: `_lexical.expansions`.)

A candidate is a result only when it holds a word of the query or its cosine similarity reaches `SEMANTIC_FLOOR`:
an unrelated word ("tea") finds nothing rather than every file with a score near zero.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._dates import Span, query_spans

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ._index import Candidate

__all__ = [
    "NEIGHBOUR_DECAY",
    "NEIGHBOUR_WINDOW",
    "SEMANTIC_FLOOR",
    "Fused",
    "Query",
    "Weights",
    "asks",
    "fuse",
    "speaker",
    "without_speakers",
]

NEIGHBOUR_WINDOW = 2
NEIGHBOUR_DECAY = 0.7
# A passage found by its embedding alone must be at least this similar to the query (all-MiniLM-L6-v2 cosine:
# unrelated short texts score ~0.0-0.3, a paraphrase 0.5 and more; on LoCoMo, 0.5% of the evidence lines hold
# no query word and score below it).
SEMANTIC_FLOOR = 0.35


@dataclass(frozen=True, slots=True)
class Weights:
    """The fusion's weights (each a ``[search]`` setting of the same name)."""

    # fts, neighbours and file: chosen leave-one-conversation-out on LoCoMo (fts 0.4 and neighbours 0.5 in three
    # folds of five; file 0.3 in four); answer and unnamed too, in a second round (0.2 and 0.4 in four folds of
    # five); speaker and date: measured on all five conversations (docs/benchmarks.md).
    fts: float = 0.4
    neighbours: float = 0.5
    speaker: float = 0.1
    date: float = 0.3
    file: float = 0.3
    answer: float = 0.2
    # hybrid: the share of the query's similarity taken from the query without the speakers' names it holds
    unnamed: float = 0.4
    # hybrid: the weight of a word close in meaning to a query word (`_lexical.expansions`), times its cosine
    expansion: float = 1.0
    # query words side by side in a passage (`_lexical.closeness`)
    proximity: float = 0.5


@dataclass(frozen=True, slots=True)
class Query:
    """What the fusion reads in a query: its words (lower-cased) and the spans of time it names."""

    words: frozenset[str]
    spans: tuple[Span, ...]

    @classmethod
    def of(cls, text: str) -> Query:
        return cls(frozenset(_WORD.findall(text.lower())), tuple(query_spans(text)))


@dataclass(frozen=True, slots=True)
class Fused:
    """A scored passage: its chunk id, its score, and which retrievers found it (``fts``, ``semantic``)."""

    chunk: int
    score: float
    who: tuple[str, ...]


_WORD = re.compile(r"[^\W_]+")
_POSSESSIVE = re.compile(r"['\u2019]s\b")
# A line's speaker: "Name:" at its start, after an optional [tag] (an id, a time) or list marker, in bold or not.
_SPEAKER = re.compile(r"\s*(?:\[[^\]\n]{1,40}\]\s*)?(?:[-*+]\s+)?(?:\*\*)?(\w[\w'.-]*(?: \w[\w'.-]*){0,2})(?:\*\*)?:\s")


# A line that asks: it ends with "?", before any trailing bracketed note ("[shares image: a photo of a cake]").
_ASKS = re.compile(r"\?\s*(?:\[[^\]\n]*\]\s*)?$")
_EPSILON = 1e-9  # how far a lifted answer may score above its file's best line


def speaker(text: str) -> frozenset[str]:
    """The words of the name a line starts with as its speaker (``"[D1:3] Caroline: hi"`` -> ``{"caroline"}``)."""
    match = _SPEAKER.match(text)
    return frozenset(_WORD.findall(match.group(1).lower())) if match else frozenset()


def asks(text: str) -> bool:
    """Whether a line asks something (``"How long have you had them?"``)."""
    return _ASKS.search(text) is not None


def without_speakers(query: str, speakers: frozenset[str]) -> str | None:
    """``query`` without the capitalised words that name one of ``speakers`` (``"Caroline's"`` too), or None when
    it names none of them (or is nothing else). Capitalised, as names are written: a note's ``Summary: ...``
    line reads as a speaker too, and "the summary of the trip" should keep its word.

    Every line of a transcript starts with its speaker's name, so a query's embedding that holds the name is
    drawn to every line that names that person, whatever it says; the query without the name is drawn to what
    it asks about. Hybrid search mixes in a share (`Weights.unnamed`) of the similarity to it.
    """
    kept = [w for w in query.split() if not (w[:1].isupper() and _names(w) & speakers)]
    if len(kept) == len(query.split()) or not kept:
        return None
    return " ".join(kept)


def _names(word: str) -> set[str]:
    return set(_WORD.findall(_POSSESSIVE.sub("", word.lower())))


def fuse(
    passages: Mapping[int, Candidate],
    bm25: Mapping[int, float],
    similarity: Mapping[int, float] | None,
    near: Mapping[int, list[tuple[int, int]]],
    query: Query,
    weights: Weights,
    files: Mapping[str, float] | None = None,
    close: Mapping[int, float] | None = None,
) -> list[Fused]:
    """Every passage of ``passages`` that is a result, scored (see the module's docstring), best first.

    ``bm25``: the full-text candidates' BM25; ``similarity``: every passage's cosine (None: full-text search);
    ``near``: (chunk, distance) of each passage's neighbours, among ``passages``; ``files``: each file's
    whole-file BM25 scaled to the best 1.0 (`SearchIndex.file_scores`); ``close``: each passage's proximity of
    query words, 0-1 (`_lexical.closeness`).
    """
    base, similar = _base(passages, bm25, similarity, weights)
    floor = similar | bm25.keys()
    scores: dict[int, float] = {}
    answers: dict[int, float] = {}
    for chunk, candidate in passages.items():
        if chunk not in floor:
            continue  # a neighbour may lift it, but what holds no word of the query, nor its meaning, is no result
        scores[chunk] = _score(chunk, candidate, base, floor, near, query, weights, files or {})
        if close:
            scores[chunk] += weights.proximity * close.get(chunk, 0.0)
        asked = _asked_before(candidate, passages, near.get(chunk, []))
        if weights.answer and asked is not None:
            answers[chunk] = weights.answer * base[asked]
    _lift_answers(scores, answers, passages)
    fused = []
    for chunk, score in scores.items():
        who = tuple(name for name, hit in (("fts", chunk in bm25), ("semantic", chunk in similar)) if hit)
        fused.append(Fused(chunk, score, who))
    fused.sort(key=lambda item: (-item.score, item.chunk))
    return fused


def _score(
    chunk: int,
    candidate: Candidate,
    base: Mapping[int, float],
    floor: set[int],
    near: Mapping[int, list[tuple[int, int]]],
    query: Query,
    weights: Weights,
    files: Mapping[str, float],
) -> float:
    """A result's score before the answer lift: its base score, its neighbours', its speaker, date and file."""
    lifted = [base[n] * NEIGHBOUR_DECAY ** (d - 1) for n, d in near.get(chunk, []) if n in floor]
    score = base[chunk] + weights.neighbours * max([0.0, *lifted])
    if weights.speaker and speaker(candidate.text) & query.words:
        score += weights.speaker
    if weights.date and candidate.day is not None and any(s.matches(candidate.day) for s in query.spans):
        score += weights.date
    return score + weights.file * files.get(candidate.path, 0.0)


def _asked_before(candidate: Candidate, passages: Mapping[int, Candidate], near: list[tuple[int, int]]) -> int | None:
    """The passage right before ``candidate`` in its file when that one asks something, else None."""
    for chunk, distance in near:
        before = passages[chunk]
        if distance == 1 and before.first_line < candidate.first_line:
            return chunk if asks(before.text) else None
    return None


def _lift_answers(scores: dict[int, float], answers: Mapping[int, float], passages: Mapping[int, Candidate]) -> None:
    """Add each answer's lift to its score, up to just above the best score in its file before any lift."""
    best: dict[str, float] = {}
    for chunk, score in scores.items():
        path = passages[chunk].path
        best[path] = max(best.get(path, score), score)
    for chunk, lift in answers.items():
        scores[chunk] = min(scores[chunk] + lift, best[passages[chunk].path] + _EPSILON)


def _base(
    passages: Mapping[int, Candidate],
    bm25: Mapping[int, float],
    similarity: Mapping[int, float] | None,
    weights: Weights,
) -> tuple[dict[int, float], set[int]]:
    """Each passage's base score, and the passages similar enough to the query (`SEMANTIC_FLOOR`)."""
    best = max(bm25.values(), default=0.0) or 1.0
    if similarity is None:
        return {chunk: bm25.get(chunk, 0.0) / best for chunk in passages}, set()
    sims = [similarity.get(chunk, 0.0) for chunk in passages]
    low, high = (min(sims), max(sims)) if sims else (0.0, 1.0)
    span = (high - low) or 1.0
    share = weights.fts
    base = {
        chunk: share * bm25.get(chunk, 0.0) / best + (1 - share) * (similarity.get(chunk, low) - low) / span
        for chunk in passages
    }
    return base, {chunk for chunk in passages if similarity.get(chunk, 0.0) >= SEMANTIC_FLOOR}
