"""OpenAI-compatible servers through the real ``openai`` SDK: the six-command function tool, the simple tool set,
the memory protocol in the system prompt, tool_calls <-> tool_use/tool_result."""

from __future__ import annotations

import json

import pytest

from memdir import ConfigError, MissingCredentialsError, Store, parse
from memdir.agent import TextDelta
from memdir.agent.prompts import DEFAULT_SYSTEM, MEMORY_GUIDANCE, SIMPLE_GUIDANCE
from memdir.agent.providers.openai import OpenAIProvider
from memdir.agent.tools import MEMORY_SCHEMA
from support.openai_server import FakeOpenAIServer, chat_text, chat_tool_calls

from .conftest import MakeAgent

CREATE = {"command": "create", "path": "/memories/prefs.md", "file_text": "- tea, not coffee\n"}


def test_the_memory_tool_is_a_function_with_the_six_commands(
    openai_server: FakeOpenAIServer, make_openai_agent: MakeAgent
) -> None:
    openai_server.script(chat_text("Hi."))
    make_openai_agent().run("Hello")
    body = openai_server.chat_requests[0].body
    [tool] = body["tools"]
    assert tool["type"] == "function"
    assert tool["function"]["name"] == "memory"
    assert tool["function"]["parameters"] == MEMORY_SCHEMA
    assert MEMORY_SCHEMA["properties"]["command"]["enum"] == [
        "view",
        "create",
        "str_replace",
        "insert",
        "delete",
        "rename",
    ]
    assert body["model"] == "llama3.2"
    assert body["messages"][0] == {"role": "system", "content": f"{DEFAULT_SYSTEM}\n\n{MEMORY_GUIDANCE}"}
    assert MEMORY_GUIDANCE.startswith("IMPORTANT: ALWAYS VIEW YOUR MEMORY DIRECTORY BEFORE DOING ANYTHING ELSE.")


@pytest.mark.parametrize("live", [False, True], ids=["json", "sse"])
def test_tool_calls_run_through_the_core_and_go_back_as_tool_messages(
    openai_server: FakeOpenAIServer, make_openai_agent: MakeAgent, store: Store, live: bool
) -> None:
    openai_server.script(chat_tool_calls([("memory", CREATE)], text="Saving."), chat_text("Saved your preference."))
    events = list(make_openai_agent().stream("I like tea, not coffee.", live=live))
    assert store.read(parse("/memories/prefs.md")).content == b"- tea, not coffee\n"
    messages = openai_server.chat_requests[1].body["messages"]
    assistant, tool_message = messages[2], messages[3]
    assert assistant["role"] == "assistant" and assistant["content"] == "Saving."
    [sent_call] = assistant["tool_calls"]
    assert json.loads(sent_call["function"]["arguments"]) == CREATE
    assert tool_message == {
        "role": "tool",
        "tool_call_id": sent_call["id"],
        "content": "File created successfully at: /memories/prefs.md",
    }
    assert events[-1].result.answer == "Saved your preference."  # type: ignore[attr-defined]
    assert events[-1].result.usage.output_tokens > 0  # type: ignore[attr-defined]
    assert any(isinstance(e, TextDelta) for e in events) is live


def test_errors_keep_the_cores_words(openai_server: FakeOpenAIServer, make_openai_agent: MakeAgent) -> None:
    openai_server.script(
        chat_tool_calls([("memory", {"command": "view", "path": "/memories/../etc/passwd"}), ("memory", "{not json")]),
        chat_text("Cannot."),
    )
    make_openai_agent().run("Read the password file")
    tools = [m for m in openai_server.chat_requests[1].body["messages"] if m["role"] == "tool"]
    assert tools[0]["content"] == "Error: Path /memories/../etc/passwd would escape /memories directory"
    assert tools[1]["content"].startswith("Error: Missing required parameter `command`.")


def test_the_simple_tool_set(openai_server: FakeOpenAIServer, make_openai_agent: MakeAgent, store: Store) -> None:
    openai_server.script(
        chat_tool_calls([("write_memory", {"path": "preferences.md", "content": "no spicy food"})]),
        chat_tool_calls([("write_memory", {"path": "preferences.md", "content": "no spicy food, ever"})]),
        chat_tool_calls([("read_memory", {"path": "preferences.md"})]),
        chat_tool_calls([("forget_memory", {"path": "preferences.md"}), ("read_memory", {"path": "../secrets.env"})]),
        chat_text("Done."),
    )
    make_openai_agent(tools="simple").run("Manage my preferences")
    body = openai_server.chat_requests[0].body
    assert [t["function"]["name"] for t in body["tools"]] == ["read_memory", "write_memory", "forget_memory"]
    assert body["tools"][1]["function"]["parameters"]["required"] == ["path", "content"]
    assert body["messages"][0]["content"] == f"{DEFAULT_SYSTEM}\n\n{SIMPLE_GUIDANCE}"
    results = [m["content"] for m in openai_server.chat_requests[-1].body["messages"] if m["role"] == "tool"]
    assert results == [
        "File created successfully at: /memories/preferences.md",
        "File created successfully at: /memories/preferences.md",  # write_memory replaces the whole file
        "Here's the content of /memories/preferences.md with line numbers:\n     1\tno spicy food, ever",
        "Successfully deleted /memories/preferences.md",
        "Error: Path /memories/../secrets.env would escape /memories directory",
    ]
    assert [v.op for v in store.history("/memories/preferences.md")] == ["create", "write", "delete"]


def test_the_simple_tools_work_with_anthropic_too(anthropic_server: object, make_agent: MakeAgent) -> None:
    from support.anthropic_server import FakeAnthropicServer, text_reply

    assert isinstance(anthropic_server, FakeAnthropicServer)
    anthropic_server.script(text_reply("ok"))
    make_agent(tools="simple").run("Hi")
    body = anthropic_server.message_requests[0].body
    assert [t["name"] for t in body["tools"]] == ["read_memory", "write_memory", "forget_memory"]
    assert body["system"].endswith(SIMPLE_GUIDANCE)


def test_a_key_is_needed_only_without_a_local_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(MissingCredentialsError, match=r"^OPENAI_API_KEY is not set: .* set OPENAI_BASE_URL"):
        OpenAIProvider()
    provider = OpenAIProvider(base_url="http://127.0.0.1:9/v1")  # a local server: a placeholder key is fine
    assert provider.client.api_key == "memdir-local"
    provider.close()


def test_a_model_is_required(make_openai_agent: MakeAgent) -> None:
    with pytest.raises(ConfigError, match="needs a model: pass --model or set MEMDIR_MODEL"):
        make_openai_agent(model="")
