"""Where memory lives when no store is named: one store per project.

In order, the first that applies:

1. ``--store`` (the CLI's) or ``MEMDIR_STORE``;
2. ``[memory] location`` in the project's ``memdir.toml`` — an absolute path, ``~/...``, or a path relative to
   that file. It must lie inside the project (the git repository holding the file, else the file's directory)
   unless the *user's* config sets ``allow_outside_project = true``: a cloned repository must not be able to
   send the memory it will collect somewhere else;
3. ``[memory] location`` in the user's ``config.toml`` — an absolute or ``~/`` path;
4. inside a git repository: ``<data dir>/projects/<name>-<hash>/store``, keyed by the repository's *common* git
   directory, so every worktree of one repository and every subdirectory share one store;
5. elsewhere: ``<data dir>/store``, as before.

`resolve_store` returns the URL and the reason (``memdir where`` prints both).
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ._home import data_dir
from .errors import ConfigError
from .settings import Settings, find_project_root, load_settings, memory_table, user_config_path

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["StoreChoice", "git_common_dir", "project_root", "project_store_dir", "resolve_store"]


@dataclass(frozen=True)
class StoreChoice:
    """The store memdir uses without ``--store``, and why."""

    url: str
    reason: str


def resolve_store(cwd: Path | None = None, environ: Mapping[str, str] | None = None) -> StoreChoice:
    """The default store for the current directory (``cwd``); see the module docstring."""
    env = os.environ if environ is None else environ
    if env.get("MEMDIR_STORE"):
        return StoreChoice(env["MEMDIR_STORE"], "MEMDIR_STORE is set")
    configured = _configured(load_settings(cwd))
    if configured is not None:
        return configured
    common = git_common_dir(cwd)
    if common is not None:
        root = _repository_root(common)
        return StoreChoice(str(project_store_dir(common)), f"the default store of the git repository {root}")
    return StoreChoice(str(data_dir() / "store"), "the default store (not inside a git repository)")


def project_root(start: Path | None = None) -> Path:
    """The project the current directory belongs to: its git worktree's root, else the directory itself."""
    here = (start or Path.cwd()).absolute()
    return find_project_root(here) or here


def git_common_dir(start: Path | None = None) -> Path | None:
    """The git directory every worktree of the repository above ``start`` shares (None outside one).

    Read from the files git keeps, without running git: a worktree's ``.git`` is a file naming its own git
    directory (``gitdir: .../.git/worktrees/NAME``), which holds ``commondir`` pointing at the shared one.
    """
    here = (start or Path.cwd()).absolute()
    for directory in (here, *here.parents):
        dotgit = directory / ".git"
        if dotgit.is_dir():
            return dotgit.resolve()
        if dotgit.is_file():
            return _linked_common_dir(dotgit)
    return None


def _linked_common_dir(dotgit: Path) -> Path | None:
    try:
        first = dotgit.read_text(encoding="utf-8", errors="replace").split("\n", 1)[0]
    except OSError:
        return None
    if not first.startswith("gitdir:"):
        return None
    gitdir = dotgit.parent / first.removeprefix("gitdir:").strip()  # an absolute path replaces the parent
    try:
        common = gitdir / (gitdir / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        common = gitdir  # a submodule: its git directory is its own
    return common.resolve()


def _repository_root(common: Path) -> Path:
    return common.parent if common.name == ".git" else common


def project_store_dir(common: Path) -> Path:
    """``<data dir>/projects/<name>-<hash>/store`` for the repository whose common git directory is ``common``:
    the name for people, the hash of the path so two checkouts named alike never share."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", _repository_root(common).name).strip("-.") or "repository"
    digest = hashlib.sha256(str(common).encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return data_dir() / "projects" / f"{name}-{digest}" / "store"


def _configured(settings: Settings) -> StoreChoice | None:
    user = memory_table(settings.user, settings.user_path)
    project = memory_table(settings.project, settings.project_path)
    if "allow_outside_project" in project:
        raise ConfigError(
            f"{settings.project_path}: allow_outside_project can only be set in the user config "
            f"({user_config_path()}), not by a project"
        )
    if "location" in project and settings.project_path is not None:
        return _project_location(project["location"], settings.project_path, bool(user.get("allow_outside_project")))
    if "location" in user:
        where = settings.user_path or user_config_path()
        return StoreChoice(str(_expand(user["location"], None, where)), f"[memory] location in {where}")
    return None


def _project_location(value: str, project_file: Path, allowed: bool) -> StoreChoice:
    path = _expand(value, project_file.parent, project_file)
    root = project_root(project_file.parent)
    if not allowed and not path.resolve().is_relative_to(root.resolve()):
        raise ConfigError(
            f"{project_file}: [memory] location {value!r} is outside the project {root}; a project file may "
            f"only keep memory inside the project. To allow it, set allow_outside_project = true in the "
            f"[memory] table of your user config {user_config_path()}"
        )
    return StoreChoice(str(path), f"[memory] location in {project_file}")


def _expand(value: str, base: Path | None, where: Path) -> Path:
    """An absolute or ``~/`` path; a relative one only where there is a ``base`` (the project file's folder)."""
    if value == "~" or value.startswith("~/"):
        return Path(value).expanduser()
    path = Path(value)
    if path.is_absolute():
        return path
    if base is None:
        raise ConfigError(f"{where}: [memory] location must be an absolute path or start with ~/, got {value!r}")
    return base / path
