"""Context management, the part of `memdir.agent.Agent` that keeps a conversation within its token limits (in
``context="client"`` mode; the API does it itself in ``native`` mode): clearing old tool results, compacting the
older history into a summary (retrying with fewer kept turns when the summary is not enough), and the token report
``/context`` prints.

A mixin: the agent's loop calls `ContextManagement._manage_context` before each request; everything else it uses
(the settings, the messages, the token counter, the transcript) is the agent's own, declared below for the type
checker.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ContextOverflowError
from . import compaction, prompts
from .context import clear_tool_results, estimate_text, estimate_tools
from .events import Compacted, ContextCleared, Event, HookRan, Notice
from .transcript import blocks, text_of

if TYPE_CHECKING:
    from collections.abc import Generator, Iterator

    from .context import TokenCounter
    from .events import Usage
    from .hooks import HookOutcome, Hooks
    from .instructions import Instructions
    from .providers import Provider, Request
    from .settings import AgentSettings
    from .tools import ToolSpec
    from .transcript import Block, Message

__all__ = ["MAX_COMPACT_ATTEMPTS", "ContextManagement", "ContextReport", "hook_events"]

MAX_COMPACT_ATTEMPTS = 3


@dataclass(frozen=True)
class ContextReport:
    """Token use by category (estimates), and the API's exact total when it has a count endpoint."""

    system: int
    tools: int
    memory: int
    messages: int
    exact: int | None
    limit: int

    @property
    def total(self) -> int:
        return self.system + self.tools + self.memory + self.messages


