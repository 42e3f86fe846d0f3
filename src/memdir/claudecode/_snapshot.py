"""Recording what Claude Code wrote: every change found in its memory directories becomes a version.

`snapshot` looks at every memory directory (`discover`); one whose fingerprint differs from the last snapshot's
is opened as a store and listed, which records each file changed, added or removed since as a version by the
actor ``claude-code`` (``source`` names the hook; the session is the hook's for the directories of its own
project when a compaction or the session's end fired it: those changes are the session's). Then the manifest
the quick check reads (`memdir.claudecode._quick`) is written. Nothing is written inside Claude Code's
directories.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import MemdirError
from ..store._records import Origin
from . import _quick
from ._discover import discover, known_projects
from ._locate import Claude, Location, canonical_root
from ._stores import ACTOR, open_location, remember_project, state_lock, write_private_json

if TYPE_CHECKING:
    from ..store._records import Version

__all__ = ["Recorded", "Snapshot", "snapshot"]

_SESSION_EVENTS = ("PreCompact", "SessionEnd")  # changes found then were made by the session that fired the hook


@dataclass(frozen=True)
class Recorded:
    """The versions one directory's snapshot recorded (or why it could not be read)."""

    location: Location
    versions: tuple[Version, ...] = ()
    error: str | None = None


@dataclass
class Snapshot:
    """What a snapshot found: one `Recorded` per directory that had changed."""

    directories: int = 0
    recorded: list[Recorded] = field(default_factory=list)

    @property
    def versions(self) -> int:
        return sum(len(r.versions) for r in self.recorded)

    def summary(self) -> str:
        changed = [r for r in self.recorded if r.versions]
        failed = [r for r in self.recorded if r.error]
        text = f"{self.versions} change{'s' * (self.versions != 1)} recorded in {len(changed)} of "
        text += f"{self.directories} Claude Code memory director{'ies' if self.directories != 1 else 'y'}"
        return text + "".join(f"\n{r.location.label}: {r.error}" for r in failed)


def snapshot(
    claude: Claude | None = None, payload: dict[str, Any] | None = None, *, source: str = "snapshot"
) -> Snapshot:
    """Record the changes in every Claude Code memory directory since the last snapshot (``payload``: the hook's
    input, when a hook runs it; ``source``: what the versions name otherwise)."""
    claude = claude or Claude.here()
    with state_lock(Path(_quick.manifest_path())):  # one snapshot at a time: each records what the last left
        return _snapshot(claude, payload, source)


def _snapshot(claude: Claude, payload: dict[str, Any] | None, source: str) -> Snapshot:
    manifest = _load()
    hooked = _hook_project(payload)
    projects = known_projects(claude)
    inputs = _inputs(claude, projects)  # taken before looking: a change meanwhile differs next time
    locations = discover(claude, projects)
    seen, heads = manifest.get("dirs", {}), manifest.get("heads", {})
    result = Snapshot(len(locations))
    dirs: dict[str, str] = {}
    for location in locations:
        path = str(location.directory)
        mark = _quick.fingerprint(path)
        if mark is None:
            continue
        if not _quick.same_mark(mark, seen.get(path)) or path not in heads:
            origin = _origin(location, payload, hooked, source)
            recorded, head = _record(location, origin, int(heads.get(path, 0)))
            result.recorded.append(recorded)
            if recorded.error is not None:
                continue  # looked at again next time
            heads[path] = head
        dirs[path] = mark
    cwds = set(manifest.get("cwds", ()))
    if payload is not None and isinstance(payload.get("cwd"), str):
        cwds.add(payload["cwd"])
    _save({**inputs, "dirs": dirs, "heads": {p: heads[p] for p in dirs if p in heads}, "cwds": sorted(cwds)})
    return result


def _record(location: Location, origin: Origin, head: int) -> tuple[Recorded, int]:
    started = time.time()
    try:
        with open_location(location, outside=origin) as store:
            store.list_files()  # outside changes become versions (and deletions too)
            found = tuple(store.log(head, rescan=False))
    except MemdirError as exc:
        return Recorded(location, error=str(exc)), head
    # Versions made meanwhile by memory commands, or before memdir snapshotted this directory, are not this
    # snapshot's: only those it recorded count.
    mine = tuple(v for v in found if v.actor == origin.actor and v.source == origin.source and v.timestamp >= started)
    return Recorded(location, mine), found[-1].version if found else head


def _origin(location: Location, payload: dict[str, Any] | None, hooked: Path | None, source: str) -> Origin:
    event = payload.get("hook_event_name") if payload is not None else None
    if not isinstance(event, str):
        return Origin(actor=ACTOR, source=source)
    session = payload.get("session_id") if payload is not None else None
    ours = hooked is not None and location.project == hooked and event in _SESSION_EVENTS
    return Origin(
        actor=ACTOR,
        session=session if ours and isinstance(session, str) else None,
        source=f"snapshot ({event} hook)",
    )


def _hook_project(payload: dict[str, Any] | None) -> Path | None:
    """The project of the session that fired the hook, noted for the next snapshots (its settings may move
    its memory anywhere)."""
    cwd = payload.get("cwd") if payload is not None else None
    if not isinstance(cwd, str) or not os.path.isdir(cwd):
        return None
    with contextlib.suppress(OSError):
        remember_project(Path(os.path.realpath(cwd)))
        return canonical_root(Path(cwd))
    return None


def _inputs(claude: Claude, projects: list[Path]) -> dict[str, Any]:
    """What decides where the memory directories are, as the quick check compares it."""
    files = [claude.user_settings, claude.managed_settings]
    lists = {f"{claude.projects}\0memory": _quick.listing(str(claude.projects), "memory")}
    lists[str(claude.agent_memory)] = _quick.listing(str(claude.agent_memory))
    trust = False
    for project in projects:
        files += [project / ".claude" / "settings.json", project / ".claude" / "settings.local.json"]
        for folder in ("agent-memory", "agent-memory-local"):
            base = str(project / ".claude" / folder)
            lists[base] = _quick.listing(base)
        trust = trust or _repository_set(project)
    if trust:  # a repository's autoMemoryDirectory counts only once its workspace is trusted
        files.append(claude.state_file)
    return {
        "version": _quick.MANIFEST_VERSION,
        "config": str(claude.config),
        "files": {str(p): _quick.signature(str(p)) for p in files},
        "lists": lists,
    }


def _repository_set(project: Path) -> bool:
    for name in ("settings.json", "settings.local.json"):
        with contextlib.suppress(OSError, ValueError):
            if "autoMemoryDirectory" in json.loads((project / ".claude" / name).read_bytes()):
                return True
    return False


def _load() -> dict[str, Any]:
    try:
        with open(_quick.manifest_path(), "rb") as file:
            data = json.load(file)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) and data.get("version") == _quick.MANIFEST_VERSION else {}


def _save(manifest: dict[str, Any]) -> None:
    write_private_json(Path(_quick.manifest_path()), manifest)
