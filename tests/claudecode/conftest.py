"""Fixtures: a fake home per test (`helpers.FakeHome`) and the machine most tests use (`helpers.Layout`)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from server.test_browser import browser  # noqa: F401 (a headless Chromium, for test_browser.py)

from .helpers import NOTE, TOKEN, WHEN, FakeHome, Layout


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHome]:
    made = FakeHome(tmp_path / "machine")
    made.claude.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(made.home))
    for name in ("CLAUDE_CONFIG_DIR", "XDG_CONFIG_HOME", "CLAUDE_CODE_REMOTE_MEMORY_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    yield made


@pytest.fixture
def layout(fake: FakeHome, monkeypatch: pytest.MonkeyPatch) -> Layout:
    app = fake.repo("app")
    feature = fake.worktree(app, "app-feature")
    blog, cloned, scratch = fake.repo("blog"), fake.repo("cloned"), fake.plain("scratch")
    app_memory = fake.memory(app)
    index = "# Memory\n" + "".join(f"- [note {i}](note_{i}.md) — what note {i} says\n" for i in range(1, 230))
    fake.write(app_memory, "MEMORY.md", index)
    fake.write(app_memory, "api_access.md", NOTE.format(
        name="API access", description="How to reach the API", type="reference", body=f"Use the token {TOKEN} for the staging API."
    ))  # fmt: skip
    fake.write(app_memory, "feedback_testing.md", NOTE.format(
        name="Testing", description="How tests are run", type="feedback", body="Run pytest with -x."
    ))  # fmt: skip
    fake.write(app_memory, "broken.md", "---\nname: Broken\ndescription: never closed\n\nbody\n")
    fake.settings(blog / ".claude" / "settings.local.json", {"autoMemoryDirectory": "~/notes/blog"})
    fake.trust(blog)
    blog_memory = fake.home / "notes" / "blog"
    fake.write(blog_memory, "MEMORY.md", "# Blog\n- [style](style.md) — house style\n")
    fake.write(blog_memory, "style.md", NOTE.format(
        name="Style", description="House style", type="user", body="British spelling, short sentences."
    ))  # fmt: skip
    fake.settings(cloned / ".claude" / "settings.json", {"autoMemoryDirectory": str(fake.root / "elsewhere")})
    cloned_memory = fake.memory(cloned)
    fake.write(cloned_memory, "MEMORY.md", "# Cloned\n")
    scratch_memory = fake.memory(scratch)
    fake.write(scratch_memory, "MEMORY.md", "# Scratch\n- prefers tabs\n")
    reviewer = fake.claude / "agent-memory" / "reviewer"
    fake.write(reviewer, "MEMORY.md", "# Reviewer\n- flag missing tests\n")
    planner_project = app / ".claude" / "agent-memory" / "planner"
    fake.write(planner_project, "MEMORY.md", "# Planner (project)\n- plans in milestones\n")
    planner_local = app / ".claude" / "agent-memory-local" / "planner"
    fake.write(planner_local, "MEMORY.md", "# Planner (local)\n- my own shortcuts\n")
    fake.write(
        app / ".claude" / "agents",
        "planner.md",
        "---\nname: planner\ndescription: Plans work\nmemory: project\n---\nPlan.\n",
    )
    # Claude Code's state file lists the projects it was used in (how memdir finds the custom locations).
    fake.trust(app)
    state = json.loads((fake.home / ".claude.json").read_text())
    for project in (feature, cloned, scratch):
        state["projects"].setdefault(str(project), {"allowedTools": []})
    (fake.home / ".claude.json").write_text(json.dumps(state), encoding="utf-8")
    for directory in (app_memory, blog_memory, cloned_memory, scratch_memory, reviewer, planner_project, planner_local):
        os.utime(directory, (WHEN, WHEN))
    monkeypatch.chdir(app)
    return Layout(fake, app, feature, blog, cloned, scratch, app_memory, blog_memory, cloned_memory,
                  scratch_memory, reviewer, planner_project, planner_local)  # fmt: skip
