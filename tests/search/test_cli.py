"""``memdir search`` and ``memdir reindex``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memdir import open_store
from memdir.cli import cli
from support.postgres import database_url


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    url = f"sqlite://{tmp_path / 'memory.db'}" if request.param == "sqlite" else database_url(str(tmp_path))
    with open_store(url) as store:
        store.write("/memories/clients/acme.md", b"# Acme\nprefers [email] follow-ups\n")
        store.write("/memories/notes.md", b"buy milk\n")
    return url


def invoke(url: str, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--store", url, *args])
    return result.exit_code, result.stdout, result.stderr


def test_piped_output_is_one_tab_separated_line_per_hit(url: str) -> None:
    code, out, err = invoke(url, "search", "email", "--mode", "fts")
    assert code == 0
    assert out == "/memories/clients/acme.md\t2\t1.00\t     2\tprefers [email] follow-ups\n"
    assert err == "1 hit. Full-text search (BM25).\n"


def test_json(url: str) -> None:
    code, out, _ = invoke(url, "search", "milk email", "--json", "--mode", "fts", "--limit", "1")
    data = json.loads(out)
    assert code == 0 and data["mode"] == "fts" and len(data["hits"]) == 1
    assert set(data["hits"][0]) == {
        "path", "first_line", "last_line", "rank", "relevance", "score", "retrievers", "passage", "before", "after"
    }  # fmt: skip
    assert (data["hits"][0]["rank"], data["hits"][0]["relevance"]) == (1, 1.0)


def test_prefix(url: str) -> None:
    _, out, _ = invoke(url, "search", "milk email", "--prefix", "/memories/clients", "--json", "--mode", "fts")
    assert [h["path"] for h in json.loads(out)["hits"]] == ["/memories/clients/acme.md"]


def test_table_on_a_terminal_keeps_brackets(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("memdir.cli._search.stdout_is_tty", lambda: True)
    code, out, _ = invoke(url, "search", "email", "--mode", "fts")
    assert code == 0
    assert "Relevance" in out and "/memories/clients/acme.md" in out and "[email]" in out
    assert "1 hit. Full-text search (BM25)." in out


def test_the_table_shows_the_lines_around_a_hit(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("memdir.cli._search.stdout_is_tty", lambda: True)
    with open_store(url) as store:
        store.write("/memories/call.md", b"agenda first\nthe budget was approved\nnext steps later\n")
    code, out, _ = invoke(url, "search", "budget", "--mode", "fts")
    assert code == 0
    assert out.index("1  agenda first") < out.index("2  the budget was approved") < out.index("3  next steps later")


def test_bad_prefix_is_one_line_error(url: str) -> None:
    code, _, err = invoke(url, "search", "x", "--prefix", "/etc")
    assert code == 1
    assert err == "Error: Path must start with /memories, got: /etc\n"


def test_reindex_counts_files(url: str) -> None:
    code, out, _ = invoke(url, "reindex", "--no-embed")
    assert (code, out) == (0, "Indexed 2 files.\n")
    _, out, _ = invoke(url, "search", "milk", "--json", "--mode", "fts")
    assert [h["path"] for h in json.loads(out)["hits"]] == ["/memories/notes.md"]


def test_reindex_shows_a_progress_bar_on_a_terminal(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("memdir.cli._search.stdout_is_tty", lambda: True)
    code, out, _ = invoke(url, "reindex", "--no-embed")
    assert code == 0
    assert "Indexing files" in out and "2/2" in out and out.endswith("Indexed 2 files.\n")
