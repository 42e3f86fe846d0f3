"""Any OpenAI-compatible chat-completions server (OpenAI, Ollama, vLLM, llama.cpp...) through the official
``openai`` SDK, converting the Anthropic-format transcript both ways: ``tool_use`` blocks are assistant
``tool_calls``, ``tool_result`` blocks are ``tool`` messages.

``OPENAI_API_KEY`` and ``OPENAI_BASE_URL`` are honoured. A local server needs no real key: when a base URL is
set (environment or ``base_url``) and no key is, a placeholder key is sent (servers that check none ignore it).
Such servers have no token count endpoint; the loop estimates.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

import openai

from ...errors import MissingCredentialsError, ProviderError
from ..events import TextDelta, Usage
from ..transcript import Block, Message, blocks
from .base import Reply, Request

if TYPE_CHECKING:
    from collections.abc import Iterator

    from openai.types.chat import ChatCompletion

__all__ = ["OpenAIProvider", "to_chat"]

MISSING_KEY = (
    "OPENAI_API_KEY is not set: export OPENAI_API_KEY=<your key>, or for a local server (Ollama, vLLM, "
    "llama.cpp) set OPENAI_BASE_URL, e.g. OPENAI_BASE_URL=http://localhost:11434/v1"
)
PLACEHOLDER_KEY = "memdir-local"
_STOP = {"stop": "end_turn", "tool_calls": "tool_use", "function_call": "tool_use", "length": "max_tokens"}


class OpenAIProvider:
    name = "openai"
    native_memory = False

    def __init__(self, *, base_url: str | None = None, client: openai.OpenAI | None = None) -> None:
        if client is None:
            key = os.environ.get("OPENAI_API_KEY")
            if not key and not (base_url or os.environ.get("OPENAI_BASE_URL")):
                raise MissingCredentialsError(MISSING_KEY)
            client = openai.OpenAI(api_key=key or PLACEHOLDER_KEY, base_url=base_url)
        self.client = client

    def send(self, request: Request, *, stream: bool) -> Iterator[TextDelta | Reply]:
        params: dict[str, Any] = {
            "model": request.model,
            "messages": to_chat(request.system, request.messages),
            "max_tokens": request.max_tokens,
        }
        if request.tools:
            params["tools"] = [tool.openai() for tool in request.tools]
        try:
            if stream:
                yield from self._stream(params)
            else:
                yield _reply(self.client.chat.completions.create(**params))
        except openai.APIError as exc:
            raise _translate(exc, self.client) from exc

    def _stream(self, params: dict[str, Any]) -> Iterator[TextDelta | Reply]:
        text: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        finish, model, usage = "stop", "", Usage()
        chunks = self.client.chat.completions.create(**params, stream=True, stream_options={"include_usage": True})
        for chunk in chunks:
            model = chunk.model or model
            if chunk.usage is not None:
                usage = _usage(chunk.usage)
            for choice in chunk.choices:
                finish = choice.finish_reason or finish
                delta = choice.delta
                if delta.content:
                    text.append(delta.content)
                    yield TextDelta(delta.content)
                for call in delta.tool_calls or ():
                    slot = calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
                    slot["id"] = call.id or slot["id"]
                    if call.function is not None:
                        slot["name"] += call.function.name or ""
                        slot["arguments"] += call.function.arguments or ""
        content = _blocks("".join(text), [calls[i] for i in sorted(calls)])
        yield Reply(content, _stop(finish, content), usage, [], model)

    def count_tokens(self, request: Request) -> int | None:  # noqa: ARG002 - the protocol's signature
        return None  # chat-completions servers have no count endpoint

    def close(self) -> None:
        self.client.close()


# -- Anthropic transcript -> chat messages ----------------------------------------------------------------------


def to_chat(system: str, messages: Any) -> list[dict[str, Any]]:
    """The chat-completions ``messages`` for a system prompt and an Anthropic-format transcript."""
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for message in messages:
        out.extend(_assistant(message) if message.get("role") == "assistant" else _user(message))
    return out


def _assistant(message: Message) -> list[dict[str, Any]]:
    text = "\n\n".join(_block_text(b) for b in blocks(message) if b.get("type") in ("text", "compaction"))
    calls = [
        {
            "id": b["id"],
            "type": "function",
            "function": {"name": b["name"], "arguments": json.dumps(b.get("input", {}), ensure_ascii=False)},
        }
        for b in blocks(message)
        if b.get("type") == "tool_use"
    ]
    chat: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        chat["tool_calls"] = calls
    return [chat]


def _user(message: Message) -> list[dict[str, Any]]:
    # Tool results first: a `tool` message must follow the assistant message that called the tool.
    out = [
        {"role": "tool", "tool_call_id": b["tool_use_id"], "content": _result_text(b)}
        for b in blocks(message)
        if b.get("type") == "tool_result"
    ]
    parts = [_part(b) for b in blocks(message) if b.get("type") in ("text", "image")]
    if parts:
        only_text = all(p["type"] == "text" for p in parts)
        content: Any = "\n\n".join(p["text"] for p in parts) if only_text else parts
        out.append({"role": "user", "content": content})
    return out


def _block_text(block: Block) -> str:
    if block.get("type") == "compaction":
        return str(block.get("content") or "")
    return str(block.get("text", ""))


def _result_text(block: Block) -> str:
    content = block.get("content", "")
    if isinstance(content, str):
        return content
    pieces = [
        str(b.get("text", "")) if b.get("type") == "text" else "[an image was returned; this server cannot show it]"
        for b in content
    ]
    return "\n".join(pieces)


def _part(block: Block) -> dict[str, Any]:
    if block.get("type") == "text":
        return {"type": "text", "text": str(block.get("text", ""))}
    source = block.get("source") or {}
    url = f"data:{source.get('media_type')};base64,{source.get('data')}"
    return {"type": "image_url", "image_url": {"url": url}}


# -- chat completion -> Anthropic reply -------------------------------------------------------------------------


def _reply(completion: ChatCompletion) -> Reply:
    choice = completion.choices[0] if completion.choices else None
    text = choice.message.content or "" if choice else ""
    calls = [
        {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
        for c in (choice.message.tool_calls or [] if choice else [])
        if c.type == "function"
    ]
    content = _blocks(text, calls)
    usage = _usage(completion.usage) if completion.usage else Usage()
    return Reply(content, _stop(choice.finish_reason if choice else "stop", content), usage, [], completion.model)


def _blocks(text: str, calls: list[dict[str, str]]) -> list[Block]:
    content: list[Block] = [{"type": "text", "text": text}] if text else []
    for number, call in enumerate(calls):
        content.append(
            {
                "type": "tool_use",
                "id": call["id"] or f"call_{number}",
                "name": call["name"],
                "input": _arguments(call["arguments"]),
            }
        )
    return content


def _arguments(raw: str) -> dict[str, Any]:
    """The call's arguments; text that is not a JSON object is passed on whole, for the tool to refuse."""
    try:
        value = json.loads(raw or "{}")
    except json.JSONDecodeError:
        return {"arguments": raw}
    return value if isinstance(value, dict) else {"arguments": value}


def _stop(finish: str, content: list[Block]) -> str:
    if any(b["type"] == "tool_use" for b in content):
        return "tool_use"
    return _STOP.get(finish, "refusal" if finish == "content_filter" else "end_turn")


def _usage(usage: Any) -> Usage:
    details = getattr(usage, "prompt_tokens_details", None)
    cached = int(getattr(details, "cached_tokens", 0) or 0) if details is not None else 0
    return Usage(
        input_tokens=int(usage.prompt_tokens or 0) - cached,
        output_tokens=int(usage.completion_tokens or 0),
        cache_read_input_tokens=cached,
    )


def _translate(exc: openai.APIError, client: openai.OpenAI) -> ProviderError:
    if isinstance(exc, openai.AuthenticationError):
        return ProviderError(f"the server at {client.base_url} refused the API key (401); check OPENAI_API_KEY")
    if isinstance(exc, openai.APIStatusError):
        text = " ".join(str(exc.message).split())
        return ProviderError(f"the server at {client.base_url} answered {exc.status_code}: {text}")
    if isinstance(exc, openai.APIConnectionError):
        return ProviderError(f"cannot reach the server at {client.base_url}: {exc.message}")
    return ProviderError(f"the OpenAI-compatible API failed: {exc.message}")
