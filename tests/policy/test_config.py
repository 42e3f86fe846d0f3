"""The [policy] settings: actions, TTL rules and retention, with per-namespace overrides; mistakes named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memdir import ConfigError, WritePolicy
from memdir.cli import cli
from memdir.policy.config import TtlRule, load_policy, parse_duration, policy_from_section, weakened_by_project
from memdir.settings import Settings, load_settings

SECTION: dict[str, Any] = {
    "secrets": "block",
    "injection": "warn",
    "keep_versions": "90d",
    "ttl": {"scratch/**": "7d", "inbox/*": "2w"},
    "namespaces": {"lab": {"injection": "quarantine", "ttl": {"scratch/**": "1h"}, "keep_versions": 60}},
}


def test_nothing_configured_means_redact_secrets_and_warn_about_injections() -> None:
    config = policy_from_section({}, "default")
    assert config.write == WritePolicy(secrets="redact", injection="warn")
    assert (config.ttl, config.keep_versions) == ((), None)


def test_the_section_and_a_namespace_override() -> None:
    default = policy_from_section(SECTION, "default")
    assert default.write == WritePolicy(secrets="block", injection="warn")
    assert default.ttl == (TtlRule("scratch/**", 7 * 86_400), TtlRule("inbox/*", 14 * 86_400))
    assert default.keep_versions == 90 * 86_400
    lab = policy_from_section(SECTION, "lab")
    assert lab.write == WritePolicy(secrets="block", injection="quarantine")
    assert lab.ttl[0] == TtlRule("scratch/**", 3600)  # the namespace's rules are tried first
    assert lab.keep_versions == 60


@pytest.mark.parametrize(
    ("text", "seconds"), [("90s", 90), ("30m", 1800), ("12h", 43_200), ("7d", 604_800), ("2w", 1_209_600), (5, 5)]
)
def test_durations(text: object, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"secret": "redact"}, "settings: unknown key(s) in [policy]: secret; known: injection, keep_versions, "
         "namespaces, secrets, ttl, untrusted_injection"),
        ({"secrets": "delete"}, "settings: policy.secrets must be one of allow, warn, redact, quarantine, block, "
         "got 'delete'"),
        ({"keep_versions": "soon"}, 'settings: policy.keep_versions must be a duration such as "7d", "12h" or "30m", '
         "got 'soon'"),
        ({"ttl": {"a/**": "x"}}, 'settings: policy.ttl."a/**" must be a duration such as "7d", "12h" or "30m", '
         "got 'x'"),
        ({"namespaces": {"default": {"namespaces": {}}}}, "settings: unknown key(s) in [policy.namespaces.default]: "
         "namespaces; known: injection, keep_versions, secrets, ttl, untrusted_injection"),
    ],
)  # fmt: skip
def test_mistakes_are_named(section: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        policy_from_section(section, "default")
    assert str(caught.value) == message


# -- a project's file may tighten the policy, never weaken it --------------------------------------------------


def settings_of(user: str, project: str, tmp_path: Path) -> Settings:
    """The settings of a git repository holding ``project`` as its memdir.toml, with ``user`` as the user's file."""
    (tmp_path / "home").mkdir(exist_ok=True)
    (tmp_path / "home" / "config.toml").write_text(user)
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True, exist_ok=True)
    (repo / "memdir.toml").write_text(project)
    return load_settings(repo)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEMDIR_HOME", str(tmp_path / "home"))
    return tmp_path


@pytest.mark.parametrize(
    ("user", "project", "expected"),
    [
        ("", '[policy]\nsecrets = "allow"\n', WritePolicy(secrets="redact")),  # a cloned repository cannot
        ("", '[policy]\nsecrets = "block"\ninjection = "quarantine"\n', WritePolicy("block", "quarantine")),
        ('[policy]\nsecrets = "allow"\n', "", WritePolicy(secrets="allow")),  # the user's own choice stands
        ('[policy]\nsecrets = "allow"\n', '[policy]\nsecrets = "warn"\n', WritePolicy(secrets="warn")),
        ('[policy]\nuntrusted_injection = "quarantine"\n', '[policy]\nuntrusted_injection = "warn"\n',
         WritePolicy(untrusted_injection="quarantine")),
        ("", '[policy.namespaces.default]\ninjection = "allow"\n', WritePolicy()),
    ],
)  # fmt: skip
def test_a_project_may_make_the_policy_stricter_never_weaker(
    home: Path, user: str, project: str, expected: WritePolicy
) -> None:
    assert load_policy("default", settings_of(user, project, home)).write == expected


def test_what_a_project_tried_to_weaken_is_said(home: Path) -> None:
    settings = settings_of("", '[policy]\nsecrets = "allow"\n[policy.namespaces.lab]\ninjection = "allow"\n', home)
    project = home / "repo" / "memdir.toml"
    assert weakened_by_project(settings) == [
        f"{project}: [policy] secrets = 'allow' is weaker than your own setting ('redact'); a project may only make "
        "the policy stricter, so it is ignored",
        f"{project}: [policy.namespaces.lab] injection = 'allow' is weaker than your own setting ('warn'); a "
        "project may only make the policy stricter, so it is ignored",
    ]
    assert load_policy("lab", settings).write == WritePolicy()


def test_the_cli_warns_and_still_redacts(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings_of("", '[policy]\nsecrets = "allow"\n', home)
    monkeypatch.chdir(home / "repo")
    url = f"sqlite://{home / 'm.db'}"
    result = CliRunner().invoke(cli, ["--store", url, "write", "/memories/a.md"], input="key AKIAQ7W3E9R5T1Y8U2I7\n")
    assert result.exit_code == 0
    assert "[policy] secrets = 'allow' is weaker than your own setting ('redact')" in result.stderr
    assert (
        CliRunner().invoke(cli, ["--store", url, "cat", "/memories/a.md"]).stdout == "key [REDACTED:aws-access-key]\n"
    )
