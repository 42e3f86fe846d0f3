"""Hybrid search: the packaged model run with numpy, the API provider against a local fake server, fusion."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from memdir import Store
from memdir.search import APIEmbeddings, EmbeddingError, LocalModel, Searcher, SemanticUnavailableError, search
from memdir.search._providers import provider_from_settings

PETS = {
    "/memories/pets.md": "The user owns a golden retriever named Max.\n",
    "/memories/tax.md": "Quarterly tax filing is due in April.\n",
}


def fill(store: Store) -> None:
    for path, text in PETS.items():
        store.write(path, text.encode())


def test_the_packaged_model_matches_sentence_transformers() -> None:
    # Reference values computed with sentence-transformers 6.2 on the same packaged model.
    vectors = LocalModel().embed(
        [
            "The user owns a golden retriever named Max.",
            "What kind of pet does the user have?",
            "Quarterly tax filing is due in April.",
        ]
    )
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.allclose(vectors[0][:4], [0.00463, -0.00895, 0.02021, -0.01485], atol=3e-4)
    assert np.allclose([vectors[0] @ vectors[1], vectors[0] @ vectors[2]], [0.54, -0.0745], atol=1e-3)


def test_hybrid_finds_what_shares_no_word_with_the_query(store: Store) -> None:
    fill(store)
    assert search(store, "which puppy", mode="fts") == []
    (best, *_) = search(store, "which puppy", mode="hybrid")
    assert best.path.virtual == "/memories/pets.md"
    assert best.retrievers == ("semantic",)


@pytest.mark.parametrize("query", ["\udced\udca0\udc80", "golden \ud800retriever", "retriever\udcff"])
def test_a_query_holding_lone_surrogates_is_searched_as_utf8_says_it(store: Store, query: str) -> None:
    """JSON's "\\ud800" and an invalid byte in a command-line argument reach search as lone surrogates, which the
    model's tokenizer refuses (an internal error before): they are searched as UTF-8 replaces them."""
    fill(store)
    for mode in ("fts", "hybrid"):
        hits = search(store, query, mode=mode)  # type: ignore[arg-type]
        assert [h.path.virtual for h in hits][:1] == ([] if query.startswith("\udced") else ["/memories/pets.md"])


def test_hybrid_keeps_exact_word_matches_first(store: Store) -> None:
    fill(store)
    store.write("/memories/max.md", b"Max Planck institute visit\n")
    hits = search(store, "Planck", mode="hybrid")
    assert hits[0].path.virtual == "/memories/max.md"
    assert hits[0].retrievers == ("fts", "semantic")


def test_passages_are_embedded_once_and_follow_changes(store: Store) -> None:
    fill(store)
    searcher = Searcher(store, settings={})
    searcher.search("dog", mode="hybrid")
    count = "SELECT count(*) FROM search_vectors WHERE ns = ?"
    with store.aux.reading("test") as conn:
        before = conn.execute(count, (store.namespace,)).fetchone()[0]
    store.move("/memories/pets.md", "/memories/animals/pets.md")  # same text: no new embedding
    assert searcher.search("dog", mode="hybrid").hits[0].path.virtual == "/memories/animals/pets.md"
    with store.aux.reading("test") as conn:
        assert conn.execute(count, (store.namespace,)).fetchone()[0] == before
    store.delete("/memories/animals")
    assert searcher.search("dog", mode="hybrid").hits == []  # the tax note is no result for "dog"


def test_prefix_limits_semantic_hits_too(store: Store) -> None:
    fill(store)
    assert [h.path.virtual for h in search(store, "dog", mode="hybrid")] == ["/memories/pets.md"]
    assert search(store, "dog", mode="hybrid", path_prefix="/memories/tax.md") == []


def test_an_unrelated_query_finds_nothing(store: Store) -> None:
    fill(store)
    store.write("/memories/clients/acme.md", b"# Acme\nprefers email follow-ups\nContact: Jane Roe\n")
    assert search(store, "tea", mode="hybrid") == []
    hits = search(store, "email", mode="hybrid")
    assert [(h.path.virtual, h.first_line) for h in hits] == [("/memories/clients/acme.md", 2)]


