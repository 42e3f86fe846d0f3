"""The agent: a tool loop over any `Provider`, with memory backfill, sessions and hooks; context management (clearing
and compaction) is its mixin in `memdir.agent.managing`.

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

import datetime as dt
import logging
import os
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from ..automemory import AutoMemoryConfig, load_auto_memory
from ..errors import ConfigError, MaxTurnsError, MemdirError
from ..project import project_root as find_root
from ..store import Origin, Store
from ..tool import ToolResult
from . import prompts
from .backfill import Backfill, load_backfill
from .context import CONTEXT_BETAS, TokenCounter, native_edits
from .delegate import DELEGATE, delegate_tool
from .events import (
    AgentResult,
    BackfillLoaded,
    Compacted,
    ContextCleared,
    Event,
    Finished,
    InstructionsLoaded,
    TextDelta,
    ToolCalled,
    ToolFinished,
    Usage,
)
from .hooks import Hooks, HookSpec, hooks_from
from .instructions import Instructions, load_instructions
from .longrun import PROGRESS
from .managing import ContextManagement, ContextReport, hook_events
from .providers import Provider, Reply, Request, open_provider
from .sessions import (
    SessionLog,
    find_session,
    new_session_id,
    secret_redaction,
    sessions_dir,
    store_key,
    store_label,
)
from .settings import AgentSettings
from .tools import MemoryAccess, ToolSpec, check_unique, extra_tool, memory_paths_used, memory_tools, search_tools
from .transcript import (
    INTERRUPTED,
    Block,
    Message,
    answer_pending,
    result_block,
    text_block,
    text_of,
    tool_uses,
    user,
)

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["Agent", "ContextReport"]

log = logging.getLogger("memdir.agent")

CANCELLED = "The user cancelled this tool call before it finished; it may or may not have taken effect."
ExtraTool = ToolSpec | tuple[Mapping[str, Any], Mapping[str, Any] | None, Callable[[dict[str, Any]], ToolResult]]


class Agent(ContextManagement):
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
            tools += search_tools(self.store)
        tools += [item if isinstance(item, ToolSpec) else extra_tool(*item) for item in extra]
        self.tools = tools
        if self.settings.delegate and self.subagent is None:
            tools.append(delegate_tool(self))  # it hands sub-agents the tools above
        check_unique(tools)
        self._by_name = {tool.name: tool for tool in tools}
        return tools

    @property
    def sessions_dir(self) -> Path | None:
        return self._sessions_dir

    def _open_session(self, resume: str | None) -> None:
        self._started = False
        if resume is None:
            self.session_id = new_session_id()
            self._source = "startup"
            return
        self._log, state = SessionLog.resume(self._find_session(resume), redact=self.kept_on_disk())
        self.session_id, self.messages, self.turns, self.usage = state.id, state.messages, state.turns, state.usage
        self._source = "resume"

    def _find_session(self, ref: str) -> Path:
        """A session of this store and namespace (the latest one for "")."""
        return find_session(ref, self._sessions_dir or None, store=self.store_key, namespace=self.store.namespace)

    def _header(self) -> dict[str, Any]:
        return {
            "id": self.session_id,
            "started": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "provider": self.provider.name,
            "model": self.model,
            "store": self.store_key,
            "namespace": self.store.namespace,
            "cwd": os.getcwd(),
        }

    def kept_on_disk(self) -> Callable[[str], str] | None:
        """What a file of this session (its transcript, the chat's input history) keeps of a text: secrets redacted
        as this namespace's write policy redacts them in memory (`memdir.agent.sessions.secret_redaction`)."""
        return secret_redaction(self.store.namespace)

    @property
    def transcript_path(self) -> Path | None:
        return self._log.path if self._log is not None else None

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

    # -- session start --------------------------------------------------------------------------------------

    def _begin(self) -> Iterator[Event]:
        """First prompt of this process: the SessionStart hooks, and for a new session the memory backfill."""
        if self._started:
            return
        self._started = True
        if self._log is None and self._sessions_dir is not None:
            self._log = SessionLog.create(self._header(), self._sessions_dir, redact=self.kept_on_disk())
        if self._source == "resume":
            self.repair(INTERRUPTED)  # a killed process can leave the last tool calls unanswered
            if self.settings.instructions:  # the transcript holds the text; compaction still needs its section
                self.instructions = load_instructions(self.project_root)
        else:
            yield from self._load_context(reloaded=False)
        yield from self._session_start(self._source)

    def _load_context(self, *, reloaded: bool) -> Iterator[Event]:
        """The instructions file and the memory backfill, first in the next user message: at the start of a
        session, and again (read from disk, the files this session used last) after a compaction."""
        blocks: list[Block] = []
        if self.settings.instructions:
            self.instructions = load_instructions(self.project_root)
            if self.instructions is not None:
                for name, tokens in self.instructions.items:
                    yield InstructionsLoaded(name, tokens, reloaded)
                blocks += self.instructions.blocks
        if self.settings.backfill:
            files = list(reversed(self._touched)) if reloaded else None
            self.backfill = load_backfill(
                self.memory.tool, self.settings.backfill_tokens, files=files, index=self.auto_memory.enabled
            )
            if self.backfill is not None:
                for name, tokens in self.backfill.items:
                    yield BackfillLoaded(name, tokens, reloaded)
                blocks.append(self.backfill.block)
        self._pending[0:0] = blocks

    def _session_start(self, source: str) -> Iterator[Event]:
        outcomes = self.hooks.run("SessionStart", {**self._payload(), "source": source}, match=source)
        yield from hook_events(outcomes)
        for outcome in outcomes:
            if outcome.ok and outcome.output.strip():
                text = prompts.HOOK_CONTEXT.format(event="SessionStart", source=source, text=outcome.output.strip())
                self._pending.append(text_block(text))

    def _payload(self) -> dict[str, Any]:
        path = self.transcript_path
        return {"session_id": self.session_id, "transcript_path": str(path) if path else None, "cwd": os.getcwd()}

    # -- transcript -----------------------------------------------------------------------------------------

    def _append(self, message: Message, *, sync: bool = True, **extra: Any) -> None:
        self.messages.append(message)
        if self._log is not None:
            self._log.append({"type": "message", "message": message, **extra}, sync=sync)

    def _record(self, record: dict[str, Any]) -> None:
        if self._log is not None:
            self._log.append(record)

    def _add_prompt(self, prompt: str) -> None:
        self.repair()
        self._append(user(*self._take_pending(), text_block(prompt)), prompt=prompt)

    def _take_pending(self) -> list[Block]:
        taken, self._pending = self._pending, []
        return taken

    def repair(self, text: str = CANCELLED) -> None:
        """Answer tool calls left without results (a cancelled turn, a killed process), so the transcript is
        a valid request again."""
        answer = answer_pending(self.messages, text)
        if answer is not None:
            self._append(answer)

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

    # -- tools ----------------------------------------------------------------------------------------------

    def _run_tools(self, turn: int) -> Iterator[Event]:
        results = []
        for call in tool_uses(self.messages[-1]):
            name, tool_input = str(call.get("name")), call.get("input") or {}
            yield ToolCalled(turn, name, tool_input)
            result = self._execute(name, tool_input)
            yield from self._take_side_events()
            yield ToolFinished(turn, name, result.is_error, result.text)
            results.append(result_block(str(call.get("id")), result))
        self._append(user(*results, *self._take_pending()))

    def _execute(self, name: str, tool_input: dict[str, Any]) -> ToolResult:
        spec = self._by_name.get(name)
        if spec is None:
            return ToolResult(f"Error: There is no tool named `{name[:100]}`.", is_error=True)
        if spec.trust == "memory" and spec.writes(tool_input):
            # Provenance: a write made after outside content entered this turn may be carrying it.
            source = "untrusted-context" if self._tainted else None
            self.memory.origin = Origin(actor="model", session=self.session_id, source=source)
        try:
            result = spec.execute(tool_input)
        except Exception as exc:  # an application's tool failing must not end the session
            log.exception("tool %s raised", name)
            result = ToolResult(f"Error: The tool `{name}` failed: {type(exc).__name__}.", is_error=True)
        if spec.trust == "untrusted":
            self._tainted = True
        if spec.trust == "memory" and not result.is_error:
            self._touch(name, tool_input, result)
        return result

    def _take_side_events(self) -> Iterator[Event]:
        taken, self.side_events = self.side_events, []
        yield from taken

    def _touch(self, name: str, tool_input: dict[str, Any], result: ToolResult) -> None:
        """Remember which memory files this session used, most recent last (re-read after a compaction)."""
        used, gone = memory_paths_used(name, tool_input, result)
        for path in gone:
            for key in [k for k in self._touched if k == path or k.startswith(path + "/")]:
                del self._touched[key]
        for path in used:
            self._touched.pop(path, None)
            self._touched[path] = None
        self._progress_updated |= PROGRESS.virtual in used and not result.text.startswith("Here's the content")

    # -- stop -----------------------------------------------------------------------------------------------

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
        self.memory.close()
        self.memory = MemoryAccess(self.store, self.session_id, auto_memory=self.auto_memory)
        self.tools = self._tools([t for t in self.tools if t.name not in self._memory_tool_names()])
        self.counter = TokenCounter(self.provider)

    def resume(self, ref: str = "") -> None:
        """Switch to another session (an id, a prefix, or "" for the latest) and continue it."""
        self._find_session(ref)  # an unknown session, or another store's, fails before anything changes
        self._close_log()
        self.messages, self._pending, self._touched = [], [], {}
        self._open_session(ref)
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

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None


# -- helpers -------------------------------------------------------------------------------------------------


def _auto_memory(option: bool | AutoMemoryConfig | None) -> AutoMemoryConfig:
    if option is None:
        return load_auto_memory()
    if isinstance(option, bool):
        return AutoMemoryConfig(enabled=option)
    return option
