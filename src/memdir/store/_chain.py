"""The hash chains `memdir verify` checks: over a namespace's versions, and over its audit log.

Each entry records a *chain value*: SHA-256 over the previous entry's chain value and a canonical encoding of the
entry's own fields (`link`). The first entry links to a value derived from the log's kind and the namespace
(`genesis`), so a chain copied from another namespace does not verify. The log's *head* (the last number and its
chain value) is kept where every change updates it anyway, in the same transaction (the namespace's row for
versions), so deleting the newest entries is found too: the head then names an entry that is not there.

An entry edited in place no longer matches its chain value; a deleted one leaves a gap in the numbers; one moved
to another number fails at both places and is recognised there (`ChainWalk`). What a chain cannot do is keep
someone who rewrites the whole chain from the edit onwards, head included, from going unseen: the encoding is
public and there is no secret. `ChainReport.head` is printed so it can be kept elsewhere and compared later.

`memdir gc` prunes old versions, not a prefix but those that stopped being current long ago, wherever they lie.
Each run of pruned numbers leaves a `PrunedRun` with the chain value of its last entry, written in the prune's own
transaction: the entries after it still link, and verify can tell a pruned run (recorded) from a deletion (a gap
nothing accounts for). It cannot tell what a pruned run held.

One encoding, one walk, for every backend and for the audit log: backends only store and read the values.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence

    from ..paths import MemoryPath
    from ._db import AuxConnection

__all__ = [
    "ChainBreak",
    "ChainHead",
    "ChainReport",
    "ChainWalk",
    "LogKind",
    "PrunedRun",
    "Row",
    "encode",
    "encode_tail",
    "genesis",
    "history_report",
    "link",
    "link_tail",
    "merge_pruned",
    "record_pruned",
    "stored",
    "version_fields",
]

LogKind = Literal["history", "audit"]
Field = str | int | float | None
Row = tuple[int, "bytes | None", "Sequence[Field]"]
"""(number, stored chain value, fields) of one entry; ``fields[0]`` is the number itself."""

_NOUN = {"history": "version", "audit": "audit entry"}
_NOUNS = {"history": "versions", "audit": "audit entries"}
_ANALYSED = 32  # failures looked at together to tell a reordering from edits (each pair costs a few hashes)


def genesis(kind: LogKind, namespace: str) -> bytes:
    """What the first entry of ``namespace``'s ``kind`` log links to."""
    return hashlib.sha256(f"memdir {kind} chain v1\n{namespace}".encode()).digest()


def link(previous: bytes, fields: Sequence[Field]) -> bytes:
    """An entry's chain value: SHA-256 of the previous entry's value and the entry's fields, encoded (`encode`)."""
    return hashlib.sha256(previous + _dumps(fields).encode()).digest()


def encode(fields: Sequence[Field]) -> bytes:
    """The canonical encoding of an entry's fields: a compact JSON array, ASCII only (``[12,"notes.md","write",
    ...]``). JSON quotes and escapes text, so no field can run into its neighbour, and any JSON library reads it
    back; floats are written as Python's shortest repr that reads back the same number. Writers give timestamps as
    floats, as the REAL / DOUBLE PRECISION columns give them back (5 and 5.0 encode differently). Chosen for being
    a standard and fast (the C encoder: a few microseconds per change)."""
    return _dumps(fields).encode()


def link_tail(previous: bytes, number: int, tail: str) -> bytes:
    """`link` for an entry whose number is known only to SQL (`memdir.store._sql`): ``tail`` is `encode_tail` of the
    fields after the number, made before the statement, so the SQL function that completes it takes four arguments
    instead of eleven."""
    return hashlib.sha256(previous + f"[{number},{tail[1:]}".encode()).digest()


def encode_tail(fields: Sequence[Field]) -> str:
    """The fields after the number, as `link_tail` takes them (a non-empty JSON array)."""
    return _dumps(fields)


# ensure_ascii (the default): a lone surrogate in a value is escaped, never an error in the middle of a write.
_dumps = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode


class _Versioned(Protocol):
    """The fields of a `memdir.store.Version` a chain value covers (the record itself lives above this module)."""

    @property
    def version(self) -> int: ...
    @property
    def path(self) -> MemoryPath: ...
    @property
    def op(self) -> str: ...
    @property
    def actor(self) -> str: ...
    @property
    def session(self) -> str | None: ...
    @property
    def source(self) -> str | None: ...
    @property
    def timestamp(self) -> float: ...
    @property
    def sha256(self) -> str | None: ...
    @property
    def size(self) -> int: ...
    @property
    def old_path(self) -> MemoryPath | None: ...


