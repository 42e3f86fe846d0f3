"""The full-text engine on PostgreSQL: the FTS5 engine's counterpart for a store whose auxiliary database is
PostgreSQL (`PostgresStore`), so every server on that database searches one index, current for all of them.

Tables (migration set ``memdir-search``, PostgreSQL's) are FTS5's without the FTS5 table: a passage's words are a
``tsvector`` column of ``search_chunks`` (``words``, GIN-indexed), the passage weighted A and the file's context
(its name and first line) weighted B, as FTS5's two columns weigh 1.0 and 0.5. Words are prepared in Python as
for FTS5 (`_text.plain_words`: lower-cased, accents folded, split where ``unicode61`` splits, CJK runs as
bigrams), so one text gives the same words on both engines; PostgreSQL only stems them (the ``memdir_english``
configuration: snowball English, no stop words, as FTS5's porter tokenizer keeps every word). Path columns are
``COLLATE "C"``: a directory is a key range, which only byte order keeps contiguous.

Ranking. PostgreSQL has no BM25, and its index no document frequencies. A query term's passage count (df) is
the share of passages ANALYZE found holding it when it is one of the ~1,000 most common lexemes (its statistics,
which autovacuum keeps), else counted through the GIN index (at most `DF_SAMPLE`, extrapolated by id as for FTS5:
cheap, since a word ANALYZE does not list is rare). The same plan as FTS5's is chosen (`_plan.choose`: rare terms
are ranked, common ones only add their idf), with `BUDGET_SHARE` of its budgets, and a passage is scored with
BM25's formula::

    score = Σ idf(t) · f(t)·(k1 + 1) / (f(t) + k1·(1 - b + b·size/avgsize))  (k1 = 1.2, b = 0.75, as FTS5)

where ``f(t)`` is ``ts_rank_cd`` of the passage for ``t`` alone: for one term, the sum of its occurrences'
weights (1 in the passage, 0.5 in the context), which is FTS5's weighted term frequency; ``size`` is the
passage's words and the context's, stored with it, and ``avgsize`` the mean over the newest passages. (Plain
``ts_rank_cd`` over the whole query would weigh every term alike: idf is most of what makes BM25 good.)
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..store._migrations import Migrations, Schema
from . import _plan
from ._engine import File, Scored, prefix_clause, text_sha
from ._text import MAX_WORD, fold, plain_words

if TYPE_CHECKING:
    from ..paths import MemoryPath
    from ..store._db import AuxConnection

__all__ = ["PgEngine", "migrations", "tsquery_terms"]

migrations = Migrations("memdir-search", dialect="postgres")


@migrations("0001_full_text")
def _initial(schema: Schema) -> None:
    schema.script(
        """
        CREATE TABLE search_state (
            ns TEXT COLLATE "C" PRIMARY KEY,
            applied BIGINT NOT NULL DEFAULT 0,
            generation BIGINT NOT NULL DEFAULT 0
        );
        CREATE TABLE search_files (
            ns TEXT COLLATE "C" NOT NULL,
            path TEXT COLLATE "C" NOT NULL,
            version BIGINT NOT NULL,
            sha256 TEXT,
            PRIMARY KEY (ns, path)
        );
        CREATE TABLE search_chunks (
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            ns TEXT COLLATE "C" NOT NULL,
            path TEXT COLLATE "C" NOT NULL,
            first_line INTEGER NOT NULL,
            last_line INTEGER NOT NULL,
            text TEXT NOT NULL,
            text_sha TEXT NOT NULL,
            words TSVECTOR NOT NULL,
            size INTEGER NOT NULL
        );
        CREATE INDEX search_chunks_by_path ON search_chunks (ns, path);
        CREATE INDEX search_chunks_newest ON search_chunks (ns, id);
        CREATE INDEX search_chunks_words ON search_chunks USING gin (words);
        CREATE TABLE search_vectors (
            ns TEXT COLLATE "C" NOT NULL,
            model TEXT COLLATE "C" NOT NULL,
            text_sha TEXT COLLATE "C" NOT NULL,
            vector BYTEA NOT NULL,
            PRIMARY KEY (ns, model, text_sha)
        );
        CREATE TEXT SEARCH DICTIONARY memdir_english_stem (TEMPLATE = snowball, Language = english);
        CREATE TEXT SEARCH CONFIGURATION memdir_english (COPY = simple);
        ALTER TEXT SEARCH CONFIGURATION memdir_english
            ALTER MAPPING FOR asciiword, word, numword, asciihword, hword, numhword, hword_asciipart, hword_part,
                hword_numpart
            WITH memdir_english_stem;
        """
    )


@migrations("0002_line_passages")
def _line_passages(schema: Schema) -> None:
    # As on SQLite (`_fts5._line_passages`): single-line passages with a date; rebuilt from the log.
    schema.script(
        """
        ALTER TABLE search_chunks ADD COLUMN day INTEGER;
        CREATE INDEX search_chunks_by_day ON search_chunks (ns, day) WHERE day IS NOT NULL;
        DELETE FROM search_chunks;
        DELETE FROM search_files;
        DELETE FROM search_vectors;
        UPDATE search_state SET applied = 0, generation = generation + 1;
        """
    )


_CONFIG = "'memdir_english'"
_WEIGHTS = "'{0, 0, 0.5, 1}'::float4[]"  # ts_rank_cd's weights of D, C, B (the context), A (the passage)
_K1, _B = 1.2, 0.75  # BM25's parameters, FTS5's values
_AVERAGE_OF = 1_000  # the newest passages whose mean size stands for every passage's

# The share of `_plan`'s budgets this engine ranks: a passage costs PostgreSQL ~2-4 µs to score (a row fetched
# and rechecked, ts_rank_cd per ranked term) where FTS5 spends ~1 µs. Half the budgets: ~25% less database CPU
# per search over 100,000 files, for 99.3% of exact BM25's score mass instead of 99.5% (docs/benchmarks.md). The
# database's CPU is what many servers share.
BUDGET_SHARE = 0.5
_STATS_SECONDS = 60.0  # how long the common words' shares read from ANALYZE's statistics are used
_LEXEMES_KEPT = 50_000  # query terms whose tsquery is remembered per engine

# ANALYZE's statistics of the words column (autovacuum keeps them): the ~1,000 most common lexemes and the share of
# passages holding each (``most_common_elem_freqs`` has a few more entries at its end, the minimum and maximum
# share among others: not per lexeme).
_COMMON_SQL = """
SELECT s.most_common_elems::text::text[], s.most_common_elem_freqs
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_stats s ON s.schemaname = n.nspname AND s.tablename = c.relname AND s.attname = 'words'
WHERE c.oid = to_regclass('search_chunks')
"""

_LEXEMES_SQL = (
    f"SELECT to_tsquery({_CONFIG}, term)::text FROM unnest(?::text[]) WITH ORDINALITY AS u(term, n) ORDER BY n"
)

# The passages in all (PostgreSQL's live row count and ANALYZE's estimate: both may lag a little, which only
# moves idf), the id span, the mean passage size (of the newest ones: reading every row's would cost more than
# the search) and, for each tsquery given, a count of its passages up to a limit and the last id counted.
_SAMPLE_SQL = f"""
SELECT (SELECT greatest(s.n_live_tup, c.reltuples::bigint) FROM pg_class c
            JOIN pg_stat_user_tables s ON s.relid = c.oid WHERE c.oid = to_regclass('search_chunks')),
       (SELECT min(id) FROM search_chunks), (SELECT max(id) FROM search_chunks),
       (SELECT avg(size) FROM (SELECT size FROM search_chunks ORDER BY id DESC LIMIT {_AVERAGE_OF}) AS newest),
       ARRAY(
           SELECT ARRAY[s.hits, coalesce(s.last, 0)]
           FROM unnest(?::tsquery[]) WITH ORDINALITY AS t(q, n)
           CROSS JOIN LATERAL (
               SELECT count(*) AS hits, max(id) AS last
               FROM (SELECT id FROM search_chunks c WHERE c.words @@ t.q LIMIT ?) AS sample
           ) AS s
           ORDER BY t.n
       )
