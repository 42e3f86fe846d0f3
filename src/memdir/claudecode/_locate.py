"""Where Claude Code keeps its memory on this machine, found the way Claude Code finds it.

- **Its configuration directory**: ``$CLAUDE_CONFIG_DIR``, else ``~/.claude``. Its ``settings.json`` is the user
  settings file; its state file (trust decisions) is ``.claude.json`` inside it when ``CLAUDE_CONFIG_DIR`` is
  set, else ``~/.claude.json``.
- **A project's auto memory**: ``<config>/projects/<key>/memory/``, where ``<key>`` is the absolute path of the
  project's *canonical* git root (the main worktree's, so every worktree and subdirectory of a repository share
  one) with every UTF-16 code unit that is not an ASCII letter or digit replaced by ``-``; a key longer than 200
  is cut to 200 and followed by ``-`` and a base-36 hash of the path. Outside a git repository, the directory
  Claude Code was started in. ``autoMemoryDirectory`` moves it (an absolute or ``~/`` path; other values are
  ignored), read from the managed, local, project and user settings files in that order of precedence; the
  local and project files (``.claude/settings.local.json``, ``.claude/settings.json``, which a cloned repository
  can bring) count only in a workspace the user trusted (`trusted`), as for hooks, and a value from them turns
  auto memory off when ``permissions.blockReadsOutsideWorkingDirectories`` is on.
- **A sub-agent's memory** (its definition's ``memory:`` scope): ``user`` ``<config>/agent-memory/<agent>/``,
  ``project`` ``.claude/agent-memory/<agent>/`` and ``local`` ``.claude/agent-memory-local/<agent>/`` in the
  project directory; ``:`` in a plugin agent's name becomes ``-``.

Sources (docs/claude-code.md cites them): Claude Code's memory, settings and sub-agent documentation, and its
issue tracker for the directory key (anthropics/claude-code#9221, #35162, #24382, #30667).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..errors import ConfigError
from ..project import git_common_dir
from ..settings import find_project_root

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

__all__ = [
    "AGENT_SCOPES",
    "Claude",
    "Location",
    "MemorySetting",
    "agent_dir_name",
    "auto_memory_setting",
    "canonical_root",
    "project_key",
    "project_memory",
    "read_json",
    "recorded_cwds",
]

CONFIG_ENV = "CLAUDE_CONFIG_DIR"
MAX_KEY = 200  # Claude Code cuts a longer project key and adds a hash
_TRANSCRIPT_HEAD = 64 * 1024  # bytes of a transcript read for its working directory
_TRANSCRIPTS_READ = 20  # the newest transcripts of a folder read for the project it belongs to (bounds the cost)
AGENT_SCOPES = ("user", "project", "local")
Scope = Literal["user", "project", "local"]


@dataclass(frozen=True)
class Claude:
    """Claude Code's files on this machine (``config``: ``$CLAUDE_CONFIG_DIR`` or ``~/.claude``)."""

    config: Path
    home: Path
    configured: bool = False  # CLAUDE_CONFIG_DIR is set

    @classmethod
    def here(cls, environ: Mapping[str, str] | None = None) -> Claude:
        env = os.environ if environ is None else environ
        home = Path(env.get("HOME") or Path.home())
        given = env.get(CONFIG_ENV)
        if given:
            return cls(Path(os.path.abspath(os.path.expanduser(given))), home, True)
        return cls(home / ".claude", home)

    @property
    def projects(self) -> Path:
        return self.config / "projects"

    @property
    def agent_memory(self) -> Path:
        return self.config / "agent-memory"

    @property
    def user_settings(self) -> Path:
        return self.config / "settings.json"

    @property
    def state_file(self) -> Path:
        """Where Claude Code keeps per-project state, the workspace trust decisions among it."""
        return self.config / ".claude.json" if self.configured else self.home / ".claude.json"

    @property
    def managed_settings(self) -> Path:
        if sys.platform == "darwin":
            return Path("/Library/Application Support/ClaudeCode/managed-settings.json")
        return Path("/etc/claude-code/managed-settings.json")

    def expand(self, value: str) -> Path:
        """``~/...`` against the home Claude Code sees."""
        return self.home / value[2:] if value.startswith("~/") else Path(value)


