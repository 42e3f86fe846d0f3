"""The agent's session, the part of `memdir.agent.Agent` that keeps it: opening a new session or resuming one from
its transcript, what the first prompt of a session carries (the instructions file, the memory backfill, what the
SessionStart hooks add), and each message appended to the transcript as it happens. The transcript files
themselves (their format, finding one, listing them) are `memdir.agent.sessions`.

A mixin, as `memdir.agent.managing.ContextManagement` is: the settings, the store, the provider, the memory access
and the hooks are the agent's own, declared below for the type checker.
"""

from __future__ import annotations

import datetime as dt
import os
from typing import TYPE_CHECKING, Any

from . import prompts
from ._quoting import fill
from .backfill import load_backfill
from .events import BackfillLoaded, InstructionsLoaded
from .instructions import load_instructions
from .managing import hook_events
from .sessions import SessionLog, find_session, new_session_id, secret_redaction
from .transcript import INTERRUPTED, answer_pending, text_block, user

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

    from ..automemory import AutoMemoryConfig
    from ..store import Store
    from .backfill import Backfill
    from .events import Event, Usage
    from .hooks import Hooks
    from .instructions import Instructions
    from .providers import Provider
    from .settings import AgentSettings
    from .tools import MemoryAccess
    from .transcript import Block, Message

__all__ = ["CANCELLED", "SessionKeeping"]

CANCELLED = "The user cancelled this tool call before it finished; it may or may not have taken effect."


class SessionKeeping:
    """Opening, starting and recording the session of `memdir.agent.Agent` (see the module docstring)."""

    if TYPE_CHECKING:  # the agent's own, used here
        settings: AgentSettings
        store: Store
        store_key: str
        provider: Provider
        model: str
        hooks: Hooks
        memory: MemoryAccess
        auto_memory: AutoMemoryConfig
        project_root: Path
        session_id: str
        messages: list[Message]
        turns: int
        usage: Usage
        backfill: Backfill | None
        instructions: Instructions | None
        _sessions_dir: Path | None
        _log: SessionLog | None
        _pending: list[Block]
        _touched: dict[str, None]
        _started: bool
        _source: str

    # -- opening ----------------------------------------------------------------------------------------------

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
                text = fill(prompts.HOOK_CONTEXT, event="SessionStart", source=source, text=outcome.output.strip())
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

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None
