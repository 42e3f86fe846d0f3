"""Tokens: every request needs one; a token opens one namespace; revoked means refused on the very next request.
Tokens are kept hashed, and managed with ``memdir token create|list|revoke``."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from backends import LiveServer
from memdir import NotFoundError
from memdir.cli import cli
from memdir.server.tokens import TOKEN_PREFIX, looks_like_token

from .conftest import Client, Raw
from .helpers import error_of

PROTECTED = [
    ("POST", "/v1/tool"),
    ("POST", "/v1/tool/view"),
    ("GET", "/v1/whoami"),
    ("GET", "/v1/files/memories/a.md"),
    ("PUT", "/v1/files/memories/a.md"),
    ("DELETE", "/v1/files/memories/a.md"),
    ("GET", "/v1/stat/memories"),
    ("GET", "/v1/list/memories"),
    ("POST", "/v1/move"),
    ("GET", "/v1/usage"),
    ("GET", "/v1/history/memories/a.md"),
    ("POST", "/v1/restore/memories/a.md"),
    ("GET", "/v1/log"),
    ("GET", "/v1/blobs/" + "0" * 64),
    ("POST", "/v1/versions"),
    ("GET", "/v1/export"),
    ("POST", "/v1/import"),
    ("POST", "/mcp"),
]


@pytest.mark.parametrize(("method", "path"), PROTECTED, ids=[f"{m} {p}" for m, p in PROTECTED])
def test_every_endpoint_but_health_and_the_document_needs_a_token(server: LiveServer, method: str, path: str) -> None:
    with httpx.Client(base_url=server.url) as anonymous:
        response = anonymous.request(method, path, json={})
    assert error_of(response) == (401, "unauthorized")
    assert response.headers["www-authenticate"] == 'Bearer realm="memdir"'


def test_health_and_the_openapi_document_need_no_token(server: LiveServer) -> None:
    with httpx.Client(base_url=server.url) as anonymous:
        assert anonymous.get("/healthz").json() == {"status": "ok", "version": "0.1.0"}
        assert anonymous.get("/openapi.json").json()["openapi"] == "3.1.0"


@pytest.mark.parametrize(
    "authorization",
    [
        "Bearer mdt_" + "A" * 43,  # well formed, unknown
        "Bearer not-a-token",
        "Bearer",
        "Basic dXNlcjpwYXNz",
        "mdt_" + "A" * 43,
        "Bearer mdt_" + "A" * 43 + "A",
    ],
    ids=["unknown", "malformed", "empty", "basic", "no-scheme", "too-long"],
)
def test_bad_credentials_are_refused_alike(server: LiveServer, authorization: str) -> None:
    with httpx.Client(base_url=server.url, headers={"Authorization": authorization}) as http:
        response = http.get("/v1/whoami")
    assert error_of(response) == (401, "unauthorized")


def test_the_bearer_scheme_is_case_insensitive(server: LiveServer) -> None:
    token = server.token("alice")
    with httpx.Client(base_url=server.url, headers={"Authorization": f"bearer {token}"}) as http:
        assert http.get("/v1/whoami").json()["namespace"] == "alice"


def test_two_authorization_headers_are_refused(server: LiveServer, raw: Raw) -> None:
    alice, bob = server.token("alice"), server.token("bob")
    response = raw(
        "GET /v1/whoami HTTP/1.1\r\nHost: {host}\r\n"
        f"Authorization: Bearer {alice}\r\nAuthorization: Bearer {bob}\r\nConnection: close\r\n\r\n"
    )
    assert (response.status, response.json()["error"]["code"]) == (401, "unauthorized")


def test_a_token_opens_its_namespace(client: Client, server: LiveServer) -> None:
    token = server.token("alice", label="laptop")
    who = client(token=token).get("/v1/whoami").json()
    token_id = server.services.tokens.verify(token).id
    assert who == {"namespace": "alice", "token_id": token_id, "idempotent_writes": True, "admin": False}


def test_revocation_takes_effect_on_the_next_request_on_the_same_connection(client: Client, server: LiveServer) -> None:
    token = server.token("alice")
    http = client(token=token)
    assert http.get("/v1/whoami").status_code == 200  # a keep-alive connection is now open
    server.services.tokens.revoke(server.services.tokens.verify(token).id)
    assert error_of(http.get("/v1/whoami")) == (401, "unauthorized")
    assert error_of(http.post("/v1/tool", json={"command": "view", "path": "/memories"})) == (401, "unauthorized")


def test_tokens_are_stored_hashed(server: LiveServer, store_url: str) -> None:
    token = server.token("alice")
    assert token.startswith(TOKEN_PREFIX) and looks_like_token(token) and len(token) == 47
    database = Path(store_url.removeprefix("sqlite://"))
    with sqlite3.connect(database) as conn:
        rows = conn.execute("SELECT * FROM memdir_tokens").fetchall()
    assert rows and all(token not in map(str, row) for row in rows)
    assert token.encode() not in database.read_bytes()


def test_revoking_an_unknown_token_is_not_found(server: LiveServer) -> None:
    with pytest.raises(NotFoundError):
        server.services.tokens.revoke("0123456789ab")
    with pytest.raises(NotFoundError):
        server.services.tokens.revoke("'; DROP TABLE memdir_tokens; --")


def test_the_token_commands(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path / 'memory.db'}"
    runner = CliRunner()
    created = runner.invoke(cli, ["--store", url, "token", "create", "--namespace", "alice", "--label", "laptop"])
    assert created.exit_code == 0, created.output
    token = created.stdout.strip()
    assert looks_like_token(token)
    assert "not shown again" in created.stderr
    listed = runner.invoke(cli, ["token", "list", "--store", url]).stdout.splitlines()
    assert len(listed) == 1
    token_id, namespace, label, _created, expires, last_used, revoked, admin = listed[0].split("\t")
    assert (namespace, label, expires, last_used, revoked, admin) == ("alice", "laptop", "never", "-", "-", "-")
    assert token not in runner.invoke(cli, ["token", "list", "--store", url, "--json"]).stdout
    revoked_out = runner.invoke(cli, ["--store", url, "token", "revoke", token_id])
    assert revoked_out.stdout == f"Revoked token {token_id} (namespace 'alice').\n"
    assert runner.invoke(cli, ["--store", url, "token", "list"]).stdout == ""
    assert len(runner.invoke(cli, ["--store", url, "token", "list", "--all"]).stdout.splitlines()) == 1
    missing = runner.invoke(cli, ["--store", url, "token", "revoke", "ffffffffffff"])
    assert (missing.exit_code, missing.stderr) == (1, "Error: no token with id 'ffffffffffff'\n")


@pytest.mark.parametrize(
    ("store", "words"),
    [("memory:", "memory: store"), ("http://127.0.0.1:9/", "where the server's store is")],
)
def test_tokens_live_only_in_a_served_local_store(store: str, words: str) -> None:
    result = CliRunner().invoke(cli, ["--store", store, "token", "create", "-n", "alice"])
    assert result.exit_code == 1 and words in result.stderr


def test_a_token_needs_a_valid_namespace(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["--store", f"sqlite://{tmp_path / 'm.db'}", "token", "create", "-n", "../x"])
    assert result.exit_code == 1 and "invalid namespace" in result.stderr
