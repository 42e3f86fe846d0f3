"""A fake home with Claude Code's layout, made by each test: nothing here reads the real ~/.claude.

`FakeHome` builds what Claude Code leaves on disk: git repositories (made with git itself, worktrees included),
``~/.claude/projects/<key>/memory/`` directories, settings files, the trust decisions in ``~/.claude.json``,
sub-agent memories and their definitions. The ``layout`` fixture is the machine most tests use:

- ``app``: a git repository with a worktree ``app-feature`` (both share one memory), a MEMORY.md of 230 lines,
  a topic file holding a GitHub token, a note whose frontmatter never closes; the sub-agent ``planner`` with a
  ``project`` memory (its definition says so) and a ``local`` one;
- ``blog``: a repository whose trusted ``.claude/settings.local.json`` moves its memory to ``~/notes/blog``;
- ``cloned``: a repository whose untrusted ``.claude/settings.json`` tries to move it elsewhere (ignored);
- ``scratch``: a plain directory, not a repository;
- the user-scope sub-agent ``reviewer``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

TOKEN = "ghp_" + "1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R"
NOTE = "---\nname: {name}\ndescription: {description}\ntype: {type}\n---\n\n{body}\n"
WHEN = 1_780_000_000  # 2026-05-28T20:26:40Z: every file the layout writes gets this mtime, for exact output


def key(path: Path) -> str:
    """Claude Code's key for a short ASCII path (each non-alphanumeric character becomes '-'), written out
    independently of memdir's implementation."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(path))


def git(*args: str, cwd: Path) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}  # fmt: skip
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


@dataclass
class FakeHome:
    root: Path

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def claude(self) -> Path:
        return self.home / ".claude"

    def repo(self, name: str) -> Path:
        path = (self.home / "code" / name).resolve()
        path.mkdir(parents=True)
        git("init", "-q", "-b", "main", cwd=path)
        git("commit", "-q", "--allow-empty", "-m", "start", cwd=path)
        return path

    def worktree(self, repo: Path, name: str) -> Path:
        path = repo.parent / name
        git("worktree", "add", "-q", str(path), "-b", name, cwd=repo)
        return path

    def plain(self, name: str) -> Path:
        path = (self.home / "code" / name).resolve()
        path.mkdir(parents=True)
        return path

    def memory(self, project: Path) -> Path:
        """The project's default memory directory, made as Claude Code makes it."""
        path = self.claude / "projects" / key(project) / "memory"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def write(self, directory: Path, name: str, text: str) -> Path:
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        os.utime(path, (WHEN, WHEN))
        return path

    def settings(self, path: Path, data: dict[str, object]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")

    def trust(self, *projects: Path) -> None:
        state = self.home / ".claude.json"
        data = json.loads(state.read_text()) if state.exists() else {"projects": {}}
        for project in projects:
            data["projects"][str(project)] = {"hasTrustDialogAccepted": True, "allowedTools": []}
        state.write_text(json.dumps(data), encoding="utf-8")

    def listing(self) -> dict[str, tuple[int, int, int]]:
        """Every entry under Claude Code's directories and the projects (mode, size, mtime in ns): compared
        before and after a command to show it wrote nothing there."""
        found = {}
        for top in (self.home,):
            for dirpath, dirnames, filenames in os.walk(top):
                for name in dirnames + filenames:
                    path = os.path.join(dirpath, name)
                    st = os.lstat(path)
                    found[path] = (st.st_mode, st.st_size, st.st_mtime_ns)
                found[dirpath] = (os.lstat(dirpath).st_mode, 0, os.lstat(dirpath).st_mtime_ns)
        return found


@dataclass
class Layout:
    fake: FakeHome
    app: Path
    feature: Path
    blog: Path
    cloned: Path
    scratch: Path
    app_memory: Path
    blog_memory: Path
    cloned_memory: Path
    scratch_memory: Path
    reviewer: Path
    planner_project: Path
    planner_local: Path
