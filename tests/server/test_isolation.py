"""A token never reaches another namespace, whatever path, header, parameter or body it sends.

Alice keeps a secret; Bob, holding his own token, tries every way of naming her namespace or escaping his. Each
attempt must land in Bob's namespace or be refused, and no response may carry Alice's secret.
"""

from __future__ import annotations

import hashlib
import io
import zipfile

import httpx
import pytest

from backends import LiveServer

from .conftest import Client, Raw
from .helpers import error_of, get, tool

SECRET = b"alice's secret: the launch code is 0000\n"
SHA = hashlib.sha256(SECRET).hexdigest()


@pytest.fixture
def alice(client: Client) -> httpx.Client:
    http = client("alice")
    assert http.put("/v1/files/memories/secret.md", content=SECRET).status_code == 200
    return http


@pytest.fixture
def bob(client: Client, alice: httpx.Client) -> httpx.Client:
    return client("bob")


def assert_secret_untouched(alice: httpx.Client) -> None:
    assert alice.get("/v1/files/memories/secret.md").content == SECRET
    assert [v["version"] for v in alice.get("/v1/history/memories/secret.md").json()["versions"]] == [1]


def test_the_namespace_in_a_query_header_or_body_is_ignored(alice: httpx.Client, bob: httpx.Client) -> None:
    attempts = [
        bob.get("/v1/files/memories/secret.md", params={"namespace": "alice"}),
        bob.get("/v1/files/memories/secret.md", headers={"X-Memdir-Namespace": "alice", "X-Namespace": "alice"}),
        bob.get("/v1/stat/memories/secret.md", params={"ns": "alice", "tenant": "alice"}),
        bob.get("/v1/history/memories/secret.md", params={"namespace": "alice"}),
        bob.get(f"/v1/blobs/{SHA}", params={"namespace": "alice"}),
    ]
    for response in attempts:
        assert error_of(response) == (404, "not_found")
        assert b"launch code" not in response.content
    viewed = tool(bob, command="view", path="/memories/secret.md", namespace="alice")
    assert viewed == {
        "text": "The path /memories/secret.md does not exist. Please provide a valid path.",
        "is_error": True,
        "content": [
            {"type": "text", "text": "The path /memories/secret.md does not exist. Please provide a valid path."}
        ],
    }
    assert tool(bob, command="view", path="/memories", namespace="alice")["text"].endswith("0B\t/memories")
    moved = bob.post("/v1/move", json={"from": "/memories/secret.md", "to": "/memories/mine.md", "namespace": "alice"})
    assert error_of(moved) == (404, "not_found")
    assert error_of(bob.post("/v1/restore/memories/secret.md", json={"version": 1, "namespace": "alice"})) == (
        404,
        "not_found",
    )
    assert_secret_untouched(alice)


def test_writes_naming_another_namespace_land_in_the_senders(alice: httpx.Client, bob: httpx.Client) -> None:
    created = tool(bob, command="create", path="/memories/secret.md", file_text="bob's own", namespace="alice")
    assert created["is_error"] is False
    put = bob.put(
        "/v1/files/memories/note.md",
        content=b"bob",
        params={"namespace": "alice"},
        headers={"X-Memdir-Namespace": "alice"},
    )
    assert put.status_code == 200
    # Version numbers are per namespace: Bob's first write is his version 1, whatever Alice did.
    assert bob.get("/v1/files/memories/secret.md").headers["x-memdir-version"] == "1"
    assert [e["path"] for e in bob.get("/v1/list/memories").json()["entries"]] == [
        "/memories/note.md",
        "/memories/secret.md",
    ]
    assert [e["path"] for e in alice.get("/v1/list/memories").json()["entries"]] == ["/memories/secret.md"]
    assert_secret_untouched(alice)


TRAVERSALS = [
    "/v1/files/memories/../namespaces/alice/memories/secret.md",
    "/v1/files/memories/%2e%2e/%2e%2e/namespaces/alice/memories/secret.md",
    "/v1/files/memories/%252e%252e/alice/secret.md",
    "/v1/files/memories%2f..%2f..%2fnamespaces%2falice%2fmemories%2fsecret.md",
    "/v1/files/memories/..%2f..%2falice%2fsecret.md",
    "/v1/files/memories/..%c0%af..%c0%afalice/secret.md",
    "/v1/files/memories/%u002e%u002e/alice/secret.md",
    "/v1/files/memories\\..\\..\\alice\\secret.md",
    "/v1/files/memories/%EF%BC%8E%EF%BC%8E/alice/secret.md",
    "/v1/files/etc/passwd",
    "/v1/files//etc/passwd",
    "/v1/files/memoriesX/secret.md",
    "/v1/%66iles/memories/secret.md",
    "/v1/stat/memories/../../v1/files/memories/secret.md",
    "/v1/history/memories/%2e%2e",
]


@pytest.mark.parametrize("target", TRAVERSALS)
def test_traversal_in_the_url_is_refused_as_the_path_rules_say(
    alice: httpx.Client, server: LiveServer, raw: Raw, target: str
) -> None:
    response = raw(get(target, server.token("bob")))  # sent byte for byte: no client tidies the URL up
    assert response.status in (400, 404), response.body
    assert response.json()["error"]["code"] in ("path_error", "invalid_request", "not_found", "route_not_found")
    assert b"launch code" not in response.body
    assert_secret_untouched(alice)


