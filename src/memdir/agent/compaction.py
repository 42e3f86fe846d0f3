"""Client-side compaction: the older history summarised by one extra model call, the recent turns kept.

The transcript is cut only between whole units: a unit starts at a user prompt or at an assistant message,
and an assistant message's tool results always belong to its unit. So the kept part never starts with a
``tool_result`` whose ``tool_use`` was summarised away, and the summarised part never ends with a
``tool_use`` whose result was kept. The summary becomes the first (user) message, followed by the kept units.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from . import prompts
from ._quoting import fill, quoted
from .providers.base import Reply, Request
from .transcript import Block, Message, blocks, is_tool_result_message, text_block, tool_uses

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .providers.base import Provider

__all__ = ["cut_points", "memory_files_touched", "plan_cut", "serialise", "summarise", "summary_message"]

MAX_TEXT_CHARS = 8_000  # per block in the transcript the summariser reads
MAX_RESULT_CHARS = 2_000  # per tool result: results are the bulk, and can be fetched again
SUMMARY_MAX_TOKENS = 4_096


def cut_points(messages: Sequence[Message]) -> list[int]:
    """Indexes where a unit starts: every message except a user message carrying tool results."""
    return [i for i, m in enumerate(messages) if not is_tool_result_message(m)]


def plan_cut(messages: Sequence[Message], keep_units: int) -> int | None:
    """Where to cut so the last ``keep_units`` units stay verbatim (at least one: the current one).
    None when nothing before that could be summarised."""
    points = cut_points(messages)
    keep = max(keep_units, 1)
    if len(points) <= keep:
        return None
    cut = points[-keep]
    return cut if cut > 0 else None


def memory_files_touched(messages: Sequence[Message]) -> dict[str, list[str]]:
    """Memory paths the model's tool calls named, with the commands used on each, in first-use order."""
    touched: dict[str, list[str]] = {}
    for message in messages:
        for call in tool_uses(message):
            tool_input = call.get("input") or {}
            command = str(tool_input.get("command") or call.get("name"))
            for key in ("path", "old_path", "new_path"):
                path = tool_input.get(key)
                if isinstance(path, str) and path:
                    shown = path if path.startswith("/") else f"/memories/{path}"
                    uses = touched.setdefault(shown, [])
                    if command not in uses:
                        uses.append(command)
    return touched


def serialise(messages: Sequence[Message]) -> str:
    """A readable transcript for the summariser (long texts and results cut)."""
    lines: list[str] = []
    for message in messages:
        role = "USER" if message.get("role") == "user" else "ASSISTANT"
        for block in blocks(message):
            lines.append(_block_line(role, block))
    return "\n".join(line for line in lines if line)


def _block_line(role: str, block: Block) -> str:
    kind = block.get("type")
    if kind == "text":
        return f"{role}: {_cut(str(block.get('text', '')), MAX_TEXT_CHARS)}"
    if kind == "tool_use":
        arguments = json.dumps(block.get("input", {}), ensure_ascii=False)
        return f"TOOL CALL {block.get('name')} {_cut(arguments, MAX_TEXT_CHARS)}"
    if kind == "tool_result":
        flag = " (error)" if block.get("is_error") else ""
        return f"TOOL RESULT{flag}: {_cut(_result_text(block.get('content', '')), MAX_RESULT_CHARS)}"
    if kind == "compaction":
        return f"EARLIER SUMMARY: {block.get('content') or ''}"
    return f"{role}: [{kind} block]"


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return " ".join(str(b.get("text", f"[{b.get('type')}]")) for b in content if isinstance(b, dict))


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]} [... {len(text) - limit:,} more characters]"


def summarise(
    provider: Provider, model: str, head: Sequence[Message], focus: str | None, instructions: str | None = None
) -> Reply:
    """The one extra model call: the head of the transcript in, the structured summary out. ``instructions``:
    the ``Compact Instructions`` of the project's instructions file."""
    extra = f"\nPay particular attention to: {focus}\n" if focus else ""
    if instructions:
        extra += f"\nFollow the project's compact instructions:\n{instructions}\n"
    request = Request(
        model=model,
        system=prompts.SUMMARY_SYSTEM,
        messages=[{"role": "user", "content": fill(prompts.SUMMARY_REQUEST, focus=extra, transcript=serialise(head))}],
        max_tokens=SUMMARY_MAX_TOKENS,
    )
    reply: Reply | None = None
    for item in provider.send(request, stream=False):
        if isinstance(item, Reply):
            reply = item
    if reply is None:  # a provider always ends with a reply; this keeps the type checker and readers sure
        raise RuntimeError("the provider gave no reply")
    return reply


def summary_message(summary: str, touched: dict[str, list[str]], extra_blocks: Sequence[Block] = ()) -> Message:
    """The user message that replaces the summarised history: fresh memory and hook context first, then the
    summary with the exact list of memory files the tool calls touched."""
    files = "\n".join(f"- {path} ({', '.join(uses)})" for path, uses in touched.items()) or "- none"
    # The summary is the model's reading of text memdir did not write; the paths are the model's: both quoted.
    summary, files = quoted(summary.strip()), quoted(files)
    text = (
        f"{prompts.SUMMARY_OPEN}\n\n{summary}\n\n"
        f"Memory files named in the summarised tool calls:\n{files}\n{prompts.SUMMARY_CLOSE}"
    )
    return {"role": "user", "content": [*extra_blocks, text_block(text)]}
