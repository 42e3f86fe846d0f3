"""Memories through the official SDK: create, retrieve, update (content, path, both), preconditions, delete,
list (paging, prefixes, depth, views), with the SDK's own types and exceptions."""

from __future__ import annotations

import hashlib

import anthropic
import pytest
from anthropic.types.beta.memory_stores import BetaManagedAgentsMemory, BetaManagedAgentsMemoryPrefix

from .conftest import Client


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture
def api(client: Client) -> anthropic.Anthropic:
    return client("alice")


@pytest.fixture
def store_id(api: anthropic.Anthropic) -> str:
    return api.beta.memory_stores.create(name="prefs", description="User preferences").id


def test_create_answers_basic_by_default_and_retrieve_full(api: anthropic.Anthropic, store_id: str) -> None:
    memories = api.beta.memory_stores.memories
    made = memories.create(store_id, path="/food.md", content="No spicy food.")
    assert isinstance(made, BetaManagedAgentsMemory)
    assert made.id.startswith("mem_") and made.memory_version_id.startswith("memver_")
    assert (made.path, made.content, made.content_sha256, made.content_size_bytes) == (
        "/food.md", None, sha("No spicy food."), 14,
    )  # fmt: skip
    assert made.memory_store_id == store_id and made.created_at == made.updated_at
    assert memories.create(store_id, path="/full.md", content="x", view="full").content == "x"
    found = memories.retrieve(made.id, memory_store_id=store_id)
    assert found.content == "No spicy food." and found.memory_version_id == made.memory_version_id
    assert memories.retrieve(made.id, memory_store_id=store_id, view="basic").content is None


def test_empty_content_and_the_100_kb_limit(api: anthropic.Anthropic, store_id: str) -> None:
    memories = api.beta.memory_stores.memories
    assert memories.create(store_id, path="/empty.md", content="").content_size_bytes == 0
    largest = "é" * 51_200  # 102,400 bytes of UTF-8: exactly the limit
    assert memories.create(store_id, path="/big.md", content=largest).content_size_bytes == 102_400
    with pytest.raises(anthropic.BadRequestError) as refused:
        memories.create(store_id, path="/bigger.md", content=largest + "x")
    assert refused.value.type == "invalid_request_error" and "102,400" in (refused.value.api_message or "")
    assert [m.path for m in memories.list(store_id)] == ["/big.md", "/empty.md"]


def test_update_content_path_or_both_keeps_the_id(api: anthropic.Anthropic, store_id: str) -> None:
    memories = api.beta.memory_stores.memories
    made = memories.create(store_id, path="/a.md", content="one")
    edited = memories.update(made.id, memory_store_id=store_id, content="two", view="full")
    assert (edited.id, edited.path, edited.content) == (made.id, "/a.md", "two")
    assert edited.memory_version_id != made.memory_version_id and edited.created_at == made.created_at
    moved = memories.update(made.id, memory_store_id=store_id, path="/notes/a.md")
    assert (moved.id, moved.path, moved.content_sha256) == (made.id, "/notes/a.md", sha("two"))
    both = memories.update(made.id, memory_store_id=store_id, path="/b.md", content="three", view="full")
    assert (both.id, both.path, both.content) == (made.id, "/b.md", "three")
    assert memories.retrieve(made.id, memory_store_id=store_id).path == "/b.md"


def test_an_update_that_changes_nothing_makes_no_version(api: anthropic.Anthropic, store_id: str) -> None:
    memories = api.beta.memory_stores.memories
    made = memories.create(store_id, path="/a.md", content="same")
    again = memories.update(made.id, memory_store_id=store_id, content="same", path="/a.md")
    assert again.memory_version_id == made.memory_version_id
    assert len(list(api.beta.memory_stores.memory_versions.list(store_id, memory_id=made.id))) == 1


