"""Two full-text signals beyond BM25's bag of words: the words a query's words mean, and its words side by side.

- **Expansion** (hybrid search): each query word also searches for the few words nearest to it in the embedding
  model's own word-piece table (all-MiniLM-L6-v2's input embeddings: ``buy`` -> ``bought``, ``purchase``;
  ``kids`` -> ``children``; ``movie`` -> ``film``), each weighted by its cosine to the word. Conversations and
  notes say "went", "bought", "the film" where a question says "go", "buy", "movie", and porter stemming joins
  none of these. The table ships inside the model (nothing is embedded or stored per store); a word that is not
  one of its whole words ("lgbtq", most names) is not expanded, nor are capitalised words (names: "Rome" would
  reach "paris"), months (a date is matched by `_dates`, and "june" would reach "july") and numbers.
- **Proximity**: a passage holding two of the query's words within `PROXIMITY_WINDOW` words of each other
  gains, per such pair, the smaller of the two words' idf, over the same sum for every pair of the query's
  words: "support group", "pottery class" said together, rather than each somewhere in a long line.

Both were measured on LoCoMo (docs/benchmarks.md): expansion alone finds more evidence in the first ten turns,
but its loose matches put the wrong session first more often; proximity puts the right one first.

Stems are FTS5's own: a private in-memory SQLite FTS5 table with the index's tokenizer, so a word and its
expansion, or a query word and a passage's word, are the same term exactly when the index says so.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from typing import TYPE_CHECKING

from ._dates import MONTHS
from ._plan import idf
from ._text import fold

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    import numpy as np
    from numpy.typing import NDArray

__all__ = [
    "EXPANSIONS_PER_WORD",
    "EXPANSION_FLOOR",
    "PROXIMITY_WINDOW",
    "WordTable",
    "closeness",
    "expansions",
    "stems",
]

EXPANSIONS_PER_WORD = 3  # nearest words each query word also searches for...
EXPANSION_FLOOR = 0.6  # ...each at least this close (input-embedding cosine; a word and its inflections ~0.6-0.8)
PROXIMITY_WINDOW = 3  # two query words at most this many words apart count as said together
_WHOLE_WORD = re.compile(r"[a-z]{3,}")  # word pieces that are whole English words (not "##ing", not "[CLS]")
_TOKEN = re.compile(r"[^\W_]+")  # what unicode61 keeps as a token: runs of letters and digits
_MONTH_WORDS = frozenset(name for name in MONTHS if len(name) > 3 or name == "may")
_STEM_CACHE = 200_000  # stems kept per process before the cache starts again
_NEAREST_KEPT = 50_000  # query words whose nearest words a table keeps before it starts again


class _Stemmer:
    """Porter stems exactly as the index's FTS5 tokenizer makes them, from a private in-memory FTS5 table."""

    def __init__(self) -> None:
        self._conn: sqlite3.Connection | None = None
        self._known: dict[str, str | None] = {}
        self._lock = threading.Lock()

    def of(self, words: Iterable[str]) -> dict[str, str | None]:
        """Each word's stem (None: a word FTS5 keeps no token of)."""
        wanted = list(dict.fromkeys(words))
        with self._lock:
            missing = [w for w in wanted if w not in self._known]
            if missing:
                if len(self._known) + len(missing) > _STEM_CACHE:
                    self._known.clear()
                self._known.update(self._stem(missing))
            return {w: self._known.get(w) for w in wanted}

    def _stem(self, words: list[str]) -> dict[str, str | None]:
        conn = self._connection()
        conn.execute("DELETE FROM words")
        conn.executemany("INSERT INTO words (rowid, body) VALUES (?, ?)", enumerate(words, start=1))
        found: dict[str, str | None] = dict.fromkeys(words)
        for term, row in conn.execute("SELECT term, doc FROM terms"):
            found[words[int(row) - 1]] = str(term)  # a word with two tokens ("co-op") keeps one: never ours
        return found

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = sqlite3.connect(":memory:", check_same_thread=False)
            conn.execute(
                "CREATE VIRTUAL TABLE words USING fts5(body, tokenize = 'porter unicode61 remove_diacritics 2')"
            )
            conn.execute("CREATE VIRTUAL TABLE terms USING fts5vocab(words, 'instance')")
            self._conn = conn
        return self._conn


_STEMMER = _Stemmer()


def stems(words: Iterable[str]) -> dict[str, str | None]:
    """Each word's stem as the full-text index makes it (``"camping"`` -> ``"camp"``)."""
    return _STEMMER.of(words)


