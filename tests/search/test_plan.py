"""Full-text query plans on a large index (`memdir.search._plan`): common terms only adjust the candidates.

A real large index would make these tests slow, so the budgets are lowered to a few passages instead: the
code paths are the ones a 100,000-file index takes (their speed is measured in benchmarks/bench_search.py).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from backends import BACKENDS
from memdir import SearchHit, Store, open_store
from memdir.search import _pg, _plan, _search, search
from memdir.search._text import query_terms

LOCAL = [b for b in BACKENDS if b != "remote"]  # a memdir server's store searches the server's index


def planned(store: Store, query: str) -> _plan.Plan:
    """The plan the store's engine makes for ``query`` (PostgreSQL's terms unquoted, to compare with FTS5's)."""
    with store.aux.reading("test") as conn:
        if store.aux.dialect == "sqlite":
            return _plan.plan(conn, query_terms(query))
        made = _pg._Terms(conn, _pg.tsquery_terms(query_terms(query)), _pg._Statistics()).plan
    bare = [term.strip("'") for term in made.all_terms]
    return _plan.Plan(
        [t.strip("'") for t in made.ranked], [(t.strip("'"), idf) for t, idf in made.common], bare, made.ranked_df
    )


def paths(hits: list[SearchHit]) -> list[str]:
    return [hit.path.virtual for hit in hits]


def fts(store: Store, query: str, **options: object) -> list[SearchHit]:
    return search(store, query, mode="fts", **options)  # type: ignore[arg-type]


@pytest.fixture
def small_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_plan, "RANKED_BUDGET", 3)
    monkeypatch.setattr(_plan, "RANKED_LIMIT", 5)
    monkeypatch.setattr(_plan, "DF_SAMPLE", 4)
    monkeypatch.setattr(_pg, "BUDGET_SHARE", 1.0)  # the same budgets on both engines
    # The fusion's candidate pool scaled down with them (it asks the index for 5 per hit, at least 50).
    monkeypatch.setattr(_search, "_POOL", 1)
    monkeypatch.setattr(_search, "_POOL_SHARE", 1)


def notes(store: Store, count: int = 12) -> None:
    """``count`` notes, half about meetings (a common word); n03 and n08 also mention a rare word."""
    for n in range(count):
        topic = "meeting" if n % 2 else "lunch"
        extra = " with the zeppelin crew" if n in (3, 8) else " with the usual crew"
        store.write(f"/memories/n{n:02d}.md", f"{topic} notes number {n}{extra}\n".encode())


def test_a_rare_word_is_ranked_and_a_common_one_adjusts(store: Store, small_budget: None) -> None:
    notes(store)
    store.write("/memories/z.md", b"lunch notes about the zeppelin crew\n")
    found = fts(store, "zeppelin meeting", limit=4)
    # n03 has both words; the other two hold the rare word alone; then a passage with the common word only.
    assert paths(found)[0] == "/memories/n03.md"
    assert set(paths(found)[1:3]) == {"/memories/n08.md", "/memories/z.md"}
    assert found[0].score > found[1].score >= found[2].score > found[3].score > 0
    assert "meeting" in found[3].passage


def test_fewer_rare_passages_than_asked_are_completed_with_common_ones(store: Store, small_budget: None) -> None:
    notes(store)
    found = fts(store, "zeppelin meeting", limit=5)
    assert paths(found)[0] == "/memories/n03.md" and paths(found)[1] == "/memories/n08.md"
    assert len(set(paths(found))) == 5 and all("meeting" in hit.passage for hit in found[2:])


def test_when_every_word_is_common_the_newest_passages_are_ranked(store: Store, small_budget: None) -> None:
    store.write("/memories/old/short.md", b"meeting budget\n")  # the best match by BM25, but old
    for n in range(10):
        store.write(f"/memories/b{n}.md", b"meeting only\n")
    for n in range(10):
        store.write(f"/memories/a{n}.md", b"meeting budget\n" if n == 9 else b"meeting notes and budget ideas\n")
    assert paths(fts(store, "meeting budget", limit=1)) == ["/memories/a9.md"]
    # Below a prefix holding only older notes, those are ranked.
    assert paths(fts(store, "meeting budget", limit=1, path_prefix="/memories/old")) == ["/memories/old/short.md"]


