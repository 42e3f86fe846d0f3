"""Model APIs behind one small protocol (`Provider`): Anthropic's Messages API and any OpenAI-compatible
chat-completions server. The SDKs are imported only when a provider is opened, so ``memdir --help`` stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import Provider, Reply, Request

if TYPE_CHECKING:
    from ..settings import AgentSettings

__all__ = ["Provider", "Reply", "Request", "open_provider"]


def open_provider(settings: AgentSettings) -> Provider:
    """The provider the settings name, with its client made from the environment (and ``base_url``)."""
    if settings.provider == "openai":
        from .openai import OpenAIProvider

        return OpenAIProvider(base_url=settings.base_url)
    from .anthropic import AnthropicProvider

    return AnthropicProvider(base_url=settings.base_url)
