"""Claude Code hooks that snapshot its memory: ``memdir claude-code install`` / ``uninstall``.

`install_hooks` adds one command hook, ``memdir claude-code snapshot``, to the ``SessionStart``, ``PreCompact`` and
``SessionEnd`` events of the user settings (``<config>/settings.json``), in Claude Code's format::

    "hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "... claude-code snapshot", "timeout": 60}]}]}

The file is edited where the hooks go and nowhere else: every other byte (keys, order, spacing, other hooks) is
kept (`memdir.claudecode._jsonspan`). A copy of the file as it was is written beside it first
(``settings.json.memdir-backup-<UTC time>``). Installing again changes nothing. `uninstall_hooks` puts the file
back exactly as it was when it is still as `install_hooks` left it; if it changed since, it removes only the
hooks memdir added.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from . import _jsonspan
from ._stores import home, write_private_json

if TYPE_CHECKING:
    from ._jsonspan import Node
    from ._locate import Claude

__all__ = ["EVENTS", "HookChange", "install_hooks", "is_ours", "uninstall_hooks"]

EVENTS = ("SessionStart", "PreCompact", "SessionEnd")
TIMEOUT = 60  # seconds; a snapshot that records changes opens SQLite and hashes files, usually well under one
_MARK = " claude-code snapshot"
_SETTINGS = Path("settings.json")  # named in errors about the file


@dataclass(frozen=True)
class HookChange:
    """What `install_hooks` or `uninstall_hooks` did to the settings file."""

    settings: Path
    events: tuple[str, ...]  # the events whose hook was added (or removed)
    backup: Path | None = None
    restored: bool = False  # uninstall: the file is back byte for byte


def hook_command(executable: str, environ: dict[str, str] | None = None) -> str:
    """The hook's command line: memdir by absolute path (a hook's PATH may not have it), with ``MEMDIR_HOME``
    when one is set (the snapshot must record into the same data directory)."""
    env = os.environ if environ is None else environ
    prefix = f"MEMDIR_HOME={shlex.quote(env['MEMDIR_HOME'])} " if env.get("MEMDIR_HOME") else ""
    return f"{prefix}{shlex.quote(executable)}{_MARK}"


def is_ours(hook: object) -> bool:
    """A command hook running ``memdir claude-code snapshot``."""
    if not isinstance(hook, dict) or hook.get("type") != "command":
        return False
    command = hook.get("command")
    return isinstance(command, str) and command.endswith(_MARK) and "memdir" in command


def install_hooks(claude: Claude, command: str) -> HookChange:
    """Add the snapshot hook to each of `EVENTS` that lacks it (see the module docstring)."""
    path = claude.user_settings
    original = _read(path)
    text = original if original is not None else "{}\n"
    _tree(text, path)  # a file Claude Code could not read either is reported, and left alone
    added: list[str] = []
    for event in EVENTS:
        changed = _add(text, event, command)
        if changed is not None:
            text, added = changed, [*added, event]
    if not added:
        return HookChange(path, ())
    backup = None
    if original is not None:
        backup = path.with_name(f"{path.name}.memdir-backup-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}")
        _write(backup, original.encode("utf-8"), 0o600)  # the settings may hold secrets in `env`
    _write(path, text.encode("utf-8"), _mode(path))
    _note(path, {"backup": str(backup) if backup else None, "installed": _sha(text), "created": original is None})
    return HookChange(path, tuple(added), backup)


def uninstall_hooks(claude: Claude) -> HookChange:
    """Take the snapshot hooks out again (see the module docstring)."""
    path = claude.user_settings
    text = _read(path)
    if text is None:
        return HookChange(path, ())
    _tree(text, path)  # as for install: a file that is not JSON is reported, and left alone
    record = _records().get(str(path))
    if isinstance(record, dict) and record.get("installed") == _sha(text):
        return _put_back(path, text, record)
    return _strip(path, text)


def _put_back(path: Path, text: str, record: dict[str, Any]) -> HookChange:
    """The file is as `install_hooks` left it: put the one from before back, byte for byte."""
    events = tuple(e for e in EVENTS if _ours_in(text, e))
    backup = record.get("backup")
    if record.get("created"):
        path.unlink()
    elif isinstance(backup, str) and Path(backup).is_file():
        _write(path, Path(backup).read_bytes(), _mode(path))  # as they were, line endings included
    else:
        return _strip(path, text)  # the backup is gone: take out what was added
    _note(path, None)
    return HookChange(path, events, Path(backup) if isinstance(backup, str) else None, restored=True)


def _strip(path: Path, text: str) -> HookChange:
    """Remove memdir's hooks from a file changed since they were installed, leaving the rest."""
    removed: list[str] = []
    for event in EVENTS:
        changed = _remove(text, event)
        if changed is not None:
            text, removed = changed, [*removed, event]
    if removed:
        _write(path, text.encode("utf-8"), _mode(path))
        _note(path, None)
    return HookChange(path, tuple(removed))