def test_the_plan_keeps_namespaces_and_prefixes(make_store: object, small_budget: None) -> None:
    one = make_store("one")  # type: ignore[operator]
    two = make_store("two")  # type: ignore[operator]
    notes(one)
    notes(two)
    two.write("/memories/sub/z.md", b"zeppelin meeting in the sub folder\n")
    assert "/memories/sub/z.md" not in paths(fts(one, "zeppelin meeting", limit=10))
    assert paths(fts(two, "zeppelin meeting", limit=3, path_prefix="/memories/sub")) == ["/memories/sub/z.md"]


@pytest.mark.parametrize("backend", LOCAL, indirect=True)  # the index is the server's there
def test_below_the_budget_the_plan_is_exact_bm25(store: Store) -> None:
    notes(store)
    fts(store, "crew")  # builds the index
    plan = planned(store, "zeppelin meeting notes")
    assert plan.exact and plan.common == [] and set(plan.ranked) == {"zeppelin", "meeting", "notes"}


@pytest.mark.parametrize("backend", LOCAL, indirect=True)  # the index is the server's there
def test_document_frequencies_are_counted_then_extrapolated(store: Store, small_budget: None) -> None:
    notes(store)
    fts(store, "crew")  # builds the index
    plan = planned(store, "zeppelin meeting")
    assert plan.ranked == ["zeppelin"] and [term for term, _ in plan.common] == ["meeting"]
    assert 0 < plan.common[0][1] < 0.1  # in half the passages: an idf near zero
    if store.aux.dialect == "sqlite":
        with store.aux.reading("test") as conn:
            rows = _plan._row_count(conn, _plan._rowid_span(conn))
        assert rows == 12  # FTS5's own row count, read from its averages record


@pytest.mark.parametrize(("data", "value"), [(b"\x05", 5), (b"\x81\x00", 128), (b"\xff\xff\x7f", 2_097_151)])
def test_sqlite_varints(data: bytes, value: int) -> None:
    assert _plan._varint(data) == value


def test_the_averages_record_matches_count(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "x.db")
    conn.execute("CREATE VIRTUAL TABLE search_fts USING fts5(body, context)")
    conn.executemany("INSERT INTO search_fts (body, context) VALUES (?, '')", [(f"row {n}",) for n in range(300)])
    conn.execute("CREATE TABLE search_chunks (id INTEGER PRIMARY KEY)")
    assert _plan._row_count(conn, (1, 300)) == 300


def test_a_directory_store_log_without_rescan_is_the_recorded_log(tmp_path: Path) -> None:
    with open_store(str(tmp_path / "store")) as store:
        store.write("/memories/a.md", b"one\n")
        (tmp_path / "store" / "memories" / "a.md").write_text("edited outside\n")
        recorded = list(store.log(0, rescan=False))
        assert len(recorded) == 1 and recorded[0].sha256 is not None
        assert len(list(store.log(0))) == 2  # the walk recorded the outside edit
        assert len(list(store.log(0, rescan=False))) == 2


def test_postgres_takes_common_words_counts_from_analyze(tmp_path: Path, small_budget: None) -> None:
    """Counting a common word's passages through the index is what costs on PostgreSQL: once ANALYZE has run
    (autovacuum runs it), the shares it keeps of the most common words give their counts instead."""
    import psycopg

    from support.postgres import database_url

    url = database_url(str(tmp_path))
    with open_store(url) as store:
        for n in range(40):  # the first 10 about meetings: a sample of the first 4 would say all 40 are
            topic = "meeting" if n < 10 else "lunch"
            store.write(
                f"/memories/n{n:02d}.md",
                f"{topic} number {n} with the {'zeppelin' if n == 3 else 'usual'} crew\n".encode(),
            )
        fts(store, "crew")  # builds the index
        sampled = planned(store, "zeppelin meeting")
        with psycopg.connect(url, autocommit=True) as pg:
            pg.execute("ANALYZE search_chunks")
        analyzed = planned(store, "zeppelin meeting")
        assert paths(fts(store, "zeppelin meeting", limit=2)) == ["/memories/n03.md", "/memories/n09.md"]
    assert sampled.ranked == analyzed.ranked == ["zeppelin"]
    assert sampled.common[0][1] == pytest.approx(_plan.idf(40, 40))  # extrapolated from the first 4 ids
    assert analyzed.common[0][1] == pytest.approx(_plan.idf(10, 40))  # ANALYZE's share: a quarter
