"""Settings from TOML files, read by every feature from its own section.

Two files, the project's over the user's:

- the user's: ``$MEMDIR_HOME/config.toml`` when ``MEMDIR_HOME`` is set, else ``config.toml`` in the platform's
  user config directory (``~/.config/memdir/config.toml`` on Linux, ``~/Library/Application Support/memdir``
  on macOS, ``%LOCALAPPDATA%\\memdir`` on Windows); ``MEMDIR_CONFIG`` names another file;
- the project's: ``memdir.toml`` in the current directory or the nearest one above it, not looking past the
  root of the git repository the current directory is in.

Tables merge key by key (the project's value wins; nested tables merge the same way). A feature reads its own
table (``settings.section("agent")``) and checks its own keys; environment variables and command-line options
win over both files. Command-line tools report a malformed file in one line (`ConfigError`). A top-level table
no feature reads (``[polcy]`` for ``[policy]``) would silently do nothing: `Settings.warnings` names each one
with its file and line, and the CLI prints them on stderr.
"""

from __future__ import annotations

import copy
import difflib
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs

from .errors import ConfigError

__all__ = [
    "MEMORY_KEYS",
    "PROJECT_FILE",
    "TABLES",
    "Settings",
    "find_project_root",
    "load_settings",
    "memory_table",
    "user_config_path",
]

PROJECT_FILE = "memdir.toml"

# Every top-level table a feature reads, and where it is described. Anything else in a settings file is a typo
# or a table of another program: either way it changes nothing, which `Settings.warnings` says.
TABLES: dict[str, str] = {
    "agent": "the agent: memdir run / chat (docs/agent.md)",
    "memory": "where memory lives, auto memory (README.md, docs/agent.md)",
    "limits": "the size and count limits of a file and a namespace (docs/safety.md)",
    "policy": "the write policy, expiry, retention (docs/safety.md)",
    "search": "search and its index (docs/search.md)",
}


def user_config_path() -> Path:
    explicit = os.environ.get("MEMDIR_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    home = os.environ.get("MEMDIR_HOME")
    base = Path(home).expanduser() if home else Path(platformdirs.user_config_dir("memdir", appauthor=False))
    return base / "config.toml"


def find_project_root(start: Path | None = None) -> Path | None:
    """The git repository root above ``start`` (the current directory), or None outside a repository."""
    here = (start or Path.cwd()).absolute()
    for directory in (here, *here.parents):
        if (directory / ".git").exists():
            return directory
    return None


def _project_config_path(start: Path | None) -> Path | None:
    here = (start or Path.cwd()).absolute()
    stop = find_project_root(here)
    for directory in (here, *here.parents):
        candidate = directory / PROJECT_FILE
        if candidate.is_file():
            return candidate
        if directory == stop:
            break
    return None


@dataclass(frozen=True)
class Settings:
    """The user's and the project's settings, and their merge."""

    user: dict[str, Any] = field(default_factory=dict)
    project: dict[str, Any] = field(default_factory=dict)
    user_path: Path | None = None
    project_path: Path | None = None

    @property
    def merged(self) -> dict[str, Any]:
        return _merge(self.user, self.project)

    @property
    def files(self) -> list[Path]:
        """The settings files that were read, the user's first."""
        return [path for path in (self.user_path, self.project_path) if path is not None]

    @property
    def warnings(self) -> list[str]:
        """One line per top-level key no feature reads, naming the file and line (and the table meant, when
        one is close): ``memdir.toml:3: unknown table [polcy] (did you mean [policy]?); it is ignored``."""
        found: list[str] = []
        for values, path in ((self.user, self.user_path), (self.project, self.project_path)):
            for key in values:
                if key not in TABLES and path is not None:
                    found.append(_unknown(key, path))
        return found

    def section(self, name: str) -> dict[str, Any]:
        """One feature's table (empty when absent); `ConfigError` when the key holds something else."""
        value = self.merged.get(name, {})
        if not isinstance(value, dict):
            raise ConfigError(f"settings: [{name}] must be a table")
        return value


def load_settings(cwd: Path | None = None) -> Settings:
    user_path = user_config_path()
    project_path = _project_config_path(cwd)
    user_file = user_path if user_path.is_file() else None
    return Settings(
        user=_read(user_file) if user_file is not None else {},
        project=_read(project_path) if project_path is not None else {},
        user_path=user_file,
        project_path=project_path,
    )


MEMORY_KEYS: dict[str, type] = {
    "auto_memory": bool,  # index warnings, `modified:` upkeep, index upkeep (memdir.automemory)
    "index_upkeep": bool,  # the MEMORY.md line of a topic file created, renamed or deleted through the tool
    "location": str,  # the default store: an absolute or ~/ path (memdir.project)
    "allow_outside_project": bool,  # user file only: let a project file point memory outside the project
}


def memory_table(values: dict[str, Any], where: Path | None) -> dict[str, Any]:
    """The ``[memory]`` table of one settings file, checked: `ConfigError` names the key and the file."""
    table = values.get("memory", {})
    shown = f"[memory] in {where}" if where is not None else "[memory]"
    if not isinstance(table, dict):
        raise ConfigError(f"settings: {shown} must be a table")
    for key, value in table.items():
        kind = MEMORY_KEYS.get(key)
        if kind is None:
            raise ConfigError(f"{shown}: unknown key {key!r} (known: {', '.join(sorted(MEMORY_KEYS))})")
        if not isinstance(value, kind):
            raise ConfigError(f"{shown}: {key!r} must be a {'boolean' if kind is bool else 'string'}, got {value!r}")
    return table


# Parsed files by (path, mtime, size): every MemoryTool reads the [policy] table when it is made, and a server
# makes many; a file is parsed again only when it changed.
_PARSED: dict[Path, tuple[tuple[int, int], dict[str, Any]]] = {}


def _read(path: Path) -> dict[str, Any]:
    try:
        st = path.stat()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror})") from exc
    key = (st.st_mtime_ns, st.st_size)
    cached = _PARSED.get(path)
    if cached is not None and cached[0] == key:
        return copy.deepcopy(cached[1])
    parsed = _parse(path)
    _PARSED[path] = (key, parsed)
    return copy.deepcopy(parsed)


def _parse(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror})") from exc


def _unknown(key: str, path: Path) -> str:
    close = difflib.get_close_matches(key, TABLES, n=1)
    meant = f" (did you mean [{close[0]}]?)" if close else f" (known: {', '.join(f'[{t}]' for t in sorted(TABLES))})"
    return f"{path}:{_line_of(key, path)}: unknown table [{key}]{meant}; it is ignored"


def _line_of(key: str, path: Path) -> int:
    """The line that first names top-level ``key``: a table header (``[key]``, ``[key.x]``, ``[[key]]``) or a
    dotted or plain key (``key.x = 1``, ``key = 1``); 1 when it cannot be found (a quoted key, say)."""
    name = re.escape(key)
    pattern = re.compile(rf"^\s*(\[\[?\s*{name}\s*[.\]]|{name}\s*[.=])")
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return 1
    return next((number for number, line in enumerate(lines, 1) if pattern.match(line)), 1)


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged
