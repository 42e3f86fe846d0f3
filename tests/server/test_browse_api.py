"""What the web page reads and writes: the tree, a file as JSON, a conditional edit, diffs, a conditional restore.

Each is checked over real HTTP for what it answers, what it refuses, and what it leaves in the audit log.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from .conftest import Client
from .helpers import error_of

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


@pytest.fixture
def http(client: Client) -> httpx.Client:
    alice = client("alice")
    for path, content in (
        ("memories/notes.md", b"one\ntwo\nthree\n"),
        ("memories/projects/a.md", b"alpha\n"),
        ("memories/projects/deep/b.md", b"beta beta\n"),
        ("memories/pic.png", PNG),
    ):
        assert alice.put(f"/v1/files/{path}", content=content).status_code == 200
    return alice


def edit(http: httpx.Client, path: str, content: str, expected: int | None, **headers: str) -> httpx.Response:
    body = {"content": content, "expected_version": expected}
    return http.put(f"/v1/edit/{path}", json=body, headers=headers)


def audit(http: httpx.Client) -> list[dict[str, Any]]:
    """What the page's requests recorded (channel `web`; a restore is the store API's, channel `http`), without the
    set-up's writes."""
    entries: list[dict[str, Any]] = http.get("/v1/audit").json()["entries"]
    return [e for e in entries if e["channel"] == "web" or (e["channel"] == "http" and e["command"] == "restore")]


# -- the tree -----------------------------------------------------------------------------------------------------


def test_the_tree_lists_files_with_sizes_and_versions_and_directories_with_totals(http: httpx.Client) -> None:
    tree = http.get("/v1/tree/memories").json()
    assert tree["path"] == "/memories"
    assert [(f["path"], f["size"], f["version"]) for f in tree["files"]] == [
        ("/memories/notes.md", 14, 1),
        ("/memories/pic.png", 40, 4),
        ("/memories/projects/a.md", 6, 2),
        ("/memories/projects/deep/b.md", 10, 3),
    ]
    assert tree["dirs"] == [
        {"path": "/memories/projects", "files": 2, "size": 16},
        {"path": "/memories/projects/deep", "files": 1, "size": 10},
    ]
    assert tree["total"] == {"files": 4, "bytes": 70}
    assert tree["truncated"] is False


def test_a_subtree_and_a_truncated_tree(http: httpx.Client) -> None:
    below = http.get("/v1/tree/memories/projects").json()
    assert [f["path"] for f in below["files"]] == ["/memories/projects/a.md", "/memories/projects/deep/b.md"]
    assert below["dirs"] == [{"path": "/memories/projects/deep", "files": 1, "size": 10}]
    cut = http.get("/v1/tree/memories", params={"limit": 1}).json()
    assert (len(cut["files"]), cut["truncated"], cut["total"]["files"]) == (1, True, 4)


def test_tree_errors(http: httpx.Client) -> None:
    assert error_of(http.get("/v1/tree/memories/notes.md")) == (409, "not_a_directory")
    assert error_of(http.get("/v1/tree/memories/nothing")) == (404, "not_found")
    assert error_of(http.get("/v1/tree/memories", params={"limit": 0})) == (400, "invalid_request")
    assert error_of(http.get("/v1/tree/memories/%2e%2e/etc")) == (400, "path_error")
    assert error_of(http.get("/v1/tree/etc")) == (400, "path_error")


# -- viewing ------------------------------------------------------------------------------------------------------


def test_a_file_as_json_with_its_version_and_hash(http: httpx.Client) -> None:
    shown = http.get("/v1/view/memories/notes.md").json()
    assert {k: shown[k] for k in ("path", "version", "current", "size", "media_type", "text")} == {
        "path": "/memories/notes.md",
        "version": 1,
        "current": True,
        "size": 14,
        "media_type": "text/plain; charset=utf-8",
        "text": "one\ntwo\nthree\n",
    }
    assert len(shown["sha256"]) == 64 and shown["modified"].endswith("Z")
    assert "_content" not in shown


def test_an_old_version_an_image_and_binary_content(http: httpx.Client) -> None:
    assert edit(http, "memories/notes.md", "ONE\n", 1).status_code == 200
    old = http.get("/v1/view/memories/notes.md", params={"version": 1}).json()
    assert (old["version"], old["current"], old["text"]) == (1, False, "one\ntwo\nthree\n")
    now = http.get("/v1/view/memories/notes.md", params={"version": 5}).json()
    assert (now["current"], now["text"]) == (True, "ONE\n")
    image = http.get("/v1/view/memories/pic.png").json()
    assert (image["media_type"], image["text"]) == ("image/png", None)
    http.put("/v1/files/memories/drawing.svg", content=b"<svg xmlns='http://www.w3.org/2000/svg'><script/></svg>")
    svg = http.get("/v1/view/memories/drawing.svg").json()
    assert (svg["media_type"], svg["text"][:4]) == ("text/plain; charset=utf-8", "<svg")  # never shown as an image
    http.put("/v1/files/memories/blob.bin", content=b"\xff\xfe\x00")
    assert http.get("/v1/view/memories/blob.bin").json()["media_type"] == "application/octet-stream"


