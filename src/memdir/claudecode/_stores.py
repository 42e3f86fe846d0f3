"""A store over a Claude Code memory directory, in place: ``claude-code:`` URLs.

==================================  =============================================================================
URL                                 the directory
==================================  =============================================================================
``claude-code:``                    the auto memory of the project the current directory belongs to
``claude-code:/path/to/project``    another project's (``~/`` and relative paths too)
``claude-code:agent/NAME``          a sub-agent's memory, in the scope its definition names (`agent_memory`)
``claude-code:agent/SCOPE/NAME``    in that scope: ``user``, ``project`` or ``local`` (of the current project)
``claude-code:dir:/path``           a memory directory named directly (as `memdir claude-code status` lists them)
==================================  =============================================================================

``?create=1`` after any of them makes the directory when it does not exist yet (Claude Code makes it when its
auto memory first runs in a project; the MCP server of a project's first session may start before that).

The directory itself is ``/memories`` (its ``MEMORY.md`` is ``/memories/MEMORY.md``). memdir writes nothing
inside it but what memory commands write there: the history, the search index and the audit log live in memdir's
data directory, ``<data dir>/claude-code/stores/<id>/``. Changes found on disk (Claude Code's own writes, a
person's edits) become versions by the actor ``claude-code``. A directory that does not exist yet is an error
(unless ``?create=1``): reading commands never make one.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import data_dir
from ..errors import ConfigError, NotFoundError
from ..store._records import DEFAULT_NAMESPACE, Origin
from ..store.directory import DirectoryStore
from ._locate import AGENT_SCOPES, Claude, Location, agent_memory, project_memory

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = [
    "ACTOR",
    "home",
    "locate_url",
    "open_location",
    "open_url",
    "remember_project",
    "remembered_projects",
    "state_lock",
    "store_id",
]

ACTOR = "claude-code"
FOUND = Origin(actor=ACTOR, source="found on disk")
_SLUG = re.compile(r"[^A-Za-z0-9]+")


def home() -> Path:
    """memdir's own place for Claude Code's directories: their history, indexes and the snapshot's manifest."""
    return data_dir() / "claude-code"


def store_id(directory: Path) -> str:
    """A memory directory's name in memdir (its history's folder, its namespace in `memdir serve --claude-code`):
    readable, and keyed by the directory's resolved path so two directories never share."""
    real = os.path.realpath(directory)
    parent, name = os.path.split(real)
    if name == "memory":
        readable = os.path.basename(parent)  # <config>/projects/<key>/memory: the project's key
    elif os.path.basename(parent) in ("agent-memory", "agent-memory-local"):
        readable = f"agent-{name}"
    else:
        readable = name
    words = [w for w in _SLUG.split(readable) if w]
    slug = "-".join(words[-3:])[-32:].strip("-") or "memory"  # the end of a key names the project's folder
    return f"{slug}-{hashlib.sha256(real.encode('utf-8', 'surrogateescape')).hexdigest()[:12]}"


def locate_url(url: str, *, claude: Claude | None = None, cwd: Path | None = None) -> Location:
    """The memory directory a ``claude-code:`` URL names (see the module docstring)."""
    claude = claude or Claude.here()
    here = (cwd or Path.cwd()).absolute()
    rest = url.split(":", 1)[1] if ":" in url else url
    if rest.startswith("dir:"):
        directory = _expanded(rest[4:])
        if not directory.is_absolute():
            raise ConfigError("claude-code:dir: needs an absolute path, e.g. claude-code:dir:/home/me/notes")
        return Location(directory, "project", reason="named directly")
    if rest == "agent" or rest.startswith("agent/"):
        parts = rest.split("/")[1:]
        if len(parts) == 2 and parts[0] in AGENT_SCOPES:
            return agent_memory(claude, parts[1], here, parts[0])
        if len(parts) == 1 and parts[0]:
            return agent_memory(claude, parts[0], here)
        raise ConfigError("use claude-code:agent/NAME or claude-code:agent/SCOPE/NAME (SCOPE: user, project, local)")
    start = here if not rest else _expanded(rest)
    start = start if start.is_absolute() else here / start
    if not start.is_dir():
        raise NotFoundError(f"no project directory {start}")
    location, _ = project_memory(claude, start)
    return location


