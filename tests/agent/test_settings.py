"""The ``[agent]`` settings: precedence (options > environment > project file > user file), checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from memdir import ConfigError
from memdir.agent import DEFAULT_MODEL, AgentSettings, load_agent_settings
from memdir.settings import Settings


def files(user: dict[str, object] | None = None, project: dict[str, object] | None = None) -> Settings:
    return Settings(user={"agent": user} if user else {}, project={"agent": project} if project else {})


def test_defaults() -> None:
    settings = load_agent_settings(environ={}, settings=files())
    assert settings == AgentSettings()
    assert settings.model_name == DEFAULT_MODEL
    assert settings.context_mode == "native"
    assert AgentSettings(provider="openai").context_mode == "client"


def test_precedence_options_env_project_user() -> None:
    layered = files(user={"max_turns": 1, "model": "u", "compact_at": 7}, project={"max_turns": 2, "model": "p"})
    assert load_agent_settings(environ={}, settings=layered).max_turns == 2
    env = {"MEMDIR_AGENT_MAX_TURNS": "3", "MEMDIR_MODEL": "from-env"}
    merged = load_agent_settings(environ=env, settings=layered)
    assert (merged.max_turns, merged.model, merged.compact_at) == (3, "from-env", 7)
    assert load_agent_settings({"max_turns": 4, "model": None}, environ=env, settings=layered).max_turns == 4


def test_environment_values_are_converted() -> None:
    env = {
        "MEMDIR_PROVIDER": "openai",
        "MEMDIR_AGENT_SEARCH": "yes",
        "MEMDIR_AGENT_EXCLUDE_TOOLS": "memory, web_fetch",
        "MEMDIR_AGENT_HOOK_TIMEOUT": "2.5",
        "MEMDIR_AGENT_CLEAR_AT": "50_000",
    }
    settings = load_agent_settings(environ=env, settings=files())
    assert settings.provider == "openai" and settings.search is True
    assert settings.exclude_tools == ("memory", "web_fetch")
    assert (settings.hook_timeout, settings.clear_at) == (2.5, 50_000)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"max_turn": 3}, "unknown agent setting 'max_turn'"),
        ({"max_turns": "many"}, "agent setting 'max_turns' must be int, got 'many'"),
        ({"max_turns": True}, "agent setting 'max_turns' must be int"),
        ({"context": "sometimes"}, "agent setting 'context' must be native or client or off"),
        ({"clear_at": -1}, "agent setting 'clear_at' must not be negative"),
        ({"hooks": {"OnBoot": ["true"]}}, "unknown hook event 'OnBoot'"),
        ({"hooks": {"Stop": [{"cmd": "x"}]}}, "each Stop hook needs a `command` string"),
        ({"hooks": {"Stop": [{"command": "x", "timeout": 0}]}}, "timeout of a Stop hook must be a positive number"),
    ],
)
def test_bad_settings_name_the_key(table: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_agent_settings(environ={}, settings=files(project=table))


def test_hooks_from_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "memdir.toml").write_text(
        '[agent]\nmodel = "claude-x"\n\n[[agent.hooks.SessionStart]]\ncommand = "cat NOTES.md"\nmatcher = "startup"\n'
        '\n[agent.hooks]\nStop = "notify-send done"\n'
    )
    monkeypatch.chdir(tmp_path)
    settings = load_agent_settings(environ={})
    assert settings.model == "claude-x"
    assert settings.hooks == {
        "SessionStart": ({"command": "cat NOTES.md", "matcher": "startup"},),
        "Stop": ({"command": "notify-send done"},),
    }


def test_the_error_names_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "memdir.toml").write_text("[agent]\nmax_turns = 'ten'\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=r"\[agent\] in .*memdir.toml: agent setting 'max_turns' must be int"):
        load_agent_settings(environ={})
