"""Search speed over 100,000 memory files: indexing time, p50/p95 query latency, full-text and hybrid.

The corpus is synthetic but shaped like real notes, because full-text speed depends on how many passages each
query word is in (its document frequency), and that depends on the vocabulary:

- 100,000 Markdown files in 1,000 directories, each a heading and 3-12 bullet lines from templates
  (~400 bytes, ~2.5 passages of 4 lines);
- content words drawn from a Zipf-Mandelbrot law (p(rank) ~ 1/(rank + 10)) over ~50,000 words: 72 everyday
  project/life words at the top ranks, then ~21,000 English words (the packaged model's WordPiece vocabulary,
  shuffled with the seed), then made-up words for the long tail (identifiers, rare names). The most common
  word is then in ~16% of passages, the 100th in ~2%, the 10,000th in a few dozen, as in real text;
- 3,000 people's names (made up), also Zipf-distributed, dates and numbers;
- 200 queries: half keywords (2-5 words drawn from the same law, so common words come up as often as they
  do in the notes), half questions with a name ("what does Vuho prefer for the budget?", "when did ... ask
  about ..."), whose verbs ("prefer", "ask") are in ~40% of passages.

(An earlier version drew every word from 72 words: each query word was then in 5-40% of all passages, which
no real vocabulary does; its figures are kept in docs/benchmarks.md for comparison.)

Hybrid latency needs a vector for every passage. ``--embed-sample`` passages are embedded for real (their
throughput is reported) and every other passage gets a copy of one of those vectors: the search does the same
work whatever the vectors hold. ``--embed-all`` embeds every passage instead (the real hybrid indexing time).
Query embedding is real.

    python benchmarks/bench_search.py                      # 100,000 files
    python benchmarks/bench_search.py --files 10000        # quicker
    python benchmarks/bench_search.py --store postgresql://user:pw@host/emptydb   # on PostgreSQL (issue 7)

On PostgreSQL (``--store``, an empty database), "agreement" compares the plan's results with the same engine
scoring every passage of every query term (its exact BM25 formula); ``--analyze`` runs ``VACUUM ANALYZE`` on the
index after building it, as autovacuum would a little later.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from memdir import SQLiteStore, Store, open_store
from memdir.search import LocalModel, Searcher
from memdir.search._text import match_expression, query_terms

HEAD = str.split(
    "meeting email project deadline budget invoice client design review release bug deploy server database "
    "backup travel flight hotel dinner birthday gift recipe garden running yoga guitar novel podcast movie "
    "museum concert doctor dentist insurance mortgage tax contract salary interview hiring onboarding roadmap "
    "quarter sprint customer support ticket refund shipping warehouse supplier pricing discount launch campaign "
    "newsletter blog python rust kubernetes docker terraform postgres redis kafka api schema migration latency "
    "cache index search"
)
SYLLABLES = [c + v for c in "bcdfghjklmnprstvwz" for v in ("a", "e", "i", "o", "u", "ai", "ou")]
FILLER = ["prefers", "wants", "likes", "needs", "asked", "said", "next", "last", "every", "maybe", "again", "soon"]
TEMPLATES = [
    "- {p} prefers {w} over {w2} for the {w3}",
    "- {p} asked about the {w} {w2} on {d}",
    "- next {w}: {w2} with {p} at the {w3}",
    "- remember: {p}'s {w} is due before the {w2}",
    "- {w} notes: {w2} {w3} {f} {w4}",
    "- decided to move the {w} to {w2} after talking to {p}",
    "- {n} {w} for {p}, {w2} {w3} by {date}",
]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


class Zipf:
    """Items drawn with p(rank) ~ 1 / (rank + q)^s (Zipf-Mandelbrot), ranks in the list's order."""

    def __init__(self, items: list[str], s: float, q: float, seed: int) -> None:
        ranks = np.arange(1, len(items) + 1, dtype=np.float64)
        weights = 1.0 / (ranks + q) ** s
        self.cdf = np.cumsum(weights / weights.sum())
        self.items = items
        self.rng = np.random.default_rng(seed)
        self._drawn: list[int] = []

    def __call__(self) -> str:
        if not self._drawn:
            self._drawn = np.searchsorted(self.cdf, self.rng.random(65_536)).tolist()
        return self.items[min(self._drawn.pop(), len(self.items) - 1)]


def made_up_words(count: int, rng: random.Random, taken: set[str]) -> list[str]:
    words: list[str] = []
    while len(words) < count:
        word = "".join(rng.choice(SYLLABLES) for _ in range(rng.choice((2, 2, 3, 3, 3, 4))))
        if word not in taken:
            taken.add(word)
            words.append(word)
    return words