def test_a_path_error_names_the_path_and_the_rule(bob: httpx.Client, server: LiveServer, raw: Raw) -> None:
    response = raw(get("/v1/files/memories/%2e%2e/x.md", server.token("bob")))
    assert response.status == 400
    assert response.json() == {
        "error": {
            "code": "path_error",
            "message": "Path /memories/../x.md would escape /memories directory",
            "path": "/memories/../x.md",
            "kind": "escape",
            "why": "",
        }
    }


def test_double_slashes_and_absolute_urls_stay_in_the_senders_namespace(
    alice: httpx.Client, server: LiveServer, raw: Raw
) -> None:
    token = server.token("bob")
    for target in (
        "/v1/files/memories//secret.md",
        "//v1/files/memories/secret.md",
        f"http://127.0.0.1:{server.port}/v1/files/memories/secret.md",
        "http://alice.example/v1/files/memories/secret.md",
    ):
        response = raw(get(target, token, extra="X-Forwarded-Host: alice.example\r\n"))
        assert response.status == 404, (target, response.body)
        assert b"launch code" not in response.body
    # An absolute-form target: httptools takes its path, h11 keeps it whole (no route). Either way, Bob is Bob.
    who = raw(get("http://alice.example/v1/whoami", token, extra="Forwarded: for=1.2.3.4;host=alice\r\n"))
    assert who.status == 404 or who.json()["namespace"] == "bob"
    assert (
        raw(get("/v1/whoami", token, extra="Forwarded: host=alice\r\nX-Forwarded-For: 1.2.3.4\r\n")).json()["namespace"]
        == "bob"
    )
    assert_secret_untouched(alice)


def test_an_export_holds_only_the_senders_namespace(alice: httpx.Client, bob: httpx.Client) -> None:
    bob.put("/v1/files/memories/bob.md", content=b"bob's")
    archive = zipfile.ZipFile(io.BytesIO(bob.get("/v1/export").content))
    assert SHA not in " ".join(archive.namelist())
    assert all(b"launch code" not in archive.read(name) for name in archive.namelist())
    manifest = archive.read("manifest.json").decode()
    assert '"namespace": "bob"' in manifest


def test_an_import_cannot_target_another_namespace(alice: httpx.Client, bob: httpx.Client, client: Client) -> None:
    archive = alice.get("/v1/export").content  # an archive whose manifest says "alice"
    carol = client("carol")
    imported = carol.post(
        "/v1/import", content=archive, headers={"Content-Type": "application/zip"}, params={"namespace": "alice"}
    )
    assert imported.status_code == 200 and imported.json()["files"] == 1
    assert carol.get("/v1/files/memories/secret.md").content == SECRET  # into carol's own namespace
    # Into a namespace that already holds files, nothing is written.
    bob.put("/v1/files/memories/bob.md", content=b"bob's")
    refused = bob.post("/v1/import", content=archive, headers={"Content-Type": "application/zip"})
    assert error_of(refused) == (422, "archive_error")
    assert_secret_untouched(alice)


def test_the_web_pages_endpoints_stay_in_the_senders_namespace(alice: httpx.Client, bob: httpx.Client) -> None:
    refused = [
        bob.get("/v1/view/memories/secret.md", params={"namespace": "alice"}),
        bob.get("/v1/view/memories/secret.md", params={"version": 1}, headers={"X-Memdir-Namespace": "alice"}),
        bob.get("/v1/diff/memories/secret.md", params={"from": 1}),
        bob.get("/v1/tree/memories/secret.md"),
        bob.post("/v1/restore/memories/secret.md", json={"version": 1, "expected_version": 1, "namespace": "alice"}),
        bob.put("/v1/edit/memories/secret.md", json={"content": "mine", "expected_version": 1, "namespace": "alice"}),
        bob.get("/v1/review/1"),
        bob.post("/v1/review/1/approve"),
    ]
    for response in refused:
        assert response.status_code in (404, 412), response.text
        assert b"launch code" not in response.content
    assert bob.get("/v1/tree/memories").json()["files"] == []
    assert bob.get("/v1/search", params={"q": "launch code", "mode": "fts"}).json()["hits"] == []
    own = bob.get("/v1/audit", params={"path": "/memories/secret.md"}).json()["entries"]
    # His own tries, every read among them, each refused as if there were nothing there:
    assert [(e["command"], e["outcome"], e["detail"]) for e in own] == [
        ("view", "error", "not_found"),
        ("show", "error", "not_found"),
        ("diff", "error", "not_found"),
        ("list", "error", "not_found"),
        ("restore", "error", "not_found"),
        ("edit", "error", "conflict"),
    ]
    assert SHA not in str(own)
    verified = bob.get("/v1/verify").json()  # his namespace's history is empty: alice's versions are not his
    assert (verified["ok"], verified["files"], verified["discrepancies"], verified["history"]["entries"]) == (
        True, 0, [], 0
    )  # fmt: skip
    assert_secret_untouched(alice)
