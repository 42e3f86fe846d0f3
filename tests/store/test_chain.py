"""The hash chain (`memdir.store._chain`): an unambiguous encoding, a walk that names each kind of break, pruned runs
that keep the chain whole, and every backend's `Store.verify_chain` (tampering with real files: tests/policy)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memdir import Store, open_store
from memdir.store import MemoryStore
from memdir.store._chain import (
    ChainHead,
    ChainWalk,
    PrunedRun,
    encode,
    encode_tail,
    genesis,
    link,
    link_tail,
    merge_pruned,
)

Fields = tuple[str | int | float | None, ...]

scalars = st.one_of(
    st.none(), st.text(max_size=8), st.integers(-(2**40), 2**40), st.floats(allow_nan=False, allow_infinity=False)
)


def typed(fields: Fields) -> list[tuple[type, str]]:
    """What the encoding must tell apart: each value's type and exact value (5 is not 5.0, -0.0 is not 0.0)."""
    return [(type(v), repr(v)) for v in fields]


@given(st.lists(scalars, max_size=6).map(tuple), st.lists(scalars, max_size=6).map(tuple))
def test_the_encoding_tells_apart_every_two_different_entries(a: Fields, b: Fields) -> None:
    assert (encode(a) == encode(b)) == (typed(a) == typed(b))


@given(st.integers(0, 2**53), st.lists(scalars, min_size=1, max_size=9).map(tuple), st.binary(min_size=32, max_size=32))
def test_the_sql_function_s_link_is_the_same_link(number: int, rest: Fields, previous: bytes) -> None:
    assert link_tail(previous, number, encode_tail(rest)) == link(previous, (number, *rest))


def test_separators_inside_text_cannot_shift_a_field_into_its_neighbour() -> None:
    texts = [("a,", "b"), ("a", ",b"), ('a","b',), ("a", "b"), ("null",), (None,), ("",), ("\udc80",)]
    assert len({encode(f) for f in texts}) == len(texts)


def chain(namespace: str, entries: list[Fields]) -> list[tuple[int, bytes | None, Fields]]:
    rows, value = [], genesis("history", namespace)
    for fields in entries:
        value = link(value, fields)
        rows.append((int(fields[0] or 0), value, fields))
    return rows


ENTRIES: list[Fields] = [
    (n, f"f{n}.md", "write", "model", None, None, 1000.5 + n, "ab" * 32, n, None) for n in range(1, 9)
]


def walk(rows: list[tuple[int, bytes | None, Fields]], last: int = 8, *, runs: list[PrunedRun] | None = None,
         namespace: str = "ns", head: bytes | None = None) -> list[tuple[str, int, int]]:  # fmt: skip
    value = head if head is not None else (rows[-1][1] if rows else None)
    report = ChainWalk("history", namespace, ChainHead(1, last, value)).run(rows, runs or [])
    return [(b.kind, b.first, b.last) for b in report.breaks]


def test_an_intact_chain_has_no_break() -> None:
    assert walk(chain("ns", ENTRIES)) == []


def test_a_chain_copied_from_another_namespace_does_not_verify() -> None:
    assert walk(chain("elsewhere", ENTRIES))[0] == ("edited", 1, 1)


def test_each_kind_of_break_is_named_once() -> None:
    rows = chain("ns", ENTRIES)
    edited = [*rows[:3], (4, rows[3][1], (4, "f4.md", "write", "mallory", *ENTRIES[3][4:])), *rows[4:]]
    assert walk(edited) == [("edited", 4, 4)]
    assert walk(rows[:2] + rows[5:]) == [("deleted", 3, 5)]
    assert walk(rows[:6], head=rows[-1][1]) == [("truncated", 7, 8)]
    assert walk(rows[:6], last=6, head=rows[-1][1]) == [("head", 6, 6)]
    assert walk([*rows, (9, rows[-1][1], (9, *ENTRIES[-1][1:]))], head=rows[-1][1]) == [("inserted", 9, 9)]