class ContextManagement:
    """Clearing and compaction for `memdir.agent.Agent` (see the module docstring)."""

    if TYPE_CHECKING:  # the agent's own, used here
        settings: AgentSettings
        messages: list[Message]
        counter: TokenCounter
        provider: Provider
        model: str
        usage: Usage
        hooks: Hooks
        instructions: Instructions | None
        tools: list[ToolSpec]
        _by_name: dict[str, ToolSpec]

        @property
        def system(self) -> str: ...

        def request(self) -> Request: ...
        def repair(self, text: str = ...) -> None: ...
        def _record(self, record: dict[str, Any]) -> None: ...
        def _payload(self) -> dict[str, Any]: ...
        def _take_pending(self) -> list[Block]: ...
        def _load_context(self, *, reloaded: bool) -> Iterator[Event]: ...
        def _session_start(self, source: str) -> Iterator[Event]: ...

    def _manage_context(self) -> Iterator[Event]:
        if self.settings.context_mode != "client":
            return
        settings = self.settings
        tokens = self.counter.count(self.request(), near=min(settings.clear_at, settings.compact_at))
        if tokens >= settings.clear_at:
            tokens -= yield from self._clear()
        if tokens >= settings.compact_at:
            yield from self.compact(focus=settings.compact_instructions, trigger="auto")

    def _compact_instructions(self) -> str | None:
        """What steers a summary: the ``compact_instructions`` setting and the ``## Compact Instructions``
        section of the instructions file (as loaded at the start or after the last compaction)."""
        found = self.instructions.compact_instructions if self.instructions is not None else None
        parts = [p for p in (self.settings.compact_instructions, found) if p]
        return "\n\n".join(parts) or None

    def _clear(self) -> Generator[Event, None, int]:
        cleared = clear_tool_results(
            self.messages,
            keep=self.settings.keep_tool_uses,
            exclude=self.settings.exclude_tools,
            protected=self._protected,
        )
        if not cleared.ids or cleared.tokens < (self.settings.clear_at_least or 1):
            return 0
        self.messages = cleared.messages
        self._record({"type": "clear", "results": cleared.ids})
        yield ContextCleared(len(cleared.ids), cleared.tokens)
        return cleared.tokens

    def _protected(self, name: str, tool_input: dict[str, Any]) -> bool:
        spec = self._by_name.get(name)
        return spec is not None and spec.trust == "memory" and spec.writes(tool_input)

    def compact(self, focus: str | None = None, *, trigger: str = "manual") -> Generator[Event, None, None]:
        """Summarise the older history now (``/compact``), keeping the recent turns. With ``trigger="auto"``
        it retries with fewer kept turns until the context is under ``compact_at``, then gives up with
        `ContextOverflowError`."""
        self.repair()
        payload = {**self._payload(), "trigger": trigger, "custom_instructions": focus, "messages": len(self.messages)}
        outcomes = self.hooks.run("PreCompact", payload, match=trigger)
        yield from hook_events(outcomes)
        if any(o.blocked for o in outcomes):
            yield Notice("[context] compaction blocked by a PreCompact hook")
            return
        compacted = False
        for keep in _keep_plan(self.settings.keep_recent):
            if not (yield from self._compact_once(keep, focus, trigger)):
                continue  # too few turns to keep this many: try keeping fewer
            compacted = True
            if trigger != "auto" or self._under_compact_limit():
                return
        if trigger == "auto":
            raise ContextOverflowError(self._overflow_text())
        if not compacted:
            yield Notice("[context] nothing to compact yet")

    def _under_compact_limit(self) -> bool:
        limit = self.settings.compact_at
        return self.counter.count(self.request(), near=limit) < limit

    def _compact_once(self, keep: int, focus: str | None, trigger: str) -> Generator[Event, None, bool]:
        cut = compaction.plan_cut(self.messages, keep)
        if cut is None:
            return False
        head, tail = self.messages[:cut], self.messages[cut:]
        found = self.instructions.compact_instructions if self.instructions is not None else None
        reply = compaction.summarise(self.provider, self.model, head, focus, found)
        self.usage.add(reply.usage)
        self._record({"type": "usage", "usage": reply.usage.as_dict()})
        summary = text_of({"role": "assistant", "content": reply.content})
        yield from self._load_context(reloaded=True)
        yield from self._session_start("compact")
        first = compaction.summary_message(summary, compaction.memory_files_touched(head), self._take_pending())
        if tail and tail[0].get("role") == "user":
            first, tail = {"role": "user", "content": [*blocks(first), *blocks(tail[0])]}, tail[1:]
        self.messages = [first, *tail]
        self._record({"type": "reset", "reason": "compact", "messages": self.messages})
        yield Compacted(len(head), summary, trigger=trigger)
        payload = {**self._payload(), "trigger": trigger, "compact_summary": summary}
        yield from hook_events(self.hooks.run("PostCompact", payload, match=trigger))
        return True

    def _overflow_text(self) -> str:
        tokens = self.counter.estimate(self.request())
        largest = max((self.counter.message(m) for m in self.messages), default=0)
        return (
            f"the context is still about {tokens:,} tokens after {MAX_COMPACT_ATTEMPTS} compaction attempts "
            f"(compact_at is {self.settings.compact_at:,}): one message alone is about {largest:,} tokens; "
            "shorten it or raise --compact-at"
        )

    def context_report(self) -> ContextReport:
        """Token use by category: system prompt, tool definitions, memory loaded at start, the conversation."""
        native = self.provider.name == "anthropic"
        memory = sum(
            estimate_text(str(b.get("text", "")))
            for m in self.messages
            for b in blocks(m)
            if b.get("type") == "text" and str(b.get("text", "")).startswith(prompts.BACKFILL_OPEN[:20])
        )
        messages = self.counter.messages(self.messages) - memory
        exact = self.provider.count_tokens(self.request()) if self.messages else None
        return ContextReport(
            system=estimate_text(self.system),
            tools=estimate_tools(self.tools, native),
            memory=memory,
            messages=max(messages, 0),
            exact=exact,
            limit=self.settings.compact_at,
        )


def hook_events(outcomes: list[HookOutcome]) -> Iterator[Event]:
    """Each hook's outcome as the event the agent yields."""
    for outcome in outcomes:
        yield HookRan(outcome.event, outcome.name, outcome.ok, outcome.detail)


def _keep_plan(keep_recent: int) -> list[int]:
    """Fewer kept units on each attempt: e.g. 4, 2, 1."""
    plan = [max(keep_recent, 1), max(keep_recent // 2, 1), 1]
    return list(dict.fromkeys(plan))[:MAX_COMPACT_ATTEMPTS]