def test_preconditions_on_update(api: anthropic.Anthropic, store_id: str) -> None:
    memories = api.beta.memory_stores.memories
    made = memories.create(store_id, path="/a.md", content="one")
    current = {"type": "content_sha256", "content_sha256": made.content_sha256}
    updated = memories.update(made.id, memory_store_id=store_id, content="two", precondition=current)  # matches
    assert updated.content_sha256 == sha("two")
    with pytest.raises(anthropic.ConflictError) as stale:  # the same precondition is stale now
        memories.update(made.id, memory_store_id=store_id, content="three", precondition=current)
    assert stale.value.status_code == 409 and stale.value.type == "memory_precondition_failed_error"
    assert stale.value.response.headers["x-should-retry"] == "false" and stale.value.request_id
    assert memories.retrieve(made.id, memory_store_id=store_id).content == "two"  # nothing written
    with pytest.raises(anthropic.ConflictError):  # a rename is refused alike
        memories.update(made.id, memory_store_id=store_id, path="/moved.md", precondition=current)
    # Stale, but the memory already is what was asked for: 200, as the API documents.
    assert memories.update(
        made.id, memory_store_id=store_id, content="two", precondition=current
    ).content_sha256 == sha("two")
    with pytest.raises(anthropic.BadRequestError):
        memories.update(made.id, memory_store_id=store_id, content="x", precondition={"type": "content_sha256"})


def test_delete_with_and_without_a_precondition(api: anthropic.Anthropic, store_id: str) -> None:
    memories = api.beta.memory_stores.memories
    one = memories.create(store_id, path="/one.md", content="1")
    two = memories.create(store_id, path="/two.md", content="2")
    with pytest.raises(anthropic.ConflictError) as stale:
        memories.delete(one.id, memory_store_id=store_id, expected_content_sha256=sha("not it"))
    assert stale.value.type == "memory_precondition_failed_error"
    assert memories.retrieve(one.id, memory_store_id=store_id).content == "1"  # nothing deleted
    deleted = memories.delete(one.id, memory_store_id=store_id, expected_content_sha256=sha("1"))
    assert (deleted.id, deleted.type) == (one.id, "memory_deleted")
    assert memories.delete(two.id, memory_store_id=store_id).id == two.id
    for gone in (one.id, two.id):
        with pytest.raises(anthropic.NotFoundError):
            memories.retrieve(gone, memory_store_id=store_id)
    assert list(memories.list(store_id)) == []
    with pytest.raises(anthropic.BadRequestError):
        memories.delete(one.id, memory_store_id=store_id, expected_content_sha256="ABC")


def test_a_path_another_memory_holds_or_overlaps(api: anthropic.Anthropic, store_id: str) -> None:
    memories = api.beta.memory_stores.memories
    file = memories.create(store_id, path="/a", content="a file")
    nested = memories.create(store_id, path="/dir/b.md", content="below /dir")
    other = memories.create(store_id, path="/c.md", content="c")
    for path, blocker in (("/a", file), ("/a/x.md", file), ("/dir", nested)):
        with pytest.raises(anthropic.ConflictError) as taken:
            memories.create(store_id, path=path, content="x")
        error = taken.value.body["error"]  # type: ignore[index]
        assert error["type"] == "memory_path_conflict_error", path
        assert (error["conflicting_memory_id"], error["conflicting_path"]) == (blocker.id, blocker.path)
    with pytest.raises(anthropic.ConflictError) as renamed:
        memories.update(other.id, memory_store_id=store_id, path="/dir", content="edited too")
    assert renamed.value.body["error"]["conflicting_memory_id"] == nested.id  # type: ignore[index]
    # Refused before anything was written: neither the content nor the path changed.
    kept = memories.retrieve(other.id, memory_store_id=store_id)
    assert (kept.path, kept.content, kept.memory_version_id) == ("/c.md", "c", other.memory_version_id)


def test_paging_over_250_memories_in_path_order(api: anthropic.Anthropic, store_id: str) -> None:
    memories = api.beta.memory_stores.memories
    paths = [f"/notes/n{i:03}.md" for i in range(250)]
    for path in paths:
        memories.create(store_id, path=path, content=path)
    first = memories.list(store_id, limit=100)
    assert len(first.data) == 100 and first.next_page and first.next_page.startswith("page_")
    pages = [first]
    while pages[-1].has_next_page():
        pages.append(pages[-1].get_next_page())
    assert [len(p.data) for p in pages] == [100, 100, 50] and pages[-1].next_page is None
    listed = [m.path for p in pages for m in p.data]
    assert listed == paths  # every memory once, in path order
    assert [m.path for m in memories.list(store_id)] == paths  # auto-paging, 20 at a time
    full = memories.list(store_id, limit=100, view="full")
    assert len(full.data) == 20  # view=full caps a page at 20
    assert all(isinstance(m, BetaManagedAgentsMemory) and m.content == m.path for m in full.data)
    assert all(m.content is None for m in first.data)  # view=basic: no content, hash and size all the same
    assert all(m.content_sha256 == sha(m.path) and m.content_size_bytes == len(m.path) for m in first.data)


