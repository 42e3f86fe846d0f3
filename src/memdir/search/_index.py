"""The full-text index: a view of the store's change log, kept in the store's auxiliary database.

Every backend records each change as a `Version` (`Store.log`), so the index needs no hook in any write
path: before answering, it reads the versions after the last one it applied and re-indexes the files they
touched (`SearchIndex.refresh`), which costs one indexed query when nothing changed. ``memdir reindex`` is
the same with the namespace's rows dropped first.

Where passages' words are kept and how they are ranked depends on the auxiliary database (`_engine`): SQLite's
FTS5 (`_fts5`, which lists the tables) or PostgreSQL's full-text search (`_pg`). Both keep, per namespace, the
last version applied (``search_state``), per path the version and SHA-256 indexed (``search_files``, ``sha256``
NULL: deleted) and the passages (``search_chunks``). A change is applied only over an older one: the row of
``search_files`` is claimed first (an upsert that only replaces an older version), so two processes, or two
servers on one PostgreSQL database, catching up at once and in any order end in the same state.

Edits made outside memdir in a directory store reach the log only when memdir looks at the files, so for that
backend `refresh` first has the store rescan the tree, at most once per `rescan window <RESCAN_SECONDS>`, and
otherwise reads the log as recorded (``store.log(since, rescan=False)``): no walk of the tree per query.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import NotAFileError, NotFoundError
from ..store._base import key_path
from ..store.directory import DirectoryStore
from ._dates import passage_day
from ._engine import prefix_clause
from ._fts5 import Fts5Engine
from ._pg import PgEngine
from ._text import chunk_lines, query_terms

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    from ..paths import MemoryPath
    from ..store._base import Store
    from ..store._db import AuxConnection
    from ..store._records import Version
    from ._engine import Passage, TextEngine

__all__ = ["CHUNK_LINES", "RESCAN_SECONDS", "Candidate", "SearchIndex", "TermCounts"]

CHUNK_LINES = 1  # lines per passage: a line is a turn in a transcript, a bullet in a note (docs/search.md)
RESCAN_SECONDS = 5.0  # the shortest time between two rescans of a directory store for outside edits
_RESCAN_SHARE = 20  # ...and at least this many times the last rescan took, so rescans cost at most ~5%
_BATCH = 500  # files per write transaction while catching up
FILE_TERM_CAP = 2_000  # passages holding a term beyond which whole-file BM25 leaves the term out
_K1, _B = 1.2, 0.75  # BM25's parameters (FTS5's)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A passage found by one retriever, before hits are built."""

    chunk: int
    path: str
    first_line: int
    last_line: int
    text: str
    score: float
    day: int | None = None  # the passage's date (`_dates`)


@dataclass(frozen=True, slots=True)
class TermCounts:
    """A query's terms' passages per file (None: a common term, not counted), and the index's sizes."""

    per_term: dict[str, dict[str, int] | None]
    files: int
    passages: int

    def document_frequencies(self, skip: frozenset[str] = frozenset()) -> dict[str, int]:
        """Passages holding each counted term that ``skip`` does not hold (a common term: `FILE_TERM_CAP` + 1)."""
        return {
            term: FILE_TERM_CAP + 1 if found is None else sum(found.values())
            for term, found in self.per_term.items()
            if term not in skip
        }


@dataclass(frozen=True, slots=True)
class _Change:
    path: str
    version: int
    sha256: str | None  # None: the path no longer holds a file


@dataclass(frozen=True, slots=True)
class _Prepared:
    change: _Change
    chunks: list[Passage]


