"""Anthropic's Messages API through the official SDK (``client.beta.messages``), driven directly rather
than through the SDK's tool runner: the loop needs the requests in its own hands for context management,
compaction, hooks and sessions.

``anthropic.Anthropic()`` reads ``ANTHROPIC_API_KEY`` and ``ANTHROPIC_BASE_URL`` and retries 429 and 5xx
(529 overloaded included) with backoff; errors that remain become one-line `ProviderError` messages.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

import anthropic

from ...errors import MissingCredentialsError, ProviderError
from ..events import TextDelta, Usage
from .base import Reply, Request

if TYPE_CHECKING:
    from collections.abc import Iterator

    from anthropic.types.beta import BetaMessage

__all__ = ["AnthropicProvider"]

log = logging.getLogger("memdir.agent")

MISSING_KEY = (
    "ANTHROPIC_API_KEY is not set: export ANTHROPIC_API_KEY=<your key> "
    "(or use --provider openai with OPENAI_BASE_URL for an OpenAI-compatible server)"
)
# Fields the SDK adds to blocks on the client side; the API would refuse them if sent back.
_CLIENT_ONLY = ("parsed_output",)


class AnthropicProvider:
    name = "anthropic"
    native_memory = True

    def __init__(self, *, base_url: str | None = None, client: anthropic.Anthropic | None = None) -> None:
        if client is None:
            if not (os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN")):
                raise MissingCredentialsError(MISSING_KEY)
            client = anthropic.Anthropic(base_url=base_url)
        self.client = client

    def send(self, request: Request, *, stream: bool) -> Iterator[TextDelta | Reply]:
        params = _params(request)
        try:
            if stream:
                with self.client.beta.messages.stream(**params) as events:
                    for event in events:
                        if event.type == "text" and event.text:
                            yield TextDelta(event.text)
                    message = events.get_final_message()
            else:
                message = self.client.beta.messages.create(**params)
        except anthropic.APIError as exc:
            raise _translate(exc, self.client) from exc
        yield _reply(message)

    def count_tokens(self, request: Request) -> int | None:
        params = {k: v for k, v in _params(request).items() if k not in ("max_tokens", "cache_control")}
        try:
            return int(self.client.beta.messages.count_tokens(**params).input_tokens)
        except anthropic.APIError as exc:
            log.warning("token count failed, using the estimate: %s", exc)
            return None

    def close(self) -> None:
        self.client.close()


def _params(request: Request) -> dict[str, Any]:
    params: dict[str, Any] = {
        "model": request.model,
        "max_tokens": request.max_tokens,
        "messages": list(request.messages),
        # The prompt grows by a turn at a time: caching its prefix makes each turn cheaper and faster.
        "cache_control": {"type": "ephemeral"},
    }
    if request.system:
        params["system"] = request.system
    if request.tools:
        params["tools"] = [tool.anthropic() for tool in request.tools]
    if request.context_management is not None:
        params["context_management"] = request.context_management
    if request.betas:
        params["betas"] = list(request.betas)
    return params


def _reply(message: BetaMessage) -> Reply:
    usage = message.usage
    edits = message.context_management.applied_edits if message.context_management else []
    return Reply(
        # Exactly the fields the API sent (compaction blocks must go back verbatim), none the SDK added.
        content=[_verbatim(block.to_dict(mode="json", exclude_unset=True)) for block in message.content],
        stop_reason=message.stop_reason or "end_turn",
        usage=Usage(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_input_tokens=usage.cache_read_input_tokens or 0,
            cache_creation_input_tokens=usage.cache_creation_input_tokens or 0,
        ),
        applied_edits=[edit.to_dict(mode="json") for edit in edits],
        model=message.model,
    )


def _verbatim(block: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in block.items() if k not in _CLIENT_ONLY}


def _translate(exc: anthropic.APIError, client: anthropic.Anthropic) -> ProviderError:
    if isinstance(exc, anthropic.AuthenticationError):
        return ProviderError(f"the Anthropic API refused the API key (401): {_message(exc)}; check ANTHROPIC_API_KEY")
    if isinstance(exc, anthropic.APIStatusError):
        status = " ".join(filter(None, (str(exc.status_code), _error_type(exc))))  # a proxy's body may name no type
        return ProviderError(f"the Anthropic API answered {status}: {_message(exc)}")
    if isinstance(exc, anthropic.APIConnectionError):
        return ProviderError(f"cannot reach the Anthropic API at {client.base_url}: {exc.message}")
    return ProviderError(f"the Anthropic API failed: {exc.message}")


def _error_type(exc: anthropic.APIStatusError) -> str:
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error") if isinstance(body.get("error"), dict) else {}
    return str(error.get("type", "")) if isinstance(error, dict) else ""


def _message(exc: anthropic.APIStatusError) -> str:
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error")
    text = error.get("message") if isinstance(error, dict) else None
    return " ".join(str(text or exc.message).split())