def version_fields(version: _Versioned) -> tuple[Field, ...]:
    """The fields of a version that its chain value covers, in the order the SQL backends store them."""
    old = None if version.old_path is None else version.old_path.key
    return (version.version, version.path.key, version.op, version.actor, version.session, version.source,
            version.timestamp, version.sha256, version.size, old)  # fmt: skip


@dataclass(frozen=True, slots=True)
class ChainHead:
    """Where a log's chain stands: ``start`` is the first number chained (the entries before it were written by a
    memdir that kept no chain), ``last`` the last number given out, ``value`` the chain value of ``last`` (None
    while nothing is chained yet)."""

    start: int
    last: int
    value: bytes | None


@dataclass(frozen=True, slots=True)
class PrunedRun:
    """Entries ``first``..``last`` were pruned (`memdir gc`); ``value`` is the chain value ``last`` had, so the entry
    after the run still links."""

    first: int
    last: int
    value: bytes | None


def merge_pruned(runs: Iterable[PrunedRun], gone: Iterable[int], values: dict[int, bytes | None]) -> list[PrunedRun]:
    """The pruned runs once the numbers ``gone`` are pruned too (``values``: their chain values), adjacent runs
    merged, in order. A run ending in a number pruned now takes that entry's value, else its own."""
    edges = [(r.first, r.last, r.value) for r in runs] + [(n, n, values.get(n)) for n in gone]
    merged: list[PrunedRun] = []
    for first, last, value in sorted(edges, key=lambda e: (e[0], e[1])):
        if merged and first <= merged[-1].last + 1:
            top = merged[-1]
            if last > top.last:
                merged[-1] = PrunedRun(top.first, last, value)
            continue
        merged.append(PrunedRun(first, last, value))
    return merged


BreakKind = Literal["edited", "deleted", "inserted", "reordered", "truncated", "head"]


@dataclass(frozen=True, slots=True)
class ChainBreak:
    """One place where the log is not what was recorded: entries ``first``..``last``, between ``before`` and
    ``after`` (the neighbouring numbers that are in order, None at an end)."""

    kind: BreakKind
    first: int
    last: int
    before: int | None
    after: int | None
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "first": self.first, "last": self.last, "before": self.before,
                "after": self.after, "detail": self.detail}  # fmt: skip


