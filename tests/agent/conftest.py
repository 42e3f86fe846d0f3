"""Fixtures for the agent tests: agents wired to the fake Anthropic and OpenAI servers through the real SDKs."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from memdir import MemoryStore, Store
from memdir.agent import Agent
from memdir.agent.providers.anthropic import AnthropicProvider
from memdir.agent.providers.openai import OpenAIProvider
from support.anthropic_server import FakeAnthropicServer
from support.openai_server import FakeOpenAIServer

MakeAgent = Callable[..., Agent]


@pytest.fixture(autouse=True)
def _no_agent_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's own model, provider, keys or settings file must not leak into these tests."""
    for name in list(os.environ):
        if name.startswith(("MEMDIR_AGENT_", "OPENAI_")) or name in (
            "MEMDIR_MODEL",
            "MEMDIR_PROVIDER",
            "MEMDIR_CONFIG",
        ):
            monkeypatch.delenv(name)


@pytest.fixture
def store() -> Iterator[Store]:
    with MemoryStore() as opened:
        yield opened


@pytest.fixture(autouse=True)
def _outside_any_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run from a directory of the test's own: no instructions file (MEMDIR.md...), memdir.toml or git
    repository of the checkout the suite runs in reaches an agent."""
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.delenv("MEMDIR_DISABLE_AUTO_MEMORY", raising=False)


@pytest.fixture
def make_agent(anthropic_server: FakeAnthropicServer, store: Store) -> Iterator[MakeAgent]:
    """``make_agent(**options)``: an `Agent` over ``store`` talking to ``anthropic_server``; closed afterwards.

    Auto memory and the ``delegate`` tool are off unless a test turns them on (``auto_memory=True``,
    ``delegate=True``): their prompt guidance and tool definition would shift every token count the context tests
    set their thresholds by, and the tests of those features say so when they need them."""
    made: list[Agent] = []

    def make(*, target: Store | None = None, **options: Any) -> Agent:
        options.setdefault("auto_memory", False)
        options.setdefault("delegate", False)
        client = anthropic.Anthropic(api_key="test-key", base_url=anthropic_server.url, max_retries=0)
        agent = Agent(target or store, provider=AnthropicProvider(client=client), **options)
        made.append(agent)
        return agent

    yield make
    for agent in made:
        agent.close()
        agent.provider.close()


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
def make_openai_agent(openai_server: FakeOpenAIServer, store: Store) -> Iterator[MakeAgent]:
    made: list[Agent] = []

    def make(**options: Any) -> Agent:
        options.setdefault("auto_memory", False)
        options.setdefault("delegate", False)
        client = openai.OpenAI(api_key="test-key", base_url=openai_server.url, max_retries=0)
        options.setdefault("model", "llama3.2")
        agent = Agent(store, provider=OpenAIProvider(client=client), **options)
        made.append(agent)
        return agent

    yield make
    for agent in made:
        agent.close()
        agent.provider.close()
