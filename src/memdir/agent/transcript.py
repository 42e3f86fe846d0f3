"""The transcript: messages in the Anthropic Messages format (``{"role", "content": [blocks]}``), and the
rules that keep it a valid request.

The one rule every request must keep: each ``tool_use`` block of an assistant message is answered by a
``tool_result`` with its id in the very next message (a user message), and every ``tool_result`` answers a
``tool_use`` of the message just before it. `orphans` checks it; `answer_pending` repairs a transcript that
stopped in the middle of a round trip (a cancelled turn, a killed process).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from ..tool import ToolResult

__all__ = [
    "Block",
    "Message",
    "answer_pending",
    "blocks",
    "is_tool_result_message",
    "orphans",
    "result_block",
    "text_block",
    "text_of",
    "tool_results",
    "tool_uses",
    "user",
]

Message = dict[str, Any]
Block = dict[str, Any]

INTERRUPTED = (
    "The session was interrupted before this tool call's result was recorded; it may or may not have taken "
    "effect. Check (for the memory tool: view the path) before relying on it."
)


def blocks(message: Message) -> list[Block]:
    """A message's content as a list of blocks (a plain string is one text block)."""
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or () if isinstance(b, dict)]


def text_block(text: str) -> Block:
    return {"type": "text", "text": text}


def user(*parts: Block) -> Message:
    return {"role": "user", "content": list(parts)}


def tool_uses(message: Message) -> list[Block]:
    if message.get("role") != "assistant":
        return []
    return [b for b in blocks(message) if b.get("type") == "tool_use"]


def tool_results(message: Message) -> list[Block]:
    if message.get("role") != "user":
        return []
    return [b for b in blocks(message) if b.get("type") == "tool_result"]


def is_tool_result_message(message: Message) -> bool:
    return bool(tool_results(message))


def text_of(message: Message) -> str:
    """The text blocks of a message, joined."""
    return "".join(b.get("text", "") for b in blocks(message) if b.get("type") == "text")


def _groups(messages: Sequence[Message]) -> Iterator[tuple[Message | None, list[Message]]]:
    """(assistant message or None, the user messages that follow it up to the next assistant)."""
    previous: Message | None = None
    following: list[Message] = []
    for message in messages:
        if message.get("role") == "assistant":
            yield previous, following
            previous, following = message, []
        else:
            following.append(message)
    yield previous, following


def orphans(messages: Sequence[Message]) -> list[str]:
    """Why ``messages`` would be refused as a request: unanswered ``tool_use`` ids and ``tool_result`` ids
    with no ``tool_use`` just before them. Empty when the transcript is valid.

    Consecutive user messages count as one (the API merges them), so the answers must come in the user
    message(s) right after the assistant message, before the next assistant message.
    """
    problems: list[str] = []
    for assistant, followers in _groups(messages):
        asked = [b.get("id") for b in tool_uses(assistant)] if assistant else []
        answered = [b.get("tool_use_id") for m in followers[:1] for b in tool_results(m)]
        late = [b.get("tool_use_id") for m in followers[1:] for b in tool_results(m)]
        problems += [f"tool_use {i} has no tool_result" for i in asked if i not in answered]
        problems += [f"tool_result {i} has no tool_use" for i in answered if i not in asked]
        problems += [
            f"tool_result {i} is not right after its tool_use" if i in asked else f"tool_result {i} has no tool_use"
            for i in late
        ]
    return problems


def answer_pending(messages: Sequence[Message], text: str = INTERRUPTED) -> Message | None:
    """The user message that answers the last assistant message's unanswered tool calls, or None when
    nothing is pending (a cancelled turn or a killed process can leave calls without results)."""
    if not messages or messages[-1].get("role") != "assistant":
        return None
    pending = tool_uses(messages[-1])
    if not pending:
        return None
    return user(*({"type": "tool_result", "tool_use_id": b["id"], "content": text, "is_error": True} for b in pending))


def result_block(tool_use_id: str, result: ToolResult) -> Block:
    """A tool's result as the block that answers its call (``is_error`` only when it failed)."""
    block: Block = {"type": "tool_result", "tool_use_id": tool_use_id}
    block["content"] = list(result.content) if result.content else result.text
    if result.is_error:
        block["is_error"] = True
    return block
