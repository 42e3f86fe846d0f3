"""The store contract over HTTP, endpoint by endpoint (`RemoteStore` speaks it; the contract suite runs through it
too, in tests/store/test_contract.py)."""

from __future__ import annotations

import base64
import hashlib
import io
import re
import time
import zipfile

import httpx
import pytest

from memdir._wire import parse_time

from .conftest import Client
from .helpers import error_of


@pytest.fixture
def http(client: Client) -> httpx.Client:
    return client("alice")


def test_write_then_read_with_the_version_in_the_headers(http: httpx.Client) -> None:
    written = http.put("/v1/files/memories/notes/a.md", content=b"hello\n")
    assert written.status_code == 200
    version = written.json()
    assert (version["version"], version["op"], version["actor"], version["path"]) == (
        1,
        "write",
        "user",
        "/memories/notes/a.md",
    )
    assert version["sha256"] == hashlib.sha256(b"hello\n").hexdigest()
    read = http.get("/v1/files/memories/notes/a.md")
    assert read.content == b"hello\n"
    assert read.headers["content-type"] == "application/octet-stream"
    assert (read.headers["etag"], read.headers["x-memdir-version"]) == ('"1"', "1")
    assert read.headers["x-memdir-sha256"] == version["sha256"]
    assert read.headers["x-memdir-modified"] == version["timestamp"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", version["timestamp"])  # ISO 8601, UTC


def test_preconditions_and_their_errors(http: httpx.Client) -> None:
    assert http.put("/v1/files/memories/a.md", content=b"1", headers={"If-None-Match": "*"}).status_code == 200
    assert error_of(http.put("/v1/files/memories/a.md", content=b"2", headers={"If-None-Match": "*"})) == (
        409,
        "already_exists",
    )
    stale = http.put("/v1/files/memories/a.md", content=b"2", headers={"If-Match": '"7"'})
    assert error_of(stale) == (412, "conflict")
    assert stale.json()["error"]["current"] == 1
    assert http.put("/v1/files/memories/a.md", content=b"2", headers={"If-Match": '"1"'}).json()["version"] == 2
    assert http.put("/v1/files/memories/a.md", content=b"3", headers={"If-Match": 'W/"2"'}).json()["version"] == 3
    assert error_of(http.put("/v1/files/memories/new.md", content=b"x", headers={"If-Match": '"1"'})) == (
        412,
        "conflict",
    )
    assert error_of(http.put("/v1/files/memories/a.md/b.md", content=b"x")) == (409, "not_a_directory")
    http.put("/v1/files/memories/d/x.md", content=b"x")
    assert error_of(http.put("/v1/files/memories/d", content=b"x")) == (409, "not_a_file")
    assert error_of(http.get("/v1/files/memories/d")) == (409, "not_a_file")
    assert error_of(http.get("/v1/files/memories/missing.md")) == (404, "not_found")


def test_the_origin_headers_are_recorded_as_sent(http: httpx.Client) -> None:
    headers = {
        "X-Memdir-Actor": "model",
        "X-Memdir-Session": "s%201%20%E2%9C%93",
        "X-Memdir-Source": "web%3A%2F%2Fexample",
    }
    version = http.put("/v1/files/memories/a.md", content=b"x", params={"op": "create"}, headers=headers).json()
    assert (version["op"], version["actor"], version["session"], version["source"]) == (
        "create",
        "model",
        "s 1 ✓",
        "web://example",
    )


def test_a_token_cannot_write_under_another_tokens_session(client: Client) -> None:
    """``token-<id>`` is the session the server records a token's writes under (the memory stores API names the
    writer by it): another token of the same namespace may not claim it, and a token may send its own."""
    first, second = client("alice"), client("alice")
    own = "token-" + first.get("/v1/whoami").json()["token_id"]
    claimed = second.put("/v1/files/memories/b.md", content=b"x", headers={"X-Memdir-Session": own})
    assert error_of(claimed) == (400, "invalid_request") and "another token" in claimed.json()["error"]["message"]
    mine = first.put("/v1/files/memories/a.md", content=b"x", headers={"X-Memdir-Session": own})
    assert mine.json()["session"] == own
    assert [e["path"] for e in first.get("/v1/list/memories").json()["entries"]] == ["/memories/a.md"]


def test_names_with_percent_signs_and_unicode_travel_encoded(http: httpx.Client) -> None:
    for name, encoded in [
        ("100%.md", "100%25.md"),
        ("café ☕.md", "caf%C3%A9%20%E2%98%95.md"),
        ("50%20off.md", "50%2520off.md"),
    ]:
        assert http.put(f"/v1/files/memories/{encoded}", content=name.encode()).status_code == 200
        assert http.get(f"/v1/files/memories/{encoded}").content == name.encode()
    listed = [e["path"] for e in http.get("/v1/list/memories").json()["entries"]]
    assert listed == ["/memories/100%.md", "/memories/50%20off.md", "/memories/café ☕.md"]


def test_stat_list_usage_delete_and_move(http: httpx.Client) -> None:
    http.put("/v1/files/memories/d/a.md", content=b"aa")
    http.put("/v1/files/memories/d/e/b.md", content=b"bbb")
    assert http.get("/v1/stat/memories/d").json() == {
        "path": "/memories/d", "kind": "dir", "size": 5, "version": None, "sha256": None, "modified": None,
    }  # fmt: skip
    file_stat = http.get("/v1/stat/memories/d/a.md").json()
    assert (file_stat["kind"], file_stat["size"], file_stat["version"]) == ("file", 2, 1)
    assert error_of(http.get("/v1/stat/memories/none")) == (404, "not_found")
    assert http.get("/v1/stat/memories").json()["kind"] == "dir"
    entries = http.get("/v1/list/memories/d").json()["entries"]
    assert [(e["path"], e["size"], e["version"]) for e in entries] == [
        ("/memories/d/a.md", 2, 1),
        ("/memories/d/e/b.md", 3, 2),
    ]
    assert error_of(http.get("/v1/list/memories/d/a.md")) == (409, "not_a_directory")
    assert http.get("/v1/usage").json() == {"files": 2, "bytes": 5}
    moved = http.post("/v1/move", json={"from": "/memories/d", "to": "/memories/z"}).json()["versions"]
    assert [(v["op"], v["old_path"], v["path"]) for v in moved] == [
        ("rename", "/memories/d/a.md", "/memories/z/a.md"),
        ("rename", "/memories/d/e/b.md", "/memories/z/e/b.md"),
    ]
    assert error_of(http.post("/v1/move", json={"from": "/memories/z", "to": "/memories/z/in"})) == (400, "path_error")
    onto_itself = http.post("/v1/move", json={"from": "/memories/z/a.md", "to": "/memories/z/a.md"})
    assert error_of(onto_itself) == (409, "already_exists")  # as the tool says: the destination exists
    assert error_of(http.post("/v1/move", json={"from": "/memories/none", "to": "/memories/y"})) == (404, "not_found")
    deleted = http.delete("/v1/files/memories/z", headers={"X-Memdir-Actor": "model"}).json()["versions"]
    assert [(v["op"], v["actor"], v["sha256"]) for v in deleted] == [("delete", "model", None)] * 2
    assert error_of(http.delete("/v1/files/memories/z")) == (404, "not_found")
    assert error_of(http.delete("/v1/files/memories")) == (400, "path_error")


def test_history_versions_restore_log_and_blobs(http: httpx.Client) -> None:
    http.put("/v1/files/memories/a.md", content=b"one")
    http.put("/v1/files/memories/a.md", content=b"two")
    http.post("/v1/move", json={"from": "/memories/a.md", "to": "/memories/b.md"})
    history = http.get("/v1/history/memories/b.md").json()["versions"]
    assert [(v["version"], v["op"]) for v in history] == [(1, "write"), (2, "write"), (3, "rename")]
    assert http.get("/v1/files/memories/b.md", params={"version": 1}).content == b"one"
    assert error_of(http.get("/v1/files/memories/b.md", params={"version": 9})) == (404, "not_found")
    assert error_of(http.get("/v1/history/memories/never.md")) == (404, "not_found")
    restored = http.post(
        "/v1/restore/memories/b.md", json={"version": 1}, headers={"X-Memdir-Source": "by%20hand"}
    ).json()
    assert (restored["version"], restored["op"], restored["source"]) == (4, "restore", "by hand")
    assert http.get("/v1/files/memories/b.md").content == b"one"
    assert http.get(f"/v1/blobs/{hashlib.sha256(b'two').hexdigest()}").content == b"two"
    first = http.get("/v1/log", params={"limit": 3}).json()
    assert ([v["version"] for v in first["versions"]], first["next"]) == ([1, 2, 3], 3)
    rest = http.get("/v1/log", params={"since": first["next"], "limit": 3}).json()
    assert ([v["version"] for v in rest["versions"]], rest["next"]) == ([4], None)


def test_a_version_from_elsewhere_is_replayed_as_the_callers_now(http: httpx.Client) -> None:
    """The change and its content are replayed; who made it and when are the server's to record (a token cannot
    pass its change off as someone else's, or as an old one)."""
    record = {
        "version": 17, "path": "/memories/a.md", "op": "create", "actor": "model", "session": "s9", "source": "web",
        "timestamp": 1_700_000_000.5, "sha256": hashlib.sha256(b"hi").hexdigest(), "size": 2, "old_path": None,
    }  # fmt: skip
    body = {"version": record, "content": base64.b64encode(b"hi").decode()}
    before = time.time()
    replayed = http.post("/v1/versions", json=body).json()
    assert (replayed["version"], replayed["op"], replayed["sha256"], replayed["size"]) == (
        1,
        "create",
        record["sha256"],
        2,
    )
    # The time is answered in ISO 8601; a record may carry its own as ISO 8601 or, as before, as seconds.
    assert replayed["actor"] == "user" and replayed["session"].startswith("token-")
    assert parse_time(replayed["timestamp"]) >= before and replayed["timestamp"].endswith("Z")
    iso_record = {**record, "timestamp": "2023-11-14T22:14:20Z"}
    assert http.post("/v1/versions", json={**body, "version": iso_record}).status_code == 200
    assert http.get("/v1/files/memories/a.md").content == b"hi"
    assert error_of(http.post("/v1/versions", json={**body, "content": "not base64!"})) == (400, "invalid_request")
    bad_path = {**body, "version": {**record, "path": "/memories/../x"}}
    assert error_of(http.post("/v1/versions", json=bad_path)) == (400, "path_error")


def test_export_then_import_into_an_empty_namespace(http: httpx.Client, client: Client) -> None:
    http.put("/v1/files/memories/a.md", content=b"one")
    http.put("/v1/files/memories/a.md", content=b"two")
    exported = http.get("/v1/export")
    assert exported.headers["content-type"] == "application/zip"
    assert 'filename="memdir-alice.zip"' in exported.headers["content-disposition"]
    assert sorted(zipfile.ZipFile(io.BytesIO(exported.content)).namelist())[-2:] == ["manifest.json", "versions.jsonl"]
    copy = client("copy")
    summary = copy.post("/v1/import", content=exported.content, headers={"Content-Type": "application/zip"}).json()
    # The namespace it went into (the token's), not the one it came from.
    assert summary == {"namespace": "copy", "versions": 2, "blobs": 2, "files": 1, "bytes": 3}
    assert [v["op"] for v in copy.get("/v1/history/memories/a.md").json()["versions"]] == ["write", "write"]
    assert copy.get("/v1/files/memories/a.md", params={"version": 1}).content == b"one"
