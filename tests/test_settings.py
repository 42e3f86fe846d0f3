"""Settings: the user's file, the project's file over it, and clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from memdir.errors import ConfigError
from memdir.settings import load_settings


def test_project_settings_merge_over_the_users(tmp_path: Path, _isolated_home: Path) -> None:
    (_isolated_home / "config.toml").write_text(
        '[agent]\nmodel = "user-model"\nmax_turns = 5\n[agent.hooks]\nStop = ["a"]\n'
    )
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    (project / "memdir.toml").write_text('[agent]\nmodel = "project-model"\n[agent.hooks]\nSessionStart = ["b"]\n')
    (project / "sub" / "dir").mkdir(parents=True)
    settings = load_settings(project / "sub" / "dir")
    assert settings.project_path == project / "memdir.toml"
    assert settings.section("agent") == {
        "model": "project-model",
        "max_turns": 5,
        "hooks": {"Stop": ["a"], "SessionStart": ["b"]},
    }
    assert settings.section("missing") == {}


def test_the_project_file_is_not_looked_for_above_the_repository(tmp_path: Path) -> None:
    (tmp_path / "memdir.toml").write_text('[agent]\nmodel = "outside"\n')
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    assert load_settings(tmp_path / "repo").project_path is None


def test_malformed_files_are_one_clear_error(tmp_path: Path, _isolated_home: Path) -> None:
    (_isolated_home / "config.toml").write_text("[agent\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_settings(tmp_path)
    (_isolated_home / "config.toml").write_text("agent = 3\n")
    with pytest.raises(ConfigError, match=r"\[agent\] must be a table"):
        load_settings(tmp_path).section("agent")
