"""The full-text index: a view of the store's change log, kept in the store's auxiliary database.

Every backend records each change as a `Version` (`Store.log`), so the index needs no hook in any write
path: before answering, it reads the versions after the last one it applied and re-indexes the files they
touched (`SearchIndex.refresh`), which costs one indexed query when nothing changed. ``memdir reindex`` is
the same with the namespace's rows dropped first.

Tables (migration set ``memdir-search``; rows carry the namespace, one database may serve several):

- ``search_state``: per namespace, the last version applied.
- ``search_files``: per path, the version and SHA-256 indexed (``sha256`` NULL: deleted). A change is
  applied only over an older one, so two processes catching up at once, in any order, end in the same state.
- ``search_chunks``: the passages (lines ``first_line``..``last_line`` of ``path``) and their text.
- ``search_fts``: FTS5 over the passages (rowid = chunk id): ``body`` is the passage, ``context`` the file's
  name and first line (its title, or a date heading), which a passage often needs to be found.
- ``search_vectors``: embeddings for hybrid search, by model and SHA-256 of the passage text (see `_semantic`).

Edits made outside memdir in a directory store reach the log only when memdir looks at the files, so for that
backend `refresh` first has the store rescan the tree, at most once per `rescan window <RESCAN_SECONDS>`, and
otherwise reads the log as recorded (``store.log(since, rescan=False)``): no walk of the tree per query.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import NotAFileError, NotFoundError
from ..store._base import key_path
from ..store._migrations import Migrations, Schema
from ..store.directory import DirectoryStore
from ._plan import RANKED_LIMIT, Plan, plan
from ._text import chunk_lines, index_text, match_expression, query_terms

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Callable, Iterable

    from ..paths import MemoryPath
    from ..store._base import Store, Version

__all__ = ["CHUNK_LINES", "RESCAN_SECONDS", "Candidate", "SearchIndex", "migrations"]

CHUNK_LINES = 4  # lines per passage (see docs/search.md for the measurements behind it)
RESCAN_SECONDS = 5.0  # the shortest time between two rescans of a directory store for outside edits
_RESCAN_SHARE = 20  # ...and at least this many times the last rescan took, so rescans cost at most ~5%
_BATCH = 500  # files per write transaction while catching up
CONTEXT_WEIGHT = 0.5  # BM25 weight of the file-context column against the passage's 1.0

migrations = Migrations("memdir-search")


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


@dataclass(frozen=True, slots=True)
class Candidate:
    """A passage found by one retriever, before hits are built."""

    chunk: int
    path: str
    first_line: int
    last_line: int
    text: str
    score: float


@dataclass(frozen=True, slots=True)
class _Change:
    path: str
    version: int
    sha256: str | None  # None: the path no longer holds a file


@dataclass(frozen=True, slots=True)
class _Prepared:
    change: _Change
    context: str
    chunks: list[tuple[int, int, str]]  # (first line, last line, text)


class SearchIndex:
    """The search index of one store's namespace."""

    def __init__(self, store: Store, *, chunk_size: int = CHUNK_LINES) -> None:
        self.store = store
        self.ns = store.namespace
        self.chunk_size = chunk_size
        self._scanned = float("-inf")  # monotonic time of the last rescan for outside edits
        self._scan_cost = 0.0
        store.aux.ensure(migrations)

    # -- keeping in step with the store --------------------------------------------------------------------

    def refresh(self, *, rescan: bool | None = None, progress: Callable[[int, int], None] | None = None) -> int:
        """Apply the store's changes since the last refresh; return how many files were re-indexed.

        ``rescan``: have a directory store look for outside edits first (None: when the window has passed).
        """
        scan = self._rescan_due() if rescan is None else rescan
        if not self._keeps_log:
            return self._snapshot(progress) if scan else 0  # no log: compare the files themselves
        if scan:
            self._rescan()
        return self._catch_up(progress)

    @property
    def _keeps_log(self) -> bool:
        return not isinstance(self.store, DirectoryStore) or self.store.keeps_history

    def reindex(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Drop this namespace's index and build it again from the store; return the files indexed."""
        with self.store.aux.transaction("reset the search index") as conn:
            conn.execute(
                "DELETE FROM search_fts WHERE rowid IN (SELECT id FROM search_chunks WHERE ns = ?)", (self.ns,)
            )
            for table in ("search_chunks", "search_files", "search_vectors"):
                conn.execute(f"DELETE FROM {table} WHERE ns = ?", (self.ns,))
            # The generation goes on counting: a process holding a vector matrix built at some generation must
            # never take a rebuilt index that reaches the same number for the one it built from.
            conn.execute("UPDATE search_state SET applied = 0, generation = generation + 1 WHERE ns = ?", (self.ns,))
        return self.refresh(rescan=True, progress=progress)

    def _rescan_due(self) -> bool:
        if not isinstance(self.store, DirectoryStore):
            return False  # every other backend records each change in its log as it is made
        window = max(RESCAN_SECONDS, _RESCAN_SHARE * self._scan_cost)
        return time.monotonic() - self._scanned >= window

    def _rescan(self) -> None:
        if not isinstance(self.store, DirectoryStore):
            return
        started = time.monotonic()
        self.store.list_files()  # records edits made outside memdir as versions (actor `external`)
        self._scanned = time.monotonic()
        self._scan_cost = self._scanned - started

    def _catch_up(self, progress: Callable[[int, int], None] | None) -> int:
        applied = self.applied()
        # As recorded: the walk for outside edits runs on its own schedule (`_rescan`), never per query.
        versions = list(self.store.log(applied, rescan=False))
        if not versions:
            return 0
        changes = _collapse(versions)
        self._apply(changes, progress)
        with self.store.aux.transaction("update the search index") as conn:
            conn.execute(
                "INSERT INTO search_state (ns, applied, generation) VALUES (?, ?, 1) ON CONFLICT (ns) DO UPDATE "
                "SET applied = max(applied, excluded.applied), generation = generation + 1",
                (self.ns, versions[-1].version),
            )
        return len(changes)

    def _snapshot(self, progress: Callable[[int, int], None] | None) -> int:
        """Sync a store that keeps no log: compare each file's version token with the one indexed."""
        started = time.monotonic()
        with self.store.aux.reading("read the search index") as conn:
            known = dict(
                conn.execute(
                    "SELECT path, version FROM search_files WHERE ns = ? AND sha256 IS NOT NULL", (self.ns,)
                ).fetchall()
            )
        changes: list[_Change] = []
        for entry in self.store.list_files():
            if known.pop(entry.path.key, None) != entry.version:
                changes.append(_Change(entry.path.key, entry.version, "?"))  # content read in `_prepare`
        changes.extend(_Change(path, 0, None) for path in known)
        self._scanned = time.monotonic()
        self._scan_cost = self._scanned - started
        self._apply(changes, progress, ordered=False)
        if changes:
            self._bump()
        return len(changes)

    def _bump(self) -> None:
        with self.store.aux.transaction("update the search index") as conn:
            conn.execute(
                "INSERT INTO search_state (ns, generation) VALUES (?, 1) "
                "ON CONFLICT (ns) DO UPDATE SET generation = generation + 1",
                (self.ns,),
            )

    def _apply(
        self, changes: list[_Change], progress: Callable[[int, int], None] | None, *, ordered: bool = True
    ) -> None:
        total = len(changes)
        for start in range(0, total, _BATCH):
            batch = [self._prepare(c) for c in changes[start : start + _BATCH]]
            with self.store.aux.transaction("update the search index") as conn:
                for item in batch:
                    self._write(conn, item, ordered=ordered)
            if progress is not None:
                progress(min(start + _BATCH, total), total)

    def _prepare(self, change: _Change) -> _Prepared:
        """Read and cut a file outside the write transaction (the slow part)."""
        if change.sha256 is None:
            return _Prepared(change, "", [])
        sha = change.sha256
        try:
            if change.sha256 == "?":  # from a snapshot: the content is the file's current one
                data = self.store.read(key_path(change.path))
                content, change = data.content, _Change(change.path, change.version, data.sha256)
            else:
                content = self.store.read_blob(sha)
        except (NotFoundError, NotAFileError):
            return _Prepared(_Change(change.path, change.version, None), "", [])
        text = _decode(content)
        if text is None:
            return _Prepared(change, "", [])  # an image or other binary: nothing to search
        chunks = [(c.first, c.last, c.text) for c in chunk_lines(text, self.chunk_size)]
        return _Prepared(change, _context(change.path, text), chunks)

    def _write(self, conn: sqlite3.Connection, item: _Prepared, *, ordered: bool) -> None:
        change = item.change
        row = conn.execute(
            "SELECT version FROM search_files WHERE ns = ? AND path = ?", (self.ns, change.path)
        ).fetchone()
        if ordered and row is not None and row[0] >= change.version:
            return  # a newer change of this path is already applied (by another process)
        conn.execute(
            "DELETE FROM search_fts WHERE rowid IN (SELECT id FROM search_chunks WHERE ns = ? AND path = ?)",
            (self.ns, change.path),
        )
        conn.execute("DELETE FROM search_chunks WHERE ns = ? AND path = ?", (self.ns, change.path))
        conn.execute(
            "INSERT OR REPLACE INTO search_files (ns, path, version, sha256) VALUES (?, ?, ?, ?)",
            (self.ns, change.path, change.version, change.sha256),
        )
        context = index_text(item.context)
        for first, last, text in item.chunks:
            cursor = conn.execute(
                "INSERT INTO search_chunks (ns, path, first_line, last_line, text, text_sha) VALUES (?, ?, ?, ?, ?, ?)",
                (self.ns, change.path, first, last, text, _sha(text)),
            )
            conn.execute(
                "INSERT INTO search_fts (rowid, body, context) VALUES (?, ?, ?)",
                (cursor.lastrowid, index_text(text), context),
            )

    # -- reading ------------------------------------------------------------------------------------------

    def applied(self) -> int:
        with self.store.aux.reading("read the search index") as conn:
            row = conn.execute("SELECT applied FROM search_state WHERE ns = ?", (self.ns,)).fetchone()
        return int(row[0]) if row else 0

    def generation(self) -> int:
        with self.store.aux.reading("read the search index") as conn:
            row = conn.execute("SELECT generation FROM search_state WHERE ns = ?", (self.ns,)).fetchone()
        return int(row[0]) if row else 0

    def full_text(self, query: str, limit: int, prefix: MemoryPath | None) -> list[Candidate]:
        """The ``limit`` best passages for ``query`` by BM25 (an empty list when the query has no words).

        On a large index, terms found in thousands of passages only adjust the candidates (`_plan`).
        """
        terms = query_terms(query)
        if not terms or limit < 1:
            return []
        with self.store.aux.reading("search") as conn:
            _tune(conn)
            ranked = self._rank(conn, plan(conn, terms), limit, prefix)
            found = _passages(conn, [chunk for chunk, _ in ranked])  # only for the passages returned
        return [_with_score(found[chunk], score) for chunk, score in ranked if chunk in found]

    def _rank(self, conn: sqlite3.Connection, how: Plan, limit: int, prefix: MemoryPath | None) -> list[_Scored]:
        if how.exact:
            return self._ranked_ids(conn, how.ranked_expression, limit, prefix)
        if not how.over_budget:
            # Every passage of the ranked terms is scored (at most ~the budget), so a passage that BM25 ranks
            # low on the rare terms but that holds the common ones too is not lost.
            every = conn.execute(_RANKED_SQL, (how.ranked_expression, 0, _RANK, 2 * RANKED_LIMIT)).fetchall()
            found = self._mine(conn, _adjust(conn, how, [(c, -s) for c, s in every]), limit, prefix)
            return found if len(found) >= limit else self._fill(conn, how, found, limit, prefix)
        return self._newest(conn, how, limit, prefix)

    def _newest(self, conn: sqlite3.Connection, how: Plan, limit: int, prefix: MemoryPath | None) -> list[_Scored]:
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
        self, conn: sqlite3.Connection, how: Plan, found: list[_Scored], limit: int, prefix: MemoryPath | None
    ) -> list[_Scored]:
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

    def _mine(
        self, conn: sqlite3.Connection, scored: list[_Scored], limit: int, prefix: MemoryPath | None
    ) -> list[_Scored]:
        """The best ``limit`` of ``scored`` (best first) in this namespace and below ``prefix``."""
        key = None if prefix is None or prefix.is_root else prefix.key
        found: list[_Scored] = []
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
            found += [(c, v) for c, v in part if c in paths and (key is None or _below(paths[c], key))]
            if len(found) >= limit:
                break
        return found[:limit]

    def _ranked_ids(
        self, conn: sqlite3.Connection, expression: str, limit: int, prefix: MemoryPath | None, *, since: int = 0
    ) -> list[_Scored]:
        """The best (chunk id, BM25) for an FTS5 expression in this namespace (and below ``prefix``), among the
        passages from rowid ``since`` on (FTS5 seeks there: the passages before it are not scored)."""
        if prefix is None or prefix.is_root:
            found = self._ranked_first(conn, expression, limit, since)
            if found is not None:
                return found
        where, params = _prefix_clause(prefix)
        sql = (
            f"SELECT c.id, bm25(search_fts, 1.0, {CONTEXT_WEIGHT}) AS score "
            "FROM search_fts JOIN search_chunks c ON c.id = search_fts.rowid "
            f"WHERE search_fts MATCH ? AND search_fts.rowid >= ? AND c.ns = ?{where} ORDER BY score LIMIT ?"
        )
        rows = conn.execute(sql, (expression, since, self.ns, *params, limit)).fetchall()
        return [(int(r[0]), -float(r[1])) for r in rows]

    def _ranked_first(self, conn: sqlite3.Connection, expression: str, limit: int, since: int) -> list[_Scored] | None:
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

    def chunks(self, ids: Iterable[int]) -> dict[int, Candidate]:
        """Passages by chunk id (score 0)."""
        with self.store.aux.reading("search") as conn:
            return _passages(conn, list(ids))


