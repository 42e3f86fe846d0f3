"""GET /v1/audit and GET /v1/verify: the namespace's audit log (filtered, bounded) and its integrity check."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import httpx
import pytest

from memdir.store._records import sha256_hex
from support.postgres import database_url

from .conftest import Client
from .helpers import error_of, tool


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The served store: SQLite, and PostgreSQL, where the audit log and the tokens live in the store's own database."""
    if request.param == "sqlite":
        return f"sqlite://{tmp_path / 'memory.db'}"
    return database_url(str(tmp_path))


@pytest.fixture
def http(client: Client) -> httpx.Client:
    alice = client("alice")
    tool(alice, command="create", path="/memories/a.md", file_text="alpha\n")
    tool(alice, command="create", path="/memories/d/b.md", file_text="beta\n")
    tool(alice, command="view", path="/memories/a.md")
    return alice


def test_the_log_holds_every_tool_command_oldest_first_without_content(http: httpx.Client) -> None:
    entries = http.get("/v1/audit").json()["entries"]
    assert [(e["channel"], e["actor"], e["command"], e["path"], e["outcome"]) for e in entries] == [
        ("tool", "model", "create", "/memories/a.md", "ok"),
        ("tool", "model", "create", "/memories/d/b.md", "ok"),
        ("tool", "model", "view", "/memories/a.md", "ok"),
    ]
    assert entries[0]["sha256"] == sha256_hex(b"alpha\n") and entries[0]["size"] == 6
    assert entries[0]["session"].startswith("token-")
    assert "alpha" not in http.get("/v1/audit").text


def test_path_since_and_limit_filter_it(http: httpx.Client) -> None:
    below = http.get("/v1/audit", params={"path": "/memories/d"}).json()["entries"]
    assert [e["path"] for e in below] == ["/memories/d/b.md"]
    last = http.get("/v1/audit", params={"limit": 1}).json()["entries"]
    assert [e["command"] for e in last] == ["view"]
    assert http.get("/v1/audit", params={"since": str(time.time() + 3600)}).json()["entries"] == []
    assert len(http.get("/v1/audit", params={"since": "2020-01-01"}).json()["entries"]) == 3
    assert len(http.get("/v1/audit", params={"since": "2020-01-01T00:00:00Z"}).json()["entries"]) == 3


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"since": "yesterday"}, (400, "invalid_request")),
        ({"since": "nan"}, (400, "invalid_request")),
        ({"since": "1e999"}, (400, "invalid_request")),
        ({"limit": "0"}, (400, "invalid_request")),
        ({"limit": "5001"}, (400, "invalid_request")),
        ({"path": "/etc/passwd"}, (400, "path_error")),
        ({"path": "/memories/../.."}, (400, "path_error")),
    ],
)
def test_bad_filters_are_refused(http: httpx.Client, params: dict[str, str], expected: tuple[int, str]) -> None:
    assert error_of(http.get("/v1/audit", params=params)) == expected


def test_each_namespace_reads_only_its_own_log(http: httpx.Client, client: Client) -> None:
    bob = client("bob")
    assert bob.get("/v1/audit").json()["entries"] == []
    assert bob.get("/v1/audit", params={"namespace": "alice", "path": "/memories/a.md"}).json()["entries"] == []


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)  # the damage is done to the SQLite file
def test_verify_reports_content_changed_behind_memdirs_back(http: httpx.Client, store_url: str) -> None:
    clean = http.get("/v1/verify").json()
    assert (clean["ok"], clean["files"], clean["discrepancies"]) == (True, 2, [])
    assert (clean["history"]["ok"], clean["history"]["checked"], clean["history"]["breaks"]) == (True, 2, [])
    assert clean["audit"]["ok"] is True and clean["audit"]["entries"] >= 3
    database = Path(store_url.removeprefix("sqlite://"))
    with sqlite3.connect(database) as conn:
        conn.execute("UPDATE blobs SET content = ? WHERE sha256 = ?", (b"a lie\n", sha256_hex(b"alpha\n")))
        conn.execute("UPDATE versions SET actor = 'someone else' WHERE version = 1")
    conn.close()
    found = http.get("/v1/verify").json()
    assert found["ok"] is False
    assert [(d["path"], d["problem"], d["actual"]) for d in found["discrepancies"]] == [
        ("/memories/a.md", "changed", sha256_hex(b"a lie\n"))
    ]
    assert [(b["kind"], b["first"]) for b in found["history"]["breaks"]] == [("edited", 1)]
