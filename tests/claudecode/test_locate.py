"""Finding Claude Code's memory directories exactly as Claude Code does."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from memdir import open_store
from memdir.claudecode import Claude, locate_url
from memdir.claudecode._locate import project_key, project_memory
from memdir.errors import ConfigError, NotFoundError

from .helpers import FakeHome, Layout, key


def _java_hash(text: str) -> int:
    """String.hashCode as the closed sum s[i] * 31^(n-1-i) over UTF-16 code units, as a signed 32-bit int."""
    units = [int.from_bytes(text.encode("utf-16-le")[i : i + 2], "little") for i in range(0, len(text) * 2, 2)]
    total = sum(u * pow(31, len(units) - 1 - i) for i, u in enumerate(units)) % 2**32
    return total - 2**32 if total >= 2**31 else total


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/home/me/app", "-home-me-app"),
        ("/Users/me/Open Source/check.mate", "-Users-me-Open-Source-check-mate"),
        ("/home/me/my_project/spec-rl", "-home-me-my-project-spec-rl"),
        ("/srv/文档/x", "-srv----x"),  # every code unit outside [A-Za-z0-9] is a dash
        ("/srv/😀", "-srv---"),  # one character beyond the BMP is two UTF-16 code units: two dashes
        ("C:\\Users\\me", "C--Users-me"),
    ],
)
def test_the_project_key(path: str, expected: str) -> None:
    assert project_key(path) == expected


def test_a_key_past_200_is_cut_and_hashed() -> None:
    path = "/" + "deep/" * 60
    found = project_key(path)
    prefix, _, suffix = found.rpartition("-")
    assert prefix == key(Path(path))[:200]
    assert int(suffix, 36) == abs(_java_hash(path))
    assert project_key(path + "x") != found  # two long paths alike in their first 200 never share


def test_worktrees_and_subdirectories_share_the_repository_memory(layout: Layout) -> None:
    claude = Claude.here()
    main, _ = project_memory(claude, layout.app)
    (layout.feature / "src" / "deep").mkdir(parents=True)
    for start in (layout.feature, layout.feature / "src" / "deep", layout.app):
        found, _ = project_memory(claude, start)
        assert found.directory == layout.app_memory
        assert found.project == layout.app
    assert main.reason == f"the default location for {layout.app}"


def test_a_directory_outside_git_is_its_own_project(layout: Layout) -> None:
    found, _ = project_memory(Claude.here(), layout.scratch)
    assert found.directory == layout.scratch_memory


def test_a_symlinked_path_is_resolved_first(layout: Layout, fake: FakeHome) -> None:
    link = fake.root / "link-to-app"
    link.symlink_to(layout.app)
    found, _ = project_memory(Claude.here(), link)
    assert found.directory == layout.app_memory


def test_a_trusted_local_setting_moves_the_memory(layout: Layout) -> None:
    found, ignored = project_memory(Claude.here(), layout.blog)
    assert found.directory == layout.blog_memory
    assert found.reason == f"autoMemoryDirectory in {layout.blog / '.claude' / 'settings.local.json'}"
    assert ignored == []


def test_an_untrusted_repository_cannot_move_the_memory(layout: Layout, fake: FakeHome) -> None:
    found, ignored = project_memory(Claude.here(), layout.cloned)
    assert found.directory == layout.cloned_memory
    assert ignored == [
        f"autoMemoryDirectory in {layout.cloned / '.claude' / 'settings.json'}: the workspace is not trusted"
    ]
    fake.trust(layout.cloned)  # once the user trusts the workspace, Claude Code honours it
    found, _ = project_memory(Claude.here(), layout.cloned)
    assert found.directory == fake.root / "elsewhere"


def test_precedence_local_over_project_over_user(fake: FakeHome) -> None:
    project = fake.repo("p")
    fake.trust(project)
    fake.settings(fake.claude / "settings.json", {"autoMemoryDirectory": "~/user-memory"})
    assert project_memory(Claude.here(), project)[0].directory == fake.home / "user-memory"
    fake.settings(project / ".claude" / "settings.json", {"autoMemoryDirectory": "~/project-memory"})
    assert project_memory(Claude.here(), project)[0].directory == fake.home / "project-memory"
    fake.settings(project / ".claude" / "settings.local.json", {"autoMemoryDirectory": "/abs/local-memory"})
    assert project_memory(Claude.here(), project)[0].directory == Path("/abs/local-memory")


@pytest.mark.parametrize("value", [".claude/memory", "memory", "~", "/", 42, ["~/x"]])
def test_values_claude_code_rejects_fall_through(fake: FakeHome, value: object) -> None:
    project = fake.repo("p")
    fake.settings(fake.claude / "settings.json", {"autoMemoryDirectory": value})
    found, ignored = project_memory(Claude.here(), project)
    assert found.directory == fake.claude / "projects" / key(project) / "memory"
    assert len(ignored) == 1 and "not an absolute or ~/ path" in ignored[0]


def test_a_repository_value_with_blocked_outside_reads_turns_auto_memory_off(fake: FakeHome) -> None:
    project = fake.repo("p")
    fake.trust(project)
    fake.settings(project / ".claude" / "settings.json", {
        "autoMemoryDirectory": "~/m", "permissions": {"blockReadsOutsideWorkingDirectories": True}
    })  # fmt: skip
    found, _ = project_memory(Claude.here(), project)
    assert found.disabled is not None and "blockReadsOutsideWorkingDirectories" in found.disabled
    with pytest.raises(ConfigError, match="Claude Code keeps no auto memory here"):
        open_store(f"claude-code:{project}")


def test_claude_config_dir_moves_everything(fake: FakeHome, monkeypatch: pytest.MonkeyPatch) -> None:
    config = fake.root / "other-config"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    project = fake.repo("p")
    claude = Claude.here()
    assert claude.projects == config / "projects"
    assert claude.state_file == config / ".claude.json"  # with CLAUDE_CONFIG_DIR the state file moves inside it
    assert project_memory(claude, project)[0].directory == config / "projects" / key(project) / "memory"
    assert locate_url("claude-code:agent/user/x").directory == config / "agent-memory" / "x"
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    assert Claude.here().state_file == fake.home / ".claude.json"


def test_agent_memory_scopes(layout: Layout) -> None:
    assert locate_url("claude-code:agent/reviewer").directory == layout.reviewer  # the only scope it has
    planner = locate_url("claude-code:agent/planner")
    assert planner.directory == layout.planner_project  # its definition says memory: project
    assert planner.reason == f"memory: project in {layout.app / '.claude' / 'agents' / 'planner.md'}"
    assert locate_url("claude-code:agent/local/planner").directory == layout.planner_local
    assert locate_url("claude-code:agent/user/planner").directory == layout.fake.claude / "agent-memory" / "planner"
    assert locate_url("claude-code:agent/user/my-plugin:helper").directory.name == "my-plugin-helper"


def test_an_agent_in_several_scopes_without_a_definition_must_be_named(layout: Layout) -> None:
    (layout.app / ".claude" / "agents" / "planner.md").unlink()
    with pytest.raises(ConfigError) as caught:
        locate_url("claude-code:agent/planner")
    assert str(caught.value) == (
        "agent 'planner' has memory in several scopes and no definition here names one: use "
        "claude-code:agent/project/planner, claude-code:agent/local/planner"
    )


@pytest.mark.parametrize("url", ["claude-code:agent/", "claude-code:agent/a/b/c", "claude-code:agent/team/x"])
def test_malformed_agent_urls(layout: Layout, url: str) -> None:
    with pytest.raises(ConfigError):
        locate_url(url)


def test_another_project_by_path_and_a_missing_one(layout: Layout) -> None:
    assert locate_url(f"claude-code:{layout.blog}").directory == layout.blog_memory
    os.chdir(layout.blog.parent)
    assert locate_url("claude-code:scratch").directory == layout.scratch_memory  # relative to the current directory
    with pytest.raises(NotFoundError, match="no project directory"):
        locate_url("claude-code:/no/such/project")


def _long_siblings(fake: FakeHome) -> tuple[Path, Path, Path]:
    """Two projects whose keys share their first 200 characters, and A's memory directory as a Claude Code build
    whose hash memdir does not compute would name it (the cut key, ``-`` and another suffix)."""
    parent = fake.home / "/".join(["verylongdirectoryname"] * 10)
    a, b = fake.plain(str(parent / "projA")), fake.plain(str(parent / "projB"))
    assert project_key(str(a))[:201] == project_key(str(b))[:201]
    folder = fake.claude / "projects" / (project_key(str(a))[:201] + "zz9zz9")
    fake.write(folder / "memory", "MEMORY.md", "- project A private notes\n")
    return a, b, folder


def test_a_long_key_takes_another_hash_only_when_its_sessions_ran_in_the_project(fake: FakeHome) -> None:
    a, b, folder = _long_siblings(fake)
    assert locate_url(f"claude-code:{b}").directory == fake.claude / "projects" / project_key(str(b)) / "memory"
    assert locate_url(f"claude-code:{a}").directory != folder / "memory"  # no transcript: not provably A's
    fake.write(folder, "s1.jsonl", json.dumps({"type": "user", "cwd": str(a)}) + "\n")
    found = locate_url(f"claude-code:{a}")
    assert found.directory == folder / "memory" and "another hash" in found.reason
    assert locate_url(f"claude-code:{b}").directory != folder / "memory"  # A's sessions prove nothing for B
    fake.write(folder, "s2.jsonl", json.dumps({"type": "user", "cwd": str(b)}) + "\n")
    assert locate_url(f"claude-code:{a}").directory != folder / "memory"  # shared by two projects: neither's


def test_create_never_writes_into_another_projects_long_key(fake: FakeHome) -> None:
    a, b, folder = _long_siblings(fake)
    fake.write(folder, "s1.jsonl", json.dumps({"type": "user", "cwd": str(a)}) + "\n")
    os.chdir(b)
    with open_store("claude-code:?create=1") as store:
        assert list(store.list_files()) == []  # not project A's notes
        store.write("/memories/b.md", b"written from project B\n")
    assert sorted(p.name for p in (folder / "memory").iterdir()) == ["MEMORY.md"]
    assert (fake.claude / "projects" / project_key(str(b)) / "memory" / "b.md").is_file()