_Scored = tuple[int, float]  # (chunk id, score)
_RANK = f"bm25(1.0, {CONTEXT_WEIGHT})"
_RANKED_SQL = (
    "SELECT rowid, rank FROM search_fts WHERE search_fts MATCH ? AND rowid >= ? AND rank MATCH ? ORDER BY rank LIMIT ?"
)
_CACHE_KIB = 64 * 1024  # page cache of a searching connection (SQLite's default is 2 MiB)
_MMAP_BYTES = 256 * 1024 * 1024


def _tune(conn: sqlite3.Connection) -> None:
    """A larger page cache and memory-mapped reads on a connection that searches: a query over 100,000 files
    touches tens of MiB of index, which SQLite's 2 MiB default cache re-reads through system calls each time.
    Checked each search (one pragma read) because the connection is shared with the store's other features."""
    if conn.execute("PRAGMA cache_size").fetchone()[0] != -_CACHE_KIB:
        conn.execute(f"PRAGMA cache_size = -{_CACHE_KIB}")
        conn.execute(f"PRAGMA mmap_size = {_MMAP_BYTES}")


def _adjust(conn: sqlite3.Connection, how: Plan, ranked: list[_Scored]) -> list[_Scored]:
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


def _passages(conn: sqlite3.Connection, ids: list[int]) -> dict[int, Candidate]:
    found: dict[int, Candidate] = {}
    for start in range(0, len(ids), 500):
        part = ids[start : start + 500]
        marks = ",".join("?" * len(part))
        for r in conn.execute(
            f"SELECT id, path, first_line, last_line, text FROM search_chunks WHERE id IN ({marks})", part
        ):
            found[r[0]] = Candidate(r[0], r[1], r[2], r[3], r[4], 0.0)
    return found


