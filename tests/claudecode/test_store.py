"""``claude-code:`` stores: a Claude Code memory directory in place, its history in memdir's data directory."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from memdir import MemoryTool, open_store
from memdir.claudecode import store_id
from memdir.cli import cli
from memdir.errors import ConfigError, NotFoundError
from memdir.search import searcher

from .helpers import FakeHome, Layout, key


def test_the_directory_is_the_memories_root(layout: Layout) -> None:
    with open_store("claude-code:") as store:
        paths = sorted(e.path.virtual for e in store.list_files())
        assert paths == [
            "/memories/MEMORY.md", "/memories/api_access.md", "/memories/broken.md", "/memories/feedback_testing.md"
        ]  # fmt: skip
        assert store.read("/memories/MEMORY.md").content == (layout.app_memory / "MEMORY.md").read_bytes()


def test_files_found_on_disk_are_versions_by_claude_code(layout: Layout) -> None:
    with open_store("claude-code:") as store:
        (first,) = store.history("/memories/feedback_testing.md")
    assert (first.op, first.actor, first.source) == ("create", "claude-code", "found on disk")


def test_a_memory_command_writes_the_file_and_nothing_else_inside(layout: Layout, fake: FakeHome) -> None:
    with open_store("claude-code:") as store:
        store.list_files()  # the first look records what is there
        before = fake.listing()
        result = MemoryTool(store, auto_memory=False).execute(
            {"command": "create", "path": "/memories/user_role.md", "file_text": "Data scientist.\n"}
        )
        assert not result.is_error, result.text
    after = fake.listing()
    added = sorted(set(after) - set(before))
    changed = sorted(p for p in before if p in after and before[p] != after[p])
    assert added == [str(layout.app_memory / "user_role.md")]
    assert changed == [str(layout.app_memory)]  # the directory gained an entry
    assert (layout.app_memory / "user_role.md").read_text() == "Data scientist.\n"


def test_verify_reads_the_directory_and_writes_nothing_inside(layout: Layout, fake: FakeHome) -> None:
    assert CliRunner().invoke(cli, ["--store", "claude-code:", "ls"]).exit_code == 0  # the first look records
    before = fake.listing()
    result = CliRunner().invoke(cli, ["--store", "claude-code:", "verify"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("4 files checked: all match their history.\n")
    assert fake.listing() == before  # no memories/ folder made inside Claude Code's directory


def test_history_lives_in_memdirs_data_directory(layout: Layout, _isolated_home: Path) -> None:
    with open_store("claude-code:") as store:
        (hit,) = searcher(store).search("staging", mode="fts").hits  # full text: no model to load in a unit test
        assert hit.path.virtual == "/memories/api_access.md"
    sidecar = _isolated_home / "claude-code" / "stores" / store_id(layout.app_memory)
    assert sorted(p.name for p in sidecar.iterdir() if not p.name.endswith(("-wal", "-shm"))) == ["aux.db", "index.db"]
    assert oct(sidecar.stat().st_mode)[-3:] == "700"
    assert not any(p.name.startswith(".memdir") for p in layout.app_memory.iterdir())


def test_worktrees_open_the_same_store(layout: Layout) -> None:
    with open_store(f"claude-code:{layout.feature}") as store:
        assert store.root == layout.app_memory
        assert store.index_path == open_store("claude-code:").index_path  # type: ignore[attr-defined]


def test_agent_and_direct_urls(layout: Layout) -> None:
    with open_store("claude-code:agent/reviewer") as store:
        assert store.read("/memories/MEMORY.md").content.startswith(b"# Reviewer")
    with open_store(f"claude-code:dir:{layout.blog_memory}") as store:
        assert [e.path.name for e in store.list_files()] == ["MEMORY.md", "style.md"]


def test_a_missing_directory_is_not_created(fake: FakeHome) -> None:
    project = fake.repo("fresh")
    with pytest.raises(NotFoundError) as caught:
        open_store(f"claude-code:{project}")
    assert str(caught.value).startswith(f"Claude Code has no memory directory for project {project} yet")
    assert not (fake.claude / "projects").exists()
    with open_store(f"claude-code:{project}?create=1") as store:  # as the MCP server opens it
        assert store.list_files() == []
    assert oct((fake.claude / "projects" / key(project) / "memory").stat().st_mode)[-3:] == "700"
    with pytest.raises(ConfigError, match="takes one option"):
        open_store(f"claude-code:{project}?make=yes")


def test_one_namespace_only(layout: Layout) -> None:
    with pytest.raises(ConfigError, match="has no namespaces"):
        open_store("claude-code:", namespace="other")


def test_the_directory_store_over_its_own_root(tmp_path: Path) -> None:
    """The two directory-store hooks this backend stands on: ``root=`` and ``outside=``."""
    from memdir import DirectoryStore, Origin

    owned = tmp_path / "owned"
    owned.mkdir()
    (owned / "a.md").write_text("hi\n")
    with pytest.raises(ConfigError, match="needs history=PATH"):
        DirectoryStore(owned, root=owned)  # the sidecar would land inside the directory
    store = DirectoryStore(owned, root=owned, history=tmp_path / "side" / "index.db", outside=Origin("tool-x"))
    with store:
        assert [e.path.virtual for e in store.list_files()] == ["/memories/a.md"]
        (version,) = store.history("/memories/a.md")
    assert version.actor == "tool-x"
    assert sorted(p.name for p in owned.iterdir()) == ["a.md"]
