"""The full-text engine on SQLite: FTS5 with BM25 (every backend whose auxiliary database is SQLite).

Tables (migration set ``memdir-search``, SQLite's; rows carry the namespace, one database may serve several):

- ``search_state``: per namespace, the last version applied.
- ``search_files``: per path, the version and SHA-256 indexed (``sha256`` NULL: deleted).
- ``search_chunks``: the passages (lines ``first_line``..``last_line`` of ``path``), their text and their date
  (``day``, an ordinal: `_dates`; NULL when none is written).
- ``search_fts``: FTS5 over the passages (rowid = chunk id): ``body`` is the passage, ``context`` the file's
  name and first line (its title, or a date heading) and the passage's section headings, which a passage often
  needs to be found.
- ``search_vectors``: embeddings for hybrid search, by model and SHA-256 of the passage text (see `_semantic`).

Ranking follows a query plan (`_plan`): on a large index, terms found in thousands of passages only adjust the
candidates.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..store._migrations import Migrations, Schema
from ._engine import File, Scored, below, prefix_clause, text_sha
from ._plan import RANKED_LIMIT, Plan, plan
from ._text import index_text, match_expression

if TYPE_CHECKING:
    from ..paths import MemoryPath
    from ..store._db import AuxConnection

__all__ = ["CONTEXT_WEIGHT", "Fts5Engine", "migrations"]

CONTEXT_WEIGHT = 0.5  # BM25 weight of the file-context column against the passage's 1.0

migrations = Migrations("memdir-search", dialect="sqlite")


@migrations("0001_full_text")
def _initial(schema: Schema) -> None:
    schema.script(
        """
        CREATE TABLE search_state (
            ns TEXT PRIMARY KEY,
            applied INTEGER NOT NULL DEFAULT 0,
            generation INTEGER NOT NULL DEFAULT 0
        ) WITHOUT ROWID;
        CREATE TABLE search_files (
            ns TEXT NOT NULL,
            path TEXT NOT NULL,
            version INTEGER NOT NULL,
            sha256 TEXT,
            PRIMARY KEY (ns, path)
        ) WITHOUT ROWID;
        CREATE TABLE search_chunks (
            id INTEGER PRIMARY KEY,
            ns TEXT NOT NULL,
            path TEXT NOT NULL,
            first_line INTEGER NOT NULL,
            last_line INTEGER NOT NULL,
            text TEXT NOT NULL,
            text_sha TEXT NOT NULL
        );
        CREATE INDEX search_chunks_by_path ON search_chunks (ns, path);
        CREATE VIRTUAL TABLE search_fts USING fts5(
            body, context, tokenize = 'porter unicode61 remove_diacritics 2'
        );
        CREATE TABLE search_vectors (
            ns TEXT NOT NULL,
            model TEXT NOT NULL,
            text_sha TEXT NOT NULL,
            vector BLOB NOT NULL,
            PRIMARY KEY (ns, model, text_sha)
        ) WITHOUT ROWID;
        """
    )


@migrations("0002_line_passages")
def _line_passages(schema: Schema) -> None:
    # Passages became single lines with their section as context, and each carries a date: the index is
    # rebuilt from the change log by the next search (as `memdir reindex` would), embeddings included.
    schema.script(
        """
        ALTER TABLE search_chunks ADD COLUMN day INTEGER;
        CREATE INDEX search_chunks_by_day ON search_chunks (ns, day) WHERE day IS NOT NULL;
        DELETE FROM search_fts;
        DELETE FROM search_chunks;
        DELETE FROM search_files;
        DELETE FROM search_vectors;
        UPDATE search_state SET applied = 0, generation = generation + 1;
        """
    )


_RANK = f"bm25(1.0, {CONTEXT_WEIGHT})"
_RANKED_SQL = (
    "SELECT rowid, rank FROM search_fts WHERE search_fts MATCH ? AND rowid >= ? AND rank MATCH ? ORDER BY rank LIMIT ?"
)
_CACHE_KIB = 64 * 1024  # page cache of a searching connection (SQLite's default is 2 MiB)
_MMAP_BYTES = 256 * 1024 * 1024


class Fts5Engine:
    """FTS5 over one namespace's passages (`memdir.search._engine.TextEngine`)."""

    migrations = migrations

    def __init__(self, ns: str) -> None:
        self.ns = ns

    # -- writing ------------------------------------------------------------------------------------------------

    def forget(self, conn: AuxConnection, paths: list[str] | None) -> None:
        if paths is None:
            where, params = "ns = ?", [self.ns]
        else:
            where, params = f"ns = ? AND path IN ({','.join('?' * len(paths))})", [self.ns, *paths]
        conn.execute(f"DELETE FROM search_fts WHERE rowid IN (SELECT id FROM search_chunks WHERE {where})", params)
        conn.execute(f"DELETE FROM search_chunks WHERE {where}", params)

    def add(self, conn: AuxConnection, files: list[File]) -> None:
        for path, chunks in files:
            for first, last, text, context, day in chunks:
                (chunk,) = conn.execute(
                    "INSERT INTO search_chunks (ns, path, first_line, last_line, text, text_sha, day) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
                    (self.ns, path, first, last, text, text_sha(text), day),
                ).fetchone()
                conn.execute(
                    "INSERT INTO search_fts (rowid, body, context) VALUES (?, ?, ?)",
                    (chunk, index_text(text), index_text(context)),
                )

    # -- ranking ------------------------------------------------------------------------------------------------

    def rank(self, conn: AuxConnection, terms: list[str], limit: int, prefix: MemoryPath | None) -> list[Scored]:
        _tune(conn)
        how = plan(conn, terms)
        if how.exact:
            return self._ranked_ids(conn, how.ranked_expression, limit, prefix)
        if not how.over_budget:
            # Every passage of the ranked terms is scored (at most ~the budget), so a passage that BM25 ranks
            # low on the rare terms but that holds the common ones too is not lost.
            every = conn.execute(_RANKED_SQL, (how.ranked_expression, 0, _RANK, 2 * RANKED_LIMIT)).fetchall()
            found = self._mine(conn, _adjust(conn, how, [(c, -s) for c, s in every]), limit, prefix)
            return found if len(found) >= limit else self._fill(conn, how, found, limit, prefix)
        return self._newest(conn, how, limit, prefix)

    def file_counts(self, conn: AuxConnection, term: str, prefix: MemoryPath | None, cap: int) -> dict[str, int] | None:
        where, params = prefix_clause(prefix, "path")
        # FTS5 first, then the ids looked up (`+ns`: by rowid): joined, SQLite may walk the namespace's passages
        # and test each against the MATCH, ~1 s on 150,000 passages. The cap counts every namespace's passages.
        rows = conn.execute(
            "SELECT path, count(*) FROM search_chunks WHERE id IN "
            f"(SELECT rowid FROM search_fts WHERE search_fts MATCH ? LIMIT ?) AND +ns = ?{where} GROUP BY path",
            (match_expression([term]), cap + 1, self.ns, *params),
        ).fetchall()
        counts = {str(path): int(count) for path, count in rows}
        return None if sum(counts.values()) > cap else counts

    def _newest(self, conn: AuxConnection, how: Plan, limit: int, prefix: MemoryPath | None) -> list[Scored]:
        """Every term is common: rank only the passages from the rarest term's newest ~budget on."""
        if len(how.all_terms) > 1:
            both = self._ranked_ids(conn, how.and_expression(), limit, prefix, since=how.newest_from)
            if len(both) >= limit:
                return both  # enough passages hold every term: the OR would rank them first anyway
        pool = max(3 * limit, 30)  # room for the common terms to reorder the rarest one's best passages
        newest = self._ranked_ids(conn, how.ranked_expression, pool, prefix, since=how.newest_from)
        if len(newest) < limit:  # too few recent ones (below a prefix holding older notes): take them all
            newest = self._ranked_ids(conn, how.ranked_expression, pool, prefix)
        return _adjust(conn, how, newest)[:limit] if how.common else newest[:limit]

    def _fill(
        self, conn: AuxConnection, how: Plan, found: list[Scored], limit: int, prefix: MemoryPath | None
    ) -> list[Scored]:
        """Complete ``found`` with the newest passages holding a common term (each scored by the idf of those
        it holds): ranking them by BM25 is what the plan avoids, and they all score below ``found``."""
        seen = {chunk for chunk, _ in found}
        extra: dict[int, float] = {}
        for term, idf in how.common:
            rows = conn.execute(
                "SELECT rowid FROM search_fts WHERE search_fts MATCH ? ORDER BY rowid DESC LIMIT ?",
                (match_expression([term]), 4 * limit),
            )
            for (chunk,) in rows:
                if chunk not in seen:
                    extra[chunk] = extra.get(chunk, 0.0) + idf
        more = sorted(extra.items(), key=lambda item: -item[1])
        return found + self._mine(conn, more, limit - len(found), prefix)

    def _mine(self, conn: AuxConnection, scored: list[Scored], limit: int, prefix: MemoryPath | None) -> list[Scored]:
        """The best ``limit`` of ``scored`` (best first) in this namespace and below ``prefix``."""
        key = None if prefix is None or prefix.is_root else prefix.key
        found: list[Scored] = []
        step = max(4 * limit, 50)
        for start in range(0, len(scored), step):
            part = scored[start : start + step]
            marks = ",".join("?" * len(part))
            paths = dict(
                conn.execute(
                    f"SELECT id, path FROM search_chunks WHERE id IN ({marks}) AND +ns = ?",
                    (*[chunk for chunk, _ in part], self.ns),
                ).fetchall()
            )
            found += [(c, v) for c, v in part if c in paths and (key is None or below(paths[c], key))]
            if len(found) >= limit:
                break
        return found[:limit]

    def _ranked_ids(
        self, conn: AuxConnection, expression: str, limit: int, prefix: MemoryPath | None, *, since: int = 0
    ) -> list[Scored]:
        """The best (chunk id, BM25) for an FTS5 expression in this namespace (and below ``prefix``), among the
        passages from rowid ``since`` on (FTS5 seeks there: the passages before it are not scored)."""
        if prefix is None or prefix.is_root:
            found = self._ranked_first(conn, expression, limit, since)
            if found is not None:
                return found
        where, params = prefix_clause(prefix)
        sql = (
            f"SELECT c.id, bm25(search_fts, 1.0, {CONTEXT_WEIGHT}) AS score "
            "FROM search_fts JOIN search_chunks c ON c.id = search_fts.rowid "
            f"WHERE search_fts MATCH ? AND search_fts.rowid >= ? AND c.ns = ?{where} ORDER BY score LIMIT ?"
        )
        rows = conn.execute(sql, (expression, since, self.ns, *params, limit)).fetchall()
        return [(int(r[0]), -float(r[1])) for r in rows]

    def _ranked_first(self, conn: AuxConnection, expression: str, limit: int, since: int) -> list[Scored] | None:
        """Rank in FTS5 alone (its own sorted ``rank`` path: about twice as fast as ``ORDER BY bm25(...)``,
        four times as fast as ranking through the join), then keep this namespace's passages. None when other
        namespaces crowd this one out of the top rows (the caller then runs the joined query)."""
        ranked = conn.execute(_RANKED_SQL, (expression, since, _RANK, limit * 4)).fetchall()
        if not ranked:
            return []
        marks = ",".join("?" * len(ranked))
        # `+ns`: look the ids up by rowid; SQLite would otherwise walk the namespace's (ns, path) index.
        mine = {
            r[0]
            for r in conn.execute(
                f"SELECT id FROM search_chunks WHERE id IN ({marks}) AND +ns = ?", (*[r[0] for r in ranked], self.ns)
            )
        }
        found = [(int(chunk), -float(score)) for chunk, score in ranked if chunk in mine]
        if len(found) < limit and len(ranked) == limit * 4:
            return None
        return found[:limit]


def _tune(conn: AuxConnection) -> None:
    """A larger page cache and memory-mapped reads on a connection that searches: a query over 100,000 files
    touches tens of MiB of index, which SQLite's 2 MiB default cache re-reads through system calls each time.
    Checked each search (one pragma read) because the connection is shared with the store's other features."""
    if conn.execute("PRAGMA cache_size").fetchone()[0] != -_CACHE_KIB:
        conn.execute(f"PRAGMA cache_size = -{_CACHE_KIB}")
        conn.execute(f"PRAGMA mmap_size = {_MMAP_BYTES}")


def _adjust(conn: AuxConnection, how: Plan, ranked: list[Scored]) -> list[Scored]:
    """Add each common term's idf to the candidates that contain it; best first (ties keep BM25 order)."""
    scores = dict(ranked)
    low, high = min(scores), max(scores)
    for term, idf in how.common:
        rows = conn.execute(
            "SELECT rowid FROM search_fts WHERE search_fts MATCH ? AND rowid BETWEEN ? AND ?",
            (how.presence_expression(term), low, high),
        )
        for (chunk,) in rows:
            if chunk in scores:
                scores[chunk] += idf
    return sorted(scores.items(), key=lambda item: -item[1])
