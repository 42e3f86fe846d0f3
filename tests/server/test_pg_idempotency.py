"""Changes made at most once (``Idempotency-Key``), on the stores that record keys: SQLite and PostgreSQL.

A change sent again with the same key answers exactly what the first attempt answered (the memory tool's text
included, rebuilt from the recorded versions) and records nothing new. A change racing its own retry is stopped by
the store's unique index. Stores that keep no keys say so (``idempotent_writes``), and `RemoteStore` sends a change
again only to a server that records them.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from backends import LiveServer
from memdir import open_store
from memdir.errors import StorageError
from memdir.server import ServerConfig
from memdir.server._idempotency import once, written
from memdir.store._records import Origin
from memdir.store.remote import RemoteStore

KEYED_STORES = ["sqlite", "postgres"]


@pytest.fixture(params=KEYED_STORES)
def keyed_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite://{tmp_path / 'memory.db'}"
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
def live(keyed_url: str) -> Iterator[LiveServer]:
    with LiveServer(ServerConfig(store_url=keyed_url, rate=0)) as server:
        yield server


@pytest.fixture
def http(live: LiveServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=live.url, headers={"Authorization": f"Bearer {live.token('alice')}"}) as client:
        yield client


def tool(client: httpx.Client, key: str | None, **command: Any) -> httpx.Response:
    headers = {"Idempotency-Key": key} if key else {}
    return client.post("/v1/tool", json=command, headers=headers)


def versions(live: LiveServer) -> list[Any]:
    with live.services.tenants.lease("alice") as store:
        return list(store.log())


NOTES = "".join(f"line {n}\n" for n in range(1, 11))

COMMANDS: list[tuple[str, dict[str, Any]]] = [
    ("create", {"command": "create", "path": "/memories/new.md", "file_text": "fresh\n"}),
    (
        "str_replace",
        {
            "command": "str_replace",
            "path": "/memories/notes.md",
            "old_str": "line 5\n",
            "new_str": "five\nand a half\n",
        },
    ),
    ("str_replace", {"command": "str_replace", "path": "/memories/notes.md", "old_str": "line 2", "new_str": "two"}),
    ("str_replace", {"command": "str_replace", "path": "/memories/notes.md", "old_str": "line 10\n"}),
    ("insert", {"command": "insert", "path": "/memories/notes.md", "insert_line": 3, "insert_text": "inserted\n"}),
    ("delete", {"command": "delete", "path": "/memories/dir"}),
    ("rename", {"command": "rename", "old_path": "/memories/dir", "new_path": "/memories/moved/dir"}),
    ("rename", {"command": "rename", "old_path": "/memories/notes.md", "new_path": "/memories/renamed.md"}),
]


@pytest.mark.parametrize(("op", "command"), COMMANDS, ids=[f"{c['command']}-{n}" for n, (_, c) in enumerate(COMMANDS)])
def test_a_tool_change_sent_twice_is_made_once_and_answered_the_same(
    live: LiveServer, http: httpx.Client, op: str, command: dict[str, Any]
) -> None:
    tool(http, None, command="create", path="/memories/notes.md", file_text=NOTES)
    tool(http, None, command="create", path="/memories/dir/a.md", file_text="a\n")
    tool(http, None, command="create", path="/memories/dir/b.md", file_text="b\n")
    key = uuid.uuid4().hex
    first = tool(http, key, **command)
    assert first.status_code == 200 and not first.json()["is_error"], first.json()
    assert "idempotent-replayed" not in first.headers
    recorded = len(versions(live))
    # Someone else changes the file before the retry arrives: the retry still gets the first attempt's answer.
    http.put("/v1/files/memories/other.md", content=b"x\n")
    again = tool(http, key, **command)
    assert again.status_code == 200
    assert again.headers["idempotent-replayed"] == "true"
    assert again.json() == first.json()
    log = versions(live)
    assert len(log) == recorded + 1  # only the other file's version is new
    assert [v.op for v in log].count(op) == [v.op for v in log[:recorded]].count(op)


def test_a_str_replace_answer_survives_later_edits_of_the_file(live: LiveServer, http: httpx.Client) -> None:
    tool(http, None, command="create", path="/memories/notes.md", file_text=NOTES)
    key = uuid.uuid4().hex
    first = tool(http, key, command="str_replace", path="/memories/notes.md", old_str="line 7", new_str="seven")
    tool(http, None, command="insert", path="/memories/notes.md", insert_line=0, insert_text="on top\n")
    again = tool(http, key, command="str_replace", path="/memories/notes.md", old_str="line 7", new_str="seven")
    assert again.json()["text"] == first.json()["text"]
    assert "     7\tseven" in again.json()["text"]
    assert http.get("/v1/files/memories/notes.md").text.count("seven") == 1


def test_a_refused_change_is_judged_again_not_replayed(live: LiveServer, http: httpx.Client) -> None:
    key = uuid.uuid4().hex
    refused = tool(http, key, command="insert", path="/memories/later.md", insert_line=0, insert_text="x")
    assert refused.json()["is_error"]
    tool(http, None, command="create", path="/memories/later.md", file_text="now here\n")
    again = tool(http, key, command="insert", path="/memories/later.md", insert_line=0, insert_text="x")
    assert again.json() == {**again.json(), "is_error": False, "text": "The file /memories/later.md has been edited."}


def test_a_key_used_for_another_change_is_refused(live: LiveServer, http: httpx.Client) -> None:
    key = uuid.uuid4().hex
    assert not tool(http, key, command="create", path="/memories/a.md", file_text="a").json()["is_error"]
    other = tool(http, key, command="create", path="/memories/b.md", file_text="b")
    assert other.status_code == 422
    assert other.json()["error"]["code"] == "idempotency_key_reused"
    assert http.get("/v1/stat/memories/b.md").status_code == 404


def test_malformed_keys_are_refused(http: httpx.Client) -> None:
    for key in ("", "x" * 256, "with space", "caf\u00e9"):
        response = http.post(
            "/v1/tool",
            content=b'{"command": "view", "path": "/memories"}',
            headers={"Idempotency-Key": key.encode("utf-8"), "Content-Type": b"application/json"},
        )
        assert response.status_code == 400, key
        assert response.json()["error"]["code"] == "invalid_request"


def test_store_api_changes_sent_twice_are_made_once(live: LiveServer, http: httpx.Client) -> None:
    def send(method: str, url: str, key: str, **kwargs: Any) -> tuple[httpx.Response, httpx.Response]:
        first = http.request(method, url, headers={"Idempotency-Key": key}, **kwargs)
        again = http.request(method, url, headers={"Idempotency-Key": key}, **kwargs)
        assert first.status_code == again.status_code == 200, (first.json(), again.json())
        assert again.headers["idempotent-replayed"] == "true"
        assert again.json() == first.json()
        return first, again

    send("PUT", "/v1/files/memories/d/a.md", "k-put", content=b"one")
    send("PUT", "/v1/files/memories/d/b.md", "k-put-b", content=b"two")
    send("POST", "/v1/restore/memories/d/a.md", "k-restore", json={"version": 1})
    send("POST", "/v1/move", "k-move", json={"from": "/memories/d", "to": "/memories/e"})
    send("DELETE", "/v1/files/memories/e", "k-delete")
    assert [(v.op, v.path.virtual) for v in versions(live)] == [
        ("write", "/memories/d/a.md"),
        ("write", "/memories/d/b.md"),
        ("restore", "/memories/d/a.md"),
        ("rename", "/memories/e/a.md"),
        ("rename", "/memories/e/b.md"),
        ("delete", "/memories/e/a.md"),
        ("delete", "/memories/e/b.md"),
    ]


def test_a_precondition_that_held_the_first_time_is_not_judged_again(live: LiveServer, http: httpx.Client) -> None:
    """The retry of a conditional write that was applied answers its version, not "conflict" (the file is no
    longer at the expected version: because of the first attempt)."""
    http.put("/v1/files/memories/a.md", content=b"v1")
    headers = {"Idempotency-Key": "cond-1", "If-Match": '"1"'}
    first = http.put("/v1/files/memories/a.md", content=b"v2", headers=headers)
    again = http.put("/v1/files/memories/a.md", content=b"v2", headers=headers)
    assert (first.status_code, again.status_code) == (200, 200)
    assert again.json() == first.json()


def test_a_change_racing_its_own_retry_is_stopped_by_the_store(keyed_url: str) -> None:
    """Both attempts looked the key up before either was recorded: the store refuses the second, and the server
    answers it from the first one's versions."""
    store = open_store(keyed_url, namespace="race")
    try:
        origin = Origin("model", request="race-key")
        first = store.write("/memories/a.md", b"one\n", origin=origin, op="insert")
        with pytest.raises(StorageError):
            store.write("/memories/a.md", b"one\none\n", origin=origin, op="insert")
        assert store.read("/memories/a.md").content == b"one\n"

        class Late:
            """The store as the racing retry saw it: the key not yet recorded at its first look."""

            records_requests = True
            looks = 0

            def requested(self, key: str) -> list[Any]:
                self.looks += 1
                return [] if self.looks == 1 else store.requested(key)

        late = Late()
        change: Callable[[], Any] = lambda: store.write("/memories/a.md", b"twice\n", origin=origin, op="insert")  # noqa: E731
        assert once(late, origin.request, change, written(first.path)) == (first, True)  # type: ignore[arg-type]
        assert store.read("/memories/a.md").content == b"one\n"
    finally:
        store.close()