def test_view_errors(http: httpx.Client) -> None:
    assert error_of(http.get("/v1/view/memories/none.md")) == (404, "not_found")
    assert error_of(http.get("/v1/view/memories/projects")) == (409, "not_a_file")
    assert error_of(http.get("/v1/view/memories/notes.md", params={"version": 99})) == (404, "not_found")
    assert error_of(http.get("/v1/view/memories/notes.md", params={"version": "x"})) == (400, "invalid_request")
    assert error_of(http.get("/v1/view/memories/a%2Fb.md")) == (400, "path_error")


def test_views_are_in_the_audit_log_with_the_hash_never_the_content(http: httpx.Client) -> None:
    shown = http.get("/v1/view/memories/notes.md", headers={"X-Memdir-Source": "web%20page"}).json()
    http.get("/v1/view/memories/notes.md", params={"version": 1})
    (view, show) = audit(http)
    assert (view["command"], view["path"], view["actor"], view["source"]) == (
        "view",
        "/memories/notes.md",
        "user",
        "web page",
    )
    assert (view["sha256"], view["size"], view["version"], view["outcome"]) == (shown["sha256"], 14, 1, "ok")
    assert (show["command"], show["version"]) == ("show", 1)
    assert "three" not in str(http.get("/v1/audit").json())


# -- editing ------------------------------------------------------------------------------------------------------


def test_an_edit_at_the_expected_version_is_written(http: httpx.Client) -> None:
    response = edit(http, "memories/notes.md", "one\n2\nthree\n", 1)
    assert response.status_code == 200
    written = response.json()
    assert (written["version"], written["op"], written["actor"], written["path"]) == (
        5,
        "write",
        "user",
        "/memories/notes.md",
    )
    assert response.headers["etag"] == '"5"'
    assert http.get("/v1/files/memories/notes.md").content == b"one\n2\nthree\n"


def test_a_stale_edit_is_refused_with_the_current_version_and_nothing_is_written(http: httpx.Client) -> None:
    assert edit(http, "memories/notes.md", "first writer\n", 1).status_code == 200
    stale = edit(http, "memories/notes.md", "second writer\n", 1)
    assert error_of(stale) == (412, "conflict")
    assert stale.json()["error"]["current"] == 5
    assert http.get("/v1/files/memories/notes.md").content == b"first writer\n"
    entries = audit(http)
    assert [(e["command"], e["outcome"], e["detail"]) for e in entries] == [
        ("edit", "ok", None),
        ("edit", "error", "conflict"),
    ]


def test_a_new_file_needs_a_null_expected_version_and_a_free_path(http: httpx.Client) -> None:
    made = edit(http, "memories/new/idea.md", "an idea\n", None)
    assert made.status_code == 200 and made.json()["version"] == 5
    assert error_of(edit(http, "memories/new/idea.md", "again\n", None)) == (409, "already_exists")
    assert error_of(edit(http, "memories/never.md", "x", 3)) == (412, "conflict")


@pytest.mark.parametrize(
    "body",
    [
        {"content": "x"},
        {"expected_version": 1},
        {"content": 7, "expected_version": 1},
        {"content": "x", "expected_version": "1"},
        {"content": "x", "expected_version": True},
        {"content": "x", "expected_version": 0},
        ["content", "x"],
    ],
)
def test_malformed_edits_are_refused(http: httpx.Client, body: object) -> None:
    assert error_of(http.put("/v1/edit/memories/notes.md", json=body)) == (400, "invalid_request")
    assert http.get("/v1/files/memories/notes.md").content == b"one\ntwo\nthree\n"


def test_an_edit_that_is_no_utf8_text_is_refused(http: httpx.Client) -> None:
    """JSON's lone surrogate ("\\ud800") decodes to no UTF-8 text: refused as such (it was a 500)."""
    body = b'{"content": "one\\ud800", "expected_version": 1}'
    answer = http.put("/v1/edit/memories/notes.md", content=body, headers={"Content-Type": "application/json"})
    assert error_of(answer) == (400, "invalid_request")
    assert "unpaired surrogate" in answer.json()["error"]["message"]
    assert http.get("/v1/files/memories/notes.md").content == b"one\ntwo\nthree\n"