def test_entries_moved_are_told_from_edits() -> None:
    rows = chain("ns", ENTRIES)
    # Renumbered: the rows (and their chain values) change places.
    moved = [rows[0], (2, rows[2][1], (2, *ENTRIES[2][1:])), (3, rows[1][1], (3, *ENTRIES[1][1:])), *rows[3:]]
    assert walk(moved) == [("reordered", 2, 2), ("reordered", 3, 3)]
    # The contents swapped, the chain values left in place.
    swapped = [rows[0], (2, rows[1][1], (2, *ENTRIES[2][1:])), (3, rows[2][1], (3, *ENTRIES[1][1:])), *rows[3:]]
    assert walk(swapped) == [("reordered", 2, 2), ("reordered", 3, 3)]


def test_pruned_runs_carry_the_chain_and_a_gap_they_do_not_explain_is_a_deletion() -> None:
    rows = chain("ns", ENTRIES)
    runs = merge_pruned([], [2, 3, 6], {n: rows[n - 1][1] for n in (2, 3, 6)})
    assert runs == [PrunedRun(2, 3, rows[2][1]), PrunedRun(6, 6, rows[5][1])]
    kept = [r for r in rows if r[0] not in (2, 3, 6)]
    assert walk(kept, runs=runs) == []
    assert walk([r for r in kept if r[0] != 5], runs=runs) == [("deleted", 5, 5)]
    assert walk([*kept[:1], (2, rows[1][1], ENTRIES[1]), *kept[1:]], runs=runs) == [("inserted", 2, 2)]


def test_runs_pruned_later_merge_with_earlier_ones() -> None:
    first = merge_pruned([], [3, 4], {3: b"3", 4: b"4"})
    assert merge_pruned(first, [2, 5, 9], {2: b"2", 5: b"5", 9: b"9"}) == [PrunedRun(2, 5, b"5"), PrunedRun(9, 9, b"9")]


def test_versions_before_the_chain_are_counted_not_checked() -> None:
    rows = [(n, None, ENTRIES[n - 1]) for n in (1, 2, 3)] + chain("ns", ENTRIES[3:])
    rows = [(n, value, f) for n, value, f in rows]
    # The chain starts at 4: its first entry links to the genesis value, as a migrated store's first new version.
    fresh = chain("ns", ENTRIES[3:])
    report = ChainWalk("history", "ns", ChainHead(4, 8, fresh[-1][1])).run([*rows[:3], *fresh])
    assert (report.ok, report.entries, report.checked, report.unchained) == (True, 8, 5, 3)


def test_the_memory_store_reports_what_was_done_to_its_state(store: Store) -> None:
    for i in range(4):
        store.write(f"/memories/{i}.md", b"x")
    assert store.verify_chain().ok
    if isinstance(store, MemoryStore):  # the other backends are tampered with through their files
        state = store._s
        state.versions[1] = dataclasses.replace(state.versions[1], actor="mallory")
        del state.versions[2]
        assert [(b.kind, b.first) for b in store.verify_chain().breaks] == [("edited", 2), ("deleted", 3)]


def test_ctrl_c_while_a_version_is_chained_is_an_interrupt_that_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SQLite store chains a version inside its UPDATE (a SQL function), where sqlite3 would turn Ctrl-C
    into a database error: the user must see the interruption (`memdir migrate-store` then says how to resume)."""
    from memdir.store import _sql

    real, calls = _sql.link_tail, []

    def interrupted(*args: Any) -> bytes:
        calls.append(args)
        if len(calls) == 1:
            raise KeyboardInterrupt
        return real(*args)

    with open_store(f"sqlite://{tmp_path / 'm.db'}") as store:
        store.write("/memories/a.md", b"a\n")
        monkeypatch.setattr(_sql, "link_tail", interrupted)
        with pytest.raises(KeyboardInterrupt):
            store.write("/memories/b.md", b"b\n")
        assert store.stat("/memories/b.md") is None and len(list(store.log())) == 1
        store.write("/memories/b.md", b"b\n")
        report = store.verify_chain()
        assert report.ok and report.checked == 2