@dataclass(frozen=True)
class Location:
    """One Claude Code memory directory and what it belongs to."""

    directory: Path
    kind: Literal["project", "agent"]
    project: Path | None = None  # the project root (None: a user-scope agent, or a project not known by path)
    agent: str | None = None
    scope: str | None = None  # an agent's scope: user, project, local
    reason: str = ""  # how it was found, for people (`memdir claude-code where`, `status`)
    key: str | None = None  # the directory's name under <config>/projects, for a default project location
    disabled: str | None = None  # why Claude Code does not use auto memory here (then ``directory`` is unused)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "label": self.label,
            "name": self.name,
            "directory": str(self.directory),
            "project": None if self.project is None else str(self.project),
            "agent": self.agent,
            "scope": self.scope,
            "reason": self.reason,
        }

    @property
    def name(self) -> str:
        """A short name for a picker: the project's folder name, or the agent and its scope."""
        if self.kind == "agent":
            where = f", {self.project.name}" if self.project is not None and self.scope != "user" else ""
            return f"{self.agent} ({self.scope}{where})"
        if self.project is not None:
            return self.project.name
        return self.key or self.directory.name

    @property
    def label(self) -> str:
        if self.kind == "agent":
            where = f" of {self.project}" if self.project is not None and self.scope != "user" else ""
            return f"agent {self.agent} ({self.scope} scope{where})"
        if self.project is not None:
            return f"project {self.project}"
        return f"project {self.key}" if self.key else f"directory {self.directory}"


@dataclass(frozen=True)
class MemorySetting:
    """An ``autoMemoryDirectory`` that counts, and the settings file it came from."""

    directory: Path
    source: Path
    from_repository: bool  # the project or local file: a cloned repository can bring it


def project_key(path: str) -> str:
    """The name Claude Code gives ``path``'s directory under ``<config>/projects``.

    Every UTF-16 code unit outside ``[A-Za-z0-9]`` becomes ``-`` (so a character beyond the BMP gives two); past
    200 the key is cut and ``-`` plus the base-36 value of the absolute 32-bit string hash of ``path`` follows.
    """
    units = path.encode("utf-16-le")
    key = "".join(ch if ch.isascii() and ch.isalnum() else "-" * (2 if ord(ch) > 0xFFFF else 1) for ch in path)
    if len(key) <= MAX_KEY:
        return key
    value = 0
    for i in range(0, len(units), 2):  # Java's String.hashCode over UTF-16 code units, as a signed 32-bit int
        value = (value * 31 + int.from_bytes(units[i : i + 2], "little")) & 0xFFFFFFFF
    signed = value - (1 << 32) if value >= 1 << 31 else value
    return f"{key[:MAX_KEY]}-{_base36(abs(signed))}"