def test_prefix_and_depth(api: anthropic.Anthropic, store_id: str) -> None:
    memories = api.beta.memory_stores.memories
    for path in ("/top.md", "/notes/a.md", "/notes/deep/b.md", "/notes-archive/c.md", "/z/y/x.md"):
        memories.create(store_id, path=path, content=path)
    assert [m.path for m in memories.list(store_id, path_prefix="/notes/")] == ["/notes/a.md", "/notes/deep/b.md"]
    top = list(memories.list(store_id, depth=1))
    assert [(type(i).__name__, i.path) for i in top] == [  # segment by segment, as `view` lists: notes < notes-...
        ("BetaManagedAgentsMemoryPrefix", "/notes/"),
        ("BetaManagedAgentsMemoryPrefix", "/notes-archive/"),
        ("BetaManagedAgentsMemory", "/top.md"),
        ("BetaManagedAgentsMemoryPrefix", "/z/"),
    ]
    inner = list(memories.list(store_id, path_prefix="/notes/", depth=1))
    assert [i.path for i in inner] == ["/notes/a.md", "/notes/deep/"]
    assert isinstance(inner[1], BetaManagedAgentsMemoryPrefix)
    paged = memories.list(store_id, depth=1, limit=1)  # a prefix counts toward the limit, and pages past its files
    walked = [paged.data[0].path]
    while paged.has_next_page():
        paged = paged.get_next_page()
        walked.extend(i.path for i in paged.data)
    assert walked == ["/notes/", "/notes-archive/", "/top.md", "/z/"]
    assert list(memories.list(store_id, path_prefix="/nothing/")) == []
    for bad in ("notes/", "/notes", "/no//pe/"):
        with pytest.raises(anthropic.BadRequestError):
            memories.list(store_id, path_prefix=bad)


def test_bad_parameters_are_400(api: anthropic.Anthropic, store_id: str) -> None:
    memories = api.beta.memory_stores.memories
    with pytest.raises(anthropic.BadRequestError):
        memories.list(store_id, limit=0)
    with pytest.raises(anthropic.BadRequestError):
        memories.list(store_id, limit=101)
    with pytest.raises(anthropic.BadRequestError):
        memories.list(store_id, view="everything")  # type: ignore[arg-type]
    with pytest.raises(anthropic.BadRequestError):
        memories.list(store_id, page="page_bm90IGEgcGFnZQ")
    with pytest.raises(anthropic.BadRequestError):
        memories.create(store_id, path="/x.md", content=None, extra_body={"content": 5})
    with pytest.raises(anthropic.NotFoundError):
        memories.retrieve("mem_doesnotexist", memory_store_id=store_id)


def test_racing_conditional_updates_let_exactly_one_through(
    client: Client, api: anthropic.Anthropic, store_id: str
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    made = api.beta.memory_stores.memories.create(store_id, path="/race.md", content="start")
    precondition = {"type": "content_sha256", "content_sha256": made.content_sha256}
    racers = [client("alice") for _ in range(8)]

    def attempt(i: int) -> str:
        try:
            racers[i].beta.memory_stores.memories.update(
                made.id,
                memory_store_id=store_id,
                content=f"writer {i}",
                precondition=precondition,  # type: ignore[arg-type]
            )
            return "won"
        except anthropic.ConflictError as exc:
            assert exc.type == "memory_precondition_failed_error"
            return "refused"

    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(attempt, range(8)))
    assert sorted(outcomes) == ["refused"] * 7 + ["won"]
    winner = outcomes.index("won")
    assert api.beta.memory_stores.memories.retrieve(made.id, memory_store_id=store_id).content == f"writer {winner}"
    assert len(list(api.beta.memory_stores.memory_versions.list(store_id, memory_id=made.id))) == 2
