"""Native context management: the ``context_management`` edits and betas the API needs, compaction blocks carried
back verbatim, and what the API reports shown as progress."""

from __future__ import annotations

from typing import Any

import pytest

from memdir import ConfigError
from memdir.agent import Compacted, ContextCleared
from memdir.agent.context import CONTEXT_BETAS
from support.anthropic_server import FakeAnthropicServer, text_reply, tool_use_reply

from .conftest import MakeAgent

VIEW = ("memory", {"command": "view", "path": "/memories"})
COMPACTION = {
    "type": "compaction",
    "content": "The user asked for a tour of their memory; /memories is empty.",
    "encrypted_content": "opaque-Zm9vYmFy==",
    "signature": "sig-123",
}


def test_native_mode_sends_both_edits_with_their_betas(
    anthropic_server: FakeAnthropicServer, make_agent: MakeAgent
) -> None:
    anthropic_server.script(text_reply("ok"))
    make_agent().run("Hi")
    [request] = anthropic_server.message_requests
    assert request.body["context_management"] == {
        "edits": [
            {
                "type": "clear_tool_uses_20250919",
                "trigger": {"type": "input_tokens", "value": 100_000},
                "keep": {"type": "tool_uses", "value": 3},
            },
            {
                "type": "compact_20260112",
                "trigger": {"type": "input_tokens", "value": 150_000},
                "pause_after_compaction": True,  # so what must survive the summary goes back in (test_automemory)
            },
        ]
    }
    assert request.betas == ["context-management-2025-06-27", "compact-2026-01-12"] == list(CONTEXT_BETAS)


def test_every_setting_reaches_the_edits(anthropic_server: FakeAnthropicServer, make_agent: MakeAgent) -> None:
    anthropic_server.script(text_reply("ok"))
    make_agent(
        clear_at=30_000, keep_tool_uses=5, clear_at_least=5_000, exclude_tools=("memory",), compact_at=60_000,
        compact_instructions="Keep file paths.",
    ).run("Hi")  # fmt: skip
    clear, compact = anthropic_server.message_requests[0].body["context_management"]["edits"]
    assert clear == {
        "type": "clear_tool_uses_20250919",
        "trigger": {"type": "input_tokens", "value": 30_000},
        "keep": {"type": "tool_uses", "value": 5},
        "clear_at_least": {"type": "input_tokens", "value": 5_000},
        "exclude_tools": ["memory"],
    }
    assert compact == {
        "type": "compact_20260112",
        "trigger": {"type": "input_tokens", "value": 60_000},
        "pause_after_compaction": True,
        "instructions": "Keep file paths.",
    }


@pytest.mark.parametrize("live", [False, True], ids=["json", "sse"])
def test_compaction_blocks_go_back_verbatim(
    anthropic_server: FakeAnthropicServer, make_agent: MakeAgent, live: bool
) -> None:
    compacted: dict[str, Any] = {"content": [COMPACTION, {"type": "tool_use", "id": "toolu_1", "name": "memory",
                                                          "input": VIEW[1]}]}  # fmt: skip
    anthropic_server.script(compacted, text_reply("Your memory is empty."))
    events = list(make_agent().stream("Tour my memory", live=live))
    second = anthropic_server.message_requests[1].messages
    assert second[1] == {"role": "assistant", "content": [COMPACTION, compacted["content"][1]]}
    [native] = [e for e in events if isinstance(e, Compacted)]
    assert native.native and native.summary == COMPACTION["content"]
    assert native.progress == "[context] the API compacted the earlier conversation into a summary"


def test_applied_edits_are_reported(anthropic_server: FakeAnthropicServer, make_agent: MakeAgent) -> None:
    edits = {"applied_edits": [{"type": "clear_tool_uses_20250919", "cleared_tool_uses": 4,
                                "cleared_input_tokens": 12_400}]}  # fmt: skip
    anthropic_server.script(tool_use_reply([VIEW], context_management=edits), text_reply("ok"))
    events = list(make_agent().stream("Go"))
    [cleared] = [e for e in events if isinstance(e, ContextCleared)]
    assert cleared.progress == "[context] cleared 4 old tool results (-12,400 tokens) (API)"


def test_applied_edits_arrive_in_streams_too(anthropic_server: FakeAnthropicServer, make_agent: MakeAgent) -> None:
    edits = {"applied_edits": [{"type": "clear_tool_uses_20250919", "cleared_tool_uses": 1,
                                "cleared_input_tokens": 900}]}  # fmt: skip
    anthropic_server.script(text_reply("ok", context_management=edits))
    events = list(make_agent().stream("Go", live=True))
    assert [e.progress for e in events if isinstance(e, ContextCleared)] == [
        "[context] cleared 1 old tool result (-900 tokens) (API)"
    ]


def test_a_paused_compaction_continues_without_using_a_turn(
    anthropic_server: FakeAnthropicServer, make_agent: MakeAgent
) -> None:
    anthropic_server.script({"content": [COMPACTION], "stop_reason": "compaction"}, text_reply("Continued."))
    result = make_agent(max_turns=1).run("Go")
    assert result.answer == "Continued."
    assert anthropic_server.message_requests[1].messages[-1] == {"role": "assistant", "content": [COMPACTION]}


def test_off_sends_no_context_management(anthropic_server: FakeAnthropicServer, make_agent: MakeAgent) -> None:
    anthropic_server.script(text_reply("ok"))
    make_agent(context="off").run("Hi")
    [request] = anthropic_server.message_requests
    assert "context_management" not in request.body
    assert request.betas == []


def test_native_mode_needs_the_anthropic_provider(make_openai_agent: MakeAgent) -> None:
    with pytest.raises(ConfigError, match="--context native needs the Anthropic provider"):
        make_openai_agent(context="native")