def _with_score(candidate: Candidate, score: float) -> Candidate:
    return Candidate(candidate.chunk, candidate.path, candidate.first_line, candidate.last_line, candidate.text, score)


def _below(path: str, key: str) -> bool:
    return path == key or path.startswith(key + "/")


def _prefix_clause(prefix: MemoryPath | None) -> tuple[str, tuple[str, ...]]:
    """SQL limiting passages to the file ``prefix`` or the files below the directory ``prefix``."""
    if prefix is None or prefix.is_root:
        return "", ()
    key = prefix.key
    # Below the directory: keys from "key/" up to (not including) "key0", '0' being the character after '/'.
    return " AND (c.path = ? OR (c.path >= ? AND c.path < ?))", (key, key + "/", key + "0")


def _collapse(versions: list[Version]) -> list[_Change]:
    """The last change of each path the versions touch (a rename empties its source)."""
    final: dict[str, _Change] = {}
    for version in versions:
        if version.old_path is not None and version.op == "rename":
            final[version.old_path.key] = _Change(version.old_path.key, version.version, None)
        final[version.path.key] = _Change(version.path.key, version.version, version.sha256)
    return list(final.values())


def _decode(content: bytes) -> str | None:
    if b"\x00" in content[:8192]:
        return None
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _context(path: str, text: str) -> str:
    """What every passage of a file is also found by: the file's name and its first line (a title, a date)."""
    name = path.rsplit("/", 1)[-1]
    stem = name.rsplit(".", 1)[0] if "." in name else name
    first = text.split("\n", 1)[0][:300]
    return f"{stem.replace('_', ' ').replace('-', ' ')}\n{first.lstrip('# ')}"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