def english_words() -> list[str]:
    """Whole English words of the packaged model's WordPiece vocabulary (sorted; the seed shuffles them)."""
    from tokenizers import Tokenizer

    vocab = Tokenizer.from_file(str(LocalModel().directory / "tokenizer.json")).get_vocab()
    return sorted(w for w in vocab if len(w) > 2 and w.isascii() and w.isalpha() and w.islower())


class Corpus:
    def __init__(self, seed: int = 42, vocabulary: int = 50_000, people: int = 3_000) -> None:
        rng = random.Random(seed)
        taken = set(HEAD)
        english = [w for w in english_words() if w not in taken]
        rng.shuffle(english)
        taken.update(english)
        words = HEAD + english
        words += made_up_words(vocabulary - len(words), rng, taken)
        self.word = Zipf(words, 1.0, 10.0, seed)
        self.person = Zipf([w.title() for w in made_up_words(people, rng, taken)], 1.0, 5.0, seed + 1)
        self.rng = rng

    def note(self, n: int) -> str:
        rng, w = self.rng, self.word
        lines = [f"# {w().title()} {w()} {n}"]
        for _ in range(rng.randint(3, 12)):
            date = f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
            fields = {"p": self.person(), "w": w(), "w2": w(), "w3": w(), "w4": w(), "f": rng.choice(FILLER)}
            lines.append(rng.choice(TEMPLATES).format(**fields, d=rng.choice(DAYS), n=rng.randint(1, 500), date=date))
        return "\n".join(lines) + "\n"

    def queries(self, count: int) -> list[str]:
        found = []
        for i in range(count):
            if i % 4 == 0:
                found.append(f"what does {self.person()} prefer for the {self.word()}?")
            elif i % 4 == 1:
                found.append(f"when did {self.person()} ask about the {self.word()} {self.word()}")
            else:
                found.append(" ".join(self.word() for _ in range(self.rng.randint(2, 5))))
        return found


def populate(store: Store, corpus: Corpus, files: int) -> float:
    started = time.perf_counter()
    for n in range(files):
        store.write(f"/memories/d{n % 1000:03d}/note_{n}.md", corpus.note(n).encode())
    return time.perf_counter() - started


def latencies(searcher: Searcher, asked: list[str], mode: str) -> list[float]:
    searcher.search(asked[0], mode=mode)  # type: ignore[arg-type]  # warm: model loaded, matrix built
    took = []
    for query in asked:
        started = time.perf_counter()
        searcher.search(query, limit=10, mode=mode)  # type: ignore[arg-type]
        took.append((time.perf_counter() - started) * 1000)
    return took


def agreement(searcher: Searcher, asked: list[str], k: int = 10) -> str:
    """How close the planned full-text results are to exact BM25 over the OR of every query term."""
    engine = searcher.index.engine if searcher.store.aux.dialect == "postgres" else None
    same, ratios = 0, []
    for query in asked:
        terms = query_terms(query)
        with searcher.store.aux.reading("bench") as conn:
            best = _exact(conn, terms, k, engine)
            scores = dict(_exact(conn, terms, 10**9, engine)) if best else {}
        if not best:
            continue
        got = [c.chunk for c in searcher.index.full_text(query, k, None)]
        same += sum(scores.get(chunk, 0.0) >= best[-1][1] - 1e-9 for chunk in got) == len(best)
        ratios.append(sum(scores.get(chunk, 0.0) for chunk in got) / sum(score for _, score in best))
    return (
        f"agreement with exact BM25 (top {k}): {same}/{len(ratios)} queries identical up to ties; "
        f"BM25 mass of the hits {100 * statistics.mean(ratios):.1f}% of the exact top {k}'s (min "
        f"{100 * min(ratios):.0f}%)"
    )


def _exact(conn: Any, terms: list[str], limit: int, engine: Any) -> list[tuple[int, float]]:
    """Every passage of every term scored (FTS5's BM25, or the PostgreSQL engine's formula), the best first."""
    if engine is None:
        sql = (
            "SELECT rowid, -rank FROM search_fts WHERE search_fts MATCH ? AND rank MATCH 'bm25(1.0, 0.5)' "
            "ORDER BY rank LIMIT ?"
        )
        return [(int(c), float(s)) for c, s in conn.execute(sql, (match_expression(terms), limit)).fetchall()]
    from memdir.search._pg import _Terms, tsquery_terms

    known = _Terms(conn, tsquery_terms(terms), engine._known)
    every = list(known.query)
    return engine._score(conn, known, every, known.any_of(every), limit, None) if every else []


