"""The token registry on every engine that can hold it (SQLite, PostgreSQL), and on PostgreSQL across servers:
a token created or revoked through one server is valid or refused on the next request to any other."""

from __future__ import annotations

import hashlib
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
    token_id, namespace, label, _created, _expires, _used, revoked, admin = listed[0].split("\t")
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


class Clock:
    """``time`` as the token registry sees it, moved by the test."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def time(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    moved = Clock()
    monkeypatch.setattr("memdir.server.tokens.time", moved)
    return moved


def test_a_token_expires_and_is_then_refused_like_a_revoked_one(store: Store, clock: Clock) -> None:
    tokens = TokenRegistry(store.aux)
    token, info = tokens.create("alice", "ci", expires_in=30 * 86400)
    assert info.expires == clock.now + 30 * 86400
    assert tokens.verify(token) == info
    clock.now += 30 * 86400 - 1
    assert tokens.verify(token) is not None
    clock.now += 1
    assert tokens.verify(token) is None
    assert tokens.list() == [] and [t.id for t in tokens.list(include_revoked=True)] == [info.id]
    with pytest.raises(ConfigError, match="positive duration"):
        tokens.create("alice", expires_in=0)


def test_last_use_is_recorded_at_most_once_a_minute(store: Store, clock: Clock) -> None:
    tokens = TokenRegistry(store.aux)
    _token, info = tokens.create("alice")
    assert info.last_used is None and info.touch_due(clock.now)
    tokens.touch(info.id, clock.now)
    [seen] = tokens.list()
    assert seen.last_used == clock.now and not seen.touch_due(clock.now + 59) and seen.touch_due(clock.now + 60)
    tokens.touch(info.id, clock.now - 10)  # a late writer never moves it back
    assert tokens.list()[0].last_used == clock.now


def test_an_expired_token_is_refused_over_http_and_uses_show_in_the_listing(tmp_path: Path, clock: Clock) -> None:
    url = f"sqlite://{tmp_path / 'm.db'}"
    with LiveServer(ServerConfig(store_url=url, rate=0)) as server:
        token, info = server.services.tokens.create("alice", expires_in=3600)
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"}) as http:
            assert http.get("/v1/whoami").status_code == 200
            assert server.services.tokens.list()[0].last_used == clock.now
            clock.now += 3600
            refused = http.get("/v1/whoami")
            assert refused.status_code == 401
            assert refused.json()["error"]["message"] == (
                "the bearer token is not valid (unknown, malformed, expired or revoked)"
            )
    listed = CliRunner().invoke(cli, ["--store", url, "token", "list", "--all"]).stdout.splitlines()
    [(token_id, _ns, _label, _created, expires, last_used, revoked, _admin)] = [line.split("\t") for line in listed]
    assert (token_id, revoked) == (info.id, "-")
    assert expires == "2027-01-15T09:00:00Z (expired)" and last_used == "2027-01-15T08:00:00Z"


def test_token_create_expires_on_the_command_line(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path / 'm.db'}"
    created = CliRunner().invoke(cli, ["--store", url, "token", "create", "-n", "ci", "--expires", "30d"])
    assert created.exit_code == 0, created.output
    assert ", valid until 20" in created.stderr
    with open_store(url) as store:
        [info] = TokenRegistry(store.aux).list()
        assert info.expires is not None and abs(info.expires - info.created - 30 * 86400) < 1
    bad = CliRunner().invoke(cli, ["--store", url, "token", "create", "-n", "ci", "--expires", "soon"])
    assert (bad.exit_code, bad.stderr) == (
        1,
        "Error: --expires must be a duration such as 30d, 12h or 90m, got 'soon'\n",
    )


def test_tokens_made_before_the_upgrade_keep_working(tmp_path: Path) -> None:
    from memdir.server.tokens import migrations

    path = tmp_path / "m.db"
    open_store(f"sqlite://{path}").close()
    with sqlite3.connect(path, isolation_level=None) as conn:  # a database as memdir left it before expiry
        conn.execute("DROP TABLE IF EXISTS memdir_tokens")
        conn.execute("DELETE FROM _memdir_migrations WHERE migration_set = 'memdir-tokens'")
        migrations.apply(conn, until="0001-tokens")
        conn.execute(
            "INSERT INTO memdir_tokens (id, sha256, namespace, label, created) VALUES ('aaaaaaaaaaaa', ?, 'old', NULL, 1)",
            (hashlib.sha256(("mdt_" + "A" * 43).encode()).hexdigest(),),
        )
    with open_store(f"sqlite://{path}") as store:
        tokens = TokenRegistry(store.aux)  # upgrades the table
        old = tokens.verify("mdt_" + "A" * 43)
        assert old is not None and (old.namespace, old.expires, old.last_used) == ("old", None, None)
    with sqlite3.connect(path) as conn:
        assert "0002-expiry-and-last-use" in migrations.applied(conn) and migrations.pending(conn) == []
