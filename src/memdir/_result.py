"""`ToolResult`: what the model reads from a tool memdir runs (the memory tool, ``memory_search``).

A module of its own, below everything that answers a model, so that each of them can answer in it without
importing another.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ToolResult"]


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What the model reads: ``text``, whether it is an error, and the content blocks to send (a text block,
    or for an image a text block and an image block, in the Messages API's shape).

    ``temporary``: the command failed only because the store's database could not be reached
    (`StorageUnavailableError`); the same command may well succeed a moment later (a server answers 503)."""

    text: str
    is_error: bool = False
    content: tuple[dict[str, Any], ...] = field(default=())
    temporary: bool = False

    @property
    def blocks(self) -> list[dict[str, Any]]:
        return list(self.content) if self.content else [{"type": "text", "text": self.text}]

    def with_notes(self, text: str, *, is_error: bool) -> ToolResult:
        """This result with ``text`` (the result line and notes after it) and ``is_error``."""
        return ToolResult(text, is_error=is_error, temporary=self.temporary)
