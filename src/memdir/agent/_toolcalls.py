"""Running the tools a reply asks for, the part of `memdir.agent.Agent` between one request and the next: each call
dispatched to its `ToolSpec` (an application's tool failing is an error result, never the end of the session), the
provenance of memory writes (a write after untrusted content entered the turn is marked as possibly carrying it),
and the memory files the session used (re-read after a compaction).

A mixin, as `memdir.agent.managing.ContextManagement` is: the messages, the tools and the memory access are the
agent's own, declared below for the type checker.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ..store import Origin
from ..tool import ToolResult
from .events import ToolCalled, ToolFinished
from .longrun import PROGRESS
from .tools import memory_paths_used
from .transcript import result_block, tool_uses, user

if TYPE_CHECKING:
    from collections.abc import Iterator

    from .events import Event
    from .tools import MemoryAccess, ToolSpec
    from .transcript import Block, Message

__all__ = ["ToolCalls"]

log = logging.getLogger("memdir.agent")


class ToolCalls:
    """The tool calls of `memdir.agent.Agent` (see the module docstring)."""

    if TYPE_CHECKING:  # the agent's own, used here
        messages: list[Message]
        memory: MemoryAccess
        session_id: str
        side_events: list[Event]
        _by_name: dict[str, ToolSpec]
        _tainted: bool
        _touched: dict[str, None]
        _progress_updated: bool

        def _append(self, message: Message, *, sync: bool = ..., **extra: Any) -> None: ...
        def _take_pending(self) -> list[Block]: ...

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
