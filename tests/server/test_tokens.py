"""The token registry on every engine that can hold it (SQLite, PostgreSQL), and on PostgreSQL across servers:
a token created or revoked through one server is valid or refused on the next request to any other."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
from click.testing import CliRunner

from backends import LiveServer
from memdir import NotFoundError, Store, open_store
from memdir.cli import cli
from memdir.errors import ConfigError
from memdir.server import ServerConfig
from memdir.server.tokens import TokenRegistry, looks_like_token
from support.postgres import database_url


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return f"sqlite://{tmp_path / 'm.db'}" if request.param == "sqlite" else database_url(str(tmp_path))


@pytest.fixture
def store(url: str) -> Iterator[Store]:
    with open_store(url) as opened:
        yield opened


def stored_rows(url: str) -> list[tuple[object, ...]]:
    """Every row of the token table, read past memdir."""
    if url.startswith("sqlite://"):
        with sqlite3.connect(url.removeprefix("sqlite://")) as conn:
            return conn.execute("SELECT * FROM memdir_tokens").fetchall()
    with psycopg.connect(url) as pg:
        return pg.execute("SELECT * FROM memdir_tokens").fetchall()


def test_create_verify_list_revoke(store: Store) -> None:
    tokens = TokenRegistry(store.aux)
    token, info = tokens.create("alice", "laptop")
    assert looks_like_token(token)
    assert tokens.verify(token) == info
    assert [t.id for t in tokens.list()] == [info.id]
    revoked = tokens.revoke(info.id)
    assert revoked.revoked is not None and not revoked.active
    assert tokens.verify(token) is None
    assert tokens.list() == [] and [t.id for t in tokens.list(include_revoked=True)] == [info.id]
    assert tokens.revoke(info.id).revoked == revoked.revoked  # revoking twice changes nothing


def test_unknown_malformed_and_hostile_ids(store: Store) -> None:
    tokens = TokenRegistry(store.aux)
    assert tokens.verify("mdt_" + "A" * 43) is None
    assert tokens.verify("not a token") is None
    for token_id in ("0123456789ab", "'; DROP TABLE memdir_tokens; --", "?"):
        with pytest.raises(NotFoundError):
            tokens.revoke(token_id)
    with pytest.raises(ConfigError):
        tokens.create("alice", "bad\x00label")


def test_only_the_hash_is_stored(store: Store, url: str) -> None:
    token, _ = TokenRegistry(store.aux).create("alice")
    rows = stored_rows(url)
    assert len(rows) == 1 and all(token not in str(value) for value in rows[0])


def test_the_token_commands_on_postgres(tmp_path: Path) -> None:
    url = database_url(str(tmp_path))
    runner = CliRunner()
    created = runner.invoke(cli, ["--store", url, "token", "create", "--namespace", "alice", "--label", "ci"])
    assert created.exit_code == 0, created.output
    token = created.stdout.strip()
    listed = runner.invoke(cli, ["--store", url, "token", "list"]).stdout.splitlines()
    token_id, namespace, label, _created, revoked, admin = listed[0].split("\t")
    assert (namespace, label, revoked, admin) == ("alice", "ci", "-", "-")
    with open_store(url) as store:
        assert TokenRegistry(store.aux).verify(token) is not None  # another process's token, in the same table
    assert runner.invoke(cli, ["--store", url, "token", "revoke", token_id]).exit_code == 0
    assert runner.invoke(cli, ["--store", url, "token", "list"]).stdout == ""


def test_two_registries_on_one_database_are_one_truth(tmp_path: Path) -> None:
    url = database_url(str(tmp_path))
    with open_store(url) as one, open_store(url) as two:
        first, second = TokenRegistry(one.aux), TokenRegistry(two.aux)
        token, info = first.create("alice")
        assert second.verify(token) == info  # no cache to wait for
        second.revoke(info.id)
        assert first.verify(token) is None


def test_two_servers_share_tokens_and_revocations(tmp_path: Path) -> None:
    config = ServerConfig(store_url=database_url(str(tmp_path)), rate=0)
    with LiveServer(config) as one, LiveServer(config) as two:
        token = one.token("alice")
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(headers=headers, timeout=30) as http:
            assert http.get(f"{two.url}/v1/whoami").json()["namespace"] == "alice"
            put = http.put(f"{one.url}/v1/files/memories/a.md", content=b"written through one\n")
            assert put.status_code in (200, 201), put.text
            assert http.get(f"{two.url}/v1/files/memories/a.md").content == b"written through one\n"
            two.services.tokens.revoke(two.services.tokens.verify(token).id)  # type: ignore[union-attr]
            assert http.get(f"{one.url}/v1/whoami").status_code == 401
