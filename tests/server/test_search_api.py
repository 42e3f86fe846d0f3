"""GET /v1/search: the namespace's passages, best first; any text is a query; bad parameters are 400."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from support.postgres import database_url

from .conftest import Client
from .helpers import error_of, tool


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The served store: SQLite, and PostgreSQL, where the search index and the tokens live in the store's own database."""
    if request.param == "sqlite":
        return f"sqlite://{tmp_path / 'memory.db'}"
    return database_url(str(tmp_path))


@pytest.fixture
def http(client: Client) -> httpx.Client:
    alice = client("alice")
    tool(alice, command="create", path="/memories/trips.md", file_text="# Trips\n- hiked the Dolomites in June\n")
    tool(alice, command="create", path="/memories/clients/acme.md", file_text="Acme prefers email follow-ups.\n")
    return alice


def test_a_search_answers_ranked_passages_with_their_lines(http: httpx.Client) -> None:
    found = http.get("/v1/search", params={"q": "Dolomites", "mode": "fts"}).json()
    assert found["query"] == "Dolomites" and found["mode"] == "fts"
    assert found["note"].startswith("Full-text search (BM25)")
    (hit,) = found["hits"]
    assert (hit["path"], hit["first_line"], hit["last_line"]) == ("/memories/trips.md", 2, 2)
    assert hit["passage"] == "     2\t- hiked the Dolomites in June"
    assert hit["retrievers"] == ["fts"] and hit["score"] > 0
    assert (hit["rank"], hit["relevance"], hit["before"], hit["after"]) == (1, 1.0, "", "")


def test_prefix_and_limit_narrow_the_hits(http: httpx.Client) -> None:
    everywhere = http.get("/v1/search", params={"q": "email Dolomites", "mode": "fts"}).json()["hits"]
    assert {h["path"] for h in everywhere} == {"/memories/trips.md", "/memories/clients/acme.md"}
    below = http.get("/v1/search", params={"q": "email Dolomites", "prefix": "/memories/clients", "mode": "fts"})
    assert [h["path"] for h in below.json()["hits"]] == ["/memories/clients/acme.md"]
    assert len(http.get("/v1/search", params={"q": "email Dolomites", "limit": 1}).json()["hits"]) == 1


def test_the_default_mode_is_the_settings_choice(http: httpx.Client) -> None:
    found = http.get("/v1/search", params={"q": "hiking in the mountains"}).json()
    assert found["mode"] in ("fts", "hybrid")
    assert found["hits"][0]["path"] == "/memories/trips.md"


def test_query_syntax_is_searched_as_words(http: httpx.Client) -> None:
    for query in ('NEAR("a" "b")', "col:value*", "'; DROP TABLE search_chunks; --", '"unbalanced'):
        response = http.get("/v1/search", params={"q": query, "mode": "fts"})
        assert response.status_code == 200, (query, response.text)
        assert response.json()["hits"] == []


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({}, "invalid_request"),
        ({"q": "   "}, "invalid_request"),
        ({"q": "x" * 1001}, "invalid_request"),
        ({"q": "a", "limit": "0"}, "invalid_request"),
        ({"q": "a", "limit": "101"}, "invalid_request"),
        ({"q": "a", "limit": "ten"}, "invalid_request"),
        ({"q": "a", "mode": "magic"}, "invalid_request"),
        ({"q": "a", "prefix": "/etc"}, "path_error"),
        ({"q": "a", "prefix": "/memories/../etc"}, "path_error"),
        ([("q", "a"), ("q", "b")], "invalid_request"),
    ],
)
def test_bad_parameters_are_refused(http: httpx.Client, params: object, code: str) -> None:
    assert error_of(http.get("/v1/search", params=params)) == (400, code)  # type: ignore[arg-type]


def test_a_search_never_reaches_another_namespace(http: httpx.Client, client: Client) -> None:
    bob = client("bob")
    assert bob.get("/v1/search", params={"q": "Dolomites email Acme", "mode": "fts"}).json()["hits"] == []
    assert bob.get("/v1/search", params={"q": "Dolomites", "namespace": "alice"}).json()["hits"] == []


def test_a_nul_in_the_query_is_refused_as_a_nul_not_as_too_long(http: httpx.Client) -> None:
    response = http.get("/v1/search", params={"q": "a\x00b"})
    assert error_of(response) == (400, "invalid_request")
    assert response.json()["error"]["message"] == "query parameter 'q' must not contain a NUL byte"
    too_long = http.get("/v1/search", params={"q": "x" * 1001}).json()["error"]["message"]
    assert too_long == "query parameter 'q' must be text of at most 1000 characters"