"""


def tsquery_terms(terms: list[str]) -> list[str]:
    """A query's terms (`_text.query_terms`) as tsquery operands: folded as the index's words are, each one quoted
    (so nothing in it is tsquery syntax), ``:*`` for a prefix; words the index leaves out are left out."""
    quoted = []
    for term in terms:
        prefix = term.endswith("*")
        body = fold(term[:-1] if prefix else term)
        if 0 < len(body) <= MAX_WORD:
            quoted.append("'" + body.replace("\\", "\\\\").replace("'", "''") + "'" + (":*" if prefix else ""))
    return list(dict.fromkeys(quoted))


class _Statistics:
    """What the engine remembers between queries: each query term's tsquery (stemming does not change), and
    ANALYZE's shares of the most common lexemes (refreshed every `_STATS_SECONDS`)."""

    def __init__(self) -> None:
        self.lexemes: dict[str, str] = {}
        self.common: dict[str, float] = {}
        self.expires = float("-inf")

    def tsqueries(self, conn: AuxConnection, terms: list[str]) -> dict[str, str]:
        # Searches of one store share this from several threads: read each entry once, replace it whole.
        found = {term: self.lexemes.get(term) for term in terms}
        missing = [term for term, query in found.items() if query is None]
        if missing:
            rows = conn.execute(_LEXEMES_SQL, (missing,)).fetchall()
            made = dict(zip(missing, (str(r[0]) for r in rows), strict=True))
            if len(self.lexemes) > _LEXEMES_KEPT:
                self.lexemes = {}
            self.lexemes.update(made)
            found.update(made)
        return {term: query or "" for term, query in found.items()}

    def shares(self, conn: AuxConnection) -> dict[str, float]:
        if time.monotonic() >= self.expires:
            row = conn.execute(_COMMON_SQL).fetchone()
            words, shares = (row[0] or [], row[1] or []) if row else ([], [])
            self.common = dict(zip(words, shares[: len(words)], strict=True))
            self.expires = time.monotonic() + _STATS_SECONDS
        return self.common


