"""Memory versions through the official SDK: one per change, ids that stay, history that outlives the memory,
filters, paging, views; redaction that takes the bytes out of the database and is audited."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import anthropic
import httpx
import pytest

from backends import LiveServer

from .conftest import Client, database_bytes


@pytest.fixture
def api(client: Client) -> anthropic.Anthropic:
    return client("alice")


@pytest.fixture
def store_id(api: anthropic.Anthropic) -> str:
    return api.beta.memory_stores.create(name="history").id


def test_every_change_is_a_version_and_they_outlive_the_memory(api: anthropic.Anthropic, store_id: str) -> None:
    memories, versions = api.beta.memory_stores.memories, api.beta.memory_stores.memory_versions
    made = memories.create(store_id, path="/a.md", content="one")
    edited = memories.update(made.id, memory_store_id=store_id, content="two")
    moved = memories.update(made.id, memory_store_id=store_id, path="/b.md")
    memories.delete(made.id, memory_store_id=store_id)
    found = list(versions.list(store_id, memory_id=made.id))
    assert [(v.operation, v.path, v.content_sha256) for v in found] == [  # newest first
        ("deleted", "/b.md", None),
        ("modified", "/b.md", hashlib.sha256(b"two").hexdigest()),
        ("modified", "/a.md", hashlib.sha256(b"two").hexdigest()),
        ("created", "/a.md", hashlib.sha256(b"one").hexdigest()),
    ]
    assert [v.id for v in found[1:3]] == [moved.memory_version_id, edited.memory_version_id]
    assert found[-1].id == made.memory_version_id
    assert {v.memory_id for v in found} == {made.id} and all(v.memory_store_id == store_id for v in found)
    assert found[0].content_size_bytes is None and found[1].content_size_bytes == 3
    assert all(v.created_by is not None and v.created_by.type == "api_actor" for v in found)
    assert all(v.content is None for v in found)  # view=basic is the default of a list
    first = versions.retrieve(found[-1].id, memory_store_id=store_id)  # view=full the default of a retrieve
    assert (first.content, first.path, first.operation) == ("one", "/a.md", "created")
    assert versions.retrieve(found[-1].id, memory_store_id=store_id, view="basic").content is None
    assert versions.retrieve(found[0].id, memory_store_id=store_id).content is None  # a deletion has none


def test_filters_and_paging(server: LiveServer, client: Client, api: anthropic.Anthropic, store_id: str) -> None:
    memories, versions = api.beta.memory_stores.memories, api.beta.memory_stores.memory_versions
    a = memories.create(store_id, path="/a.md", content="a1")
    for i in range(2, 5):
        memories.update(a.id, memory_store_id=store_id, content=f"a{i}")
    b = memories.create(store_id, path="/b.md", content="b1")
    other = client("alice")  # a second token of the same tenant
    other.beta.memory_stores.memories.update(b.id, memory_store_id=store_id, content="b2")
    everything = list(versions.list(store_id, limit=2))  # auto-paging, two at a time
    assert len(everything) == 6 and [v.memory_id for v in everything[:2]] == [b.id, b.id]
    assert [v.operation for v in versions.list(store_id, operation="created")] == ["created", "created"]
    assert len(list(versions.list(store_id, memory_id=a.id))) == 4
    mine = everything[-1].created_by
    assert mine is not None and mine.type == "api_actor"
    assert len(list(versions.list(store_id, api_key_id=mine.api_key_id))) == 5  # type: ignore[union-attr]
    assert len(list(versions.list(store_id, service_account_id="svac_x"))) == 0
    since = everything[1].created_at
    assert [v.id for v in versions.list(store_id, created_at_gte=since)] == [v.id for v in everything[:2]]
    assert len(list(versions.list(store_id, created_at_lte=since))) == 5
    page = versions.list(store_id, limit=4, view="full")
    assert [v.content for v in page.data] == ["b2", "b1", "a4", "a3"] and page.next_page
    with pytest.raises(anthropic.BadRequestError):
        versions.list(store_id, operation="renamed")  # type: ignore[arg-type]


def test_other_doors_writes_have_ids_too(server: LiveServer, api: anthropic.Anthropic, store_id: str) -> None:
    """The memory tool writing to the memory store's namespace: its files are memories, its changes versions
    (actor: the model's session), a rename keeps the memory's id."""
    memories, versions = api.beta.memory_stores.memories, api.beta.memory_stores.memory_versions
    headers = {"Authorization": f"Bearer {server.token(store_id)}", "X-Memdir-Session": "agent-7"}
    with httpx.Client(base_url=server.url, headers=headers) as http:

        def tool(**command: object) -> None:
            assert http.post("/v1/tool", json=command).json()["is_error"] is False

        tool(command="create", path="/memories/notes/todo.md", file_text="- buy milk\n")
        [listed] = memories.list(store_id)
        assert listed.path == "/notes/todo.md"
        tool(command="str_replace", path="/memories/notes/todo.md", old_str="milk", new_str="bread")
        tool(command="rename", old_path="/memories/notes/todo.md", new_path="/memories/todo.md")
        found = memories.retrieve(listed.id, memory_store_id=store_id)
        assert (found.id, found.path, found.content) == (listed.id, "/todo.md", "- buy bread\n")
        history = list(versions.list(store_id, memory_id=listed.id))
        assert [v.operation for v in history] == ["modified", "modified", "created"]
        assert history[0].id == found.memory_version_id
        assert all(v.created_by is not None and v.created_by.type == "session_actor" for v in history)
        assert len(list(versions.list(store_id, session_id="agent-7"))) == 3
        tool(command="delete", path="/memories/todo.md")
    with pytest.raises(anthropic.NotFoundError):
        memories.retrieve(listed.id, memory_store_id=store_id)
    assert versions.list(store_id, memory_id=listed.id).data[0].operation == "deleted"


def test_redaction_takes_the_bytes_out_of_the_database(
    server: LiveServer, api: anthropic.Anthropic, store_id: str, db_path: Path
) -> None:
    memories, versions = api.beta.memory_stores.memories, api.beta.memory_stores.memory_versions
    leaked = "Dana told the agent about her divorce and the clinic on Elm Street"  # private, not a secret rule's
    made = memories.create(store_id, path="/leak.md", content=leaked)
    memories.update(made.id, memory_store_id=store_id, content="nothing to see")
    assert leaked.encode() in database_bytes(db_path)
    redacted = versions.redact(made.memory_version_id, memory_store_id=store_id)
    assert redacted.redacted_at is not None and redacted.redacted_by is not None
    assert redacted.redacted_by.type == "api_actor"
    assert (redacted.content, redacted.path, redacted.content_sha256, redacted.content_size_bytes) == (None,) * 4
    assert (redacted.operation, redacted.created_by) == ("created", made_by(versions, store_id, made.memory_version_id))
    again = versions.retrieve(made.memory_version_id, memory_store_id=store_id)  # retrieving it still succeeds
    assert again.content is None and again.redacted_at == redacted.redacted_at
    assert versions.redact(made.memory_version_id, memory_store_id=store_id).redacted_at == redacted.redacted_at
    assert leaked.encode() not in database_bytes(db_path)  # gone from the file and its WAL, not hidden
    assert memories.retrieve(made.id, memory_store_id=store_id).content == "nothing to see"
    from memdir.doctor import diagnose

    checked = diagnose(f"sqlite://{db_path}")  # a redacted version is not a version whose content went missing
    assert [f for f in checked.findings if f.severity == "error"] == []
    with server.services.tenants.lease(store_id) as store:
        [entry] = [e for e in audit_entries(store) if e["command"] == "redact"]
    assert (entry["actor"], entry["path"], entry["outcome"]) == ("api", "/memories/leak.md", "ok")


def test_content_another_version_holds_stays_until_that_one_goes(
    api: anthropic.Anthropic, store_id: str, db_path: Path
) -> None:
    memories, versions = api.beta.memory_stores.memories, api.beta.memory_stores.memory_versions
    text = "the same words, written twice"
    made = memories.create(store_id, path="/a.md", content=text)
    memories.update(made.id, memory_store_id=store_id, content="between")
    twice = memories.update(made.id, memory_store_id=store_id, content=text)  # the blob is shared by both
    memories.update(made.id, memory_store_id=store_id, content="after")
    versions.redact(made.memory_version_id, memory_store_id=store_id)
    assert text.encode() in database_bytes(db_path)  # the third version still has it, readable:
    assert versions.retrieve(twice.memory_version_id, memory_store_id=store_id).content == text
    versions.redact(twice.memory_version_id, memory_store_id=store_id)
    assert text.encode() not in database_bytes(db_path)


def test_the_current_version_cannot_be_redacted(api: anthropic.Anthropic, store_id: str) -> None:
    memories, versions = api.beta.memory_stores.memories, api.beta.memory_stores.memory_versions
    made = memories.create(store_id, path="/a.md", content="current")
    with pytest.raises(anthropic.ConflictError) as refused:
        versions.redact(made.memory_version_id, memory_store_id=store_id)
    assert refused.value.type == "conflict_error"
    assert memories.retrieve(made.id, memory_store_id=store_id).content == "current"
    memories.delete(made.id, memory_store_id=store_id)  # deleted, its last content can go
    assert versions.redact(made.memory_version_id, memory_store_id=store_id).content_sha256 is None


def made_by(versions: object, store_id: str, version_id: str) -> object:
    return versions.retrieve(version_id, memory_store_id=store_id).created_by  # type: ignore[attr-defined]


def audit_entries(store: object) -> list[dict[str, object]]:
    from memdir.policy.audit import audit_log

    log = audit_log(store)  # type: ignore[arg-type]
    log.flush()
    return [e.to_json() for e in log.entries()]


def test_redacted_content_reads_as_redacted_over_the_wire_and_exports(
    server: LiveServer, api: anthropic.Anthropic, store_id: str, tmp_path: Path
) -> None:
    from memdir import RedactedError, open_store
    from memdir.archive import export_namespace

    memories, versions = api.beta.memory_stores.memories, api.beta.memory_stores.memory_versions
    made = memories.create(store_id, path="/a.md", content="the old text")
    memories.update(made.id, memory_store_id=store_id, content="the new text")
    versions.redact(made.memory_version_id, memory_store_id=store_id)
    sha = hashlib.sha256(b"the old text").hexdigest()
    answer = httpx.get(
        f"http://127.0.0.1:{server.port}/v1/blobs/{sha}",
        headers={"Authorization": f"Bearer {server.token(store_id)}"},
    )
    assert (answer.status_code, answer.json()["error"]["code"]) == (410, "redacted")
    with open_store(server.url_for(store_id)) as remote:
        with pytest.raises(RedactedError):
            remote.read_blob(sha)
        summary = export_namespace(remote, tmp_path / "backup.zip")  # a backup of a store with redactions works
    assert (summary.versions, summary.files) == (2, 1)
    with zipfile.ZipFile(tmp_path / "backup.zip") as zf:
        assert json.loads(zf.read("manifest.json"))["redacted"] == [sha]
