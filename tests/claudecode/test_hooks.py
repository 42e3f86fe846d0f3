"""``memdir claude-code install`` / ``uninstall``: hooks merged into the user's settings, nothing else touched."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from memdir.claudecode import Claude, install_hooks, uninstall_hooks
from memdir.claudecode._hooks import EVENTS, hook_command
from memdir.cli import cli
from memdir.errors import ConfigError

from .helpers import FakeHome

# A user's settings as people write them: other keys, their own hooks (one on an event memdir also uses), two
# spaces, a key order of their own, non-ASCII text.
SETTINGS = """{
  "model": "opus",
  "env": {"GREETING": "grüß dich"},
  "hooks": {
    "PostToolUse": [
      {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "npx prettier --write ."}]}
    ],
    "SessionStart": [
      {
        "matcher": "startup",
        "hooks": [{"type": "command", "command": "git log --oneline -5"}]
      }
    ]
  },
  "permissions": {"allow": ["Bash(npm test)"]}
}
"""
COMMAND = "/opt/memdir/bin/memdir claude-code snapshot"


@pytest.fixture
def settings(fake: FakeHome) -> Path:
    path = fake.claude / "settings.json"
    path.write_text(SETTINGS, encoding="utf-8")
    os.chmod(path, 0o640)
    return path


def ours(data: dict[str, object], event: str) -> list[object]:
    groups = data["hooks"][event]  # type: ignore[index]
    return [h for g in groups for h in g["hooks"] if h["command"] == COMMAND]  # type: ignore[index, union-attr]


def test_install_merges_and_keeps_everything_else(settings: Path) -> None:
    change = install_hooks(Claude.here(), COMMAND)
    assert change.events == EVENTS
    text = settings.read_text(encoding="utf-8")
    data = json.loads(text)
    for event in EVENTS:
        assert ours(data, event) == [{"type": "command", "command": COMMAND, "timeout": 60}]
    original = json.loads(SETTINGS)
    assert {k: v for k, v in data.items() if k != "hooks"} == {k: v for k, v in original.items() if k != "hooks"}
    assert data["hooks"]["PostToolUse"] == original["hooks"]["PostToolUse"]
    assert data["hooks"]["SessionStart"][0] == original["hooks"]["SessionStart"][0]  # the user's hook stays first
    # Byte for byte where untouched: up to the end of the user's SessionStart hook, and everything after hooks.
    kept = SETTINGS.index("      }\n    ]\n  },")
    assert text[:kept] == SETTINGS[:kept]
    assert text.endswith('  },\n  "permissions": {"allow": ["Bash(npm test)"]}\n}\n')
    assert oct(settings.stat().st_mode)[-3:] == "640"  # the file keeps its mode
    assert change.backup is not None and change.backup.read_text(encoding="utf-8") == SETTINGS
    assert oct(change.backup.stat().st_mode)[-3:] == "600"


def test_the_added_text_reads_like_the_file(settings: Path) -> None:
    install_hooks(Claude.here(), COMMAND)
    text = settings.read_text(encoding="utf-8")
    assert '    "PreCompact": [\n      {\n        "hooks": [\n          {\n            "type": "command",' in text


def test_install_twice_is_install_once(settings: Path) -> None:
    install_hooks(Claude.here(), COMMAND)
    once = settings.read_bytes()
    again = install_hooks(Claude.here(), COMMAND)
    assert again.events == () and again.backup is None
    assert settings.read_bytes() == once


def test_uninstall_restores_the_file_byte_for_byte(settings: Path) -> None:
    install_hooks(Claude.here(), COMMAND)
    change = uninstall_hooks(Claude.here())
    assert change.restored and change.events == EVENTS
    assert settings.read_text(encoding="utf-8") == SETTINGS
    assert uninstall_hooks(Claude.here()).events == ()  # twice is harmless


def test_uninstall_after_the_user_edited_the_file_removes_only_memdirs(settings: Path) -> None:
    install_hooks(Claude.here(), COMMAND)
    edited = settings.read_text(encoding="utf-8").replace('"model": "opus"', '"model": "sonnet"')
    settings.write_text(edited, encoding="utf-8")
    change = uninstall_hooks(Claude.here())
    assert not change.restored and change.events == EVENTS
    assert settings.read_text(encoding="utf-8") == SETTINGS.replace('"model": "opus"', '"model": "sonnet"')


def test_no_settings_file_yet(fake: FakeHome) -> None:
    path = fake.claude / "settings.json"
    change = install_hooks(Claude.here(), COMMAND)
    assert change.backup is None
    assert sorted(json.loads(path.read_text())["hooks"]) == sorted(EVENTS)
    assert uninstall_hooks(Claude.here()).restored
    assert not path.exists()


@pytest.mark.parametrize("text", ["{not json", "[]", '{"hooks": []}', '{"hooks": {"SessionEnd": {}}}'])
def test_a_file_memdir_cannot_merge_into_is_left_alone(fake: FakeHome, text: str) -> None:
    path = fake.claude / "settings.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match="nothing was changed"):
        install_hooks(Claude.here(), COMMAND)
    assert path.read_text(encoding="utf-8") == text
    assert [p.name for p in fake.claude.iterdir()] == ["settings.json"]  # no backup either


@pytest.mark.parametrize("text", ["{not json", "[]"])
def test_uninstall_leaves_a_file_that_is_not_a_json_object_alone(fake: FakeHome, text: str) -> None:
    path = fake.claude / "settings.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match="nothing was changed"):
        uninstall_hooks(Claude.here())
    result = CliRunner().invoke(cli, ["claude-code", "uninstall"])
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr.startswith(f"Error: {path} ") and result.stderr.endswith("nothing was changed\n")
    assert "internal error" not in result.stderr and result.stderr.count("\n") == 1
    assert path.read_text(encoding="utf-8") == text


def test_a_one_line_file_stays_on_one_line(fake: FakeHome) -> None:
    path = fake.claude / "settings.json"
    path.write_text('{"model":"opus"}', encoding="utf-8")
    install_hooks(Claude.here(), COMMAND)
    text = path.read_text(encoding="utf-8")
    assert "\n" not in text and text.startswith('{"model":"opus", "hooks": {')
    assert uninstall_hooks(Claude.here()).restored and path.read_text() == '{"model":"opus"}'


@pytest.mark.parametrize(
    "original",
    [SETTINGS.replace("\n", "\r\n").encode(), SETTINGS.rstrip("\n").encode()],
    ids=["crlf", "no-final-newline"],
)
def test_line_endings_are_kept_byte_for_byte(fake: FakeHome, original: bytes) -> None:
    path = fake.claude / "settings.json"
    path.write_bytes(original)
    assert CliRunner().invoke(cli, ["claude-code", "install"]).exit_code == 0
    installed = path.read_bytes()
    (backup,) = fake.claude.glob("settings.json.memdir-backup-*")
    assert backup.read_bytes() == original
    crlf = b"\r\n" in original
    assert installed.count(b"\r\n") == (installed.count(b"\n") if crlf else 0)  # added lines end as the file's do
    assert installed.endswith(original[-3:])  # the end of the file, its (missing) final newline included
    result = CliRunner().invoke(cli, ["claude-code", "uninstall"])
    assert result.exit_code == 0 and "as it was before" in result.stdout
    assert path.read_bytes() == original


def test_removing_the_hooks_from_an_edited_crlf_file_keeps_crlf(fake: FakeHome) -> None:
    path = fake.claude / "settings.json"
    path.write_bytes(SETTINGS.replace("\n", "\r\n").encode())
    install_hooks(Claude.here(), COMMAND)
    path.write_bytes(path.read_bytes().replace(b'"opus"', b'"sonnet"'))  # changed since: only memdir's hooks go
    assert not uninstall_hooks(Claude.here()).restored
    assert path.read_bytes() == SETTINGS.replace("\n", "\r\n").replace('"opus"', '"sonnet"').encode()


def test_the_hook_command(monkeypatch: pytest.MonkeyPatch) -> None:
    assert hook_command("/x/memdir", {}) == "/x/memdir claude-code snapshot"
    assert hook_command("/my venv/memdir", {"MEMDIR_HOME": "/data/m d"}) == (
        "MEMDIR_HOME='/data/m d' '/my venv/memdir' claude-code snapshot"
    )


def test_the_cli_prints_the_mcp_line(settings: Path, _isolated_home: Path) -> None:
    result = CliRunner().invoke(cli, ["claude-code", "install"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == f"Added the snapshot hook (SessionStart, PreCompact, SessionEnd) to {settings}."
    assert lines[-1].startswith("  claude mcp add --scope user memdir -- ")
    assert lines[-1].endswith(" mcp --store 'claude-code:?create=1'")
    command = ours_command(settings)
    assert command.startswith(f"MEMDIR_HOME={_isolated_home} ")  # the hook records where this memdir does
    result = CliRunner().invoke(cli, ["claude-code", "install"])
    assert result.stdout.splitlines()[0] == f"The snapshot hooks are already in {settings}."
    result = CliRunner().invoke(cli, ["claude-code", "uninstall"])
    assert result.stdout == f"Put back {settings} as it was before the hooks were installed.\n"


def ours_command(settings: Path) -> str:
    groups = json.loads(settings.read_text())["hooks"]["SessionEnd"]
    return str(groups[-1]["hooks"][0]["command"])