def _base36(number: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    text = ""
    while True:
        number, rest = divmod(number, 36)
        text = digits[rest] + text
        if not number:
            return text


def canonical_root(start: Path) -> Path:
    """The project a directory belongs to for Claude Code: the main worktree's root of the git repository above
    ``start`` (every worktree shares it), else ``start`` itself. Symlinks are resolved, as the kernel's working
    directory is."""
    here = Path(os.path.realpath(start))
    common = git_common_dir(here)
    if common is not None and common.name == ".git":
        return common.parent
    return find_project_root(here) or here  # a bare repository's worktree, or a submodule: its own root


def agent_dir_name(agent: str) -> str:
    """A plugin agent is named ``plugin:agent``; its directory ``plugin-agent``."""
    if not agent or "/" in agent or "\\" in agent or agent in (".", "..") or "\0" in agent:
        raise ConfigError(f"not an agent name: {agent!r}")
    return agent.replace(":", "-")


def agent_directory(claude: Claude, agent: str, scope: str, project: Path) -> Path:
    name = agent_dir_name(agent)
    if scope == "user":
        return claude.agent_memory / name
    folder = "agent-memory" if scope == "project" else "agent-memory-local"
    return project / ".claude" / folder / name


def read_json(path: Path) -> dict[str, Any] | None:
    """A settings file's object; None when missing or unreadable (Claude Code skips those too)."""
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def settings_files(claude: Claude, project: Path) -> Iterator[tuple[Path, bool]]:
    """The settings files that may set ``autoMemoryDirectory``, strongest first: (path, from the repository)."""
    yield claude.managed_settings, False
    yield project / ".claude" / "settings.local.json", True
    yield project / ".claude" / "settings.json", True
    yield claude.user_settings, False


def auto_memory_setting(claude: Claude, project: Path) -> tuple[MemorySetting | None, list[str]]:
    """The ``autoMemoryDirectory`` Claude Code uses for a session started in ``project``, and the values it
    ignores (for `status`): not a string, not absolute nor ``~/``, or from an untrusted workspace's file."""
    ignored: list[str] = []
    trust: bool | None = None
    for path, from_repository in settings_files(claude, project):
        value = (read_json(path) or {}).get("autoMemoryDirectory")
        if value is None:
            continue
        directory = _valid_directory(claude, value)
        if directory is None:
            ignored.append(f"autoMemoryDirectory {value!r} in {path}: not an absolute or ~/ path")
            continue
        if from_repository:
            trust = trusted(claude, project) if trust is None else trust
            if not trust:
                # A cloned repository's settings must not send the memory Claude collects somewhere else: Claude
                # Code applies these files only once the user trusted the workspace (as for hooks).
                ignored.append(f"autoMemoryDirectory in {path}: the workspace is not trusted")
                continue
        return MemorySetting(directory, path, from_repository), ignored
    return None, ignored


def _valid_directory(claude: Claude, value: object) -> Path | None:
    if not isinstance(value, str) or "\0" in value:
        return None
    if not (value.startswith("~/") or os.path.isabs(value)):
        return None
    directory = Path(os.path.normpath(claude.expand(value)))
    return None if directory.parent == directory else directory  # the filesystem root is no memory directory


def trusted(claude: Claude, project: Path) -> bool:
    """Whether the user accepted Claude Code's workspace trust dialog for ``project`` or a directory above it."""
    projects = (read_json(claude.state_file) or {}).get("projects")
    if not isinstance(projects, dict):
        return False
    for directory in (project, *project.parents):
        entry = projects.get(str(directory))
        if isinstance(entry, dict) and entry.get("hasTrustDialogAccepted") is True:
            return True
    return False


def blocks_outside_reads(claude: Claude, project: Path) -> bool:
    """``permissions.blockReadsOutsideWorkingDirectories`` as the strongest settings file that sets it says."""
    for path, _ in settings_files(claude, project):
        permissions = (read_json(path) or {}).get("permissions")
        if isinstance(permissions, dict) and "blockReadsOutsideWorkingDirectories" in permissions:
            return permissions["blockReadsOutsideWorkingDirectories"] is True
    return False


def project_memory(claude: Claude, start: Path) -> tuple[Location, list[str]]:
    """The auto-memory directory of a Claude Code session started in ``start``, and the settings it ignored."""
    started = Path(os.path.realpath(start))
    root = canonical_root(started)
    setting, ignored = auto_memory_setting(claude, started)
    if setting is None:
        key = project_key(str(root))
        where = f"the default location for {root}"
        found = _existing_key(claude, key, root)
        if found is not None:
            where += f" (named with another hash by Claude Code; its sessions ran in {root})"
        directory = found or claude.projects / key / "memory"
        return Location(directory, "project", root, reason=where, key=directory.parent.name), ignored
    reason = f"autoMemoryDirectory in {setting.source}"
    disabled = None
    if setting.from_repository and blocks_outside_reads(claude, started):
        disabled = f"{reason} comes from the repository while permissions.blockReadsOutsideWorkingDirectories is on"
    return Location(setting.directory, "project", root, reason=reason, disabled=disabled), ignored


def _existing_key(claude: Claude, key: str, root: Path) -> Path | None:
    """For a long path whose computed key has no directory, the one Claude Code made with another hash (its
    native build hashes with Bun's wyhash, not String.hashCode, and 2.1.224 changed the scheme), provided its
    session transcripts show it is ``root``'s. The cut key alone proves nothing: every project under one long
    parent shares it, and taking the only match gave a new project another project's notes (and, with
    ``?create=1``, wrote into them)."""
    if len(key) <= MAX_KEY or (claude.projects / key).is_dir():
        return None
    prefix = key[: MAX_KEY + 1]
    try:
        with os.scandir(claude.projects) as entries:
            candidates = [Path(e.path) for e in entries if e.name.startswith(prefix) and e.is_dir()]
    except OSError:
        return None
    ours = [c for c in candidates if _sessions_of(c, root)]
    return ours[0] / "memory" if len(ours) == 1 else None


def _sessions_of(folder: Path, root: Path) -> bool:
    """Whether the newest transcripts in ``folder`` record working directories, all of them in project ``root``
    (one from elsewhere: a directory older Claude Code versions shared between long paths, not provably ours)."""
    roots = [canonical_root(Path(cwd)) if os.path.isdir(cwd) else None for cwd in recorded_cwds(folder)]
    return bool(roots) and all(r == root for r in roots)


def recorded_cwds(folder: Path, newest: int = _TRANSCRIPTS_READ) -> list[str]:
    """The working directories the ``newest`` session transcripts in ``folder`` record (one per transcript that
    records any): Claude Code's keys cannot be turned back into paths, the transcripts can."""
    try:
        with os.scandir(folder) as entries:
            transcripts = [(e.stat().st_mtime, e.path) for e in entries if e.name.endswith(".jsonl") and e.is_file()]
    except OSError:
        return []
    found = (_recorded_cwd(path) for _, path in sorted(transcripts, reverse=True)[:newest])
    return [cwd for cwd in found if cwd is not None]


def _recorded_cwd(transcript: str) -> str | None:
    with contextlib.suppress(OSError), open(transcript, "rb") as file:
        for line in file.read(_TRANSCRIPT_HEAD).splitlines():
            with contextlib.suppress(ValueError):
                record = json.loads(line)
                if isinstance(record, dict) and isinstance(record.get("cwd"), str):
                    return str(record["cwd"])
    return None


def agent_memory(claude: Claude, agent: str, start: Path, scope: str | None = None) -> Location:
    """A sub-agent's memory directory for a session started in ``start``.

    Without ``scope``, the one the agent's definition declares (``memory:`` in ``.claude/agents/*.md`` of the
    project, which wins over ``<config>/agents/*.md``, as Claude Code picks definitions); an agent without a
    definition here gets the one scope that has a directory; several, or none, is an error naming them.
    """
    project = Path(os.path.realpath(start))
    if scope is not None:
        if scope not in AGENT_SCOPES:
            raise ConfigError(f"an agent's memory scope is one of {', '.join(AGENT_SCOPES)}, not {scope!r}")
        reason = f"scope {scope} as named"
    else:
        scope, reason = _scope_of(claude, agent, project)
    directory = agent_directory(claude, agent, scope, project)
    return Location(directory, "agent", None if scope == "user" else project, agent, scope, reason)


def _scope_of(claude: Claude, agent: str, project: Path) -> tuple[str, str]:
    declared = _declared_scope(claude, agent, project)
    if declared is not None:
        return declared
    existing = [s for s in AGENT_SCOPES if agent_directory(claude, agent, s, project).is_dir()]
    if len(existing) == 1:
        return existing[0], f"the only scope with memory for {agent}"
    choices = ", ".join(f"claude-code:agent/{s}/{agent}" for s in existing or AGENT_SCOPES)
    what = "in several scopes" if existing else "in no scope yet"
    raise ConfigError(f"agent {agent!r} has memory {what} and no definition here names one: use {choices}")


def _declared_scope(claude: Claude, agent: str, project: Path) -> tuple[str, str] | None:
    for folder in (project / ".claude" / "agents", claude.config / "agents"):
        for path in sorted(folder.rglob("*.md")) if folder.is_dir() else ():
            fields = _definition(path)
            if fields.get("name") == agent and fields.get("memory") in AGENT_SCOPES:
                return str(fields["memory"]), f"memory: {fields['memory']} in {path}"
    return None


def _definition(path: Path) -> dict[str, Any]:
    from ..automemory import read_frontmatter  # YAML: loaded only when an agent is looked up

    try:
        front = read_frontmatter(path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return {}
    return (front.fields or {}) if front is not None else {}
