"""`memdir sync` between a memdir store and a memory store of a memdir server, between two memdir servers, with
a dry run, a two-sided conflict, two-way syncs, and a real `memdir sync` process killed in the middle."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import anyio.to_thread
import pytest
from click.testing import CliRunner

from backends import LiveServer
from memdir import Store, open_store
from memdir.cli import cli
from memdir.memstores import SyncReport, open_side, sync
from memdir.policy.audit import audit_log
from memdir.server import ServerConfig


def new_server(tmp_path: Path, name: str) -> LiveServer:
    return LiveServer(ServerConfig(store_url=f"sqlite://{tmp_path / f'{name}.db'}", rate=0))


@pytest.fixture
def remote(tmp_path: Path) -> Iterator[LiveServer]:
    with new_server(tmp_path, "remote") as live:
        yield live


class Memstore:
    """A memory store on a server, its `memdir sync` spec, and an SDK client to look at it."""

    def __init__(self, server: LiveServer, tenant: str = "alice") -> None:
        self.token = server.token(tenant)
        self.api = anthropic.Anthropic(base_url=server.url, api_key=self.token, max_retries=0)
        self.id = self.api.beta.memory_stores.create(name="synced").id
        self.spec = f"memstore+http://{self.token}@127.0.0.1:{server.port}/{self.id}"
        self.memories = self.api.beta.memory_stores.memories

    def files(self) -> dict[str, str]:
        return {m.path: m.content or "" for m in self.memories.list(self.id, view="full")}

    def ids(self) -> dict[str, str]:
        return {m.path: m.id for m in self.memories.list(self.id)}

    def by_path(self, path: str) -> Any:
        return next(m for m in self.memories.list(self.id) if m.path == path)


def run(src: str, dst: str, state: Path, **options: Any) -> SyncReport:
    source, target = open_side(src, namespace="default"), open_side(dst, namespace="default")
    try:
        return sync(source, target, state_path=state, **options)
    finally:
        source.close()
        target.close()


def kinds(report: SyncReport) -> list[tuple[str, str]]:
    return sorted((c.kind, c.key) for c in report.changes)


def local_files(url: str) -> dict[str, str]:
    with open_store(url) as store:
        return {"/" + e.path.key: store.read(e.path).content.decode() for e in store.list_files()}


def write(url: str, *pairs: tuple[str, str]) -> Store:
    with open_store(url) as store:
        for path, text in pairs:
            store.write("/memories" + path, text.encode())
    return store


def test_a_local_store_to_a_server_and_back(remote: LiveServer, tmp_path: Path) -> None:
    local, state, memstore = str(tmp_path / "local"), tmp_path / "sync.db", Memstore(remote)
    write(local, ("/a.md", "A"), ("/notes/b.md", "B"), ("/notes/c.md", "C"))
    assert kinds(run(local, memstore.spec, state)) == [
        ("create", "a.md"),
        ("create", "notes/b.md"),
        ("create", "notes/c.md"),
    ]
    assert memstore.files() == {"/a.md": "A", "/notes/b.md": "B", "/notes/c.md": "C"}
    ids = memstore.ids()
    with open_store(local) as store:  # a rename, an edit, a delete, a new file
        store.move("/memories/a.md", "/memories/archive/a.md")
        store.write("/memories/notes/b.md", b"B, edited")
        store.delete("/memories/notes/c.md")
        store.write("/memories/d.md", b"D")
    report = run(local, memstore.spec, state)
    assert kinds(report) == [
        ("change", "archive/a.md"),
        ("change", "notes/b.md"),
        ("create", "d.md"),
        ("delete", "notes/c.md"),
    ]
    assert memstore.files() == {"/archive/a.md": "A", "/notes/b.md": "B, edited", "/d.md": "D"}
    assert memstore.ids()["/archive/a.md"] == ids["/a.md"]  # renamed by memory id, not deleted and created again
    assert run(local, memstore.spec, state).changes == []  # nothing new: nothing to do
    # The other way: what changed on the server comes back to the local store.
    memstore.memories.update(memstore.by_path("/d.md").id, memory_store_id=memstore.id, path="/e.md", content="E")
    memstore.memories.create(memstore.id, path="/from-api.md", content="API")
    assert kinds(run(memstore.spec, local, state)) == [("change", "e.md"), ("create", "from-api.md")]
    assert local_files(local) == {"/archive/a.md": "A", "/notes/b.md": "B, edited", "/e.md": "E", "/from-api.md": "API"}
    assert run(local, memstore.spec, state).changes == []  # both sides agree


def test_between_two_memdir_servers(remote: LiveServer, tmp_path: Path) -> None:
    with new_server(tmp_path, "other") as other:
        one, two, state = Memstore(remote), Memstore(other, "bob"), tmp_path / "sync.db"
        made = one.memories.create(one.id, path="/prefs/food.md", content="No spicy food.")
        one.memories.create(one.id, path="/prefs/tone.md", content="Short answers.")
        assert len(run(one.spec, two.spec, state).of("create")) == 2
        assert two.files() == one.files()
        one.memories.update(made.id, memory_store_id=one.id, path="/food.md")  # renamed by id on both sides
        moved = run(one.spec, two.spec, state)
        assert kinds(moved) == [("change", "food.md")] and two.files() == one.files()
        # A memdir server's namespace as a store (RemoteStore, http://TOKEN@HOST) into the other server's store.
        write(remote.url_for("carol"), ("/carol.md", "C"))
        three = Memstore(other, "bob")
        assert kinds(run(remote.url_for("carol"), three.spec, state)) == [("create", "carol.md")]
        assert three.files() == {"/carol.md": "C"}


def test_a_dry_run_changes_nothing(remote: LiveServer, tmp_path: Path) -> None:
    local, state, memstore = str(tmp_path / "local"), tmp_path / "sync.db", Memstore(remote)
    write(local, ("/a.md", "A"))
    token = memstore.token
    result = CliRunner().invoke(cli, ["sync", "--dry-run", "--state", str(state), local, memstore.spec.replace(f"{token}@", "")],
                                env={"MEMDIR_TOKEN": token})  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.stdout == f"would create\t/a.md\tin memstore+http://127.0.0.1:{remote.port}/{memstore.id}\n"
    assert "Dry run: 1 would create." in result.stderr
    assert memstore.files() == {}
    assert kinds(run(local, memstore.spec, state)) == [("create", "a.md")]  # the dry run left no state either


def test_a_change_on_both_sides_is_left_for_a_person(remote: LiveServer, tmp_path: Path) -> None:
    local, state, memstore = str(tmp_path / "local"), tmp_path / "sync.db", Memstore(remote)
    write(local, ("/a.md", "base"), ("/b.md", "b"))
    run(local, memstore.spec, state)
    write(local, ("/a.md", "local edit"), ("/new.md", "local new"), ("/b.md", "b, local"))
    remote_a = memstore.by_path("/a.md")
    memstore.memories.update(remote_a.id, memory_store_id=memstore.id, content="remote edit")
    memstore.memories.create(memstore.id, path="/new.md", content="remote new")
    for direction in ((local, memstore.spec), (memstore.spec, local)):
        result = CliRunner().invoke(cli, ["sync", "--state", str(state), *direction])
        assert result.exit_code == 1  # conflicts remain
        lines = result.stdout.splitlines()
        assert any(line.startswith("conflict\t/a.md\tchanged on both sides since the last sync") for line in lines)
        assert any(line.startswith("conflict\t/new.md\tcreated on both sides with different content") for line in lines)
        assert "left for a person: 2 conflicts" in result.stderr
    assert local_files(local) == {"/a.md": "local edit", "/b.md": "b, local", "/new.md": "local new"}
    assert memstore.files() == {"/a.md": "remote edit", "/b.md": "b, local", "/new.md": "remote new"}  # only b moved
    # A person settles it by making both sides agree; the next sync records that.
    write(local, ("/a.md", "remote edit"), ("/new.md", "remote new"))
    assert kinds(run(local, memstore.spec, state)) == [("link", "a.md"), ("link", "new.md")]
    assert run(memstore.spec, local, state).changes == []


def test_changes_made_only_in_dst_are_kept_or_copied_back_with_both(remote: LiveServer, tmp_path: Path) -> None:
    local, state, memstore = str(tmp_path / "local"), tmp_path / "sync.db", Memstore(remote)
    write(local, ("/a.md", "A"))
    run(local, memstore.spec, state)
    memstore.memories.update(memstore.by_path("/a.md").id, memory_store_id=memstore.id, content="A from the API")
    memstore.memories.create(memstore.id, path="/only-api.md", content="X")
    one_way = run(local, memstore.spec, state)
    assert kinds(one_way) == [("kept", "a.md"), ("kept", "only-api.md")]
    assert local_files(local) == {"/a.md": "A"} and memstore.files()["/a.md"] == "A from the API"
    write(local, ("/local.md", "L"))
    both = run(local, memstore.spec, state, both=True)
    assert kinds(both) == [("change", "a.md"), ("create", "local.md"), ("create", "only-api.md")]
    assert local_files(local) == memstore.files() == {"/a.md": "A from the API", "/local.md": "L", "/only-api.md": "X"}


def test_what_a_side_cannot_hold_is_skipped(remote: LiveServer, tmp_path: Path) -> None:
    local, state, memstore = str(tmp_path / "local"), tmp_path / "sync.db", Memstore(remote)
    with open_store(local) as store:
        store.write("/memories/ok.md", b"fine")
        store.write("/memories/binary.bin", b"\xff\xfe\x00 not text")
        store.write("/memories/big.md", b"x" * 102_401)
        store.write("/memories/a\u200db.md", b"a ZWJ: the memory tool takes it, the API's path rules do not")
    report = run(local, memstore.spec, state)
    assert kinds(report) == [
        ("create", "ok.md"),
        ("skipped", "a\u200db.md"),
        ("skipped", "big.md"),
        ("skipped", "binary.bin"),
    ]
    why = {c.key: c.detail for c in report.of("skipped")}
    assert "not UTF-8 text" in why["binary.bin"] and "102,400" in why["big.md"] and "format" in why["a\u200db.md"]
    assert memstore.files() == {"/ok.md": "fine"}
    assert kinds(run(local, memstore.spec, state)) == [
        ("skipped", "a\u200db.md"),
        ("skipped", "big.md"),
        ("skipped", "binary.bin"),
    ]


def test_a_servers_file_that_is_not_text_is_skipped_not_copied_mangled(remote: LiveServer, tmp_path: Path) -> None:
    import httpx

    local, state, memstore = str(tmp_path / "local"), tmp_path / "sync.db", Memstore(remote)
    token = remote.token(memstore.id)  # the store API, on the memory store's namespace, takes any bytes
    with httpx.Client(base_url=remote.url, headers={"Authorization": f"Bearer {token}"}) as http:
        assert http.put("/v1/files/memories/blob.bin", content=b"\x89PNG\xff\x00").status_code == 200
    memstore.memories.create(memstore.id, path="/text.md", content="t")
    for _ in range(2):  # skipped each time, never written as U+FFFD text
        report = run(memstore.spec, local, state)
        assert [(c.kind, c.key) for c in report.changes if c.kind != "create"] == [("skipped", "blob.bin")]
        assert "not UTF-8 text" in report.of("skipped")[0].detail
    assert local_files(local) == {"/text.md": "t"}


class PauseAfter:
    """ASGI middleware: the memory creation number ``after + 1`` is made, then its answer held until released."""

    def __init__(self, app: Any, after: int) -> None:
        self.app, self.after, self.seen = app, after, 0
        self.reached, self.release = threading.Event(), threading.Event()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        held = scope["type"] == "http" and scope["method"] == "POST" and scope["path"].endswith("/memories")
        if held:
            self.seen += 1
        if not held or self.seen != self.after + 1:
            await self.app(scope, receive, send)
            return

        async def send_later(message: Any) -> None:
            if message["type"] == "http.response.start":
                self.reached.set()
                await anyio.to_thread.run_sync(self.release.wait)
            await send(message)

        await self.app(scope, receive, send_later)


def test_a_sync_killed_in_the_middle_resumes(tmp_path: Path) -> None:
    server = new_server(tmp_path, "killed")
    pause = PauseAfter(server.app, after=20)
    server._server.config.app = pause  # the app uvicorn loads when it starts
    with server:
        memstore, local, state = Memstore(server), f"sqlite://{tmp_path / 'local.db'}", tmp_path / "sync.db"
        write(local, *((f"/notes/{i:02}.md", f"note {i}") for i in range(60)))
        env = {**os.environ, "MEMDIR_HOME": str(tmp_path / "home"), "MEMDIR_TOKEN": memstore.token}
        spec = memstore.spec.replace(f"{memstore.token}@", "")
        with (tmp_path / "sync.log").open("wb") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "memdir", "sync", "--state", str(state), local, spec],
                env=env, stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        try:
            assert pause.reached.wait(60), "the sync never reached its 21st memory"
            process.kill()  # SIGKILL: no cleanup of any kind
            process.wait(30)
        finally:
            pause.release.set()
        assert process.returncode == -9
        # The 21st memory was made on the server, its answer never reached the killed process.
        assert len(memstore.api.beta.memory_stores.memories.list(memstore.id, limit=100).data) == 21
        resumed = run(local, memstore.spec, state)  # the same sync again, the same state
        assert [c.key for c in resumed.of("create")] == [f"notes/{i:02}.md" for i in range(21, 60)]
        assert [c.key for c in resumed.of("link")] == ["notes/20.md"]  # found already there: matched, not made twice
        assert memstore.files() == {f"/notes/{i:02}.md": f"note {i}" for i in range(60)}
        assert run(local, memstore.spec, state).changes == []


def test_memstore_id_uses_the_sdks_own_environment(remote: LiveServer, tmp_path: Path) -> None:
    """``memstore:ID`` is Anthropic's API, or the one ANTHROPIC_BASE_URL names, with ANTHROPIC_API_KEY."""
    local, memstore = str(tmp_path / "local"), Memstore(remote)
    write(local, ("/a.md", "A"))
    args = ["sync", "--state", str(tmp_path / "sync.db"), local, f"memstore:{memstore.id}"]
    missing = CliRunner().invoke(cli, args, env={"ANTHROPIC_BASE_URL": remote.url})
    assert missing.exit_code == 1 and "ANTHROPIC_API_KEY" in missing.stderr and "Traceback" not in missing.output
    done = CliRunner().invoke(cli, args, env={"ANTHROPIC_BASE_URL": remote.url, "ANTHROPIC_API_KEY": memstore.token})
    assert done.exit_code == 0, done.output
    assert "Synced: 1 created." in done.stderr and memstore.files() == {"/a.md": "A"}
    wrong = CliRunner().invoke(cli, [*args[:-1], "memstore:memstore_nothere"], env={"ANTHROPIC_BASE_URL": remote.url,
                                                                                   "ANTHROPIC_API_KEY": memstore.token})  # fmt: skip
    assert wrong.exit_code == 1 and "memstore:memstore_nothere" in wrong.stderr
    bad_key = CliRunner().invoke(
        cli, args, env={"ANTHROPIC_BASE_URL": remote.url, "ANTHROPIC_API_KEY": "mdt_" + "x" * 43}
    )
    assert bad_key.exit_code == 1 and "refused the API key" in bad_key.stderr


