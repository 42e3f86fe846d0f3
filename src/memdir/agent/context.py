"""Context management: counting tokens, the API's native edits, and client-side tool-result clearing.

**Token estimate** (used where the provider has no count endpoint, and between exact counts): text costs its
UTF-8 bytes / 4, rounded up; every message adds 4 tokens, every block 3, a tool call or result 10 more (ids,
names, framing); an image 1,600; a tool definition its JSON / 4, the native memory tool a flat 700 (the API
adds its schema and the memory protocol). Counts are cached per message object, and messages are never
changed in place (clearing copies them), so a turn only estimates what is new.

**Exact counts**: after every reply the API reports the prompt's size (``usage``); the counter keeps it as
a baseline and adds estimates only for the messages that came after. Near a threshold, a provider with a
count endpoint (Anthropic's ``messages.count_tokens``) is asked for the exact figure before anything is
cleared or compacted.

**Native mode** sends ``context_management`` edits (`native_edits`) with the betas they need; the API clears
and compacts server-side and reports what it did. **Client mode** applies the same settings here:
`clear_tool_results` and `memdir.agent.compaction`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import prompts
from .transcript import Block, Message, blocks

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from .providers.base import Provider, Request
    from .settings import AgentSettings
    from .tools import ToolSpec

__all__ = [
    "CONTEXT_BETAS",
    "TokenCounter",
    "clear_tool_results",
    "estimate_block",
    "estimate_message",
    "estimate_text",
    "native_edits",
]

CONTEXT_BETAS = ("context-management-2025-06-27", "compact-2026-01-12")
"""``clear_tool_uses_20250919`` needs the first, ``compact_20260112`` the second."""

MESSAGE_TOKENS = 4
BLOCK_TOKENS = 3
TOOL_BLOCK_TOKENS = 10
IMAGE_TOKENS = 1_600
NATIVE_MEMORY_TOOL_TOKENS = 700
_CLEARED_PREFIX = prompts.CLEARED.split("{", 1)[0]


def estimate_text(text: str) -> int:
    return (len(text.encode("utf-8", "surrogatepass")) + 3) // 4


def estimate_block(block: Block) -> int:
    kind = block.get("type")
    if kind == "text":
        return BLOCK_TOKENS + estimate_text(str(block.get("text", "")))
    if kind == "tool_use":
        payload = json.dumps(block.get("input", {}), ensure_ascii=False)
        return BLOCK_TOKENS + TOOL_BLOCK_TOKENS + estimate_text(str(block.get("name", ""))) + estimate_text(payload)
    if kind == "tool_result":
        content = block.get("content", "")
        inner = estimate_text(content) if isinstance(content, str) else sum(estimate_block(b) for b in content)
        return BLOCK_TOKENS + TOOL_BLOCK_TOKENS + inner
    if kind == "image":
        return IMAGE_TOKENS
    if kind == "compaction":
        return BLOCK_TOKENS + estimate_text(str(block.get("content") or ""))
    return BLOCK_TOKENS + estimate_text(json.dumps(block, ensure_ascii=False))


def estimate_message(message: Message) -> int:
    return MESSAGE_TOKENS + sum(estimate_block(b) for b in blocks(message))


def estimate_tools(tools: Iterable[ToolSpec], native: bool) -> int:
    total = 0
    for tool in tools:
        if native and tool.native is not None and tool.native.get("type") == "memory_20250818":
            total += NATIVE_MEMORY_TOOL_TOKENS
        else:
            total += estimate_text(json.dumps(tool.anthropic() if native else tool.openai()))
    return total


class TokenCounter:
    """Token counts of requests: the last exact figure the API reported plus estimates for what came after
    (cached per message), or the provider's count endpoint when a decision depends on it."""

    def __init__(self, provider: Provider | None = None) -> None:
        self.provider = provider
        self._cache: dict[int, tuple[Message, int]] = {}
        self._baseline: tuple[Message, int, int] | None = None  # (last message sent, how many, exact tokens)

    def message(self, message: Message) -> int:
        hit = self._cache.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        tokens = estimate_message(message)
        if len(self._cache) > 50_000:
            self._cache.clear()
        self._cache[id(message)] = (message, tokens)
        return tokens

    def messages(self, messages: Iterable[Message]) -> int:
        return sum(self.message(m) for m in messages)

    def observe(self, sent: Sequence[Message], prompt_tokens: int) -> None:
        """Record the exact size the API reported for a request that carried ``sent``."""
        if sent and prompt_tokens > 0:
            self._baseline = (sent[-1], len(sent), prompt_tokens)

    def estimate(self, request: Request) -> int:
        """The request's size: the exact baseline when ``request`` extends what it measured, else estimates."""
        base = self._baseline
        messages = request.messages
        if base is not None and len(messages) >= base[1] and messages[base[1] - 1] is base[0]:
            return base[2] + self.messages(messages[base[1] :])
        native = self.provider is None or self.provider.name == "anthropic"
        fixed = estimate_text(request.system) + estimate_tools(request.tools, native)
        return fixed + self.messages(messages)

    def count(self, request: Request, *, near: int | None = None) -> int:
        """The estimate; exact from the provider's count endpoint when the estimate is within 20% of ``near``."""
        guess = self.estimate(request)
        if near is None or guess < near * 0.8 or self.provider is None:
            return guess
        exact = self.provider.count_tokens(request)
        if exact is None:
            return guess
        self.observe(request.messages, exact)
        return exact