class _Terms:
    """The query's terms as PostgreSQL reads them: their tsquery, their idf, and the plan.

    A term's passage count (df) is ANALYZE's share of passages holding it when it is one of the most common
    lexemes (counting those through the index is what costs: a word in 100,000 passages takes ~10 ms), else at
    most `DF_SAMPLE` of its passages are counted, then extrapolated by id as for FTS5 (`_plan.extrapolate`); a
    word ANALYZE does not list is rare, so that is cheap. Before the first ANALYZE, every term is counted."""

    def __init__(self, conn: AuxConnection, terms: list[str], known: _Statistics) -> None:
        queries = {term: q for term, q in known.tsqueries(conn, terms).items() if q}  # '': no lexeme, no match
        common = known.shares(conn)
        shares = {term: common.get(_lexeme(q), -1.0) for term, q in queries.items()}
        counted = [term for term in queries if shares[term] < 0]
        sampled = [queries[term] for term in counted]
        row = conn.execute(_SAMPLE_SQL, (sampled, _plan.DF_SAMPLE)).fetchone()
        span = (int(row[1] or 0), int(row[2] or 0))
        dfs = {
            term: _plan.extrapolate(int(hits), int(last), span)
            for term, (hits, last) in zip(counted, row[4], strict=True)
        }
        # The statistics lag behind a fresh table: never fewer passages than a df says there are.
        rows = max(int(row[0] or 0), *dfs.values(), 1) if row[0] and row[0] > 0 else span[1] - span[0] + 1
        dfs.update((term, int(share * rows)) for term, share in shares.items() if share >= 0)
        self.average = float(row[3] or 1.0)  # passage size (words), for BM25's length norm
        self.query = queries
        self.idf = {term: _plan.idf(dfs[term], rows) for term in queries}
        self.plan = _plan.choose(list(queries), [dfs[term] for term in queries], rows, span, share=BUDGET_SHARE)

    def any_of(self, terms: list[str]) -> str:
        return " | ".join(f"({self.query[term]})" for term in terms)

    def all_of(self, terms: list[str]) -> str:
        return " & ".join(f"({self.query[term]})" for term in terms)


