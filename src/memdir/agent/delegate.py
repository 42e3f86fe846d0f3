"""Sub-agents: the ``delegate`` tool (seed 004, "sub-agent architectures").

``{"task": "...", "agent": "optional-name"}`` runs a sub-agent — a `memdir.agent.Agent` of its own, in a fresh
context, with its own tool loop (and its own compaction) — and gives the caller only its final answer, cut to
``subagent_answer_tokens`` (2,000), and one metadata line::

    [sub-agent general-purpose: read 6,100 tokens, returned 420 tokens, 3.2 s]

"read" is the largest context the sub-agent worked with (its biggest request), "returned" the answer's size. The
sub-agent's tool calls and results stay in its own transcript (``<sessions>/subagents/``), never in the caller's.

Sub-agents are named in the settings (``[agent.subagents.NAME]``: ``description``, ``system``, ``tools``,
``model``, ``max_turns``, ``memory``); without a name the task goes to ``general-purpose``, which has the caller's
tools but ``delegate``. The caller's memory is never loaded into a sub-agent (it can still read it with the memory
tool when ``memory`` is among its tools). ``memory = "user" | "project" | "local"`` gives a sub-agent its own
memory store, loaded at its start like the caller's: ``<data dir>/agent-memory/NAME`` (``user``),
``<project>/.agent-memory/NAME`` (``project``: meant for version control; a ``.gitignore`` there keeps the
store's ``.memdir/`` history database out) or ``<project>/.agent-memory-local/NAME`` (``local``: a ``.gitignore``
holding ``*`` keeps the whole folder out of git). Own memory is part of auto memory: with auto memory off, a
sub-agent has none.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..config import data_dir
from ..errors import ConfigError, MemdirError
from ..store import open_store
from ..tool import ToolResult
from . import prompts
from .context import estimate_text
from .events import Event, Finished, Notice
from .tools import ToolSpec

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from ..store import Store
    from .loop import Agent

__all__ = ["DEFAULT_AGENT", "Subagent", "delegate_tool", "memory_location", "subagents"]

DEFAULT_AGENT = "general-purpose"
DELEGATE = "delegate"
MEMORY_TOOLS = frozenset({"memory", "read_memory", "write_memory", "forget_memory"})


@dataclass(frozen=True)
class Subagent:
    """One sub-agent definition (``[agent.subagents.NAME]``)."""

    name: str
    description: str = ""
    system: str | None = None
    tools: tuple[str, ...] | None = None  # None: the caller's tools (but delegate)
    model: str | None = None
    memory: str | None = None  # None, "user", "project" or "local"
    max_turns: int | None = None


def subagents(table: Mapping[str, Mapping[str, Any]]) -> dict[str, Subagent]:
    """The named sub-agents of the settings, plus ``general-purpose`` unless the settings redefine it."""
    agents = {DEFAULT_AGENT: Subagent(DEFAULT_AGENT, "any self-contained task (the default)")}
    for name, entry in table.items():
        tools = entry.get("tools")
        agents[name] = Subagent(
            name,
            str(entry.get("description", "")),
            entry.get("system"),
            tuple(tools) if tools is not None else None,
            entry.get("model"),
            entry.get("memory"),
            entry.get("max_turns"),
        )
    return agents


def memory_location(scope: str, name: str, project: Path) -> Path:
    """Where a sub-agent's own memory lives (see the module docstring); makes sure git ignores what it must."""
    if scope == "user":
        return data_dir() / "agent-memory" / name
    folder = project / (".agent-memory" if scope == "project" else ".agent-memory-local")
    # `project`: the notes are for version control, the store's history database is not. `local`: nothing is.
    _ignore(folder, ".memdir/\n" if scope == "project" else "*\n")
    return folder / name


