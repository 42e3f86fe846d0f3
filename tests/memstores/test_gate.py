"""The Memory Stores API is one more door to the same gate (issue 13): a secret is redacted exactly as through
the memory tool, and the audit log records the API's actor.

These depend on the gate: `Call.run` hands the handlers the namespace's gated store, so the API writes through
ordinary `Store` calls and never calls policy code itself."""

from __future__ import annotations

import hashlib
from pathlib import Path

import anthropic
import httpx
import pytest

from backends import LiveServer

from .conftest import Client, database_bytes

SECRET = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
TEXT = f"deploy with token {SECRET} on Tuesdays\n"


def through_the_tool(server: LiveServer, text: str) -> bytes:
    """What the memory tool stores for ``text``, in a namespace of its own."""
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {server.token('tool-side')}"}) as http:
        result = http.post("/v1/tool", json={"command": "create", "path": "/memories/a.md", "file_text": text}).json()
        assert result["is_error"] is False, result
        return http.get("/v1/files/memories/a.md").content


def test_a_secret_is_redacted_exactly_as_through_the_tool(server: LiveServer, client: Client, db_path: Path) -> None:
    api = client("alice")
    store = api.beta.memory_stores.create(name="gated")
    made = api.beta.memory_stores.memories.create(store.id, path="/a.md", content=TEXT, view="full")
    expected = through_the_tool(server, TEXT)
    assert SECRET.encode() not in expected  # the tool's own redaction, the reference
    assert made.content is not None and made.content.encode() == expected
    assert made.content_sha256 == hashlib.sha256(expected).hexdigest()  # what is stored, never what was sent
    assert SECRET.encode() not in database_bytes(db_path)


def test_the_audit_log_records_the_apis_actor(server: LiveServer, client: Client) -> None:
    api = client("alice")
    store = api.beta.memory_stores.create(name="audited")
    made = api.beta.memory_stores.memories.create(store.id, path="/a.md", content="one")
    api.beta.memory_stores.memories.update(made.id, memory_store_id=store.id, content="two")
    api.beta.memory_stores.memories.delete(made.id, memory_store_id=store.id)
    [token] = [t for t in server.services.tokens.list() if t.namespace == "alice"]
    from memdir.policy.audit import audit_log

    with server.services.tenants.lease(store.id) as leased:
        entries = [e for e in audit_log(leased).entries() if e.path == "/memories/a.md"]
    writes = [(e.actor, e.session) for e in entries if e.command != "redact"]
    assert len(writes) >= 3 and set(writes) == {("api", f"token-{token.id}")}


def test_a_secret_in_a_stores_name_description_or_metadata_is_redacted(client: Client, db_path: Path) -> None:
    """A memory store's name, description and metadata are kept beside its memories (the registry, in the
    served store's database) and answered on every retrieve: a secret in them is redacted as in a label."""
    keys = ["AKIA" + "Q7W3E9R5T1Y8U2I" + digit for digit in "12345"]
    api = client("alice")
    made = api.beta.memory_stores.create(
        name=f"deploy {keys[0]}", description=f"uses {keys[1]}", metadata={"k": keys[2]}
    )
    assert (made.name, made.description) == ("deploy [REDACTED:aws-access-key]", "uses [REDACTED:aws-access-key]")
    assert made.metadata == {"k": "[REDACTED:aws-access-key]"}
    updated = api.beta.memory_stores.update(made.id, name=f"now {keys[3]}", metadata={"j": keys[4]})
    assert updated.name == "now [REDACTED:aws-access-key]"
    assert updated.metadata == {"k": "[REDACTED:aws-access-key]", "j": "[REDACTED:aws-access-key]"}
    assert not [key for key in keys if key.encode() in database_bytes(db_path)]


def test_a_metadata_key_holding_a_secret_is_refused(client: Client, db_path: Path) -> None:
    """Redacted, two keys holding secrets would become one and a value be lost: a key holding one is refused,
    and nothing changes."""
    keys = ["AKIA" + "Q7W3E9R5T1Y8U2I" + digit for digit in "67"]
    api = client("alice")
    made = api.beta.memory_stores.create(name="keys", metadata={"a": "1"})
    for attempt in (
        lambda: api.beta.memory_stores.create(name="other", metadata={keys[0]: "x", keys[1]: "y"}),
        lambda: api.beta.memory_stores.update(made.id, metadata={keys[0]: "x"}),
    ):
        with pytest.raises(anthropic.BadRequestError, match="a key holds a secret"):
            attempt()
    assert api.beta.memory_stores.retrieve(made.id).metadata == {"a": "1"}
    assert [s.name for s in api.beta.memory_stores.list()] == ["keys"]
    assert not [key for key in keys if key.encode() in database_bytes(db_path)]


def test_a_metadata_key_that_is_no_utf8_text_is_refused_as_such(server: LiveServer, client: Client) -> None:
    """JSON's lone surrogate ("\\ud800", which the SDK cannot even send) is no text: said so, not taken for a
    secret (redacting it changed it)."""
    api = client("alice")
    answer = httpx.post(
        f"{server.url}/v1/memory_stores",
        content=b'{"name": "keys", "metadata": {"k\\ud800": "x"}}',
        headers={"x-api-key": api.api_key or "", "content-type": "application/json"},
    )
    assert answer.status_code == 400
    assert "a key is not valid UTF-8 text" in answer.json()["error"]["message"]
    assert list(api.beta.memory_stores.list()) == []


def test_changes_of_a_store_itself_are_audited(server: LiveServer, client: Client) -> None:
    """Creating, updating, archiving and deleting a store are writes too: each is one entry, with the API's actor,
    naming the store (its creation in the audit log of the namespace that made it, the rest in the store's own)."""
    from memdir.policy.audit import audit_log

    api = client("alice")
    store = api.beta.memory_stores.create(name="audited", metadata={"team": "a"})
    api.beta.memory_stores.memories.create(store.id, path="/a.md", content="one")
    api.beta.memory_stores.update(store.id, description="two")
    api.beta.memory_stores.archive(store.id)
    api.beta.memory_stores.delete(store.id)

    def entries(namespace: str) -> list[tuple[str, str, str | None, str | None]]:
        with server.services.tenants.lease(namespace) as leased:
            found = audit_log(leased).entries()
        return [(e.command, e.actor, e.path, e.detail) for e in found if e.command.startswith("store-")]

    assert entries("alice") == [("store-create", "api", None, store.id)]
    assert entries(store.id) == [
        ("store-update", "api", None, store.id),
        ("store-archive", "api", None, store.id),
        ("store-delete", "api", "/memories", store.id),
    ]