class WordTable:
    """A model's whole words and their input embeddings (L2-normalised rows), for `expansions`."""

    def __init__(self, vocabulary: Mapping[str, int], embeddings: NDArray[np.float32]) -> None:
        import numpy as np  # the [semantic] extra's: full-text search runs without it

        ids = sorted((i, word) for word, i in vocabulary.items() if _WHOLE_WORD.fullmatch(word) and i < len(embeddings))
        self.words = [word for _, word in ids]
        self.row = {word: n for n, word in enumerate(self.words)}
        rows = np.asarray(embeddings[[i for i, _ in ids]], dtype=np.float32)
        self.matrix = np.ascontiguousarray(rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12))
        self._found: dict[tuple[str, int], list[tuple[str, float]]] = {}
        self._lock = threading.Lock()

    def nearest(self, words: list[str], count: int) -> dict[str, list[tuple[str, float]]]:
        """For each of ``words`` (whole words of the table), the ``count`` words closest to it (itself first)
        with their cosines, best first. One matrix product for the words not asked for before: it reads the
        whole table (~33 MB, ~3 ms), and a table's neighbours never change, so they are kept (`_NEAREST_KEPT`)."""
        import numpy as np

        with self._lock:
            fresh = [w for w in dict.fromkeys(words) if (w, count) not in self._found]
        if fresh:
            sims = self.matrix @ self.matrix[[self.row[w] for w in fresh]].T
            top = min(count, len(self.words))
            computed = {}
            for n, word in enumerate(fresh):
                column = sims[:, n]
                best = sorted(np.argpartition(-column, top - 1)[:top].tolist(), key=lambda j: (-column[j], j))
                computed[(word, count)] = [(self.words[j], float(column[j])) for j in best]
            with self._lock:
                if len(self._found) + len(computed) > _NEAREST_KEPT:
                    self._found.clear()
                self._found.update(computed)
        with self._lock:
            return {w: self._found[(w, count)] for w in words}


def expansions(query: str, terms: list[str], table: WordTable) -> dict[str, float]:
    """The words ``terms`` (the query's, lower-cased) also search for, each with its weight (its cosine to the
    query word it is nearest to), at most `EXPANSIONS_PER_WORD` per word and one word per stem."""
    capitalised = {w.lower() for w in _TOKEN.findall(query) if w[:1].isupper()}
    sources = [t for t in terms if _expandable(t) and t not in capitalised and t in table.row]
    if not sources:
        return {}
    near = table.nearest(sources, EXPANSIONS_PER_WORD + 6)
    stem = stems([*terms, *(w for found in near.values() for w, _ in found)])
    own = {stem[t] for t in terms}
    chosen: dict[str, tuple[str, float]] = {}  # stem -> (word, weight)
    for found in near.values():
        taken = 0
        for word, cosine in found:
            if cosine < EXPANSION_FLOOR or taken >= EXPANSIONS_PER_WORD:
                break
            s = stem[word]
            if s is None or s in own or word in _MONTH_WORDS:
                continue
            if s not in chosen or chosen[s][1] < cosine:
                chosen[s] = (chosen[s][0] if s in chosen else word, cosine)
            taken += 1
    return dict(chosen.values())


def _expandable(term: str) -> bool:
    return len(term) > 2 and term not in _MONTH_WORDS and not any(c.isdigit() for c in term)


def closeness(texts: Mapping[int, str], dfs: Mapping[str, int], rows: int) -> dict[int, float]:
    """Proximity (see the module's docstring) of each passage of ``texts`` that holds two query words near each
    other; ``dfs``: the query's words (names of speakers left out) and the passages holding each, of ``rows``."""
    stem = stems(dfs)
    weight: dict[str, float] = {}
    for word, df in dfs.items():
        s = stem[word]
        if s is not None and df > 0:  # two words of one stem ("paint", "painting") are one term, as in BM25
            weight[s] = idf(df, rows)
    pairs = [(a, b) for n, a in enumerate(weight) for b in list(weight)[n + 1 :]]
    total = sum(min(weight[a], weight[b]) for a, b in pairs)
    if not pairs or total <= 0:
        return {}
    # Porter only rewrites a word's ending, so a word of a query term's stem starts with the stem's first
    # letters (but its last: "cry" -> "cri"): only those words are stemmed, a tenth of a passage's.
    starts: list[set[str]] = [set(), set(), set()]
    for s in weight:
        size = max(1, min(3, len(s) - 1))
        starts[size - 1].add(s[:size])
    words = {chunk: _TOKEN.findall(fold(text)) for chunk, text in texts.items()}
    seen = set().union(*words.values())
    stem = stems(w for w in seen if _may_be(w, starts))
    ours = {w: s for w, s in stem.items() if s in weight}  # the words that are query terms
    found: dict[int, float] = {}
    for chunk, these in words.items():
        held = ours.keys() & these
        if len({ours[w] for w in held}) < 2:
            continue  # most passages: fewer than two of the query's terms
        at = _positions(these, ours)
        score = sum(min(weight[a], weight[b]) for a, b in pairs if a in at and b in at and _near(at[a], at[b]))
        if score:
            found[chunk] = score / total
    return found


def _may_be(word: str, starts: list[set[str]]) -> bool:
    """Whether ``word`` may have one of the stems whose first one, two or three letters ``starts`` holds."""
    return word[:1] in starts[0] or word[:2] in starts[1] or word[:3] in starts[2]


def _positions(words: list[str], ours: Mapping[str, str]) -> dict[str, list[int]]:
    """Where each query term (the stem ``ours`` gives a word of the query's terms) occurs among a passage's
    ``words``, by word position."""
    at: dict[str, list[int]] = {}
    for n, word in enumerate(words):
        s = ours.get(word)
        if s is not None:
            at.setdefault(s, []).append(n)
    return at


def _near(first: list[int], second: list[int]) -> bool:
    return any(abs(x - y) <= PROXIMITY_WINDOW for x in first for y in second)
