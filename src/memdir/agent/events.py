"""What an agent session reports while it runs: typed events, each able to say itself as a progress line.

`Agent.stream` yields these; the CLI prints `Event.progress` on stderr and `TextDelta` text as it arrives.
The last event of a run is `Finished`, carrying the `AgentResult`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, ClassVar

__all__ = [
    "AgentResult",
    "BackfillLoaded",
    "Compacted",
    "ContextCleared",
    "Event",
    "Finished",
    "HookRan",
    "InstructionsLoaded",
    "Notice",
    "TextDelta",
    "ToolCalled",
    "ToolFinished",
    "Usage",
]


@dataclass
class Usage:
    """Tokens used, added up over the requests of a run (or a session)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0

    def add(self, other: Usage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_read_input_tokens += other.cache_read_input_tokens
        self.cache_creation_input_tokens += other.cache_creation_input_tokens

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens

    def as_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
        }


@dataclass(frozen=True)
class AgentResult:
    """The outcome of one `Agent.run`: the final answer and what it took."""

    answer: str
    turns: int
    usage: Usage
    session_id: str
    stop_reason: str
    model: str

    def as_json(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "turns": self.turns,
            "usage": self.usage.as_dict(),
            "session_id": self.session_id,
            "stop_reason": self.stop_reason,
            "model": self.model,
        }


class Event:
    """Base of every event. ``progress`` is the line the CLI prints on stderr (None: nothing to print)."""

    @property
    def progress(self) -> str | None:
        return None


@dataclass(frozen=True)
class TextDelta(Event):
    """A piece of the model's answer as it streams in."""

    text: str


@dataclass(frozen=True)
class _Loaded(Event):
    """Something read into the context: ``[label] loaded NAME (N tokens)``, or ``reloaded`` after a compaction."""

    name: str
    tokens: int
    reloaded: bool = False
    label: ClassVar[str] = ""

    @property
    def progress(self) -> str:
        verb = "reloaded" if self.reloaded else "loaded"
        return f"[{self.label}] {verb} {self.name} ({self.tokens:,} tokens)"


@dataclass(frozen=True)
class BackfillLoaded(_Loaded):
    """One memory file (or the listing) put into the context before the first request."""

    label: ClassVar[str] = "memory backfill"


@dataclass(frozen=True)
class InstructionsLoaded(_Loaded):
    """The project's instructions file (MEMDIR.md, AGENTS.md, CLAUDE.md) put into the context."""

    label: ClassVar[str] = "instructions"


@dataclass(frozen=True)
class ToolCalled(Event):
    turn: int
    name: str
    input: dict[str, Any]

    @property
    def progress(self) -> str:
        return f"[turn {self.turn}] {self.name} {describe_call(self.input)}".rstrip()


@dataclass(frozen=True)
class ToolFinished(Event):
    turn: int
    name: str
    is_error: bool
    text: str

    @property
    def progress(self) -> str | None:
        if not self.is_error:
            return None
        return f"[turn {self.turn}] {self.name} error: {_first_line(self.text)}"


@dataclass(frozen=True)
class ContextCleared(Event):
    """Old tool results replaced by placeholders (``native``: reported by the API's ``applied_edits``)."""

    count: int
    tokens: int
    native: bool = False

    @property
    def progress(self) -> str:
        noun = "result" if self.count == 1 else "results"
        where = " (API)" if self.native else ""
        return f"[context] cleared {self.count:,} old tool {noun} (-{self.tokens:,} tokens){where}"


@dataclass(frozen=True)
class Compacted(Event):
    """Older history replaced by a summary (``native``: the API returned a compaction block)."""

    messages: int
    summary: str = field(repr=False)
    native: bool = False
    trigger: str = "auto"

    @property
    def progress(self) -> str:
        if self.native:
            return "[context] the API compacted the earlier conversation into a summary"
        noun = "message" if self.messages == 1 else "messages"
        return f"[context] compacted {self.messages:,} {noun} into a summary"


@dataclass(frozen=True)
class HookRan(Event):
    event: str
    name: str
    ok: bool
    detail: str = ""

    @property
    def progress(self) -> str | None:
        if self.ok and not self.detail:
            return None
        status = "" if self.ok else "failed: "
        return f"[hook] {self.event} {self.name} {status}{self.detail}".rstrip()


@dataclass(frozen=True)
class Notice(Event):
    """Something worth a progress line that fits no other event (a blocked compaction, a pause)."""

    text: str

    @property
    def progress(self) -> str:
        return self.text


@dataclass(frozen=True)
class Finished(Event):
    result: AgentResult


def describe_call(tool_input: dict[str, Any]) -> str:
    """A short human description of a tool call: ``view /memories``, ``create /memories/a.md``."""
    if isinstance(tool_input.get("command"), str):
        path = tool_input.get("path") or tool_input.get("old_path") or ""
        extra = f" -> {tool_input['new_path']}" if tool_input.get("new_path") else ""
        return f"{tool_input['command']} {path}{extra}".strip()
    if isinstance(tool_input.get("path"), str):
        return str(tool_input["path"])
    text = json.dumps(tool_input, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 160 else line[:157] + "..."