def test_without_a_provider_auto_is_full_text_and_says_so(store: Store) -> None:
    fill(store)
    searcher = Searcher(store, settings={"provider": "none"})
    found = searcher.search("golden retriever")
    assert found.mode == "fts" and found.note.startswith("Full-text search (BM25)")
    with pytest.raises(SemanticUnavailableError, match="turned off"):
        searcher.search("golden", mode="hybrid")


def test_a_model_directory_the_user_points_at(tmp_path: Path) -> None:
    with pytest.raises(Exception, match=r"holds no model\.safetensors"):
        provider_from_settings({"model_dir": str(tmp_path)})
    provider = provider_from_settings({"model_dir": str(LocalModel().directory)})
    assert isinstance(provider, LocalModel) and provider.name == "local:model"


# -- the API provider against a fake OpenAI-compatible server ---------------------------------------------------


def _fake_vector(text: str) -> list[float]:
    """Bag of hashed words: texts sharing words are close (enough to test the plumbing)."""
    vector = [0.0] * 16
    for word in text.lower().split():
        vector[hashlib.sha256(word.strip(".?").encode()).digest()[0] % 16] += 1.0
    return vector


class _Handler(BaseHTTPRequestHandler):
    requests: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Handler.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        if body["model"] == "broken":
            self.send_response(500)
            self.end_headers()
            return
        data = [{"index": i, "embedding": _fake_vector(t), "object": "embedding"} for i, t in enumerate(body["input"])]
        payload = json.dumps({"data": list(reversed(data)), "object": "list"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def api_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_api_provider_embeds_through_the_endpoint(store: Store, api_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBED_KEY", "k-123")
    provider = provider_from_settings(
        {"provider": "api", "api_url": api_url, "api_model": "fake", "api_key_env": "EMBED_KEY"}
    )
    vectors = provider.embed(["golden retriever", "tax filing"])
    assert vectors.shape == (2, 16) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert _Handler.requests[-1]["path"] == "/v1/embeddings"
    assert _Handler.requests[-1]["auth"] == "Bearer k-123"
    fill(store)
    found = Searcher(store, settings={}, provider=provider).search("retriever", mode="hybrid")
    assert found.hits[0].path.virtual == "/memories/pets.md"


def test_api_failures_are_embedding_errors(api_url: str) -> None:
    with pytest.raises(EmbeddingError, match="HTTP 500"):
        APIEmbeddings(api_url, "broken").embed(["x"])
    with pytest.raises(EmbeddingError, match="could not be reached"):
        APIEmbeddings("http://127.0.0.1:9/v1", "fake", timeout=2).embed(["x"])
    with pytest.raises(Exception, match="needs api_url and api_model"):
        provider_from_settings({"provider": "api"})


# -- the vector index: kept up to date, neighbour expansion, the bulk (torch) path ------------------------------


def test_the_matrix_follows_writes_without_reembedding_what_it_has(store: Store) -> None:
    from memdir.search._semantic import _matrices

    fill(store)
    searcher = Searcher(store, settings={})
    searcher.search("dog", mode="hybrid")
    vectors = searcher.vectors()
    store.write("/memories/cat.md", b"The cat sleeps on the sofa.\n")
    searcher.index.refresh()
    assert vectors.fill() == 1  # only the new passage is embedded
    kept = _matrices[store.aux][(store.namespace, vectors.provider.name)]
    _matrices[store.aux].clear()  # a fresh build from the database must give the same matrix
    assert vectors.fill() == 0
    rebuilt = _matrices[store.aux][(store.namespace, vectors.provider.name)]
    assert kept.ids.tolist() == rebuilt.ids.tolist() and kept.paths == rebuilt.paths
    assert np.allclose(kept.vectors, rebuilt.vectors) and kept.vectors.flags["C_CONTIGUOUS"]
    assert np.allclose(np.linalg.norm(kept.vectors, axis=1), 1.0, atol=1e-5)


def test_neighbours_lift_a_line_whose_neighbours_match() -> None:
    from memdir.search._fusion import Query, Weights, fuse
    from memdir.search._index import Candidate

    # One file of four 1-line passages (ids 1-4) and one of a single passage (id 5).
    passages = {n: Candidate(n, "a.md", n, n, f"line {n}", 0.0) for n in range(1, 5)}
    passages[5] = Candidate(5, "b.md", 1, 1, "other", 0.0)
    near = {1: [(2, 1), (3, 2)], 2: [(1, 1), (3, 1), (4, 2)], 3: [(2, 1), (4, 1), (1, 2)], 4: [(3, 1), (2, 2)]}
    sims = {1: 0.40, 2: 0.90, 3: 0.40, 4: 0.40, 5: 0.60}
    query = Query.of("anything")
    plain = {f.chunk: f.score for f in fuse(passages, {}, sims, near, query, Weights(neighbours=0))}
    lifted = {f.chunk: f.score for f in fuse(passages, {}, sims, near, query, Weights(neighbours=0.8))}
    assert lifted[2] == pytest.approx(plain[2])  # its neighbours are the least similar: they add nothing
    assert lifted[1] == pytest.approx(lifted[3])  # before and after alike
    assert lifted[3] > plain[3]
    assert lifted[3] > lifted[4] > plain[4]  # the second neighbour counts less
    assert lifted[5] == pytest.approx(plain[5])  # a file's only passage gains nothing
    sims[3] = 0.1  # below the relevance floor: a neighbour lifts it, it is no result
    assert 3 not in {f.chunk for f in fuse(passages, {}, sims, near, query, Weights())}


def test_a_named_speaker_and_a_named_date_lift_their_lines() -> None:
    import datetime as dt

    from memdir.search._fusion import Query, Weights, fuse
    from memdir.search._index import Candidate

    may = dt.date(2023, 5, 8).toordinal()
    passages = {
        1: Candidate(1, "s1.md", 2, 2, "[D1:1] Caroline: I went to a support group", 0.0, may),
        2: Candidate(2, "s2.md", 2, 2, "[D2:1] Melanie: I went to a support group", 0.0, may + 60),
    }
    bm25 = {1: 5.0, 2: 5.0}
    ranked = fuse(passages, bm25, None, {}, Query.of("Where did Caroline go?"), Weights())
    assert [f.chunk for f in ranked] == [1, 2]  # Caroline said it
    ranked = fuse(passages, bm25, None, {}, Query.of("What did Caroline do in July 2023?"), Weights())
    assert [f.chunk for f in ranked] == [2, 1]  # the date outweighs the speaker
    ranked = fuse(passages, bm25, None, {}, Query.of("What happened in July 2023?"), Weights(date=0))
    assert ranked[0].score == ranked[1].score


def test_the_line_after_a_question_is_lifted_but_never_above_another_file() -> None:
    from memdir.search._fusion import Query, Weights, asks, fuse
    from memdir.search._index import Candidate

    assert asks("[D2:11] Joanna: How long have you had them?")
    assert asks("Is this yours? [shares image: a photo of a turtle]")  # a trailing bracketed note is not the line
    assert not asks("I've had them for 3 years now!") and not asks("Why? Because.")
    # a.md: a question that matches the query, its answer, an unrelated line; b.md: one line matching a little less.
    passages = {
        1: Candidate(1, "a.md", 2, 2, "[D1:1] Joanna: How long have you had the turtles?", 0.0),
        2: Candidate(2, "a.md", 3, 3, "[D1:2] Nate: Three years now, they bring me joy!", 0.0),
        3: Candidate(3, "a.md", 4, 4, "[D1:3] Joanna: Lovely.", 0.0),
        4: Candidate(4, "b.md", 2, 2, "[D2:1] Nate: My turtles love the new tank.", 0.0),
    }
    near = {1: [(2, 1), (3, 2)], 2: [(1, 1), (3, 1)], 3: [(2, 1), (1, 2)], 4: []}
    sims = {1: 0.9, 2: 0.5, 3: 0.5, 4: 0.85}
    query = Query.of("how long have the turtles been there")
    plain = {f.chunk: f.score for f in fuse(passages, {}, sims, near, query, Weights(answer=0))}
    lifted = fuse(passages, {}, sims, near, query, Weights(answer=2.0))
    scores = {f.chunk: f.score for f in lifted}
    assert scores[2] > plain[2] and scores[3] == pytest.approx(plain[3])  # only the line right after the question
    assert [f.chunk for f in lifted][:2] == [2, 1]  # above the question in its file, just
    assert scores[2] == pytest.approx(plain[1]) and scores[4] == pytest.approx(plain[4])


def test_the_query_without_the_speakers_it_names() -> None:
    from memdir.search._fusion import without_speakers

    speakers = frozenset({"caroline", "melanie"})
    assert without_speakers("What did Caroline's friends think of Melanie?", speakers) == "What did friends think of"
    assert without_speakers("What did she research?", speakers) is None  # names no one
    assert without_speakers("what did melanie say?", speakers) is None  # a name is written capitalised
    assert without_speakers("Caroline?", speakers) is None  # nothing else
    assert without_speakers("Where did Caroline go?", frozenset()) is None


class _Recording:
    """The local model, recording the queries it embeds."""

    name = "recording"

    def __init__(self) -> None:
        self.model = LocalModel()
        self.queries: list[list[str]] = []

    def embed(self, texts: list[str], *, query: bool = False) -> np.ndarray:
        if query:
            self.queries.append(list(texts))
        return self.model.embed(texts, query=query)


def test_hybrid_search_mixes_in_the_query_without_the_speakers_named(store: Store) -> None:
    store.write(
        "/memories/chat.md", b"2023-05-08\n[D1:1] Caroline: I went to a support group.\n[D1:2] Melanie: Nice!\n"
    )
    store.write("/memories/notes.md", b"Caroline likes tea.\n")
    recording = _Recording()
    searcher = Searcher(store, settings={}, provider=recording)
    assert searcher.search("Where did Caroline go?", mode="hybrid").hits
    assert recording.queries[-1] == ["Where did Caroline go?", "Where did go?"]
    searcher.search("Where did she go?", mode="hybrid")
    assert recording.queries[-1] == ["Where did she go?"]  # names no speaker: one embedding
    off = Searcher(store, settings={"unnamed_weight": 0}, provider=recording)
    off.search("Where did Caroline go?", mode="hybrid")
    assert recording.queries[-1] == ["Where did Caroline go?"]


def test_weights_come_from_the_settings(store: Store) -> None:
    assert Searcher(store, settings={"neighbour_weight": 0, "date_weight": 1.5}).weights.neighbours == 0
    assert Searcher(store, settings={"date_weight": 1.5}).weights.date == 1.5
    assert Searcher(store, settings={"answer_weight": 0}).weights.answer == 0
    with pytest.raises(Exception, match="unnamed_weight must be a number from 0 to 1"):
        Searcher(store, settings={"unnamed_weight": 1.5})
    with pytest.raises(Exception, match="neighbour_weight must be a number from 0 to 10"):
        Searcher(store, settings={"neighbour_weight": "lots"})
    with pytest.raises(Exception, match="fts_weight must be a number from 0 to 1"):
        Searcher(store, settings={"fts_weight": 2})


def test_bulk_embedding_through_torch_matches_numpy() -> None:
    from memdir.search._torch import BULK

    model = LocalModel()
    encoder = model._encoder()
    if encoder._bulk() is None:
        pytest.skip("torch is not installed here or this CPU has no native bfloat16: numpy embeds everything")
    texts = [f"note {n}: the user prefers tea over coffee on day {n}" for n in range(BULK)]
    bulk = model.embed(texts)
    small = model.embed(texts[:8])  # under BULK: numpy
    assert bulk.shape == (BULK, 384) and bulk.dtype == np.float32
    assert np.allclose(np.linalg.norm(bulk, axis=1), 1.0, atol=1e-5)
    assert float((bulk[:8] * small).sum(axis=1).min()) > 0.999


def test_reindex_stores_every_vector_again_in_a_process_that_searched(store: Store) -> None:
    fill(store)
    searcher = Searcher(store, settings={})
    searcher.search("dog", mode="hybrid")
    count = "SELECT count(*) FROM search_vectors WHERE ns = ?"
    with store.aux.reading("test") as conn:
        before = conn.execute(count, (store.namespace,)).fetchone()[0]
    generation = searcher.index.generation()
    assert searcher.reindex(embed=True) == len(PETS)
    with store.aux.reading("test") as conn:
        assert conn.execute(count, (store.namespace,)).fetchone()[0] == before > 0
    assert searcher.index.generation() > generation  # never back to a number a cached matrix was built at
    assert searcher.search("dog", mode="hybrid").hits[0].path.virtual == "/memories/pets.md"
