"""The default store per project: keyed by the git repository (worktrees and subdirectories share it), kept
under the user data directory; elsewhere the old default; movable by ``[memory] location``, within limits."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from memdir import ConfigError, MemoryTool, open_store
from memdir.cli import cli
from memdir.project import git_common_dir, resolve_store


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with one commit and a second worktree beside it (``../wt``)."""
    root = tmp_path / "project"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "README").write_text("hi\n")
    git(root, "add", "README")
    git(root, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "one")
    git(root, "worktree", "add", "-q", str(tmp_path / "wt"), "-b", "other")
    (root / "src" / "deep").mkdir(parents=True)
    return root


def test_worktrees_and_subdirectories_share_one_store(repo: Path, _isolated_home: Path) -> None:
    main, sub, worktree = resolve_store(repo), resolve_store(repo / "src" / "deep"), resolve_store(repo.parent / "wt")
    assert main == sub == worktree
    assert Path(main.url).parent.parent == _isolated_home / "projects"
    assert Path(main.url).parent.name.startswith("project-")
    assert main.reason == f"the default store of the git repository {repo.resolve()}"
    assert git_common_dir(repo.parent / "wt") == (repo / ".git").resolve()


def test_two_repositories_get_two_stores(repo: Path, tmp_path: Path) -> None:
    other = tmp_path / "elsewhere" / "project"
    other.mkdir(parents=True)
    git(other, "init", "-q")
    assert resolve_store(other).url != resolve_store(repo).url


def test_outside_a_repository_the_old_default_stays(tmp_path: Path, _isolated_home: Path) -> None:
    choice = resolve_store(tmp_path)
    assert choice.url == str(_isolated_home / "store")
    assert choice.reason == "the default store (not inside a git repository)"


def test_memdir_store_wins(repo: Path) -> None:
    assert resolve_store(repo, {"MEMDIR_STORE": "sqlite:///x.db"}).url == "sqlite:///x.db"


def test_every_command_uses_it(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the agent saved in a worktree is what `memdir ls` shows in the main checkout."""
    monkeypatch.chdir(repo.parent / "wt")
    runner = CliRunner()
    made = runner.invoke(cli, ["tool", '{"command": "create", "path": "/memories/a.md", "file_text": "x"}'])
    assert made.exit_code == 0, made.output
    monkeypatch.chdir(repo / "src")
    listed = runner.invoke(cli, ["ls"])
    assert "/memories/a.md" in listed.stdout
    where = runner.invoke(cli, ["where"])
    assert where.stdout == resolve_store(repo).url + "\n"
    assert where.stderr == f"(the default store of the git repository {repo.resolve()})\n"


def test_where_says_when_the_store_was_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runner = CliRunner()
    named = runner.invoke(cli, ["where", "--store", "memory:x"])
    assert (named.stdout, named.stderr) == ("memory:x\n", "(--store was given)\n")
    monkeypatch.setenv("MEMDIR_STORE", "memory:y")
    from_env = runner.invoke(cli, ["where"])
    assert (from_env.stdout, from_env.stderr) == ("memory:y\n", "(MEMDIR_STORE is set)\n")


def test_a_user_location_moves_it(repo: Path, _isolated_home: Path) -> None:
    (_isolated_home / "config.toml").write_text('[memory]\nlocation = "~/all-my-memory"\n')
    choice = resolve_store(repo)
    assert choice.url == os.path.expanduser("~/all-my-memory")
    assert choice.reason == f"[memory] location in {_isolated_home / 'config.toml'}"


def test_a_user_location_must_be_absolute(repo: Path, _isolated_home: Path) -> None:
    (_isolated_home / "config.toml").write_text('[memory]\nlocation = "relative/dir"\n')
    with pytest.raises(ConfigError, match="location must be an absolute path or start with ~/"):
        resolve_store(repo)


def test_a_project_location_inside_the_project(repo: Path) -> None:
    (repo / "memdir.toml").write_text('[memory]\nlocation = ".memory"\n')
    choice = resolve_store(repo / "src")
    assert choice.url == str(repo / ".memory")
    assert choice.reason == f"[memory] location in {repo / 'memdir.toml'}"


def test_a_project_file_may_not_send_memory_outside(repo: Path, tmp_path: Path, _isolated_home: Path) -> None:
    (repo / "memdir.toml").write_text(f'[memory]\nlocation = "{tmp_path / "stolen"}"\n')
    with pytest.raises(ConfigError) as caught:
        resolve_store(repo)
    message = str(caught.value)
    assert str(repo / "memdir.toml") in message and str(_isolated_home / "config.toml") in message
    assert "is outside the project" in message and "allow_outside_project = true" in message
    (repo / "memdir.toml").write_text('[memory]\nlocation = "../escape"\n')
    with pytest.raises(ConfigError, match="is outside the project"):
        resolve_store(repo)


def test_the_user_config_can_allow_it(repo: Path, tmp_path: Path, _isolated_home: Path) -> None:
    (repo / "memdir.toml").write_text(f'[memory]\nlocation = "{tmp_path / "shared"}"\n')
    (_isolated_home / "config.toml").write_text("[memory]\nallow_outside_project = true\n")
    assert resolve_store(repo).url == str(tmp_path / "shared")


def test_a_project_cannot_allow_itself(repo: Path, tmp_path: Path) -> None:
    (repo / "memdir.toml").write_text(f'[memory]\nallow_outside_project = true\nlocation = "{tmp_path}"\n')
    with pytest.raises(ConfigError, match="allow_outside_project can only be set in the user config"):
        resolve_store(repo)


def test_the_cli_reports_a_refused_location_in_one_line(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (repo / "memdir.toml").write_text(f'[memory]\nlocation = "{tmp_path / "stolen"}"\n')
    monkeypatch.chdir(repo)
    result = CliRunner().invoke(cli, ["ls"])
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1 and "is outside the project" in result.stderr


def test_the_project_store_is_a_working_store(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(repo / "src" / "deep")
    with open_store() as store:
        assert (
            MemoryTool(store, auto_memory=False)
            .execute({"command": "create", "path": "/memories/x.md", "file_text": "x"})
            .text
            == "File created successfully at: /memories/x.md"
        )
    assert (Path(resolve_store(repo).url) / "memories" / "x.md").read_text() == "x"
