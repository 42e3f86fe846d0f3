"""The memory-backed agent behind ``memdir run`` and ``memdir chat``.

`Agent` runs the tool loop over a provider (Anthropic's Messages API, or any OpenAI-compatible server) with
the memory tool backed by a memdir store; `memdir.agent.events` are what it reports while it runs. The
modules, each small: `loop` (the agent), `providers` (the model APIs), `tools` (the memory tool three ways,
extra tools), `backfill` (memory loaded at start), `context` and `compaction` (token counts, clearing,
compaction), `sessions` (transcripts, resume), `hooks`, `settings` (the ``[agent]`` settings), `instructions`
(MEMDIR.md and friends), `delegate` (sub-agents), `longrun` (work across sessions).
"""

from __future__ import annotations

from .events import (
    AgentResult,
    BackfillLoaded,
    Compacted,
    ContextCleared,
    Event,
    Finished,
    HookRan,
    InstructionsLoaded,
    Notice,
    TextDelta,
    ToolCalled,
    ToolFinished,
    Usage,
)
from .hooks import Hooks
from .loop import Agent, ContextReport
from .providers import Provider, Reply, Request
from .sessions import SessionInfo, list_sessions
from .settings import DEFAULT_MODEL, AgentSettings, load_agent_settings
from .tools import ToolSpec, extra_tool

__all__ = [
    "DEFAULT_MODEL",
    "Agent",
    "AgentResult",
    "AgentSettings",
    "BackfillLoaded",
    "Compacted",
    "ContextCleared",
    "ContextReport",
    "Event",
    "Finished",
    "HookRan",
    "Hooks",
    "InstructionsLoaded",
    "Notice",
    "Provider",
    "Reply",
    "Request",
    "SessionInfo",
    "TextDelta",
    "ToolCalled",
    "ToolFinished",
    "ToolSpec",
    "Usage",
    "extra_tool",
    "list_sessions",
    "load_agent_settings",
]
