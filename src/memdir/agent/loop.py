"""The agent: a tool loop over any `Provider`, with memory backfill, sessions and hooks. Its parts are mixins, each
in its own module: the session (opening or resuming it, what starts it, the transcript) in
`memdir.agent._session`, running the tools a reply asks for in `memdir.agent._toolcalls`, and context management
(clearing and compaction) in `memdir.agent.managing`; this module holds the loop, the requests and the setup.

    >>> agent = memdir.Agent(store=memdir.open_store("~/memory"), model="claude-sonnet-5-5")
    >>> agent.run("Remember that I prefer email.").answer
    >>> for event in agent.stream("What do I prefer?"):   # typed events, see memdir.agent.events
    ...     print(event.progress or "")

One `run` (or one pass through `stream`) is one user turn: the prompt goes in, then the loop sends requests and
runs the tools the model asks for until it answers without a tool call, or `max_turns` requests were made
(`MaxTurnsError`). Every message is appended to the session's transcript as it happens (`memdir.agent.sessions`),
so a killed process can be resumed exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from ..automemory import AutoMemoryConfig, load_auto_memory
from ..errors import ConfigError, MaxTurnsError, MemdirError
from ..project import project_root as find_root
from ..tool import ToolResult
from . import prompts
from ._session import SessionKeeping
from ._toolcalls import ToolCalls
from .context import CONTEXT_BETAS, TokenCounter, native_edits
from .delegate import DELEGATE, delegate_tool
from .events import AgentResult, Compacted, ContextCleared, Event, Finished, TextDelta, Usage
from .hooks import Hooks, HookSpec, hooks_from
from .longrun import PROGRESS
from .managing import ContextManagement, ContextReport, hook_events
from .providers import Provider, Reply, Request, open_provider
from .sessions import SessionLog, sessions_dir, store_key, store_label
from .settings import AgentSettings
from .tools import MemoryAccess, ToolSpec, check_unique, extra_tool, memory_tools, search_tools
from .transcript import Block, Message, text_block, text_of, tool_uses, user

if TYPE_CHECKING:
    from pathlib import Path

    from ..store import Store
    from .backfill import Backfill
    from .instructions import Instructions

__all__ = ["Agent", "ContextReport"]

ExtraTool = ToolSpec | tuple[Mapping[str, Any], Mapping[str, Any] | None, Callable[[dict[str, Any]], ToolResult]]


class Agent(SessionKeeping, ToolCalls, ContextManagement):
    """A memory-backed agent over ``store``. Options are `AgentSettings` fields (``max_turns=10``,
    ``context="client"``...), applied over ``settings`` (defaults when None; the CLI passes the merged
    settings files). ``resume`` continues a session (an id, a prefix of one, or "" for the latest);
    ``sessions=False`` keeps no transcript on disk.

    ``auto_memory`` (a bool or a `memdir.automemory.AutoMemoryConfig`; default: the ``[memory]`` settings and
    ``MEMDIR_DISABLE_AUTO_MEMORY``) switches auto memory: the tool's index and frontmatter upkeep and the
    prompt guidance. ``project_root`` is where the instructions file is looked for (default: the git worktree
    of the current directory, else the directory). ``memory=False`` offers no memory tool and ``subagent``
    (a name) marks a sub-agent, which gets no auto-memory guidance and no ``delegate`` tool: both are how
    `memdir.agent.delegate` builds sub-agents. ``close_provider=True`` makes `close` close a ``provider`` passed in
    (one the agent opened itself it always closes)."""

    def __init__(
        self,
        store: Store,
        model: str | None = None,
        *,
        settings: AgentSettings | None = None,
        provider: Provider | None = None,
        extra_tools: Sequence[ExtraTool] = (),
        hooks: Hooks | Mapping[str, Sequence[HookSpec]] | None = None,
        resume: str | None = None,
        sessions: Path | Literal[False] | None = None,
        store_url: str | None = None,
        auto_memory: bool | AutoMemoryConfig | None = None,
        project_root: Path | None = None,
        memory: bool = True,
        subagent: str | None = None,
        close_provider: bool | None = None,
        **options: Any,
    ) -> None:
        self.settings = (settings or AgentSettings()).replace(model=model, **options)
        if provider is not None:  # a provider given whole decides which API the settings describe
            self.settings = self.settings.replace(provider=provider.name)
        self.store = store
        self.store_url = store_url
        # Which store this is, one spelling per store: sessions belong to it (memdir.agent.sessions).
        self.store_key = store_key(store_url) if store_url else store_label(store)
        self.provider = provider or open_provider(self.settings)
        # One we opened, we close; one passed in belongs to the caller unless it says otherwise.
        self._owns_provider = provider is None if close_provider is None else close_provider
        self.model = self.settings.model_name
        self._check_mode()
        self.hooks = hooks_from(hooks, self.settings)
        self._sessions_dir = None if sessions is False else (sessions or sessions_dir())
        self._log: SessionLog | None = None
        self.messages: list[Message] = []
        self.usage = Usage()
        self.turns = 0
        self.backfill: Backfill | None = None
        self._pending: list[Block] = []
        self._tainted = False
        self.auto_memory = _auto_memory(auto_memory)
        self.project_root = project_root or find_root()
        self.subagent = subagent
        self._offers_memory = memory
        self.instructions: Instructions | None = None
        self.side_events: list[Event] = []  # what a tool had to say while it ran (a sub-agent's progress)
        self._touched: dict[str, None] = {}  # memory files this session used, least recent first
        self._progress_updated = False
        self.peak_prompt_tokens = 0
        self._open_session(resume)
        self.memory = MemoryAccess(store, self.session_id, auto_memory=self.auto_memory)
        self.tools = self._tools(extra_tools)
        self.counter = TokenCounter(self.provider)

    # -- setup ------------------------------------------------------------------------------------------------

    def _check_mode(self) -> None:
        if self.settings.context_mode == "native" and self.provider.name != "anthropic":
            raise ConfigError("--context native needs the Anthropic provider; use --context client or off")

    def _tools(self, extra: Sequence[ExtraTool]) -> list[ToolSpec]:
        tools = memory_tools(self.memory, self.settings.tools) if self._offers_memory else []
        if self.settings.search:
            tools += search_tools(self.memory)
        tools += [item if isinstance(item, ToolSpec) else extra_tool(*item) for item in extra]
        self.tools = tools
        if self.settings.delegate and self.subagent is None:
            tools.append(delegate_tool(self))  # it hands sub-agents the tools above
        check_unique(tools)
        self._by_name = {tool.name: tool for tool in tools}
        return tools

    @property
    def system(self) -> str:
        """The system prompt sent: the configured one, plus the memory protocol where the API does not add it,
        plus the auto-memory guidance when auto memory is on."""
        parts = [self.settings.system or prompts.DEFAULT_SYSTEM]
        if self._offers_memory:
            if self.settings.tools == "simple":
                parts.append(prompts.SIMPLE_GUIDANCE)
            elif not self.provider.native_memory:
                parts.append(prompts.MEMORY_GUIDANCE)
            if self.auto_memory.enabled and self.subagent is None:  # a sub-agent's own is in its system prompt
                parts.append(prompts.AUTO_MEMORY_GUIDANCE)
        return "\n\n".join(parts)

    # -- the public loop ----------------------------------------------------------------------------------------

    def run(self, prompt: str) -> AgentResult:
        """Run one user turn to its final answer."""
        for event in self.stream(prompt, live=bool(self.settings.stream)):
            if isinstance(event, Finished):
                return event.result
        raise AssertionError("the loop ended without a result")  # stream always finishes or raises

    def stream(self, prompt: str, *, live: bool | None = None) -> Generator[Event, None, None]:
        """Run one user turn, yielding events as they happen; the last is `Finished`. ``live`` streams the
        model's replies (`TextDelta` events); default: the ``stream`` setting, else True."""
        live = (self.settings.stream is not False) if live is None else live
        self._tainted = self._progress_updated = False
        yield from self._begin()
        self._add_prompt(prompt)
        yield from self._loop(live)

    def _loop(self, live: bool) -> Iterator[Event]:
        turns, usage, stop_hooked = 0, Usage(), False
        while True:
            if turns >= self.settings.max_turns:
                raise MaxTurnsError(self._max_turns_text(turns), turns=turns)
            yield from self._manage_context()
            reply = yield from self._request(live)
            usage.add(reply.usage)
            turns += reply.stop_reason != "compaction"
            if tool_uses(self.messages[-1]):
                yield from self._run_tools(turns)
            elif reply.stop_reason == "compaction" and self._pending:
                # The API paused after compacting: what must survive the summary goes in before it goes on.
                self._append(user(*self._take_pending()))
            elif reply.stop_reason not in ("pause_turn", "compaction"):
                answer = text_of(self.messages[-1])
                if not stop_hooked and (yield from self._stop_blocked(answer, turns)):
                    stop_hooked = True
                    continue
                result = AgentResult(
                    answer, turns, usage, self.session_id, reply.stop_reason, reply.model or self.model
                )
                yield Finished(result)
                return

    def _max_turns_text(self, turns: int) -> str:
        return (
            f"stopped after {turns} turn{'s' if turns != 1 else ''} without a final answer "
            f"(max_turns is {self.settings.max_turns}); "
            f"continue with --resume {self.session_id}"
        )

    # -- one request ------------------------------------------------------------------------------------------

    def request(self) -> Request:
        """The request the next turn would send."""
        native = self.settings.context_mode == "native"
        return Request(
            model=self.model,
            system=self.system,
            messages=list(self.messages),
            tools=self.tools,
            max_tokens=self.settings.max_tokens,
            context_management=native_edits(self.settings, self._compact_instructions()) if native else None,
            betas=CONTEXT_BETAS if native else (),
        )

    def _request(self, live: bool) -> Generator[Event, None, Reply]:
        request = self.request()
        reply: Reply | None = None
        for item in self.provider.send(request, stream=live):
            if isinstance(item, TextDelta):
                yield item
            else:
                reply = item
        assert reply is not None  # a provider always ends with its reply
        self.counter.observe(request.messages, reply.prompt_tokens)
        self.peak_prompt_tokens = max(self.peak_prompt_tokens, reply.prompt_tokens)
        self.usage.add(reply.usage)
        self.turns += reply.stop_reason != "compaction"
        message = {"role": "assistant", "content": reply.content}
        # A reply asking for tools is flushed with their results, a moment later: one fsync per turn.
        self._append(message, sync=not tool_uses(message), usage=reply.usage.as_dict())
        yield from self._native_edits(reply)
        return reply

    def _native_edits(self, reply: Reply) -> Iterator[Event]:
        for edit in reply.applied_edits:
            if edit.get("type") == "clear_tool_uses_20250919":
                yield ContextCleared(
                    int(edit.get("cleared_tool_uses", 0)), int(edit.get("cleared_input_tokens", 0)), True
                )
        for block in reply.content:
            if block.get("type") == "compaction" and block.get("content"):
                summary = str(block["content"])
                yield Compacted(0, summary, native=True)
                yield from hook_events(
                    self.hooks.run(
                        "PostCompact", {**self._payload(), "trigger": "auto", "compact_summary": summary}, match="auto"
                    )
                )
                yield from self._load_context(reloaded=True)
                yield from self._session_start("compact")

    def _stop_blocked(self, answer: str, turns: int) -> Generator[Event, None, bool]:
        payload = {**self._payload(), "answer": answer, "turns": turns, "stop_hook_active": False}
        outcomes = self.hooks.run("Stop", payload)
        yield from hook_events(outcomes)
        reasons = [o.reason for o in outcomes if o.blocked]
        if not reasons:
            return False
        self._append(user(text_block(f"[Stop hook] {' '.join(reasons)}")))
        return True

    # -- chat commands -------------------------------------------------------------------------------------

    def clear(self) -> None:
        """Start a new conversation (a new session; the old one stays on disk and can be resumed)."""
        self._close_log()
        self.messages, self._pending, self.backfill = [], [], None
        self.usage, self.turns, self._touched = Usage(), 0, {}
        self._open_session(None)
        self._source = "clear"
        self._renew_memory()

    def resume(self, ref: str = "") -> None:
        """Switch to another session (an id, a prefix, or "" for the latest) and continue it."""
        self._find_session(ref)  # an unknown session, or another store's, fails before anything changes
        self._close_log()
        self.messages, self._pending, self._touched = [], [], {}
        self._open_session(ref)
        self._renew_memory()

    def _renew_memory(self) -> None:
        """The memory access, its tools and the token count for the session just opened (`clear`, `resume`)."""
        self.memory.close()
        self.memory = MemoryAccess(self.store, self.session_id, auto_memory=self.auto_memory)
        self.tools = self._tools([t for t in self.tools if t.name not in self._memory_tool_names()])
        self.counter = TokenCounter(self.provider)

    def _memory_tool_names(self) -> set[str]:
        """The tools `_tools` makes itself (rebuilt for a new session), as opposed to the caller's extras."""
        return {t.name for t in self.tools if t.trust == "memory" or t.name in ("memory_search", DELEGATE)}

    def wrap_up(self) -> Iterator[Event]:
        """Before a session of long-running work ends (``memdir run`` after its task, ``memdir chat`` at exit):
        when the memory holds a progress log this session has not updated since its last prompt, ask the model
        to update it — one more turn, whose events this yields. Nothing happens otherwise."""
        if not self.settings.wrap_up or self.subagent is not None or not self._started or self._progress_updated:
            return
        try:
            if self.store.stat(PROGRESS) is None:
                return
        except MemdirError:
            return
        yield from self.stream(prompts.WRAP_UP, live=False)

    def close(self) -> None:
        """Close the transcript file, and the provider when the agent opened it (a store, or a provider passed
        in, belongs to the caller)."""
        self._close_log()
        self.memory.close()
        if self._owns_provider:
            self.provider.close()


# -- helpers -------------------------------------------------------------------------------------------------


def _auto_memory(option: bool | AutoMemoryConfig | None) -> AutoMemoryConfig:
    if option is None:
        return load_auto_memory()
    if isinstance(option, bool):
        return AutoMemoryConfig(enabled=option)
    return option
