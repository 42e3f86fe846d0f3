"""Secrets where no content is: in a file name, in the labels recorded with a change, in a refused path. None of
them is kept as given: a name holding one is refused, a label or a logged path has it redacted."""

from __future__ import annotations

import secrets
import string
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from backends import LiveServer
from memdir import MemoryTool, Origin, open_store
from memdir.gate import Caller, GatedStore, audit_entries
from memdir.server import ServerConfig


def github_token() -> str:
    return "ghp_" + "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(36))


def on_disk(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LiveServer]:
    with LiveServer(ServerConfig(store_url=f"sqlite://{tmp_path / 'server.db'}", rate=0)) as live:
        yield live


@pytest.mark.parametrize("kind", ["directory", "sqlite"])
def test_a_secret_in_a_file_name_is_refused_by_every_write(tmp_path: Path, kind: str) -> None:
    url = str(tmp_path / "store") if kind == "directory" else f"sqlite://{tmp_path / 'm.db'}"
    token = github_token()
    with open_store(url) as store:
        tool = MemoryTool(store)
        made = tool.execute({"command": "create", "path": f"/memories/keys/{token}.md", "file_text": "hi\n"})
        assert made.is_error and "refused by the memory policy" in made.text and token not in made.text
        tool.execute({"command": "create", "path": "/memories/ok.md", "file_text": "hi\n"})
        moved = tool.execute({"command": "rename", "old_path": "/memories/ok.md", "new_path": f"/memories/{token}"})
        assert moved.is_error and "refused by the memory policy" in moved.text and token not in moved.text
        gate = GatedStore(store, Caller("user"))
        with pytest.raises(Exception, match="holds a secret"):
            gate.write(f"/memories/vault/{token}/note.md", b"x")
        assert [e.path for e in store.list_files()] == [store.stat("/memories/ok.md").path]  # type: ignore[union-attr]
        tool.close()
        logged = [e.path or "" for e in audit_entries(store)]
    assert token.encode() not in on_disk(tmp_path)
    assert any("[REDACTED:github-token]" in p for p in logged)


def test_labels_holding_a_secret_are_recorded_redacted(tmp_path: Path) -> None:
    token = github_token()
    with open_store(f"sqlite://{tmp_path / 'm.db'}") as store:
        tool = MemoryTool(store, session=f"run {token}", source=f"pasted {token}")
        assert not tool.execute({"command": "create", "path": "/memories/a.md", "file_text": "hi\n"}).is_error
        GatedStore(store, Caller("user")).write("/memories/b.md", b"x", origin=Origin("user", session=token))
        tool.close()
        (first,) = store.history("/memories/a.md")
        assert first.session == "run [REDACTED:github-token]" and first.source == "pasted [REDACTED:github-token]"
        assert store.history("/memories/b.md")[0].session == "[REDACTED:github-token]"
    assert token.encode() not in on_disk(tmp_path)


def test_session_headers_and_refused_paths_over_http(server: LiveServer, tmp_path: Path) -> None:
    token = github_token()
    headers = {"Authorization": f"Bearer {server.token('alice')}", "X-Memdir-Session": f"s-{token}"}
    with httpx.Client(base_url=server.url, headers=headers) as http:
        assert http.put("/v1/files/memories/a.md", content=b"hi\n").json()["session"] == "s-[REDACTED:github-token]"
        refused = http.post("/v1/tool", json={"command": "view", "path": f"/memories/../{token}"}).json()
        assert refused["is_error"]
        named = http.put(f"/v1/files/memories/{token}.md", content=b"x")
        assert (named.status_code, named.json()["error"]["code"]) == (422, "policy_refused")
        logged = http.get("/v1/audit").json()["entries"]
    assert all(token not in str(entry) for entry in logged)
    assert any("[REDACTED:github-token]" in (entry["path"] or "") for entry in logged)
    assert token.encode() not in on_disk(tmp_path)