# -- the edits ---------------------------------------------------------------------------------------------------


def _tree(text: str, path: Path) -> Node:
    try:
        root = _jsonspan.parse(text)
    except ValueError as exc:
        raise ConfigError(f"{path} is not valid JSON ({exc}); fix it first: nothing was changed") from exc
    if root.kind != "object":
        raise ConfigError(f"{path} does not hold a JSON object; nothing was changed")
    return root


def _add(text: str, event: str, command: str) -> str | None:
    """``text`` with the hook added to ``event``, or None when it is there already."""
    root = _tree(text, _SETTINGS)
    group = {"hooks": [{"type": "command", "command": command, "timeout": TIMEOUT}]}
    hooks = root.get("hooks")
    if hooks is None:
        return _jsonspan.insert_member(text, root, "hooks", {event: [group]})
    if hooks.kind != "object":
        raise ConfigError('"hooks" in the settings is not an object; nothing was changed')
    groups = hooks.get(event)
    if groups is None:
        return _jsonspan.insert_member(text, hooks, event, [group])
    if groups.kind != "array":
        raise ConfigError(f'"hooks.{event}" in the settings is not a list; nothing was changed')
    if _ours_in(text, event):
        return None
    return _jsonspan.append_item(text, groups, group)


def _ours_in(text: str, event: str) -> bool:
    hooks = json.loads(text).get("hooks")
    groups = hooks.get(event) if isinstance(hooks, dict) else None
    return any(_group_is_ours(g) for g in groups) if isinstance(groups, list) else False


def _group_is_ours(group: object) -> bool:
    hooks = group.get("hooks") if isinstance(group, dict) else None
    return isinstance(hooks, list) and any(is_ours(h) for h in hooks)


def _remove(text: str, event: str) -> str | None:
    """``text`` without memdir's hook groups under ``event`` (and the event, or ``hooks``, if left empty)."""
    if not _ours_in(text, event):
        return None
    while _ours_in(text, event):
        groups = _tree(text, _SETTINGS).get("hooks").get(event)  # type: ignore[union-attr]
        mine = next(i for i, g in enumerate(json.loads(text)["hooks"][event]) if _group_is_ours(g))
        text = _jsonspan.remove_item(text, groups, mine)  # type: ignore[arg-type]
    if json.loads(text)["hooks"][event] == []:
        text = _jsonspan.remove_member(text, _tree(text, _SETTINGS).get("hooks"), event)  # type: ignore[arg-type]
        if json.loads(text)["hooks"] == {}:
            text = _jsonspan.remove_member(text, _tree(text, _SETTINGS), "hooks")
    return text


# -- files -------------------------------------------------------------------------------------------------------


def _read(path: Path) -> str | None:
    """The file's text exactly: ``newline=""`` keeps CRLF and a lone CR (read_text would turn them into LF, and
    the backup, the installed file and the one uninstall puts back would all differ from the user's)."""
    try:
        with open(path, encoding="utf-8", newline="") as file:
            return file.read()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc


def _mode(path: Path) -> int:
    try:
        return path.stat().st_mode & 0o777
    except OSError:
        return 0o600


def _write(path: Path, data: bytes, mode: int) -> None:
    """Replace ``path`` atomically: Claude Code reads its settings while running, and must never see half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.memdir-{os.getpid()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())
    os.chmod(temp, mode)  # the umask must not change the file's mode
    os.replace(temp, path)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _records() -> dict[str, Any]:
    try:
        data = json.loads((home() / "hooks.json").read_bytes())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _note(path: Path, record: dict[str, Any] | None) -> None:
    records = _records()
    if record is None:
        records.pop(str(path), None)
    else:
        records[str(path)] = record
    write_private_json(home() / "hooks.json", records)
