"""Text handling shared by indexing and querying: passages (chunks of lines) and search terms.

Terms. SQLite's ``unicode61`` tokenizer splits on spaces and punctuation, which is right for English and
wrong for Chinese and Japanese, written without spaces: a whole sentence would become one token that no query
matches. So text is prepared here before FTS5 sees it: runs of CJK characters become overlapping character
bigrams (``記憶検索`` -> ``記憶 憶検 検索 索``; the run's last character is kept alone so that every
character starts some token and a one-character query can match as a prefix). Everything else goes to FTS5
as it is, where ``porter unicode61 remove_diacritics 2`` lower-cases, folds accents and stems English
(``hiking`` and ``hikes`` both match ``hike``). Bigrams are the usual choice for CJK full-text search without
a dictionary (Lucene's CJKAnalyzer does the same); measured against the alternatives in docs/search.md.

The PostgreSQL index (`_pg`) gets the same words, split here as ``unicode61`` splits them (`plain_words`), so
both engines find a text by the same words; PostgreSQL only stems them.

Queries never reach FTS5 as syntax: `match_expression` rebuilds the query from its terms, each one quoted,
joined by OR, so any string a user or a model sends is a valid, harmless query.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from .._format import split_lines

__all__ = ["MAX_WORD", "Chunk", "chunk_lines", "fold", "index_text", "match_expression", "plain_words", "query_terms"]

# Han (with extension A and compatibility ideographs), kana, Hangul syllables and jamo, CJK punctuation excluded.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\u1100-\u11ff\u3130-\u318f"
_CJK_RUN = re.compile(f"[{_CJK}]+")
# A query term: a run of letters/digits (any script but CJK) or a run of CJK characters.
_TERM = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+")

# Words too common to tell passages apart. Dropped from queries only (the index keeps every word, so a query
# made of nothing else still finds something): "what did she say about the trip" searches for "say trip".
_STOP_WORDS = """
a about above after again against all am an and any are as at be because been before being below between
both but by can could did do does doing down during each few for from further had has have having he her
here hers herself him himself his how i if in into is it its itself just me more most my myself no nor not
now of off on once only or other our ours ourselves out over own same she should so some such than that the
their theirs them themselves then there these they this those through to too under until up very was we
were what when where which while who whom why will with would you your yours yourself yourselves
"""
_STOP = frozenset(_STOP_WORDS.split())

MAX_QUERY_TERMS = 64  # a longer query adds cost, not precision
# PostgreSQL skips words over 2,047 bytes (with a notice each time): its index leaves out words over this many
# characters (4 bytes each at most), which no one searches for.
MAX_WORD = 500
_MAX_WORDS_CHARS = 200_000  # per passage: a tsvector holds at most 1 MB (FTS5 has no such bound)
_DIACRITICS = re.compile("[\u0300-\u036f]")


@dataclass(frozen=True, slots=True)
class Chunk:
    """A passage of a file: lines ``first``..``last`` (numbered from 1), their text, and the headings of the
    section it is in, outermost first (``"Trips / 2026"``; empty before the first heading)."""

    first: int
    last: int
    text: str
    section: str = ""


def _bigrams(run: str) -> str:
    if len(run) == 1:
        return run
    return " ".join([run[i : i + 2] for i in range(len(run) - 1)] + [run[-1]])


def index_text(text: str) -> str:
    """``text`` as FTS5 should tokenize it: CJK runs turned into bigrams, the rest unchanged."""
    return _CJK_RUN.sub(lambda m: f" {_bigrams(m.group())} ", text)


def fold(text: str) -> str:
    """``text`` lower-cased, its letters' diacritics removed as FTS5's ``remove_diacritics 2`` does (``Renée`` ->
    ``renee``), for the PostgreSQL index. Only marks of the Combining Diacritical Marks block go: kana's voicing
    marks and Hangul syllables come back whole when the text is composed again."""
    lowered = text.lower()
    if lowered.isascii():
        return lowered
    return unicodedata.normalize("NFC", _DIACRITICS.sub("", unicodedata.normalize("NFD", lowered)))


def plain_words(text: str) -> str:
    """``text`` as the PostgreSQL index reads it: the words FTS5's tokenizer would find (runs of letters and
    digits, folded), CJK runs as bigrams, one space apart. PostgreSQL's own parser would keep e-mail addresses,
    URLs and hyphenated words whole; splitting them here makes both engines find the same words."""
    folded = fold(text)
    found = _TERM.findall(folded)
    if _CJK_RUN.search(folded) is None:  # most text: no word to cut into bigrams
        words = [word for word in found if len(word) <= MAX_WORD]
    else:
        words = [_bigrams(w) if _CJK_RUN.fullmatch(w) else w for w in found if len(w) <= MAX_WORD or _CJK_RUN.match(w)]
    joined = " ".join(words)
    return joined if len(joined) <= _MAX_WORDS_CHARS else joined[: joined.rfind(" ", 0, _MAX_WORDS_CHARS)]


def query_terms(query: str) -> list[str]:
    """The terms a query searches for: words without the stop words (all words if that leaves none), and the
    bigrams of CJK runs (a one-character run stays a prefix of the bigrams that start with it)."""
    words = _TERM.findall(query.lower())
    kept = [w for w in words if w not in _STOP] or words
    terms: list[str] = []
    for word in kept:
        if _CJK_RUN.fullmatch(word):
            terms.extend(_bigrams(word).split() if len(word) > 1 else [word + "*"])
        else:
            terms.append(word)
    return list(dict.fromkeys(terms))[:MAX_QUERY_TERMS]


def match_expression(terms: list[str]) -> str:
    """An FTS5 MATCH expression that ORs ``terms``, each a quoted string (``"` doubled), so nothing in a term
    is read as FTS5 syntax; a trailing ``*`` (added by `query_terms` only) makes a prefix query."""
    quoted = []
    for term in terms:
        prefix = term.endswith("*")
        body = term[:-1] if prefix else term
        quoted.append('"' + body.replace('"', '""') + '"' + ("*" if prefix else ""))
    return " OR ".join(quoted)


def chunk_lines(text: str, size: int) -> list[Chunk]:
    """Cut a file into passages of at most ``size`` lines that follow its structure.

    A heading (``#``) or a blank line starts a new passage, so a passage stays within one section of a
    Markdown note; blank lines themselves are left out of passages. A heading is the context of the lines
    below it (`Chunk.section`), not a passage of its own, unless its section has no other line (a file that
    is only a title stays findable).
    """
    chunks: list[Chunk] = []
    block: list[tuple[int, str]] = []
    headings: list[tuple[int, str]] = []  # (level, title) of the sections the current line is in
    pending: tuple[int, str] | None = None  # the last heading, until a line of its section shows up

    def flush() -> None:
        if block:
            section = " / ".join(title for _, title in headings)
            chunks.append(Chunk(block[0][0], block[-1][0], "\n".join(line for _, line in block), section))
            block.clear()

    for number, line in enumerate(split_lines(text), start=1):
        if not line.strip():
            flush()
            continue
        heading = _heading(line)
        if heading is not None:
            flush()
            if pending is not None:
                chunks.append(Chunk(pending[0], pending[0], pending[1], " / ".join(t for _, t in headings[:-1])))
            while headings and headings[-1][0] >= heading[0]:
                headings.pop()
            headings.append(heading)
            pending = (number, line)
            continue
        pending = None
        if len(block) >= size:
            flush()
        block.append((number, line))
    flush()
    if pending is not None:
        chunks.append(Chunk(pending[0], pending[0], pending[1], " / ".join(t for _, t in headings[:-1])))
    return chunks


_HEADING = re.compile(r"\s{0,3}(#{1,6})\s+(.*?)[\s#]*$")


def _heading(line: str) -> tuple[int, str] | None:
    """(level, title) of a Markdown ATX heading line, else None."""
    match = _HEADING.match(line)
    return (len(match.group(1)), match.group(2)) if match else None