def passages(searcher: Searcher) -> list[tuple[str, str]]:
    with searcher.store.aux.reading("bench") as conn:
        rows: list[tuple[str, str]] = conn.execute(
            "SELECT text_sha, min(text) FROM search_chunks WHERE ns = ? GROUP BY text_sha", (searcher.index.ns,)
        ).fetchall()
    return rows


def embed_rate(provider: LocalModel, texts: list[str]) -> tuple[float, np.ndarray]:
    started = time.perf_counter()
    vectors = provider.embed(texts)
    return len(texts) / (time.perf_counter() - started), vectors


def fake_fill(searcher: Searcher, provider: LocalModel, sample: int) -> tuple[float, int]:
    """Embed ``sample`` passages for real, give the rest copies; return (passages per second, passages)."""
    rows = passages(searcher)
    provider.embed([text for _, text in rows[:300]])  # warm: torch imported, weights cast
    rate, real = embed_rate(provider, [text for _, text in rows[:sample]])
    numpy_rate, _ = embed_rate(provider, [text for _, text in rows[sample : sample + 250]])  # < BULK: numpy
    print(f"embedding (numpy, batches under 256): {numpy_rate:.0f} passages/s", flush=True)
    rng = np.random.default_rng(0)
    index = searcher.index
    with index.store.aux.transaction("bench") as conn:
        conn.executemany(
            "INSERT INTO search_vectors (ns, model, text_sha, vector) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (ns, model, text_sha) DO UPDATE SET vector = excluded.vector",
            ((index.ns, provider.name, sha, real[rng.integers(len(real))].tobytes()) for sha, _ in rows),
        )
    index._bump()
    return rate, len(rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--embed-sample", type=int, default=2_000)
    parser.add_argument("--embed-all", action="store_true", help="embed every passage (minutes per 100k files)")
    parser.add_argument("--store", help="a store URL (an empty PostgreSQL database) instead of a temporary SQLite file")
    parser.add_argument("--analyze", action="store_true", help="PostgreSQL: VACUUM ANALYZE the index once built")
    args = parser.parse_args(argv)
    corpus = Corpus()
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(args.store, namespace="bench") if args.store else SQLiteStore(Path(tmp) / "bench.db")
        print(f"populate {args.files:,} files: {populate(store, corpus, args.files):.1f} s", flush=True)
        searcher = Searcher(store, settings={"provider": "none"})
        started = time.perf_counter()
        searcher.reindex(embed=False)
        print(f"index (full-text) {args.files:,} files: {time.perf_counter() - started:.1f} s", flush=True)
        if args.analyze and store.aux.dialect == "postgres":
            analyze(args.store)
        asked = corpus.queries(args.queries)
        report("full-text", latencies(searcher, asked, "fts"))
        print(agreement(searcher, asked), flush=True)
        provider = LocalModel()
        hybrid = Searcher(store, settings={}, provider=provider)
        if args.embed_all:
            started = time.perf_counter()
            count = hybrid.vectors().fill()
            took = time.perf_counter() - started
            print(f"embedding every passage: {count:,} in {took / 60:.1f} min ({count / took:.0f} passages/s)")
        else:
            rate, count = fake_fill(searcher, provider, args.embed_sample)
            print(
                f"embedding (bulk, as reindex does): {rate:.0f} passages/s; all {count:,} passages would take "
                f"{math.ceil(count / rate / 60)} min",
                flush=True,
            )
        started = time.perf_counter()
        hybrid.search(asked[0], mode="hybrid")
        print(f"first hybrid search (loads {count:,} vectors): {time.perf_counter() - started:.1f} s", flush=True)
        report("hybrid", latencies(hybrid, asked, "hybrid"))
        store.write("/memories/new.md", b"# New\n- the quarterly budget review moved to Friday\n")
        started = time.perf_counter()
        hybrid.search("budget review", mode="hybrid")
        print(f"hybrid search right after a write: {time.perf_counter() - started:.2f} s", flush=True)
        store.close()


def analyze(url: str) -> None:
    import psycopg

    started = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as pg:
        pg.execute("VACUUM ANALYZE search_chunks")
    print(f"VACUUM ANALYZE search_chunks: {time.perf_counter() - started:.1f} s", flush=True)


def report(name: str, took: list[float]) -> None:
    took.sort()
    p95 = took[int(len(took) * 0.95) - 1]
    print(f"{name}: p50 {statistics.median(took):.2f} ms, p95 {p95:.2f} ms, max {took[-1]:.2f} ms", flush=True)


if __name__ == "__main__":
    main()
