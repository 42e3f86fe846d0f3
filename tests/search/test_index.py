"""Full-text search on every backend: ranking, passages, sync with every kind of change, hostile queries."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from backends import BACKENDS
from memdir import MemoryTool, SearchHit, Store, open_store
from memdir.errors import PathError
from memdir.search import Searcher, reindex, search
from memdir.search._index import SearchIndex

NOTES = {
    "/memories/trips.md": "# Trips\n- hiked the Dolomites in June\n- sailing in Croatia next summer\n",
    "/memories/clients/acme.md": "# Acme\nAcme prefers email follow-ups on Tuesdays.\nContact: Jane Roe\n",
    "/memories/clients/globex.md": "# Globex\nGlobex wants phone calls, never email.\n",
    "/memories/cn/记忆.md": "我们上个月去了北京旅游。\n东京的天气很好。\n",
}

LOCAL = [b for b in BACKENDS if b != "remote"]  # a memdir server's store searches the server's index


def fill(store: Store) -> None:
    for path, text in NOTES.items():
        store.write(path, text.encode())


def paths(hits: list[SearchHit]) -> list[str]:
    return [hit.path.virtual for hit in hits]


def fts(store: Store, query: str, **options: object) -> list[SearchHit]:
    return search(store, query, mode="fts", **options)  # type: ignore[arg-type]


def test_finds_the_passage_with_numbered_lines(store: Store) -> None:
    fill(store)
    (hit,) = fts(store, "hiking", limit=1)
    assert hit.path.virtual == "/memories/trips.md"
    assert (hit.first_line, hit.last_line) == (2, 2)
    assert hit.passage == "     2\t- hiked the Dolomites in June"
    assert (hit.before, hit.after) == ("", "     3\t- sailing in Croatia next summer")  # the heading is no passage
    assert hit.score > 0 and hit.retrievers == ("fts",) and (hit.rank, hit.relevance) == (1, 1.0)


def test_ranking_prefers_the_passage_with_more_matching_words(store: Store) -> None:
    fill(store)
    found = fts(store, "Acme email Tuesdays")
    assert (found[0].path.virtual, found[0].first_line) == ("/memories/clients/acme.md", 2)
    assert "/memories/clients/globex.md" in paths(found)
    assert [hit.rank for hit in found] == list(range(1, len(found) + 1))
    assert 1.0 == found[0].relevance > found[-1].relevance > 0


def test_store_search_is_the_same_search(store: Store) -> None:
    fill(store)
    assert paths(store.search("Dolomites", limit=3))[0] == "/memories/trips.md"


def test_the_same_results_on_every_backend(make_store: object, tmp_path: Path) -> None:
    results = []
    for url in (f"memory:{tmp_path.name}", f"sqlite://{tmp_path / 'p.db'}", str(tmp_path / "dir")):
        with open_store(url) as store:
            fill(store)
            results.append([(h.path.virtual, h.first_line, h.passage) for h in fts(store, "email phone Acme")])
    assert results[0] == results[1] == results[2]
    # Acme's email line and Globex's, and Acme's contact line (found by its note's name, "Acme").
    assert {(path, line) for path, line, _ in results[0]} == {
        ("/memories/clients/acme.md", 2),
        ("/memories/clients/globex.md", 2),
        ("/memories/clients/acme.md", 3),
    }


def test_files_are_cut_into_lines_found_by_their_headings_too(store: Store) -> None:
    lines = [f"fact number {n} about nothing" for n in range(1, 11)]
    lines[6] = "the wifi password hint is in the blue notebook"
    store.write("/memories/long.md", ("# Facts\n" + "\n".join(lines) + "\n\n## Crossings\nzebra\n").encode())
    (hit,) = fts(store, "notebook", limit=1)
    assert (hit.first_line, hit.last_line) == (8, 8)
    assert hit.passage == "     8\tthe wifi password hint is in the blue notebook"
    assert (hit.before, hit.after) == ("     7\tfact number 6 about nothing", "     9\tfact number 8 about nothing")
    (hit,) = fts(store, "crossings", limit=1)  # a word of the section's heading finds the section's lines
    assert (hit.first_line, hit.passage) == (14, "    14\tzebra")
    store.write("/memories/title.md", b"# Only a title\n")  # a heading with nothing below it is a passage
    assert [h.passage for h in fts(store, "title")] == ["     1\t# Only a title"]


def test_limit_and_path_prefix(store: Store) -> None:
    fill(store)
    assert len(fts(store, "email", limit=1)) == 1
    assert paths(fts(store, "email", path_prefix="/memories/clients/acme.md")) == ["/memories/clients/acme.md"]
    assert set(paths(fts(store, "email", path_prefix="/memories/clients"))) == {
        "/memories/clients/acme.md",
        "/memories/clients/globex.md",
    }
    assert fts(store, "email", path_prefix="/memories/client") == []  # a prefix is a path, not a string prefix
    assert fts(store, "email", path_prefix="/memories/trips.md") == []
    with pytest.raises(PathError):
        fts(store, "email", path_prefix="/etc")


def test_follows_create_edit_rename_and_delete(store: Store) -> None:
    tool = MemoryTool(store)
    tool.execute({"command": "create", "path": "/memories/a.md", "file_text": "apples and pears\n"})
    assert paths(fts(store, "apples")) == ["/memories/a.md"]
    tool.execute({"command": "str_replace", "path": "/memories/a.md", "old_str": "apples", "new_str": "plums"})
    assert fts(store, "apples") == []
    assert paths(fts(store, "plums")) == ["/memories/a.md"]
    tool.execute({"command": "insert", "path": "/memories/a.md", "insert_line": 0, "insert_text": "kiwis\n"})
    assert fts(store, "kiwis")[0].first_line == 1
    tool.execute({"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/fruit/b.md"})
    assert paths(fts(store, "plums")) == ["/memories/fruit/b.md"]
    tool.execute({"command": "delete", "path": "/memories/fruit"})
    assert fts(store, "plums") == [] and fts(store, "kiwis") == []


def test_deleted_files_are_never_returned_even_when_recreated_elsewhere(store: Store) -> None:
    store.write("/memories/x.md", b"secret plan alpha\n")
    fts(store, "alpha")
    store.delete("/memories/x.md")
    store.write("/memories/y.md", b"secret plan beta\n")
    assert paths(fts(store, "secret plan alpha beta")) == ["/memories/y.md"]


def test_a_second_store_object_sees_changes_made_through_the_first(make_store: object) -> None:
    first = make_store()  # type: ignore[operator]
    second = make_store()  # type: ignore[operator]
    first.write("/memories/a.md", b"quince jelly\n")
    assert paths(fts(second, "quince")) == ["/memories/a.md"]
    first.write("/memories/a.md", b"rhubarb jam\n")
    assert paths(fts(second, "rhubarb")) == ["/memories/a.md"]
    assert fts(second, "quince") == []


def test_namespaces_do_not_see_each_other(make_store: object) -> None:
    one = make_store("one")  # type: ignore[operator]
    two = make_store("two")  # type: ignore[operator]
    one.write("/memories/a.md", b"mango lassi\n")
    two.write("/memories/a.md", b"masala chai\n")
    assert [h.passage for h in fts(one, "mango chai")] == ["     1\tmango lassi"]
    assert [h.passage for h in fts(two, "mango chai")] == ["     1\tmasala chai"]


def test_cjk_queries_find_words_inside_unspaced_text(store: Store) -> None:
    fill(store)
    assert fts(store, "北京")[0].first_line == 1  # (line 2 too, below: the file's first line is its context)
    assert [h.first_line for h in fts(store, "东京天气")] == [2]
    assert {h.first_line for h in fts(store, "京")} == {1, 2}  # one character: a prefix of the bigrams
    assert fts(store, "上海") == []


def test_english_words_are_stemmed_and_accents_folded(store: Store) -> None:
    store.write("/memories/a.md", "Renée went hiking at the café\n".encode())
    assert len(fts(store, "hikes")) == 1
    assert len(fts(store, "renee cafe")) == 1


@pytest.mark.parametrize(
    "query",
    [
        '"',
        '"unterminated',
        "email OR",
        "AND OR NOT",
        "NEAR(email acme, 2)",
        "email*",
        "-email",
        "col:email",
        "body:email",
        "{body context}: email",
        "^email",
        "email + acme",
        "'; DROP TABLE search_fts; --",
        "\x00\x01\x02",
        "\ud800",
        "*",
        "()",
        "a" * 5000,
        " ".join(["word"] * 2000),
        "",
        "   ",
    ],
)
def test_hostile_queries_are_safe(store: Store, query: str) -> None:
    fill(store)
    hits = fts(store, query)
    assert all(isinstance(h, SearchHit) for h in hits)
    assert paths(fts(store, "Dolomites")) == ["/memories/trips.md"]  # the index is intact


def test_query_syntax_is_searched_as_words(store: Store) -> None:
    fill(store)
    assert set(paths(fts(store, "NEAR(acme, 2)"))) == {"/memories/clients/acme.md"}
    assert set(paths(fts(store, "body:Globex"))) == {"/memories/clients/globex.md"}


def test_binary_and_image_files_are_not_indexed(store: Store) -> None:
    store.write("/memories/pic.png", b"\x89PNG\r\n\x1a\n\x00\x00email")
    store.write("/memories/bad.md", b"\xff\xfe email")
    store.write("/memories/ok.md", b"email\n")
    assert paths(fts(store, "email")) == ["/memories/ok.md"]


def test_a_nul_past_the_binary_check_does_not_stop_the_index(store: Store) -> None:
    """Text with a NUL after its first 8 KB is indexed as text; PostgreSQL (whose text cannot hold NUL) keeps it
    as U+FFFD, and the files after it are indexed too."""
    store.write("/memories/log.md", ("filler line\n" * 1000 + "needle\x00here\n").encode())
    store.write("/memories/after.md", b"haystack\n")
    (hit,) = fts(store, "needle")
    assert hit.path.virtual == "/memories/log.md" and hit.passage.endswith(("needle\x00here", "needle\ufffdhere"))
    assert paths(fts(store, "haystack")) == ["/memories/after.md"]


@pytest.mark.parametrize("backend", LOCAL, indirect=True)  # the index is the server's there
def test_reindex_rebuilds_from_the_files(store: Store) -> None:
    fill(store)
    fts(store, "email")
    with store.aux.transaction("damage") as conn:  # lose the index behind its back
        conn.execute("DELETE FROM search_fts" if store.aux.dialect == "sqlite" else "DELETE FROM search_chunks")
    assert fts(store, "email") == []
    assert reindex(store, embed=False) == len(NOTES)
    assert len(fts(store, "email")) == 2


def test_two_indexes_catching_up_in_any_order_agree(store: Store) -> None:
    store.write("/memories/a.md", b"first words\n")
    late = SearchIndex(store)
    store.write("/memories/a.md", b"second words\n")
    early = SearchIndex(store)
    early.refresh()
    # An index that read the log before the second write applies the first one afterwards: it must not win.
    late._apply([c for c in [_change("a.md", 1, store)]], None)
    assert [c.text for c in early.full_text("words", 5, None)] == ["second words"]


def _change(key: str, version: int, store: Store) -> object:
    from memdir.search._index import _Change

    (first,) = [v for v in store.log() if v.version == version]
    return _Change(key, version, first.sha256)


# -- the directory store: edits made outside memdir ----------------------------------------------------------


@pytest.fixture
def directory(tmp_path: Path) -> Store:
    return open_store(str(tmp_path / "store"))


def test_outside_edits_are_found_after_an_explicit_refresh(directory: Store, tmp_path: Path) -> None:
    directory.write("/memories/a.md", b"original text\n")
    assert paths(fts(directory, "original")) == ["/memories/a.md"]
    root = tmp_path / "store" / "memories"
    (root / "a.md").write_text("edited by hand in vim\n")
    (root / "new.md").write_text("written by another program\n")
    reindex(directory, embed=False)
    assert paths(fts(directory, "vim")) == ["/memories/a.md"]
    assert paths(fts(directory, "another program")) == ["/memories/new.md"]
    assert fts(directory, "original") == []
    (root / "new.md").unlink()
    from memdir.search import searcher

    searcher(directory).index.refresh(rescan=True)
    assert fts(directory, "another program") == []


def test_outside_edits_are_found_once_the_rescan_window_has_passed(
    directory: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memdir.search import _index, searcher

    directory.write("/memories/a.md", b"original text\n")
    fts(directory, "original")
    (tmp_path / "store" / "memories" / "a.md").write_text("changed outside\n")
    # Within the window the index answers from what memdir recorded: no walk of the tree per query.
    assert paths(fts(directory, "original")) == ["/memories/a.md"]
    clock = time.monotonic()
    monkeypatch.setattr(_index.time, "monotonic", lambda: clock + _index.RESCAN_SECONDS + 1)
    assert paths(fts(directory, "changed outside")) == ["/memories/a.md"]
    assert fts(directory, "original") == []
    assert searcher(directory).index._scan_cost >= 0


def test_a_directory_store_without_history_is_searched_by_snapshot(tmp_path: Path) -> None:
    from memdir import DirectoryStore
    from memdir.search import searcher

    with DirectoryStore(tmp_path / "plain", history=False) as store:
        store.write("/memories/a.md", b"lemon tart\n")
        assert paths(fts(store, "lemon")) == ["/memories/a.md"]
        os.remove(tmp_path / "plain" / "memories" / "a.md")
        (tmp_path / "plain" / "memories" / "b.md").write_text("lime pie\n")
        searcher(store).index.refresh(rescan=True)
        assert paths(fts(store, "lemon lime")) == ["/memories/b.md"]


def test_a_line_of_the_file_that_holds_more_of_the_query_ranks_first(store: Store) -> None:
    store.write("/memories/one.md", b"lemon cake\nsomething else\n")
    store.write("/memories/two.md", b"lemon cake\nwe baked it for the party\n")
    lines = [(h.path.virtual, h.first_line) for h in fts(store, "lemon cake party")]
    # Line 1 of each is the same; two.md holds "party" too, so its line 1 comes first (late interaction).
    assert lines.index(("/memories/two.md", 1)) < lines.index(("/memories/one.md", 1))
    alone = {"file_weight": 0, "neighbour_weight": 0, "mode": "fts"}  # (line 2 would lift it as a neighbour too)
    flat = Searcher(store, settings=alone).search("lemon cake party").hits
    first = [(h.path.virtual, h.first_line) for h in flat if h.first_line == 1]
    assert first == [("/memories/one.md", 1), ("/memories/two.md", 1)]  # without it: a tie, in index order