def test_edits_need_json_within_the_bound(client: Client, http: httpx.Client) -> None:
    assert error_of(http.put("/v1/edit/memories/notes.md", content=b"{}")) == (415, "unsupported_media_type")
    broken = http.put("/v1/edit/memories/notes.md", content=b"{", headers={"Content-Type": "application/json"})
    assert error_of(broken) == (400, "invalid_request")
    huge = http.put("/v1/edit/memories/notes.md", json={"content": "x" * (1024 * 1024 + 1), "expected_version": 1})
    assert error_of(huge) == (413, "payload_too_large")
    assert error_of(edit(http, "memories/projects", "x", 2)) == (409, "not_a_file")
    assert error_of(edit(http, "memories/notes.md/x.md", "x", None)) == (409, "not_a_directory")


# -- diffs --------------------------------------------------------------------------------------------------------


def test_the_default_diff_is_from_the_previous_version_to_the_current_one(http: httpx.Client) -> None:
    edit(http, "memories/notes.md", "one\n2\nthree\nfour\n", 1)
    found = http.get("/v1/diff/memories/notes.md").json()
    assert (found["from"]["version"], found["to"]["version"]) == (1, 5)
    assert found["to"]["label"] == "/memories/notes.md (current, version 5)"
    assert (found["identical"], found["added"], found["removed"]) == (False, 2, 1)
    assert found["rows"] == [
        {"op": "equal", "old": [1, "one"], "new": [1, "one"]},
        {"op": "replace", "old": [2, "two"], "new": [2, "2"]},
        {"op": "equal", "old": [3, "three"], "new": [3, "three"]},
        {"op": "insert", "old": None, "new": [4, "four"]},
    ]
    assert found["unified"][:3] == [
        "--- /memories/notes.md@1",
        "+++ /memories/notes.md (current, version 5)",
        "@@ -1,3 +1,4 @@",
    ]


def test_diffs_between_chosen_versions_collapse_long_unchanged_runs(http: httpx.Client) -> None:
    lines = [f"line {n}" for n in range(1, 21)]
    edit(http, "memories/notes.md", "\n".join(lines) + "\n", 1)
    changed = [*lines[:10], "LINE 11", *lines[11:]]
    edit(http, "memories/notes.md", "\n".join(changed) + "\n", 5)
    found = http.get("/v1/diff/memories/notes.md", params={"from": 5, "to": 6}).json()
    ops = [row["op"] for row in found["rows"]]
    assert ops == ["skip", "equal", "equal", "equal", "replace", "equal", "equal", "equal", "skip"]
    assert found["rows"][0] == {"op": "skip", "count": 7}
    first = http.get("/v1/diff/memories/notes.md", params={"to": 1}).json()
    assert (first["from"]["version"], first["from"]["label"], first["added"]) == (None, "(nothing)", 3)
    same = http.get("/v1/diff/memories/notes.md", params={"from": 6, "to": 6}).json()
    assert (same["identical"], same["rows"]) == (True, [])


def test_a_deleted_file_and_binary_content(http: httpx.Client) -> None:
    http.delete("/v1/files/memories/projects/a.md")
    gone = http.get("/v1/diff/memories/projects/a.md").json()
    assert (gone["from"]["version"], gone["to"]["deleted"], gone["removed"]) == (2, True, 1)
    http.put("/v1/files/memories/pic.png", content=PNG + b"\x01")
    binary = http.get("/v1/diff/memories/pic.png").json()
    assert (binary["binary"], binary["identical"], binary["rows"]) == (True, False, [])


def test_diff_errors(http: httpx.Client) -> None:
    assert error_of(http.get("/v1/diff/memories/never.md")) == (404, "not_found")
    assert error_of(http.get("/v1/diff/memories/notes.md", params={"from": 99})) == (404, "not_found")
    assert error_of(http.get("/v1/diff/memories/notes.md", params={"to": "-1"})) == (400, "invalid_request")
    assert error_of(http.get("/v1/diff/memories/../x")) in ((400, "path_error"), (404, "route_not_found"))


# -- restoring ----------------------------------------------------------------------------------------------------


def test_a_restore_at_the_expected_version_and_a_stale_one(http: httpx.Client) -> None:
    edit(http, "memories/notes.md", "changed\n", 1)
    restored = http.post("/v1/restore/memories/notes.md", json={"version": 1, "expected_version": 5})
    assert restored.status_code == 200
    assert (restored.json()["version"], restored.json()["op"]) == (6, "restore")
    assert http.get("/v1/files/memories/notes.md").content == b"one\ntwo\nthree\n"
    stale = http.post("/v1/restore/memories/notes.md", json={"version": 5, "expected_version": 5})
    assert error_of(stale) == (412, "conflict") and stale.json()["error"]["current"] == 6
    assert http.get("/v1/files/memories/notes.md").content == b"one\ntwo\nthree\n"
    bad = http.post("/v1/restore/memories/notes.md", json={"version": 1, "expected_version": "6"})
    assert error_of(bad) == (400, "invalid_request")
    entries = [(e["command"], e["outcome"], e["version"]) for e in audit(http) if e["command"] == "restore"]
    assert entries == [("restore", "ok", 6), ("restore", "error", None)]
