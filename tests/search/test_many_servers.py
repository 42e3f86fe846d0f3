"""Many servers, one index: on PostgreSQL the search index (passages, words, embeddings) lives in the store's
database, so a write through one server is found through every other on its next search, embeddings are made
once for all of them, and servers catching up with the log at the same moment index each change once."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from memdir import Store, open_store
from memdir.search import Searcher, search
from support.postgres import database_url


@pytest.fixture
def url(tmp_path: Path) -> str:
    return database_url(str(tmp_path))


@pytest.fixture
def servers(url: str) -> Iterator[tuple[Store, Store]]:
    with open_store(url, namespace="team") as one, open_store(url, namespace="team") as two:
        yield one, two


def paths(store: Store, query: str) -> list[str]:
    return [hit.path.virtual for hit in search(store, query, mode="fts")]


def test_what_one_server_writes_the_other_finds_at_once(servers: tuple[Store, Store]) -> None:
    one, two = servers
    assert paths(two, "quince") == []  # two's index is built (empty) before one writes
    one.write("/memories/jam.md", b"quince jelly\n")
    assert paths(two, "quince") == ["/memories/jam.md"]
    one.move("/memories/jam.md", "/memories/pantry/jam.md")
    assert paths(two, "quince") == ["/memories/pantry/jam.md"]
    one.delete("/memories/pantry")
    assert paths(two, "quince") == []


def test_embeddings_are_made_once_for_every_server(servers: tuple[Store, Store]) -> None:
    one, two = servers
    one.write("/memories/pets.md", b"The user owns a golden retriever named Max.\n")
    first = Searcher(one, settings={})
    assert first.search("which puppy", mode="hybrid").hits[0].path.virtual == "/memories/pets.md"
    second = Searcher(two, settings={})
    second.index.refresh()
    assert second.vectors().fill() == 0  # the vector one server stored is the other's too
    assert second.search("which puppy", mode="hybrid").hits[0].path.virtual == "/memories/pets.md"


_CATCH_UP = """
import sys
from memdir import open_store
from memdir.search import searcher
with open_store(sys.argv[1], namespace="team") as store:
    print(searcher(store).index.refresh())
"""


def test_servers_catching_up_at_once_index_each_change_once(url: str) -> None:
    with open_store(url, namespace="team") as store:
        for n in range(300):
            store.write(f"/memories/d{n % 7}/note_{n}.md", f"# Note {n}\nword{n} shared\n\nsecond part {n}\n".encode())
        for n in range(0, 300, 3):  # rewritten: only the last version may be indexed
            store.write(f"/memories/d{n % 7}/note_{n}.md", f"# Note {n}\nrewritten{n} shared\n".encode())
        workers = [
            subprocess.Popen([sys.executable, "-c", _CATCH_UP, url], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            for _ in range(3)
        ]
        outputs = [worker.communicate(timeout=120) for worker in workers]
        assert [worker.returncode for worker in workers] == [0, 0, 0], [err for _, err in outputs]
        with psycopg.connect(url) as pg:
            rows = pg.execute("SELECT path, count(*) FROM search_chunks WHERE ns = 'team' GROUP BY path").fetchall()
        passages = {str(path).rsplit("_", 1)[1]: count for path, count in rows}
        assert passages == {f"{n}.md": 1 if n % 3 == 0 else 2 for n in range(300)}  # no passage twice
        assert paths(store, "word3") == [] and paths(store, "rewritten3") == ["/memories/d3/note_3.md"]
        assert paths(store, "word4") == ["/memories/d4/note_4.md"]
