"""``memory_search`` for agents (`memdir.search.search_tool`) and the MCP server's ``memory_search``."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import jsonschema
import pytest

from memdir import MemoryStore, MemoryTool
from memdir.gate import audit_entries
from memdir.search import ToolText, search_tool
from memdir.search._tool import INPUT_SCHEMA


@pytest.fixture
def store() -> MemoryStore:
    store = MemoryStore()
    store.aux  # noqa: B018 - opened up front like any store in use
    tool = MemoryTool(store)
    tool.execute(
        {
            "command": "create",
            "path": "/memories/clients/acme.md",
            "file_text": "# Acme\nprefers email\ncall on Tuesdays\n",
        }
    )
    tool.execute({"command": "create", "path": "/memories/notes.md", "file_text": "buy milk\n"})
    return store


@pytest.fixture
def fts_only(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    (tmp_path / "config.toml").write_text('[search]\nmode = "fts"\n')
    monkeypatch.setenv("MEMDIR_CONFIG", str(tmp_path / "config.toml"))


def run(store: MemoryStore, arguments: Any) -> ToolText:
    return search_tool(store)[2](arguments)


def test_definitions_for_anthropic_and_openai() -> None:
    anthropic, openai, _ = search_tool(MemoryStore())
    assert anthropic["name"] == "memory_search" and anthropic["input_schema"] is INPUT_SCHEMA
    assert openai == {
        "type": "function",
        "function": {"name": "memory_search", "description": anthropic["description"], "parameters": INPUT_SCHEMA},
    }
    jsonschema.Draft202012Validator.check_schema(INPUT_SCHEMA)
    json.dumps(anthropic)


def test_the_text_lists_path_line_relevance_and_numbered_lines(store: MemoryStore, fts_only: None) -> None:
    result = run(store, {"query": "email"})
    assert not result.is_error
    assert result.text == (
        "1 passage matching 'email', best first. Full-text search (BM25).\n\n"
        "/memories/clients/acme.md (line 2, relevance 1.00, fts)\n     2\tprefers email\n     3\tcall on Tuesdays"
    )


def test_the_result_holds_what_fits_the_token_budget(store: MemoryStore, fts_only: None) -> None:
    lines = "".join(f"note {n}: the quarterly report needs another careful review before Friday\n" for n in range(60))
    store.write("/memories/reports.md", lines.encode())
    small = run(store, {"query": "quarterly report", "max_tokens": 150}).text
    large = run(store, {"query": "quarterly report", "max_tokens": 2000}).text
    assert small.count("/memories/reports.md (line") == 2 and len(small) <= 150 * 4 + 250
    assert small.endswith("(48 more matching passages left out to fit 150 tokens.)")
    assert large.count("/memories/reports.md (line") > 20 and len(large) <= 2000 * 4
    # A line shown as an earlier hit's context is not shown as context again (it may still be a hit itself).
    numbers = [row.split("\t")[0].strip() for row in large.split("\n") if "\t" in row]
    assert max(Counter(numbers).values()) == 2 and len(set(numbers)) > 20


def test_a_hit_too_long_for_the_budget_is_cut_and_says_so(store: MemoryStore, fts_only: None) -> None:
    store.write("/memories/big.md", ("zebra " + "lorem ipsum " * 8000 + "\n").encode())
    text = run(store, {"query": "zebra", "max_tokens": 100}).text
    assert len(text) <= 100 * 4
    assert text.startswith("1 passage matching 'zebra', best first. Full-text search (BM25)")
    assert "\n\n/memories/big.md (line 1, relevance 1.00, fts)\n     1\tzebra lorem ipsum lorem" in text
    assert text.endswith("… (cut to fit 100 tokens: view line 1 of /memories/big.md to read it whole)")


def test_the_header_counts_in_the_budget(store: MemoryStore, fts_only: None) -> None:
    lines = "".join(f"note {n}: the quarterly report needs another careful review before Friday\n" for n in range(60))
    store.write("/memories/reports.md", lines.encode())
    query = "quarterly report " + " ".join(["unmatched"] * 18)  # ~190 characters, repeated in the header
    text = run(store, {"query": query, "max_tokens": 150}).text
    assert len(text) <= 150 * 4 and text.count("/memories/reports.md (line") >= 1
    assert text.endswith("more matching passages left out to fit 150 tokens.)")


def test_the_query_is_repeated_bounded_and_escaped_never_as_a_repr(store: MemoryStore, fts_only: None) -> None:
    assert run(store, {"query": "it's\x00\u202e\ngone"}).text == (
        "No memory matches 'it's\\x00\\u202e\\ngone'. Full-text search (BM25)."
    )
    text = run(store, {"query": "zz" * 500}).text
    assert text == f"No memory matches '{'zz' * 100}… (1,000 characters)'. Full-text search (BM25)."


def test_a_query_over_1000_characters_is_refused(store: MemoryStore) -> None:
    result = run(store, {"query": "e" * 1001})
    assert (result.text, result.is_error) == (
        "Error: Parameter `query` of memory_search is 1,001 characters, over the limit of 1,000: search for a few "
        "words or a short question.",
        True,
    )


def test_each_search_is_audited_once_as_the_model(store: MemoryStore, fts_only: None) -> None:
    run(store, {"query": "email"})
    run(store, {"query": "email", "path_prefix": "/etc"})
    searches = [(e.channel, e.actor, e.path, e.outcome) for e in audit_entries(store) if e.command == "search"]
    assert searches == [("tool", "model", None, "ok"), ("tool", "model", "/etc", "error")]


def test_no_match_says_so(store: MemoryStore, fts_only: None) -> None:
    result = run(store, {"query": "zebra"})
    assert (result.text, result.is_error) == ("No memory matches 'zebra'. Full-text search (BM25).", False)


def test_limit_and_prefix(store: MemoryStore, fts_only: None) -> None:
    assert run(store, {"query": "milk email", "limit": 1}).text.count("/memories/") == 1
    scoped = run(store, {"query": "milk email", "path_prefix": "/memories/clients"}).text
    assert "/memories/clients/acme.md" in scoped and "notes.md" not in scoped


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "Error: Missing required parameter `query` (a non-empty string) for memory_search."),
        ({"query": "  "}, "Error: Missing required parameter `query` (a non-empty string) for memory_search."),
        ({"query": 3}, "Error: Missing required parameter `query` (a non-empty string) for memory_search."),
        ({"query": "a", "limit": 0}, "Error: Parameter `limit` of memory_search must be an integer from 1 to 50."),
        ({"query": "a", "limit": "5"}, "Error: Parameter `limit` of memory_search must be an integer from 1 to 50."),
        ({"query": "a", "limit": True}, "Error: Parameter `limit` of memory_search must be an integer from 1 to 50."),
        (
            {"query": "a", "max_tokens": 10},
            "Error: Parameter `max_tokens` of memory_search must be an integer from 100 to 20000.",
        ),
        (
            {"query": "a", "path_prefix": 7},
            "Error: Parameter `path_prefix` of memory_search must be a string starting with /memories.",
        ),
        ({"query": "a", "path_prefix": "/etc"}, "Error: Path must start with /memories, got: /etc"),
        (
            {"query": "a", "path_prefix": "/memories/../x"},
            "Error: Path /memories/../x would escape /memories directory",
        ),
        ("not a dict", "Error: the input of memory_search must be an object with a `query` string"),
    ],
)
def test_bad_input_is_an_error_result(store: MemoryStore, arguments: Any, message: str) -> None:
    result = run(store, arguments)
    assert (result.text, result.is_error) == (message, True)


def test_failures_are_error_results_never_exceptions(store: MemoryStore, caplog: pytest.LogCaptureFixture) -> None:
    class Broken(MemoryStore):
        def log(self, since: int = 0, *, rescan: bool = True) -> Any:
            raise RuntimeError("/host/path exploded")

    result = run(Broken(), {"query": "email"})
    assert result.is_error
    assert result.text == "Error: Internal error in memory_search. The details are in the memdir log."
    assert "exploded" in caplog.text