def _expanded(path: str) -> Path:
    """``~`` and ``~user`` expanded; an unknown user is the URL's mistake, said in one line (expanduser raises a
    bare RuntimeError, which would be reported as an internal error)."""
    try:
        return Path(path).expanduser()
    except RuntimeError as exc:
        raise ConfigError(f"cannot expand {path.split('/', 1)[0]!r} in a claude-code: URL: {exc}") from None


def open_url(url: str, *, namespace: str = DEFAULT_NAMESPACE, **options: Any) -> DirectoryStore:
    """The `memdir.open_store` opener for ``claude-code:`` URLs (``?create=1``: make the directory if Claude Code
    has not yet, as for the MCP server a new project's first session starts)."""
    if namespace != DEFAULT_NAMESPACE:
        raise ConfigError("a claude-code: store is one directory: it has no namespaces")
    url, create = _query(url)
    location = locate_url(url)
    if location.project is not None:
        remember_project(location.project)
    return open_location(location, create=create, **options)


def _query(url: str) -> tuple[str, bool]:
    base, mark, query = url.partition("?")
    if not mark:
        return url, False
    if query not in ("create=1", "create=true"):
        raise ConfigError(f"a claude-code: URL takes one option, ?create=1 (got ?{query})")
    return base, True


def open_location(
    location: Location, *, outside: Origin = FOUND, read_only: bool = False, create: bool = False
) -> DirectoryStore:
    """The store over ``location``'s directory, its history kept in memdir's data directory."""
    if location.disabled:
        raise ConfigError(f"Claude Code keeps no auto memory here: {location.disabled}")
    directory = location.directory
    if create and not read_only:
        _private_dirs(directory)
    if not directory.is_dir():
        raise NotFoundError(
            f"Claude Code has no memory directory for {location.label} yet (it would be {directory}); "
            "it makes one when auto memory first runs there"
        )
    sidecar = home() / "stores" / store_id(directory)
    if not read_only:
        _private_dirs(sidecar)
    return DirectoryStore(directory, root=directory, history=sidecar / "index.db", outside=outside, read_only=read_only)


def _private_dirs(path: Path) -> None:
    """``path`` and its missing parents ``0700``: the history holds every note Claude Code ever wrote."""
    missing = [p for p in (path, *path.parents) if not p.exists()]
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):
            directory.mkdir(mode=0o700)
            os.chmod(directory, 0o700)  # mkdir's mode is masked by the umask


# -- the projects memdir has seen (Claude Code's keys cannot be turned back into paths) --------------------------


def _registry() -> Path:
    return home() / "projects.json"


def remembered_projects() -> dict[str, float]:
    """Project directories memdir has met (by hooks, ``claude-code:`` URLs): path -> when last seen."""
    try:
        data = json.loads(_registry().read_bytes())
    except (OSError, ValueError):
        return {}
    return {k: float(v) for k, v in data.items() if isinstance(k, str)} if isinstance(data, dict) else {}


def remember_project(project: Path) -> None:
    """Note ``project`` (written only when new: opening a store stays read-only for memdir's files too)."""
    if str(project) in remembered_projects():
        return
    with state_lock(_registry()):  # hooks fire together: each adds its project to what the others wrote
        known = remembered_projects()
        known[str(project)] = time.time()
        write_private_json(_registry(), known)


@contextlib.contextmanager
def state_lock(path: Path) -> Iterator[None]:
    """An exclusive ``flock`` on a lock file beside ``path``, for a read-modify-write of it: Claude Code starts
    its hooks together, and eight snapshots at once lost entries of each other's ``projects.json`` and
    ``snapshot.json`` (each wrote what it had read)."""
    _private_dirs(path.parent)
    fd = os.open(path.with_name(f".{path.name}.lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # and with it the lock


def write_private_json(path: Path, data: object) -> None:
    """Replace ``path`` atomically with ``data``, ``0600`` (a crash leaves the old file or the new)."""
    _private_dirs(path.parent)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(data, out, ensure_ascii=False, separators=(",", ":"))
    os.replace(temp, path)
