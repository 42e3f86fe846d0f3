"""Work that spans many sessions (seed 004, "multi-session"): an initializer session sets up, in memory, a
progress log, a feature checklist and the start-up/test scripts; every later session starts by reading them
(the backfill always loads them) and is asked to update the progress log before it ends.

`initializer_prompt` is what ``memdir init`` asks the model; `templates` are the same three files made from the
command's options, used by ``memdir init --template`` and for any file the initializer did not write.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import MemdirError
from ..paths import MemoryPath
from . import prompts

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..tool import MemoryTool

__all__ = ["FEATURES", "PINNED", "PROGRESS", "SCRIPTS", "Plan", "ensure_files", "initializer_prompt", "templates"]

PROGRESS = MemoryPath(("progress.md",))
FEATURES = MemoryPath(("features.md",))
SCRIPTS = MemoryPath(("scripts.md",))
PINNED = (PROGRESS, FEATURES, SCRIPTS)
"""Loaded whole at the start of every session, whatever the backfill's budget: the state of the work."""


@dataclass(frozen=True)
class Plan:
    """What ``memdir init`` was told: the work, its features (if the user named them) and its scripts."""

    task: str
    features: Sequence[str] = ()
    start: str | None = None
    test: str | None = None


def initializer_prompt(plan: Plan) -> str:
    extra = []
    if plan.features:
        extra.append("Features the user named (keep each, split or add as the scope needs):")
        extra += [f"- {feature}" for feature in plan.features]
    if plan.start:
        extra.append(f"Start-up script: {plan.start}")
    if plan.test:
        extra.append(f"Test script: {plan.test}")
    return prompts.INITIALIZER.format(task=plan.task.strip(), extra="\n".join(extra))


def templates(plan: Plan) -> dict[MemoryPath, str]:
    """The three files, made from ``plan`` alone (no model involved)."""
    features = [f"- [ ] {feature}" for feature in plan.features] or ["- [ ] (split the work into features here)"]
    first = plan.features[0] if plan.features else "split the work into features in features.md"
    return {
        FEATURES: _note("Feature checklist", "The scope of the work, one feature per line", features, plan.task),
        PROGRESS: _note(
            "Progress log",
            "What was done and what is next, session by session",
            [
                "## Done",
                "- (nothing yet)",
                "",
                "## Next",
                f"- {first}",
                "",
                "## Rules",
                "- One feature at a time.",
                "- A feature is done only after it was verified end to end (run it, test it), never because the "
                "code is written; tick it in features.md then.",
                "- Update this log before the session ends.",
            ],
            plan.task,
        ),
        SCRIPTS: _note(
            "Start-up and test scripts",
            "How to start the work and how to test it",
            [
                f"- Start-up: {plan.start or '(none yet: write one and record it here)'}",
                f"- Tests: {plan.test or '(none yet: write one and record it here)'}",
            ],
            None,
        ),
    }


def _note(name: str, description: str, body: list[str], task: str | None) -> str:
    head = ["---", f"name: {name}", f"description: {description}", "type: project", "---", "", f"# {name}", ""]
    if task:
        head += [f"The work: {' '.join(task.split())}", ""]
    return "\n".join(head + body) + "\n"


def ensure_files(tool: MemoryTool, plan: Plan) -> list[MemoryPath]:
    """Create from `templates` each of the three files that does not exist yet; returns those created."""
    created = []
    for path, text in templates(plan).items():
        try:
            exists = tool.store.stat(path) is not None
        except MemdirError:
            exists = False
        if not exists and not tool.execute({"command": "create", "path": path.virtual, "file_text": text}).is_error:
            created.append(path)
    return created