def test_namespace_of_the_store_side(remote: LiveServer, tmp_path: Path) -> None:
    url, memstore = f"sqlite://{tmp_path / 'shared.db'}", Memstore(remote)
    with open_store(url, namespace="team") as team, open_store(url, namespace="other") as other:
        team.write("/memories/team.md", b"T")
        other.write("/memories/other.md", b"O")
    args = ["sync", "--state", str(tmp_path / "sync.db"), "-n", "team", url, memstore.spec]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert memstore.files() == {"/team.md": "T"}


def test_a_memdir_store_side_is_written_through_the_gate(tmp_path: Path) -> None:
    """What sync copies into a memdir store is screened and audited as any write is: a key the source holds raw
    (saved when its policy allowed it, or edited in by hand) is redacted on the way, however often it is synced."""
    secret = "AKIAZ7Q3LEAKTEST0001"
    src, dst, state = str(tmp_path / "src"), f"sqlite://{tmp_path / 'dst.db'}", tmp_path / "sync.db"
    write(src, ("/keys.md", f"aws {secret}\n"), ("/plain.md", "hello\n"))
    assert kinds(run(src, dst, state)) == [("create", "keys.md"), ("create", "plain.md")]
    assert local_files(dst) == {"/keys.md": "aws [REDACTED:aws-access-key]\n", "/plain.md": "hello\n"}
    # The copy differs from its source for good: later runs, either way, find nothing to do (once they saw a change
    # every time and copied it again; with --both the redacted text went back over the source).
    assert kinds(run(src, dst, state)) == []
    assert kinds(run(src, dst, state, both=True)) == []
    assert kinds(run(dst, src, state)) == []
    assert local_files(src)["/keys.md"] == f"aws {secret}\n"
    with open_store(dst) as store:
        assert all(secret.encode() not in store.read_blob(v.sha256) for v in store.log() if v.sha256)
        written = [(e.channel, e.path, e.outcome) for e in audit_log(store).entries() if e.command == "create"]
    assert written == [("sync", "/memories/keys.md", "redact"), ("sync", "/memories/plain.md", "ok")]