def _ignore(folder: Path, patterns: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    marker = folder / ".gitignore"
    if not marker.exists():
        marker.write_text(f"# Written by memdir: sub-agent memory (docs/agent.md, Sub-agents).\n{patterns}")


def delegate_tool(parent: Agent) -> ToolSpec:
    """The ``delegate`` tool of ``parent``; its results are untrusted when a sub-agent can use an untrusted tool."""
    delegation = _Delegation(parent)
    names = "\n".join(f"- {a.name}: {a.description}" for a in delegation.agents.values() if a.description)
    description = prompts.DELEGATE_DESCRIPTION.format(tokens=parent.settings.subagent_answer_tokens)
    untrusted = any(t.trust == "untrusted" for t in parent.tools if t.name != DELEGATE)
    return ToolSpec(
        name=DELEGATE,
        description=f"{description}\nSub-agents:\n{names}",
        parameters={
            "type": "object",
            "properties": {
                "task": {"type": "string", "description": "The whole task, with everything the sub-agent needs."},
                "agent": {"type": "string", "enum": sorted(delegation.agents), "description": "Which sub-agent."},
            },
            "required": ["task"],
        },
        execute=delegation.run,
        trust="untrusted" if untrusted else "trusted",
    )


class _Delegation:
    """Runs sub-agents for one parent agent."""

    def __init__(self, parent: Agent) -> None:
        self.parent = parent
        self.agents = subagents(parent.settings.subagents)

    def run(self, args: dict[str, Any]) -> ToolResult:
        task, name = args.get("task"), args.get("agent") or DEFAULT_AGENT
        if not isinstance(task, str) or not task.strip():
            return ToolResult("Error: Parameter `task` of `delegate` must be a non-empty string.", is_error=True)
        spec = self.agents.get(name) if isinstance(name, str) else None
        if spec is None:
            known = ", ".join(sorted(self.agents))
            text = f"Error: There is no sub-agent named `{str(name)[:100]}`. Use one of: {known}."
            return ToolResult(text, is_error=True)
        started = time.monotonic()
        try:
            child, own = self._child(spec)
        except ConfigError as exc:
            return ToolResult(f"Error: The sub-agent {spec.name} cannot start: {exc}", is_error=True)
        try:
            answer, turns = self._drive(child, spec.name, task)
            read = child.peak_prompt_tokens
        except MemdirError as exc:
            return ToolResult(f"Error: The sub-agent {spec.name} stopped without an answer: {exc}", is_error=True)
        finally:
            child.close()
            if own is not None:
                own.close()
        limit = self.parent.settings.subagent_answer_tokens
        bounded = bound(answer, limit)
        meta = (
            f"[sub-agent {spec.name}: read {read:,} tokens, returned {estimate_text(bounded):,} tokens, "
            f"{time.monotonic() - started:.1f} s, {turns} turn{'s' if turns != 1 else ''}]"
        )
        return ToolResult(f"{bounded}\n\n{meta}")

    def _drive(self, child: Agent, name: str, task: str) -> tuple[str, int]:
        for event in child.stream(task, live=False):
            if isinstance(event, Finished):
                return event.result.answer, event.result.turns
            self._forward(name, event)
        raise AssertionError("a stream always finishes or raises")

    def _forward(self, name: str, event: Event) -> None:
        """The sub-agent's progress, shown by the caller's stream (never put into the caller's context)."""
        line = event.progress
        if line:
            self.parent.side_events.append(Notice(f"[sub-agent {name}] {line}"))

    def _child(self, spec: Subagent) -> tuple[Agent, Store | None]:
        parent = self.parent
        own = self._own_memory(spec)
        names = set(spec.tools) if spec.tools is not None else {t.name for t in parent.tools} - {DELEGATE}
        unknown = names - {t.name for t in parent.tools} - MEMORY_TOOLS
        if unknown:
            raise ConfigError(f"it names tools this agent does not have: {', '.join(sorted(unknown))}")
        extra = [t for t in parent.tools if t.name in names and t.trust != "memory" and t.name != DELEGATE]
        settings = parent.settings.replace(
            model=spec.model,
            system=self._system(spec, own is not None),
            max_turns=spec.max_turns,
            backfill=own is not None,
            delegate=False,  # one level: a sub-agent does not delegate further
            wrap_up=False,
            stream=False,
            hooks={},  # the caller's hooks are about the caller's session
            subagents={},
        )
        child = type(parent)(  # the parent's own class: this module, which the loop imports, needs no import of it
            own or parent.store,
            provider=parent.provider,
            settings=settings,
            extra_tools=extra,
            sessions=parent.sessions_dir / "subagents" if parent.sessions_dir is not None else False,
            store_url=None if own is not None else parent.store_url,
            auto_memory=parent.auto_memory,
            project_root=parent.project_root,
            memory=own is not None or bool(names & MEMORY_TOOLS),
            subagent=spec.name,
        )
        return child, own

    def _own_memory(self, spec: Subagent) -> Store | None:
        if spec.memory is None or not self.parent.auto_memory.enabled:
            return None
        return open_store(os.fspath(memory_location(spec.memory, spec.name, self.parent.project_root)))

    def _system(self, spec: Subagent, own_memory: bool) -> str:
        parts = [prompts.SUBAGENT_SYSTEM.format(tokens=self.parent.settings.subagent_answer_tokens)]
        if spec.system:
            parts.append(spec.system)
        if own_memory:
            parts += [prompts.SUBAGENT_MEMORY.format(name=spec.name, scope=spec.memory), prompts.AUTO_MEMORY_GUIDANCE]
        return "\n\n".join(parts)


def bound(text: str, tokens: int) -> str:
    """``text`` cut to about ``tokens`` tokens (on a line boundary when one is near), saying so."""
    if estimate_text(text) <= tokens:
        return text
    cut = text.encode("utf-8")[: tokens * 4].decode("utf-8", "ignore")
    newline = cut.rfind("\n")
    if newline > len(cut) * 0.8:
        cut = cut[:newline]
    return f"{cut.rstrip()}\n[The sub-agent's answer was cut at {tokens:,} tokens.]"
