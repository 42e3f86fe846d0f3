"""The provider protocol: how the loop talks to a model API, whichever it is.

A request and a reply speak the Anthropic Messages format (content blocks); a provider for another API
converts both ways. `Provider.send` yields `TextDelta` events while a streamed reply arrives and ends with
one `Reply`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..events import TextDelta, Usage

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from ..tools import ToolSpec
    from ..transcript import Block, Message

__all__ = ["Provider", "Reply", "Request"]


@dataclass(frozen=True)
class Request:
    model: str
    system: str
    messages: Sequence[Message]
    tools: Sequence[ToolSpec] = ()
    max_tokens: int = 4096
    context_management: dict[str, Any] | None = None
    betas: tuple[str, ...] = ()


@dataclass(frozen=True)
class Reply:
    content: list[Block]
    stop_reason: str
    usage: Usage = field(default_factory=Usage)
    applied_edits: list[dict[str, Any]] = field(default_factory=list)
    model: str = ""

    @property
    def prompt_tokens(self) -> int:
        """The size of the prompt the API processed (cached parts included)."""
        u = self.usage
        return u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens


class Provider(Protocol):
    """A model API. ``native_memory``: it offers the ``memory_20250818`` tool type itself (and adds the memory
    protocol to the system prompt); otherwise the loop offers a function tool and adds the protocol."""

    name: str
    native_memory: bool

    def send(self, request: Request, *, stream: bool) -> Iterator[TextDelta | Reply]: ...

    def count_tokens(self, request: Request) -> int | None:
        """The exact prompt size, or None when the API has no count endpoint (or it failed)."""
        ...

    def close(self) -> None: ...
