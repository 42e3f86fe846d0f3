"""Memory stores through the official SDK: create, retrieve, update, list, archive, delete."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import anthropic
import pytest
from anthropic.types.beta import BetaManagedAgentsMemoryStore

from .conftest import Client, database_bytes


@pytest.fixture
def api(client: Client) -> anthropic.Anthropic:
    return client("alice")


def test_create_retrieve_update(api: anthropic.Anthropic) -> None:
    stores = api.beta.memory_stores
    made = stores.create(name="prefs", description="User preferences", metadata={"user": "u-42"})
    assert isinstance(made, BetaManagedAgentsMemoryStore)
    assert made.id.startswith("memstore_") and made.archived_at is None and made.created_at == made.updated_at
    assert (made.name, made.description, made.metadata) == ("prefs", "User preferences", {"user": "u-42"})
    assert stores.retrieve(made.id) == made
    bare = stores.create(name="bare")
    assert (bare.description, bare.metadata) == ("", {})
    updated = stores.update(made.id, name="preferences", metadata={"team": "core", "user": None})
    assert (updated.name, updated.description, updated.metadata) == (
        "preferences",
        "User preferences",
        {"team": "core"},
    )
    assert updated.updated_at > made.updated_at and updated.created_at == made.created_at
    assert stores.update(made.id, description="").description == ""  # an empty string clears it
    assert stores.update(made.id).name == "preferences"  # nothing asked, nothing changed
    assert stores.retrieve(made.id).metadata == {"team": "core"}


@pytest.mark.parametrize(
    "fields",
    [
        {"name": ""},
        {"name": "x" * 256},
        {"name": "tab\there"},
        {"name": "ok", "description": "d" * 1025},
        {"name": "ok", "metadata": {f"k{i}": "v" for i in range(17)}},
        {"name": "ok", "metadata": {"": "v"}},
        {"name": "ok", "metadata": {"k" * 65: "v"}},
        {"name": "ok", "metadata": {"k": "v" * 513}},
    ],
)
def test_invalid_stores_are_400(api: anthropic.Anthropic, fields: dict[str, object]) -> None:
    with pytest.raises(anthropic.BadRequestError) as refused:
        api.beta.memory_stores.create(**fields)  # type: ignore[arg-type]
    assert refused.value.type == "invalid_request_error"
    assert list(api.beta.memory_stores.list()) == []


def test_list_newest_first_with_paging_filters_and_archived(api: anthropic.Anthropic) -> None:
    stores = api.beta.memory_stores
    made = [stores.create(name=f"s{i}") for i in range(5)]
    listed = stores.list(limit=2)
    assert [s.id for s in listed.data] == [made[4].id, made[3].id] and listed.next_page
    assert [s.id for s in stores.list(limit=2)] == [s.id for s in reversed(made)]  # every page, newest first
    stores.archive(made[1].id)
    assert made[1].id not in [s.id for s in stores.list()]
    assert made[1].id in [s.id for s in stores.list(include_archived=True)]
    since = made[2].created_at
    assert [s.id for s in stores.list(created_at_gte=since)] == [made[4].id, made[3].id, made[2].id]
    assert [s.id for s in stores.list(created_at_lte=since.isoformat())] == [made[2].id, made[0].id]
    assert list(stores.list(created_at_gte=dt.datetime.now(dt.UTC) + dt.timedelta(days=1))) == []


def test_archive(api: anthropic.Anthropic) -> None:
    stores, memories = api.beta.memory_stores, api.beta.memory_stores.memories
    store = stores.create(name="old")
    one = memories.create(store.id, path="/one.md", content="1")
    memories.update(one.id, memory_store_id=store.id, content="2")
    two = memories.create(store.id, path="/two.md", content="2")
    archived = stores.archive(store.id)
    assert archived.archived_at is not None and archived.updated_at == archived.archived_at
    assert stores.archive(store.id) == archived  # archiving again answers it unchanged
    with pytest.raises(anthropic.BadRequestError):
        stores.update(store.id, name="new")
    with pytest.raises(anthropic.BadRequestError):
        memories.create(store.id, path="/three.md", content="3")
    with pytest.raises(anthropic.BadRequestError):
        memories.update(one.id, memory_store_id=store.id, content="3")
    # Reading, deleting and redacting still work.
    assert memories.retrieve(one.id, memory_store_id=store.id).content == "2"
    assert memories.delete(two.id, memory_store_id=store.id).id == two.id
    first = next(v for v in stores.memory_versions.list(store.id, memory_id=one.id) if v.operation == "created")
    assert stores.memory_versions.redact(first.id, memory_store_id=store.id).redacted_at is not None
    assert stores.retrieve(store.id).archived_at == archived.archived_at


def test_delete_removes_everything(api: anthropic.Anthropic, db_path: Path) -> None:
    stores, memories = api.beta.memory_stores, api.beta.memory_stores.memories
    store = stores.create(name="doomed")
    kept = stores.create(name="kept")
    made = memories.create(store.id, path="/a.md", content="the doomed text, version one")
    memories.update(made.id, memory_store_id=store.id, content="the doomed text, version two")
    memories.create(kept.id, path="/a.md", content="the kept text")
    deleted = stores.delete(store.id)
    assert (deleted.id, deleted.type) == (store.id, "memory_store_deleted")
    for call in (
        lambda: stores.retrieve(store.id),
        lambda: memories.retrieve(made.id, memory_store_id=store.id),
        lambda: list(stores.memory_versions.list(store.id)),
        lambda: stores.delete(store.id),
    ):
        with pytest.raises(anthropic.NotFoundError):
            call()
    assert [s.id for s in stores.list(include_archived=True)] == [kept.id]
    on_disk = database_bytes(db_path)
    assert b"the doomed text" not in on_disk
    assert b"the kept text" in on_disk
