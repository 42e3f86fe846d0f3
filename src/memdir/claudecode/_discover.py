"""Every Claude Code memory directory on this machine.

- ``<config>/projects/*/memory/``: the projects' auto memory at its default place;
- each project memdir knows of (the hooks' working directories, ``claude-code:`` URLs, the projects in Claude
  Code's state file): its auto memory where its settings move it, and its sub-agents' ``project`` and ``local``
  memories (``.claude/agent-memory/*/``, ``.claude/agent-memory-local/*/``);
- ``<config>/agent-memory/*/``: the sub-agents' ``user`` memories.

A directory reached several ways is listed once. Claude Code's directory keys cannot be turned back into paths
(``/a-b`` and ``/a/b`` share one), so a key no known project explains is matched through its session
transcripts, whose records carry the working directory; failing that it is shown by its key.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ._locate import Claude, Location, canonical_root, project_key, project_memory, read_json, recorded_cwds
from ._stores import remembered_projects

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["discover", "known_projects"]

_SHARED = "shared by several projects"


def discover(claude: Claude, projects: Iterable[Path] | None = None, notes: list[str] | None = None) -> list[Location]:
    """Every memory directory that exists, projects first (by label), then agents. ``notes`` collects what
    Claude Code ignores or turns off in the known projects' settings (for `status`)."""
    found: dict[str, Location] = {}
    for location in _default_projects(claude):
        _add(found, location)
    for project in known_projects(claude) if projects is None else projects:
        for location in _of_project(claude, project, notes if notes is not None else []):
            _add(found, location)
    for name in _subdirectories(claude.agent_memory):
        _add(found, Location(claude.agent_memory / name, "agent", None, name, "user", "user scope"))
    return sorted(found.values(), key=lambda loc: (loc.kind != "project", loc.label))


def known_projects(claude: Claude) -> list[Path]:
    """Project directories memdir met, and those in Claude Code's state file, that still exist."""
    paths = set(remembered_projects())
    state = read_json(claude.state_file) or {}
    listed = state.get("projects")
    if isinstance(listed, dict):
        paths.update(p for p in listed if isinstance(p, str))
    return sorted(Path(p) for p in paths if os.path.isabs(p) and os.path.isdir(p))


def _default_projects(claude: Claude) -> Iterable[Location]:
    for key in _subdirectories(claude.projects):
        directory = claude.projects / key / "memory"
        if directory.is_dir():
            yield Location(directory, "project", _project_of(claude, key), reason="the default location", key=key)


def _of_project(claude: Claude, project: Path, notes: list[str]) -> Iterable[Location]:
    location, ignored = project_memory(claude, project)
    notes += [f"{project}: Claude Code ignores {why}" for why in ignored]
    if location.disabled is not None:
        notes.append(f"{project}: auto memory is off: {location.disabled}")
    elif location.directory.is_dir():
        yield location
    for scope, folder in (("project", "agent-memory"), ("local", "agent-memory-local")):
        base = project / ".claude" / folder
        for name in _subdirectories(base):
            yield Location(base / name, "agent", project, name, scope, f"{scope} scope of {project}")


def _add(found: dict[str, Location], location: Location) -> None:
    real = os.path.realpath(location.directory)
    seen = found.get(real)
    if seen is None:
        found[real] = location
    elif seen.kind != "project" or location.project is None or seen.reason.startswith(_SHARED):
        return
    elif seen.project is None:  # a key now known by its path
        reason = location.reason if seen.reason == "the default location" else seen.reason
        found[real] = replace(seen, project=location.project, reason=reason)
    elif seen.project != location.project:  # an autoMemoryDirectory several projects point at
        found[real] = replace(seen, project=None, reason=f"{_SHARED} ({location.reason})")


def _subdirectories(directory: Path) -> list[str]:
    try:
        with os.scandir(directory) as entries:
            return sorted(e.name for e in entries if e.is_dir() and not e.name.startswith("."))
    except OSError:
        return []


def _project_of(claude: Claude, key: str) -> Path | None:
    """The project whose key ``key`` is, from the working directory its session transcripts record."""
    for cwd in recorded_cwds(claude.projects / key, newest=3):
        if os.path.isdir(cwd):
            root = canonical_root(Path(cwd))
            if project_key(str(root)) == key:
                return root
    return None