class SearchIndex:
    """The search index of one store's namespace."""

    def __init__(self, store: Store, *, chunk_size: int = CHUNK_LINES) -> None:
        self.store = store
        self.ns = store.namespace
        self.chunk_size = chunk_size
        self._scanned = float("-inf")  # monotonic time of the last rescan for outside edits
        self._sized = (-1, 1, 1)  # (generation, files indexed, passages indexed)
        self._scan_cost = 0.0
        self.engine: TextEngine = PgEngine(self.ns) if store.aux.dialect == "postgres" else Fts5Engine(self.ns)
        store.aux.ensure(self.engine.migrations)

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
            self.engine.forget(conn, None)
            for table in ("search_files", "search_vectors"):
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
            # CASE rather than max()/greatest(): each engine has only one of them.
            conn.execute(
                "INSERT INTO search_state (ns, applied, generation) VALUES (?, ?, 1) ON CONFLICT (ns) DO UPDATE "
                "SET applied = CASE WHEN excluded.applied > search_state.applied THEN excluded.applied "
                "ELSE search_state.applied END, generation = search_state.generation + 1",
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
                "ON CONFLICT (ns) DO UPDATE SET generation = search_state.generation + 1",
                (self.ns,),
            )

    def _apply(
        self, changes: list[_Change], progress: Callable[[int, int], None] | None, *, ordered: bool = True
    ) -> None:
        total = len(changes)
        for start in range(0, total, _BATCH):
            batch = [self._prepare(c) for c in changes[start : start + _BATCH]]
            with self.store.aux.transaction("update the search index") as conn:
                mine = self._claim(conn, [item.change for item in batch], ordered=ordered)
                if mine:
                    self.engine.forget(conn, sorted(mine))
                    # In log order: passage ids follow it, and "newest" means a higher id.
                    files = [(i.change.path, i.chunks) for i in batch if i.change.path in mine and i.chunks]
                    self.engine.add(conn, files)
            if progress is not None:
                progress(min(start + _BATCH, total), total)

    def _prepare(self, change: _Change) -> _Prepared:
        """Read and cut a file outside the write transaction (the slow part)."""
        if change.sha256 is None:
            return _Prepared(change, [])
        sha = change.sha256
        try:
            if change.sha256 == "?":  # from a snapshot: the content is the file's current one
                data = self.store.read(key_path(change.path))
                content, change = data.content, _Change(change.path, change.version, data.sha256)
            else:
                content = self.store.read_blob(sha)
        except (NotFoundError, NotAFileError):
            return _Prepared(_Change(change.path, change.version, None), [])
        text = _decode(content)
        if text is None:
            return _Prepared(change, [])  # an image or other binary: nothing to search
        return _Prepared(change, _passages_of(change.path, text, self.chunk_size))

    def _claim(self, conn: AuxConnection, changes: list[_Change], *, ordered: bool) -> set[str]:
        """Record the changes in ``search_files``; the paths whose passages this transaction is to replace.

        The upsert replaces only an older version (``ordered``) and returns a row only when it did: a path whose
        newer change another process applied already is left alone. On PostgreSQL it also locks the row, so a
        concurrent writer of the path waits, then sees this change; paths are claimed in sorted order, so two
        writers never wait for each other in a circle (PostgreSQL would abort one as a deadlock).
        """
        newer = " WHERE search_files.version < excluded.version" if ordered else ""
        ordered_changes = sorted(changes, key=lambda c: c.path)
        if not ordered_changes:
            return set()
        rows = conn.execute(
            "INSERT INTO search_files (ns, path, version, sha256) VALUES "
            + ", ".join(["(?, ?, ?, ?)"] * len(ordered_changes))
            + " ON CONFLICT (ns, path) DO UPDATE SET version = excluded.version, sha256 = excluded.sha256"
            + newer
            + " RETURNING path",
            [value for c in ordered_changes for value in (self.ns, c.path, c.version, c.sha256)],
        ).fetchall()
        return {str(row[0]) for row in rows}

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
            ranked = self.engine.rank(conn, terms, limit, prefix)
            found = _passages(conn, [chunk for chunk, _ in ranked])  # only for the passages returned
        return [_with_score(found[chunk], score) for chunk, score in ranked if chunk in found]

    def chunks(self, ids: Iterable[int]) -> dict[int, Candidate]:
        """Passages by chunk id (score 0)."""
        with self.store.aux.reading("search") as conn:
            return _passages(conn, list(ids))

    def term_counts(self, query: str, prefix: MemoryPath | None) -> TermCounts:
        """For each of the query's terms, the passages holding it per file (None: more than `FILE_TERM_CAP`:
        a common word, whose weight is small and whose count would cost most), with the index's sizes: one
        look-up per term, read by both `file_scores` and the proximity of query words (`_lexical.closeness`)."""
        terms = query_terms(query)
        with self.store.aux.reading("search") as conn:
            files, passages = self._sizes(conn)
            counts = {term: self.engine.file_counts(conn, term, prefix, FILE_TERM_CAP) for term in terms}
        return TermCounts(counts, files, passages)

    def file_scores(self, counts: TermCounts, lengths: dict[str, int]) -> dict[str, float]:
        """BM25 of whole files for the query of ``counts``, for the files of ``lengths`` (path -> passages),
        scaled to the best 1.0: a file's term frequency is the number of its passages holding the term, its
        length its passage count (relative to the mean over ``lengths``); common terms are left out."""
        if not lengths:
            return {}
        average = sum(lengths.values()) / len(lengths)
        scores: dict[str, float] = dict.fromkeys(lengths, 0.0)
        for found in counts.per_term.values():
            if not found:
                continue
            idf = math.log(1 + (counts.files - len(found) + 0.5) / (len(found) + 0.5))
            for path, count in found.items():
                if path in scores:
                    norm = _K1 * (1 - _B + _B * lengths[path] / average)
                    scores[path] += idf * count * (_K1 + 1) / (count + norm)
        best = max(scores.values(), default=0.0) or 1.0
        return {path: score / best for path, score in scores.items()}

    def expanded(
        self, found: list[Candidate], words: Mapping[str, float], limit: int, prefix: MemoryPath | None
    ) -> list[Candidate]:
        """``found`` (the query's full-text candidates) with what ``words`` (more words, each with a weight) add:
        each passage's BM25 plus each word's BM25 in it times the word's weight, the ``limit`` best kept."""
        if not words:
            return found
        scores = {c.chunk: c.score for c in found}
        with self.store.aux.reading("search") as conn:
            for word, weight in words.items():
                for chunk, score in self.engine.rank(conn, [word], limit, prefix):
                    scores[chunk] = scores.get(chunk, 0.0) + weight * score
            best = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:limit]
            known = {c.chunk: c for c in found}
            read = _passages(conn, [chunk for chunk, _ in best if chunk not in known])
        known.update(read)
        return [
            known[chunk] if known[chunk].score == score else _with_score(known[chunk], score)
            for chunk, score in best
            if chunk in known
        ]

    def _sizes(self, conn: AuxConnection) -> tuple[int, int]:
        """The files and the passages this namespace's index holds (counted once per generation of the index)."""
        row = conn.execute("SELECT generation FROM search_state WHERE ns = ?", (self.ns,)).fetchone()
        generation = int(row[0]) if row else 0
        if self._sized[0] != generation:
            (files,) = conn.execute(
                "SELECT count(*) FROM search_files WHERE ns = ? AND sha256 IS NOT NULL", (self.ns,)
            ).fetchone()
            (passages,) = conn.execute("SELECT count(*) FROM search_chunks WHERE ns = ?", (self.ns,)).fetchone()
            self._sized = (generation, max(int(files), 1), max(int(passages), 1))
        return self._sized[1], self._sized[2]

    def near(
        self, passages: dict[int, Candidate], window: int, lengths: dict[str, int] | None = None
    ) -> dict[int, list[tuple[int, int]]]:
        """For each of ``passages``, (chunk id, distance) of the passages up to ``window`` before and after it in
        its file; the neighbours not among ``passages`` are added to it, and each file's passage count to
        ``lengths``."""
        paths = sorted({c.path for c in passages.values()})
        order: dict[str, list[int]] = {}
        with self.store.aux.reading("search") as conn:
            for start in range(0, len(paths), 500):
                part = paths[start : start + 500]
                rows = conn.execute(
                    "SELECT id, path FROM search_chunks WHERE ns = ? AND path IN "
                    f"({','.join('?' * len(part))}) ORDER BY path, first_line",
                    (self.ns, *part),
                )
                for chunk, path in rows:
                    order.setdefault(path, []).append(int(chunk))
        if lengths is not None:
            lengths.update((path, len(ids)) for path, ids in order.items())
        near: dict[int, list[tuple[int, int]]] = {}
        for ids in order.values():
            at = {chunk: n for n, chunk in enumerate(ids)}
            for chunk in (c for c in ids if c in passages):
                n = at[chunk]
                found = [
                    (ids[n + s * d], d) for d in range(1, window + 1) for s in (-1, 1) if 0 <= n + s * d < len(ids)
                ]
                near[chunk] = found
        missing = {n for found in near.values() for n, _ in found} - passages.keys()
        passages.update(self.chunks(missing))
        return near

    def dated(self, first: int, last: int, limit: int, prefix: MemoryPath | None) -> list[int]:
        """Up to ``limit`` passages dated ``first``..``last`` (day ordinals), below ``prefix``."""
        where, params = prefix_clause(prefix, "path")
        with self.store.aux.reading("search") as conn:
            rows = conn.execute(
                f"SELECT id FROM search_chunks WHERE ns = ? AND day BETWEEN ? AND ?{where} ORDER BY id DESC LIMIT ?",
                (self.ns, first, last, *params, limit),
            ).fetchall()
        return [int(row[0]) for row in rows]