# -- native edits ----------------------------------------------------------------------------------------------


def native_edits(settings: AgentSettings, instructions: str | None = None) -> dict[str, Any]:
    """The ``context_management`` parameter for the settings: clear old tool uses, then compact (with
    ``instructions`` for the summary: the settings' and the instructions file's, see `memdir.agent.loop`).

    The compaction pauses (``pause_after_compaction``), so the agent can put back what a summary must not be
    trusted to keep — the instructions file, MEMORY.md, the files it used last — before the model goes on."""
    clear: dict[str, Any] = {
        "type": "clear_tool_uses_20250919",
        "trigger": {"type": "input_tokens", "value": settings.clear_at},
        "keep": {"type": "tool_uses", "value": settings.keep_tool_uses},
    }
    if settings.clear_at_least is not None:
        clear["clear_at_least"] = {"type": "input_tokens", "value": settings.clear_at_least}
    if settings.exclude_tools:
        clear["exclude_tools"] = list(settings.exclude_tools)
    compact: dict[str, Any] = {
        "type": "compact_20260112",
        "trigger": {"type": "input_tokens", "value": settings.compact_at},
        "pause_after_compaction": True,
    }
    if instructions:
        compact["instructions"] = instructions
    return {"edits": [clear, compact]}


# -- client-side clearing --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cleared:
    """The outcome of `clear_tool_results`: the new transcript, and what was cleared."""

    messages: list[Message]
    ids: dict[str, str]  # tool_use_id -> placeholder text
    tokens: int


def is_cleared(block: Block) -> bool:
    content = block.get("content")
    return isinstance(content, str) and content.startswith(_CLEARED_PREFIX)


def clear_tool_results(
    messages: Sequence[Message],
    *,
    keep: int,
    exclude: Iterable[str] = (),
    protected: Callable[[str, dict[str, Any]], bool] = lambda _name, _input: False,
) -> Cleared:
    """Replace all but the last ``keep`` tool results with a placeholder saying how to get them back.

    Results of tools named in ``exclude``, and of calls ``protected`` says to keep (the memory tool's writes:
    short, and the record of what the model saved), are never cleared. Only results change: every
    ``tool_use``/``tool_result`` pair stays, so the transcript stays valid. Changed messages are copies.
    """
    calls = {b.get("id"): b for m in messages if m.get("role") == "assistant" for b in blocks(m)}
    order = [
        (i, j)
        for i, m in enumerate(messages)
        if m.get("role") == "user"
        for j, b in enumerate(blocks(m))
        if b.get("type") == "tool_result"
    ]
    skip = set(exclude)
    chosen: dict[int, dict[int, str]] = {}
    for i, j in order[: max(len(order) - keep, 0)]:
        block = blocks(messages[i])[j]
        call = calls.get(block.get("tool_use_id")) or {}
        name, tool_input = str(call.get("name", "tool")), call.get("input") or {}
        if is_cleared(block) or name in skip or protected(name, tool_input):
            continue
        chosen.setdefault(i, {})[j] = prompts.CLEARED.format(name=name)
    return _apply_clearing(messages, chosen)


def _apply_clearing(messages: Sequence[Message], chosen: dict[int, dict[int, str]]) -> Cleared:
    out = list(messages)
    ids: dict[str, str] = {}
    saved = 0
    for i, replacements in chosen.items():
        content = blocks(messages[i])
        new_content = list(content)
        for j, text in replacements.items():
            old = content[j]
            new = {k: v for k, v in old.items() if k != "is_error"} | {"content": text}
            saved += estimate_block(old) - estimate_block(new)
            new_content[j] = new
            ids[str(old.get("tool_use_id"))] = text
        out[i] = {**messages[i], "content": new_content}
    return Cleared(out, ids, max(saved, 0))


def apply_cleared(messages: Sequence[Message], ids: dict[str, str]) -> list[Message]:
    """Replay a recorded clearing (a session being resumed): the same placeholders on the same results."""
    chosen: dict[int, dict[int, str]] = {}
    for i, message in enumerate(messages):
        if message.get("role") != "user":
            continue
        for j, block in enumerate(blocks(message)):
            text = ids.get(str(block.get("tool_use_id"))) if block.get("type") == "tool_result" else None
            if text is not None:
                chosen.setdefault(i, {})[j] = text
    return _apply_clearing(messages, chosen).messages