def test_whoami_tells_whether_changes_may_be_sent_again(tmp_path: Path) -> None:
    for url, expected in ((str(tmp_path / "dir"), False), (f"sqlite://{tmp_path / 'm.db'}", True)):
        with (
            LiveServer(ServerConfig(store_url=url, rate=0)) as live,
            RemoteStore(live.url, token=live.token("alice")) as remote,
        ):
            assert remote.idempotent_writes is expected


def test_a_redacted_edit_is_answered_with_its_line_and_snippet(live: LiveServer, http: httpx.Client) -> None:
    """The write policy changed the text (a secret redacted): the replay finds the change by comparing versions,
    and answers SPEC.md's line and snippet; the note about the redaction is not replayed."""
    tool(http, None, command="create", path="/memories/notes.md", file_text=NOTES)
    command = {"command": "str_replace", "path": "/memories/notes.md", "old_str": "line 4\n"}
    command["new_str"] = "the key\naws_access_key_id = AKIAQ3EGUSXR7ZPLM4NB\n"
    first = tool(http, "redacted", **command).json()
    assert "redacted" in first["text"] and "AKIAQ3EGUSXR7ZPLM4NB" not in first["text"]
    again = tool(http, "redacted", **command).json()
    assert again["text"] == first["text"].split("\n\nNote:")[0]
    assert len([v for v in versions(live) if v.op == "str_replace"]) == 1


def test_an_edit_of_a_note_whose_frontmatter_was_restamped_is_answered_the_same(
    live: LiveServer, http: httpx.Client
) -> None:
    """Auto memory re-stamps ``modified:`` above the edit in the same version: the replay still finds where the
    replacement landed."""
    front = "---\nname: prefs\ndescription: what the user likes\ntype: user\nmodified: 2020-01-01T00:00:00Z\n---\n"
    tool(http, None, command="create", path="/memories/prefs.md", file_text=front + NOTES)
    command = {"command": "str_replace", "path": "/memories/prefs.md", "old_str": "line 6\n", "new_str": "six\n"}
    first = tool(http, "stamped", **command).json()
    assert "2020-01-01" not in http.get("/v1/files/memories/prefs.md").text  # the stamp did change
    again = tool(http, "stamped", **command).json()
    assert again["text"] == first["text"].split("\n\nNote:")[0]
