"""Fixtures over the fakes in this package. ``tests/conftest.py`` imports them, so every test can use them."""

from __future__ import annotations

from collections.abc import Iterator

import anthropic
import pytest

from .anthropic_server import FakeAnthropicServer

__all__ = ["anthropic_client", "anthropic_server"]


@pytest.fixture
def anthropic_server() -> Iterator[FakeAnthropicServer]:
    """A running fake Messages API with an empty script: ``anthropic_server.script(text_reply("hi"), ...)``."""
    with FakeAnthropicServer() as server:
        yield server


@pytest.fixture
def anthropic_client(anthropic_server: FakeAnthropicServer) -> Iterator[anthropic.Anthropic]:
    """The real SDK client, pointed at ``anthropic_server``."""
    with anthropic.Anthropic(api_key="test-key", base_url=anthropic_server.url) as client:
        yield client
