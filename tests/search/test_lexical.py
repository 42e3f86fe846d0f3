"""Words close in meaning to the query's (expansion) and the query's words side by side (proximity)."""

from __future__ import annotations

import numpy as np
import pytest

from memdir import Store
from memdir.search import LocalModel, Searcher
from memdir.search._fusion import Query, Weights, fuse
from memdir.search._index import Candidate
from memdir.search._lexical import WordTable, closeness, expansions, stems


def test_stems_are_the_index_s_own() -> None:
    found = stems(["camping", "camps", "camped", "painting", "Renée", "--"])
    assert found["camping"] == found["camps"] == found["camped"] == "camp"
    assert found["painting"] == "paint" and found["Renée"] == "rene" and found["--"] is None


def _table(words: dict[str, list[float]]) -> WordTable:
    """A word table from hand-made vectors (a word-piece and a short word are left out, as in a model's)."""
    vocabulary = {word: n for n, word in enumerate([*words, "##ing", "go"])}
    rows = [*words.values(), [0.0, 0.0, 1.0], [0.0, 1.0, 1.0]]
    return WordTable(vocabulary, np.array(rows, dtype=np.float32))


def test_a_query_word_also_searches_for_its_nearest_words_weighted_by_closeness() -> None:
    table = _table(
        {
            "buy": [1.0, 0.0, 0.0],
            "bought": [0.9, 0.3, 0.0],  # cosine ~0.95
            "buying": [0.95, 0.1, 0.0],  # the same stem as "buy": nothing new to search for
            "purchase": [0.7, 0.7, 0.0],  # ~0.71
            "sell": [0.3, 1.0, 0.0],  # ~0.29: too far
            "june": [0.99, 0.05, 0.0],  # a month is never an expansion
        }
    )
    assert "##ing" not in table.row and "go" not in table.row
    found = expansions("When did Melanie buy the figurines?", ["melanie", "buy", "figurines"], table)
    assert set(found) == {"bought", "purchase"}
    assert found["bought"] == pytest.approx(0.949, abs=0.01) and found["purchase"] == pytest.approx(0.707, abs=0.01)


def test_names_months_and_numbers_are_not_expanded() -> None:
    table = _table(
        {"rome": [1.0, 0.0, 0.0], "paris": [0.95, 0.1, 0.0], "june": [0.0, 1.0, 0.0], "july": [0, 0.95, 0.1]}
    )
    assert expansions("When was Jon in Rome?", ["jon", "rome"], table) == {}  # capitalised: a name
    assert expansions("what happened in june", ["happened", "june"], table) == {}
    assert expansions("when was rome", ["rome"], table) == {"paris": pytest.approx(0.995, abs=0.01)}


def test_the_packaged_model_s_words() -> None:
    found = expansions("What did Melanie buy?", ["melanie", "buy"], LocalModel().word_table())
    assert "bought" in found and "purchase" in found and len(found) <= 3
    assert all(0.6 <= weight <= 1.0 for weight in found.values())


def test_query_words_said_together_count_more_than_apart() -> None:
    texts = {
        1: "I went to a support group yesterday.",
        2: "Thanks for the support, it meant a lot to the whole group.",
        3: "Support groups help, and my group loves the support.",  # "supports" and "groups" stem alike
        4: "Nothing here.",
    }
    close = closeness(texts, {"support": 40, "group": 20, "lgbtq": 0}, 1000)
    assert close[1] == pytest.approx(1.0) and close[3] == pytest.approx(1.0)
    assert 2 not in close and 4 not in close  # six words apart; "lgbtq" is in no passage
    # With three words, a passage holding one close pair gets that pair's share: the smaller idf of the two.
    three = closeness({1: "a support group met", 2: "the group hike"}, {"support": 40, "group": 20, "hike": 5}, 1000)
    assert 0 < three[1] < 1 and 2 in three


def test_proximity_lifts_the_line_that_says_the_words_together() -> None:
    passages = {
        1: Candidate(1, "a.md", 1, 1, "The support from my friends, and the book group.", 0.0),
        2: Candidate(2, "b.md", 1, 1, "I joined a support group.", 0.0),
    }
    bm25 = {1: 2.0, 2: 1.9}
    query = Query.of("support group")
    close = closeness({c: p.text for c, p in passages.items()}, {"support": 10, "group": 10}, 100)
    assert [f.chunk for f in fuse(passages, bm25, None, {}, query, Weights(proximity=0), None, close)] == [1, 2]
    assert [f.chunk for f in fuse(passages, bm25, None, {}, query, Weights(), None, close)] == [2, 1]


# The expansion's words are ranked by each engine's BM25: FTS5's (memory, SQLite) and PostgreSQL's.
@pytest.mark.parametrize("backend", ["memory", "postgres"], indirect=True)
def test_hybrid_search_finds_a_line_by_a_word_close_to_the_query_s(store: Store) -> None:
    store.write("/memories/chat.md", b"Melanie: I bought some lovely little figurines at the market yesterday.\n")
    store.write("/memories/other.md", b"Melanie: my old figurines.\n")
    query = "When did Melanie buy the figurines?"
    # BM25 alone as the base score: the short line wins on its own words, the long one with "bought" for "buy".
    plain = Searcher(store, settings={"fts_weight": 1.0, "expansion_weight": 0}, provider=LocalModel())
    assert plain.search(query, mode="hybrid").hits[0].path.virtual == "/memories/other.md"
    expanded = Searcher(store, settings={"fts_weight": 1.0}, provider=LocalModel())
    assert expanded.search(query, mode="hybrid").hits[0].path.virtual == "/memories/chat.md"


def test_a_provider_without_a_word_table_searches_without_expansion(store: Store) -> None:
    class Plain:
        name = "plain"

        def embed(self, texts: list[str], *, query: bool = False) -> np.ndarray:
            return LocalModel().embed(texts, query=query)

    store.write("/memories/chat.md", b"I bought some figurines yesterday.\n")
    hits = Searcher(store, settings={}, provider=Plain()).search("buy figurines", mode="hybrid").hits
    assert hits and hits[0].retrievers == ("fts", "semantic")
    assert Searcher(store, settings={"proximity_weight": 0, "expansion_weight": 2}).weights.expansion == 2