def _passages(conn: AuxConnection, ids: list[int]) -> dict[int, Candidate]:
    found: dict[int, Candidate] = {}
    for start in range(0, len(ids), 500):
        part = ids[start : start + 500]
        marks = ",".join("?" * len(part))
        for r in conn.execute(
            f"SELECT id, path, first_line, last_line, text, day FROM search_chunks WHERE id IN ({marks})", part
        ):
            found[r[0]] = Candidate(r[0], r[1], r[2], r[3], r[4], 0.0, r[5])
    return found


def _with_score(candidate: Candidate, score: float) -> Candidate:
    return dataclasses.replace(candidate, score=score)


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


def _passages_of(path: str, text: str, size: int) -> list[Passage]:
    """A file's passages, each with its context (the file's name and first line, its section's headings: what it
    is also found by) and its date."""
    name = path.rsplit("/", 1)[-1]
    stem = name.rsplit(".", 1)[0] if "." in name else name
    first = text.split("\n", 1)[0][:300]
    about = [stem.replace("_", " ").replace("-", " "), first.lstrip("# ")]
    return [
        (c.first, c.last, c.text, _unique([*about, c.section]), passage_day(c.text, c.section, first, stem))
        for c in chunk_lines(text, size)
    ]


def _unique(parts: list[str]) -> str:
    """The parts of a context, each once (a note's name, its title and its section are often the same words)."""
    seen: set[str] = set()
    kept = []
    for part in parts:
        if part and part.casefold() not in seen:
            seen.add(part.casefold())
            kept.append(part)
    return "\n".join(kept)
