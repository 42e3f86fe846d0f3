"""``memdir claude-code watch``: record Claude Code's memory changes as they happen, not only at the hooks.

The directories are watched with the operating system's file events (inotify, FSEvents..., through
``watchfiles``); each batch of changes in a memory directory, or in what decides where they are (the projects and
agent-memory folders, settings files), is followed by a snapshot (`snapshot`), which records only the directories
whose fingerprint changed. Session transcripts, which change all the time in the same folders, are ignored. Each
second without events the quick check (`memdir.claudecode._quick`) looks for what events cannot show (a change
made before the watch began, a directory where nothing is watched yet); when the set of directories changes (a
new project, a moved ``autoMemoryDirectory``) the watch starts again over the new set.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from . import _quick
from ._discover import discover, known_projects
from ._locate import Claude
from ._snapshot import Snapshot, snapshot

if TYPE_CHECKING:
    from collections.abc import Callable

    from ._locate import Location

__all__ = ["watch"]

_CHECK_MS = 1000
_SETTINGS = ("settings.json", "settings.local.json")


class _Stop:
    """What ``watchfiles`` polls to stop: a ``threading.Event``-like ``is_set``."""

    def __init__(self, stopped: Callable[[], bool]) -> None:
        self.is_set = stopped


def watch(
    claude: Claude | None = None,
    *,
    report: Callable[[Snapshot], None] | None = None,
    stopped: Callable[[], bool] = lambda: False,
    debounce_ms: int = 300,
) -> None:
    """Snapshot now, then after every change, until ``stopped()`` is true (Ctrl-C raises KeyboardInterrupt)."""
    import watchfiles  # loaded only by this command

    claude = claude or Claude.here()
    stop = _Stop(stopped)
    while not stopped():
        _report(snapshot(claude, source="watch"), report)
        locations = discover(claude)
        roots, relevant = _watched(claude, locations)
        for changes in watchfiles.watch(
            *roots,
            watch_filter=relevant,
            debounce=debounce_ms,
            step=50,
            stop_event=stop,
            rust_timeout=_CHECK_MS,
            yield_on_timeout=True,
        ):
            # Events say when to look; the quick check, every second without any, catches what they cannot: a
            # change made before the watch began, a directory appearing where nothing is watched yet.
            if not changes and _quick.unchanged(hook=False):
                continue
            _report(snapshot(claude, source="watch"), report)
            if {str(loc.directory) for loc in discover(claude)} != {str(loc.directory) for loc in locations}:
                break  # the set of directories changed: watch the new one


def _report(found: Snapshot, report: Callable[[Snapshot], None] | None) -> None:
    if report is not None and (found.versions or any(r.error for r in found.recorded)):
        report(found)


def _watched(claude: Claude, locations: list[Location]) -> tuple[list[str], Callable[[object, str], bool]]:
    """The existing folders to watch, and which paths below them matter."""
    memory = [str(loc.directory) for loc in locations]
    projects = [str(p / ".claude") for p in known_projects(claude)]
    roots = {str(claude.config), *memory, *projects}
    existing = sorted(r for r in roots if os.path.isdir(r))
    # Only the outermost: watching a folder and one inside it would report each change twice.
    outermost = [r for r in existing if not any(r != o and r.startswith(o + os.sep) for o in existing)]
    projects_dir = str(claude.projects) + os.sep
    agents = str(claude.agent_memory)

    def relevant(_change: object, path: str) -> bool:
        if os.path.basename(path) in _SETTINGS or _within(path, agents):
            return True
        if path.startswith(projects_dir):
            parts = path[len(projects_dir) :].split(os.sep)
            return len(parts) >= 2 and parts[1] == "memory"
        if any(_within(path, d) for d in memory):
            return True
        return any(path.startswith(p) and "agent-memory" in path[len(p) :] for p in projects)

    return outermost, relevant


def _within(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory + os.sep)