def _lexeme(query: str) -> str:
    """The lexeme of a one-word tsquery (``'hike'`` -> ``hike``); '' for anything else (a prefix, a phrase)."""
    if len(query) > 1 and query[0] == query[-1] == "'" and "'" not in query[1:-1].replace("''", ""):
        return query[1:-1].replace("''", "'").replace("\\\\", "\\")
    return ""


class PgEngine:
    """PostgreSQL full-text search over one namespace's passages (`memdir.search._engine.TextEngine`)."""

    migrations = migrations

    def __init__(self, ns: str) -> None:
        self.ns = ns
        self._known = _Statistics()

    # -- writing ------------------------------------------------------------------------------------------------

    def forget(self, conn: AuxConnection, paths: list[str] | None) -> None:
        if paths is None:
            conn.execute("DELETE FROM search_chunks WHERE ns = ?", (self.ns,))
        else:
            conn.execute("DELETE FROM search_chunks WHERE ns = ? AND path = ANY(?::text[])", (self.ns, paths))

    def add(self, conn: AuxConnection, files: list[File]) -> None:
        rows = []
        for path, chunks in files:
            for first, last, text, context, day in chunks:
                about = plain_words(context)
                kept = text.replace("\x00", "\ufffd")  # a PostgreSQL text value cannot hold NUL
                words = plain_words(text)
                size = words.count(" ") + about.count(" ") + 2  # the words of both, as FTS5 counts a row's tokens
                rows.append((self.ns, path, first, last, kept, text_sha(kept), words, about, size, day))
        if rows:  # one batch: psycopg pipelines it, one round trip rather than one per passage
            conn.executemany(
                "INSERT INTO search_chunks (ns, path, first_line, last_line, text, text_sha, words, size, day) VALUES "
                f"(?, ?, ?, ?, ?, ?, setweight(to_tsvector({_CONFIG}, ?), 'A') || "
                f"setweight(to_tsvector({_CONFIG}, ?), 'B'), ?, ?)",
                rows,
            )

    # -- ranking ------------------------------------------------------------------------------------------------

    def rank(self, conn: AuxConnection, terms: list[str], limit: int, prefix: MemoryPath | None) -> list[Scored]:
        found = tsquery_terms(terms)
        if not found:
            return []
        known = _Terms(conn, found, self._known)
        how = known.plan
        if not how.all_terms:
            return []
        if how.over_budget:
            return self._newest(conn, known, limit, prefix)
        # Every passage of the ranked terms is scored (at most ~the budget), the common terms adding their idf.
        best = self._score(conn, known, how.ranked, known.any_of(how.ranked), limit, prefix)
        if how.common and len(best) < limit:
            best += self._fill(conn, known, {chunk for chunk, _ in best}, limit - len(best), prefix)
        return best

    def file_counts(self, conn: AuxConnection, term: str, prefix: MemoryPath | None, cap: int) -> dict[str, int] | None:
        quoted = tsquery_terms([term])
        if not quoted:
            return {}
        where, params = prefix_clause(prefix)
        rows = conn.execute(
            "SELECT s.path, count(*) FROM (SELECT c.path FROM search_chunks c "
            f"WHERE c.words @@ to_tsquery({_CONFIG}, ?) AND c.ns = ?{where} LIMIT ?) AS s GROUP BY s.path",
            (quoted[0], self.ns, *params, cap + 1),
        ).fetchall()
        counts = {str(path): int(count) for path, count in rows}
        return None if sum(counts.values()) > cap else counts

    def _newest(self, conn: AuxConnection, known: _Terms, limit: int, prefix: MemoryPath | None) -> list[Scored]:
        """Every term is common: rank only the passages from the rarest term's newest ~budget on."""
        how = known.plan
        if len(how.all_terms) > 1:
            every = known.all_of(how.all_terms)
            both = self._score(conn, known, how.all_terms, every, limit, prefix, since=how.newest_from)
            if len(both) >= limit:
                return both  # enough passages hold every term: the OR would rank them first anyway
        pool = max(3 * limit, 30)  # room for the common terms to reorder the rarest one's best passages
        rarest = known.any_of(how.ranked)
        newest = self._score(conn, known, how.ranked, rarest, pool, prefix, since=how.newest_from)
        if len(newest) < limit:  # too few recent ones (below a prefix holding older notes): take them all
            newest = self._score(conn, known, how.ranked, rarest, pool, prefix)
        return newest[:limit]

    def _score(
        self,
        conn: AuxConnection,
        known: _Terms,
        ranked: list[str],
        match: str,
        limit: int,
        prefix: MemoryPath | None,
        *,
        since: int = 0,
    ) -> list[Scored]:
        """The best passages matching the tsquery ``match`` in this namespace (below ``prefix``, from id ``since``
        on): ``ranked`` terms scored by BM25's formula, every other term adding its idf where present."""
        others = [term for term in known.query if term not in ranked]
        columns = [f"ts_rank_cd({_WEIGHTS}, c.words, ?::tsquery) AS f{n}" for n in range(len(ranked))]
        columns += [f"(c.words @@ ?::tsquery)::int::float8 AS p{n}" for n in range(len(others))]
        # BM25's length norm once per passage; float literals (`::float8`): PostgreSQL reads 0.75 as numeric,
        # whose arithmetic is several times slower.
        norm = f"{_K1 * (1 - _B)!r}::float8 + {_K1 * _B / max(known.average, 1.0)!r}::float8 * c.size AS norm"
        score = [f"{known.idf[t] * (_K1 + 1)!r}::float8 * s.f{n} / (s.f{n} + s.norm)" for n, t in enumerate(ranked)]
        score += [f"{known.idf[t]!r}::float8 * s.p{n}" for n, t in enumerate(others)]
        where, params = prefix_clause(prefix)
        # OFFSET 0 keeps the inner query a query of its own: inlined, each ts_rank_cd would run twice per row.
        sql = (
            f"SELECT s.id, {' + '.join(score)} AS score FROM ("
            f"SELECT c.id, {norm}, {', '.join(columns)} FROM search_chunks c "
            f"WHERE c.words @@ ?::tsquery AND c.ns = ? AND c.id >= ?{where} OFFSET 0"
            ") AS s ORDER BY score DESC, s.id DESC LIMIT ?"
        )
        values: list[Any] = [known.query[t] for t in ranked] + [known.query[t] for t in others]
        rows = conn.execute(sql, (*values, match, self.ns, since, *params, limit)).fetchall()
        return [(int(r[0]), float(r[1])) for r in rows]

    def _fill(
        self, conn: AuxConnection, known: _Terms, seen: set[int], limit: int, prefix: MemoryPath | None
    ) -> list[Scored]:
        """The newest passages holding a common term (scored by the idf of those they hold), ``seen`` excepted:
        ranking them by BM25 is what the plan avoids, and they all score below the ranked ones."""
        common = [term for term, _ in known.plan.common]
        score = " + ".join(f"{known.idf[t]!r}::float8 * (c.words @@ ?::tsquery)::int" for t in common)
        where, params = prefix_clause(prefix)
        sql = (
            f"SELECT c.id, {score} FROM search_chunks c WHERE c.words @@ ?::tsquery AND c.ns = ?{where} "
            "ORDER BY c.id DESC LIMIT ?"
        )
        values = [known.query[t] for t in common]
        rows = conn.execute(sql, (*values, known.any_of(common), self.ns, *params, 4 * limit + len(seen))).fetchall()
        extra = sorted(((int(r[0]), float(r[1])) for r in rows if r[0] not in seen), key=lambda item: -item[1])
        return extra[:limit]
