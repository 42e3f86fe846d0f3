"""Tenancy: a token reaches the memory stores its tenant owns and no other, by any id, path or parameter; unknown
keys are 401; the token works as ``X-Api-Key`` too; tokens made before tenants existed keep their namespace."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import httpx
import pytest

from backends import LiveServer
from memdir import open_store
from memdir.server.tokens import TokenRegistry

from .conftest import Client


@pytest.fixture
def alice(client: Client) -> anthropic.Anthropic:
    return client("alice")


@pytest.fixture
def bob(client: Client) -> anthropic.Anthropic:
    return client("bob")


def alices_things(alice: anthropic.Anthropic) -> dict[str, str]:
    store = alice.beta.memory_stores.create(name="alice's")
    memory = alice.beta.memory_stores.memories.create(store.id, path="/secret.md", content="alice's secret")
    old = memory.memory_version_id
    alice.beta.memory_stores.memories.update(memory.id, memory_store_id=store.id, content="alice's new secret")
    return {"store": store.id, "memory": memory.id, "version": old}


def attempts(api: anthropic.Anthropic, ids: dict[str, str], own: str) -> dict[str, Callable[[], Any]]:
    """Every method of the SDK aimed at alice's ids: directly, and through bob's own store."""
    s, m, v = ids["store"], ids["memory"], ids["version"]
    stores, memories, versions = (
        api.beta.memory_stores,
        api.beta.memory_stores.memories,
        api.beta.memory_stores.memory_versions,
    )
    found: dict[str, Callable[[], Any]] = {
        "retrieve store": lambda: stores.retrieve(s),
        "update store": lambda: stores.update(s, name="mine now"),
        "archive store": lambda: stores.archive(s),
        "delete store": lambda: stores.delete(s),
        "create memory": lambda: memories.create(s, path="/planted.md", content="x"),
        "list memories": lambda: memories.list(s),
        "retrieve memory": lambda: memories.retrieve(m, memory_store_id=s),
        "update memory": lambda: memories.update(m, memory_store_id=s, content="x"),
        "delete memory": lambda: memories.delete(m, memory_store_id=s),
        "list versions": lambda: versions.list(s),
        "retrieve version": lambda: versions.retrieve(v, memory_store_id=s),
        "redact version": lambda: versions.redact(v, memory_store_id=s),
    }
    for name in ("retrieve memory", "update memory", "delete memory", "retrieve version", "redact version"):
        # alice's memory and version ids with bob's own store id
        found[name + " via own store"] = {
            "retrieve memory": lambda: memories.retrieve(m, memory_store_id=own),
            "update memory": lambda: memories.update(m, memory_store_id=own, content="x"),
            "delete memory": lambda: memories.delete(m, memory_store_id=own),
            "retrieve version": lambda: versions.retrieve(v, memory_store_id=own),
            "redact version": lambda: versions.redact(v, memory_store_id=own),
        }[name]
    return found


def test_another_tenants_ids_are_not_found_everywhere(alice: anthropic.Anthropic, bob: anthropic.Anthropic) -> None:
    ids = alices_things(alice)
    own = bob.beta.memory_stores.create(name="bob's").id
    bob.beta.memory_stores.memories.create(own, path="/secret.md", content="bob's")
    unknown = {"store": "memstore_" + "0" * 24, "memory": "mem_" + "0" * 24, "version": "memver_" + "0" * 24}
    for name, attempt in attempts(bob, ids, own).items():
        with pytest.raises(anthropic.NotFoundError) as refused:
            attempt()
        # ...answered exactly as for ids that do not exist at all:
        with pytest.raises(anthropic.NotFoundError) as missing:
            attempts(bob, unknown, own)[name]()
        assert refused.value.type == missing.value.type == "not_found_error", name
        assert ids["store"] not in str(missing.value.api_message)
    assert [s.id for s in bob.beta.memory_stores.list(include_archived=True)] == [own]
    # alice's things are untouched
    memory = alice.beta.memory_stores.memories.retrieve(ids["memory"], memory_store_id=ids["store"])
    assert memory.content == "alice's new secret" and memory.path == "/secret.md"
    assert alice.beta.memory_stores.retrieve(ids["store"]).name == "alice's"
    assert alice.beta.memory_stores.memory_versions.retrieve(ids["version"], memory_store_id=ids["store"]).content


def test_no_parameter_names_another_tenant(
    server: LiveServer, alice: anthropic.Anthropic, bob: anthropic.Anthropic
) -> None:
    ids = alices_things(alice)
    extra = {"tenant": "alice", "namespace": ids["store"], "memory_store_id": ids["store"]}
    assert list(bob.beta.memory_stores.list(extra_query=extra)) == []
    made = bob.beta.memory_stores.create(
        name="bob's", extra_body=extra, extra_headers={"X-Memdir-Namespace": ids["store"]}
    )
    assert [s.id for s in alice.beta.memory_stores.list()] == [ids["store"]]
    bob.beta.memory_stores.memories.create(
        made.id, path="/b.md", content="b", extra_body={"memory_store_id": ids["store"]}
    )
    assert [m.path for m in alice.beta.memory_stores.memories.list(ids["store"])] == ["/secret.md"]
    # The memory tool with bob's token reaches bob's namespace, not alice's store.
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {server.token('bob')}"}) as http:
        view = http.post("/v1/tool", json={"command": "view", "path": "/memories/secret.md"}).json()
    assert view["is_error"] is True


def test_unknown_keys_are_401(server: LiveServer, client: Client) -> None:
    for key in ("mdt_" + "A" * 43, "sk-ant-api03-whatever", "x"):
        with pytest.raises(anthropic.AuthenticationError) as refused:
            client(api_key=key).beta.memory_stores.list()
        assert refused.value.type == "authentication_error"
    revoked = server.token("alice")
    [info] = [t for t in server.services.tokens.list() if t.namespace == "alice"]
    server.services.tokens.revoke(info.id)
    with pytest.raises(anthropic.AuthenticationError):
        client(api_key=revoked).beta.memory_stores.list()


def test_the_token_as_x_api_key(server: LiveServer) -> None:
    token = server.token("alice")
    with anthropic.Anthropic(base_url=server.url, api_key=None, auth_token=None, default_headers={"X-Api-Key": token},
                             max_retries=0) as api:  # fmt: skip
        made = api.beta.memory_stores.create(name="by x-api-key")
        assert api.beta.memory_stores.retrieve(made.id).name == "by x-api-key"
    with httpx.Client(base_url=server.url) as http:
        assert http.get("/v1/whoami", headers={"X-Api-Key": token}).json()["namespace"] == "alice"
        both = http.get("/v1/whoami", headers={"X-Api-Key": token, "Authorization": f"Bearer {token}"})
        assert both.status_code == 401  # two credentials are ambiguous
        assert http.get("/v1/whoami", headers={"X-Api-Key": ""}).status_code == 401


def test_a_token_for_a_memory_stores_namespace_belongs_to_its_owner(
    server: LiveServer, alice: anthropic.Anthropic, client: Client
) -> None:
    from click.testing import CliRunner

    from memdir.cli import cli

    made = alice.beta.memory_stores.create(name="shared")
    url = server.services.config.store_url
    created = CliRunner().invoke(cli, ["--store", url, "token", "create", "--namespace", made.id])
    assert created.exit_code == 0, created.output
    agent = client(api_key=created.stdout.strip())
    assert [s.id for s in agent.beta.memory_stores.list()] == [made.id]  # alice's tenant, so alice's stores


def test_tokens_made_before_tenants_keep_their_namespace(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    with sqlite3.connect(db) as conn:  # the token table as memdir made it before migration 0003
        conn.executescript(
            """
            CREATE TABLE _memdir_migrations (migration_set TEXT NOT NULL, name TEXT NOT NULL, applied_at REAL NOT NULL,
                PRIMARY KEY (migration_set, name));
            INSERT INTO _memdir_migrations VALUES ('memdir-tokens', '0001-tokens', 0);
            CREATE TABLE memdir_tokens (id TEXT PRIMARY KEY, sha256 TEXT NOT NULL UNIQUE, namespace TEXT NOT NULL,
                label TEXT, created REAL NOT NULL, revoked REAL);
            """
        )
    token = "mdt_" + "k" * 43
    import hashlib

    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO memdir_tokens VALUES ('0123456789ab', ?, 'carol', 'old', 1.0, NULL)",
            (hashlib.sha256(token.encode()).hexdigest(),),
        )
    with open_store(f"sqlite://{db}") as store:
        info = TokenRegistry(store.aux).verify(token)
    assert info is not None and (info.namespace, info.tenant) == ("carol", "carol")