@dataclass(frozen=True, slots=True)
class ChainReport:
    """What `ChainWalk` found in one log: ``entries`` present, ``checked`` of them linked from ``start`` on (those
    before ``start`` predate the chain), ``pruned`` numbers accounted for by pruned runs, the ``head``."""

    log: LogKind
    entries: int
    checked: int
    start: int
    last: int
    pruned: int
    head: str | None
    breaks: tuple[ChainBreak, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.breaks

    @property
    def unchained(self) -> int:
        return self.entries - self.checked

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ChainReport:
        """A report as `to_json` wrote it (``GET /v1/verify``)."""
        fields = {name: data[name] for name in ("log", "entries", "checked", "start", "last", "pruned", "head")}
        return cls(**fields, breaks=tuple(ChainBreak(**b) for b in data["breaks"]))

    def to_json(self) -> dict[str, Any]:
        return {"log": self.log, "ok": self.ok, "entries": self.entries, "checked": self.checked, "start": self.start,
                "last": self.last, "pruned": self.pruned, "head": self.head,
                "breaks": [b.to_json() for b in self.breaks]}  # fmt: skip


@dataclass(slots=True)
class _Failure:
    """An entry whose chain value does not follow from the one before it."""

    number: int
    previous: bytes  # the stored value of the entry before it (or the genesis / a pruned run's value)
    stored: bytes | None
    fields: Sequence[Field]
    before: int | None
    value_changed: bool = False  # its fields are intact: the next entry links to what its value should be


@dataclass(slots=True)
class ChainWalk:
    """Check one log entry by entry (`run`): the numbers in order from the head's ``start`` to its ``last``, each
    entry's value following from the one before, pruned runs accounting for their numbers, the head matching."""

    kind: LogKind
    namespace: str
    head: ChainHead
    _breaks: list[ChainBreak] = field(default_factory=list)
    _failures: list[_Failure] = field(default_factory=list)
    _entries: int = 0
    _checked: int = 0
    _pruned: int = 0

    def run(
        self, rows: Iterable[Row], runs: Iterable[PrunedRun] = (), *, earlier: int = 0, strays: Sequence[int] = ()
    ) -> ChainReport:
        """The report over ``rows`` (every entry, in number order) and ``runs`` (in order). ``earlier``: entries
        with no number at all (written before the log had a chain; counted, not checked), among them ``strays``,
        found after the chain began (each given as the number of the entry it follows), which cannot be memdir's."""
        self._entries += earlier
        noun = _NOUN[self.kind]
        for before in strays:
            self._add("inserted", before, before, before or None, None,
                      f"an {noun} with no number or chain value lies after {noun} {before}: added behind "
                      "memdir's back")  # fmt: skip
        start = genesis(self.kind, self.namespace)
        state = _Cursor(self.head.start, start, start, None)
        pending = iter(runs)
        run = next(pending, None)
        for number, stored, fields in rows:
            self._entries += 1
            if number < self.head.start:
                continue  # written before the chain was kept: nothing to check it against
            while run is not None and run.first <= number:
                self._take_run(state, run)
                run = next(pending, None)
            self._take_row(state, number, stored, fields)
        while run is not None:
            self._take_run(state, run)
            run = next(pending, None)
        self._finish(state)
        return ChainReport(self.kind, self._entries, self._checked, self.head.start, self.head.last, self._pruned,
                           None if self.head.value is None else self.head.value.hex(),
                           tuple(sorted(self._breaks, key=lambda b: (b.first, b.kind))))  # fmt: skip

    # -- the walk -------------------------------------------------------------------------------------------------

    def _take_run(self, state: _Cursor, run: PrunedRun) -> None:
        if run.last < state.expected:
            return  # wholly before the chain's start (pruned before it was kept), or overlapping: nothing to say
        if run.first > state.expected:
            self._missing(state, run.first - 1, run.first)
        self._pruned += run.last - max(run.first, state.expected) + 1
        value = run.value if run.value is not None else state.previous
        state.advance(run.last, value, value)

    def _take_row(self, state: _Cursor, number: int, stored: bytes | None, fields: Sequence[Field]) -> None:
        self._checked += 1
        noun = _NOUN[self.kind]
        if number > self.head.last:
            self._add("inserted", number, number, state.last, None,
                      f"{noun} {number} lies beyond the last number memdir gave out ({self.head.last}): added "
                      "behind memdir's back")  # fmt: skip
            return
        if number < state.expected:
            self._add("inserted", number, number, state.last, None,
                      f"{noun} {number} lies in a range memdir pruned: added behind memdir's back")  # fmt: skip
            return
        if number > state.expected:
            self._missing(state, number - 1, number)
            anchor = stored if stored is not None else state.previous
            state.advance(number, anchor, anchor)  # nothing to check it against: it anchors what follows
            return
        expected = link(state.previous, fields)
        if stored != expected:
            if link(state.computed, fields) == stored and self._failures and self._failures[-1].number == state.last:
                self._failures[-1].value_changed = True  # only the entry before had its chain value changed
            else:
                self._failures.append(_Failure(number, state.previous, stored, fields, state.last))
        state.advance(number, stored, expected)

    def _missing(self, state: _Cursor, last: int, after: int | None) -> None:
        noun = _NOUN[self.kind]
        first = state.expected
        span = f"{noun} {first}" if first == last else f"{_NOUNS[self.kind]} {first}-{last}"
        if after is None:
            self._add("truncated", first, last, state.last, None,
                      f"{span} (the newest) {'is' if first == last else 'are'} missing: deleted behind memdir's back "
                      f"(memdir gave out numbers up to {self.head.last})")  # fmt: skip
        else:
            pruning = " (no prune accounts for it)" if self.kind == "history" else ""
            self._add("deleted", first, last, state.last, after,
                      f"{span} {'is' if first == last else 'are'} missing: deleted behind memdir's back"
                      f"{pruning}")  # fmt: skip

    def _finish(self, state: _Cursor) -> None:
        self._classify()
        if state.expected <= self.head.last:
            self._missing(state, self.head.last, None)
        elif state.last is not None and self.head.value != state.previous:
            noun = _NOUN[self.kind]
            self._add("head", state.last, state.last, None, None,
                      f"the chain's head does not match the newest {noun} ({state.last}): newer ones were deleted "
                      f"and the count lowered, or this one was changed and its chain value recomputed, or the head "
                      "was changed")  # fmt: skip

    # -- telling edits from a reordering ----------------------------------------------------------------------

    def _classify(self) -> None:
        failures = self._failures
        moved = self._moves(failures) if len(failures) <= _ANALYSED else {}
        known = {f.previous for f in failures} | {f.stored for f in failures if f.stored is not None}
        noun = _NOUN[self.kind]
        for item in failures:
            after = item.number + 1 if item.number < self.head.last else None
            if item.number in moved:
                origin = moved[item.number]
                self._add("reordered", item.number, item.number, item.before, after,
                          f"{noun} {item.number} holds what was recorded as {noun} {origin}: entries were "
                          "moved")  # fmt: skip
            elif moved and any(link(p, item.fields) == item.stored for p in known):
                continue  # intact: it follows an entry that was moved away from before it
            elif item.value_changed:
                self._add("edited", item.number, item.number, item.before, after,
                          f"the chain value of {noun} {item.number} was changed behind memdir's back")  # fmt: skip
            else:
                self._add("edited", item.number, item.number, item.before, after,
                          f"{noun} {item.number} was changed behind memdir's back: its fields no longer match "
                          "its chain value")  # fmt: skip

    @staticmethod
    def _moves(failures: list[_Failure]) -> dict[int, int]:
        """{number: the number it was recorded as} for failures holding another failure's entry: its content moved
        there while the chain values stayed, or it moved with its chain value (renumbered)."""
        known = {f.previous for f in failures} | {f.stored for f in failures if f.stored is not None}
        moved: dict[int, int] = {}
        for item in failures:
            for other in failures:
                if other is item:
                    continue
                renumbered = (other.number, *item.fields[1:])
                if link(other.previous, renumbered) == other.stored or any(
                    link(p, renumbered) == item.stored for p in known
                ):
                    moved[item.number] = other.number
                    break
        return moved

    def _add(self, kind: BreakKind, first: int, last: int, before: int | None, after: int | None, detail: str) -> None:
        self._breaks.append(ChainBreak(kind, first, last, before, after, detail))


@dataclass(slots=True)
class _Cursor:
    """Where a walk stands: the next number due, the last number seen, its stored value (what the next entry links
    to) and the value it should have had from its fields (to tell an entry whose own value alone was changed)."""

    expected: int
    previous: bytes
    computed: bytes
    last: int | None

    def advance(self, number: int, stored: bytes | None, computed: bytes) -> None:
        self.expected, self.last = number + 1, number
        self.previous = stored if stored is not None else computed
        self.computed = computed


# -- the history's chain in SQL tables (the SQLite store, the directory store's sidecar, PostgreSQL) --------------

# The tables are ``{prefix}namespaces``, ``{prefix}versions`` and ``{prefix}pruned`` (prefix "" on SQLite, "memdir_"
# on PostgreSQL), the same columns on both engines; the statements run on either connection (``?`` placeholders).
_VERSION_FIELDS = "version, path, op, actor, session, source, ts, sha256, size, old_path"
_PAGE = 2000


def record_pruned(conn: AuxConnection, prefix: str, namespace: str, gone: list[int], values: dict[int, Any]) -> None:
    """In a prune's transaction: the pruned runs with ``gone`` merged in (``values``: the chain value of each version
    by number), so the versions after each run still link."""
    if not gone:
        return
    runs = _runs(conn, prefix, namespace)
    merged = merge_pruned(runs, gone, {n: stored(values.get(n)) for n in gone})
    conn.execute(f"DELETE FROM {prefix}pruned WHERE ns = ?", (namespace,))
    conn.executemany(
        f"INSERT INTO {prefix}pruned (ns, first, last, chain) VALUES (?, ?, ?, ?)",
        [(namespace, r.first, r.last, r.value) for r in merged],
    )


def history_report(conn: AuxConnection, prefix: str, namespace: str) -> ChainReport:
    """`ChainWalk` over a namespace's versions, inside the caller's read transaction (one snapshot: a change
    committed meanwhile must not look like tampering)."""
    head = conn.execute(
        f"SELECT chain_from, last_version, chain FROM {prefix}namespaces WHERE ns = ?", (namespace,)
    ).fetchone()
    start, last, value = head if head is not None else (1, 0, None)  # no row (removed by hand): nothing was given out
    walk = ChainWalk("history", namespace, ChainHead(int(start), int(last), stored(value)))
    return walk.run(_history_rows(conn, prefix, namespace), _runs(conn, prefix, namespace))


def _runs(conn: AuxConnection, prefix: str, namespace: str) -> list[PrunedRun]:
    rows = conn.execute(f"SELECT first, last, chain FROM {prefix}pruned WHERE ns = ? ORDER BY first", (namespace,))
    return [PrunedRun(int(first), int(last), stored(value)) for first, last, value in rows.fetchall()]


def _history_rows(conn: AuxConnection, prefix: str, namespace: str) -> Iterator[Row]:
    """Every version as (number, chain value, the fields it covers), a page at a time."""
    last = -1
    while True:
        rows = conn.execute(
            f"SELECT {_VERSION_FIELDS}, chain FROM {prefix}versions WHERE ns = ? AND version > ? ORDER BY version "
            f"LIMIT {_PAGE}",
            (namespace, last),
        ).fetchall()
        if not rows:
            return
        for row in rows:
            last = int(row[0])
            yield last, stored(row[-1]), tuple(row[:-1])


def stored(value: object) -> bytes | None:
    """A chain value as the engine gives it back (bytes, memoryview...). Anything else there was put there by hand
    (a text, a number): it is read as the bytes of its text, which match no chain value, so writers carry on and
    verify reports the break, instead of either failing on it."""
    if value is None or isinstance(value, bytes):
        return value
    return bytes(value) if isinstance(value, (bytearray, memoryview)) else str(value).encode()
