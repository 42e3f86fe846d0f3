"""Client-side context management: clearing old tool results, compaction, the pairing invariant, limits."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memdir import ContextOverflowError, Origin, Store, ToolResult
from memdir.agent import Compacted, ContextCleared
from memdir.agent.compaction import memory_files_touched, plan_cut, summary_message
from memdir.agent.context import clear_tool_results, estimate_message, estimate_text
from memdir.agent.managing import MAX_COMPACT_ATTEMPTS
from memdir.agent.prompts import CLEARED, SUMMARY_SYSTEM
from memdir.agent.transcript import Message, answer_pending, orphans
from support.anthropic_server import FakeAnthropicServer, RecordedRequest, text_reply, tool_use_reply

from .conftest import MakeAgent

# -- building transcripts --------------------------------------------------------------------------------------


def call(call_id: str, name: str = "memory", **tool_input: Any) -> dict[str, Any]:
    return {
        "type": "tool_use",
        "id": call_id,
        "name": name,
        "input": tool_input or {"command": "view", "path": "/memories"},
    }


def result(call_id: str, text: str = "x" * 400) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": text}


def prompt(text: str) -> Message:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def step(call_id: str, **tool_input: Any) -> list[Message]:
    return [
        {"role": "assistant", "content": [call(call_id, **tool_input)]},
        {"role": "user", "content": [result(call_id)]},
    ]


def test_orphans_finds_both_kinds_of_broken_pair() -> None:
    assert orphans([prompt("hi"), *step("a")]) == []
    assert orphans([prompt("hi"), {"role": "assistant", "content": [call("a")]}]) == ["tool_use a has no tool_result"]
    assert orphans([prompt("hi"), {"role": "user", "content": [result("b")]}]) == ["tool_result b has no tool_use"]


# -- clearing --------------------------------------------------------------------------------------------------


def test_clearing_keeps_the_last_results_and_says_how_to_get_the_rest_back() -> None:
    messages = [prompt("go"), *step("a"), *step("b"), *step("c"), *step("d")]
    cleared = clear_tool_results(messages, keep=2)
    assert sorted(cleared.ids) == ["a", "b"]
    contents = [m["content"][0]["content"] for m in cleared.messages[1:] if m["role"] == "user"]
    placeholder = CLEARED.format(name="memory")
    assert contents == [placeholder, placeholder, "x" * 400, "x" * 400]
    assert placeholder.startswith("[Result cleared to save context")
    assert "Call memory again with the same input" in placeholder
    assert cleared.tokens > 0
    assert orphans(cleared.messages) == []
    assert messages[2]["content"][0]["content"] == "x" * 400  # the original is untouched (copies changed)


def test_memory_writes_and_excluded_tools_are_never_cleared() -> None:
    write = {"command": "create", "path": "/memories/a.md", "file_text": "x"}
    messages = [prompt("go"), *step("w", **write), *step("v"), *step("k"), *step("l")]
    messages[3:5] = [
        {"role": "assistant", "content": [call("v", name="web_fetch", url="u")]},
        {"role": "user", "content": [result("v")]},
    ]
    protected = {"w"}
    cleared = clear_tool_results(
        messages, keep=1, exclude=["web_fetch"], protected=lambda _n, i: i.get("command") == "create"
    )
    assert set(cleared.ids) == {"k"}
    assert not protected & set(cleared.ids)


def test_clearing_twice_changes_nothing_more() -> None:
    messages = [prompt("go"), *step("a"), *step("b")]
    once = clear_tool_results(messages, keep=0)
    twice = clear_tool_results(once.messages, keep=0)
    assert twice.ids == {} and twice.messages == once.messages


def test_the_agent_clears_in_client_mode(
    anthropic_server: FakeAnthropicServer, make_agent: MakeAgent, store: Store
) -> None:
    for n in range(4):
        store.write(f"/memories/f{n}.md", (f"{n}" * 3000).encode(), origin=Origin("user"))
    views = [tool_use_reply([("memory", {"command": "view", "path": f"/memories/f{n}.md"})]) for n in range(4)]
    anthropic_server.script(*views, text_reply("Read them all."))
    agent = make_agent(context="client", clear_at=1_500, keep_tool_uses=1, compact_at=100_000, backfill=False)
    events = list(agent.stream("Read every file"))
    cleared = [e for e in events if isinstance(e, ContextCleared)]
    assert cleared and all(e.progress.startswith("[context] cleared ") for e in cleared)
    last = anthropic_server.message_requests[-1]
    results = [
        b["content"] for m in last.messages if m["role"] == "user" for b in m["content"] if b["type"] == "tool_result"
    ]
    assert results[:3] == [CLEARED.format(name="memory")] * 3
    assert results[3].startswith("Here's the content of /memories/f3.md")
    assert "context_management" not in last.body and not last.betas


def test_clearing_needs_clear_at_least_tokens_to_be_worth_it(
    anthropic_server: FakeAnthropicServer, make_agent: MakeAgent, store: Store
) -> None:
    store.write("/memories/f.md", b"y" * 3000, origin=Origin("user"))
    view = tool_use_reply([("memory", {"command": "view", "path": "/memories/f.md"})])
    anthropic_server.script(view, view, text_reply("ok"))
    agent = make_agent(context="client", clear_at=500, keep_tool_uses=1, clear_at_least=50_000, backfill=False)
    assert not [e for e in agent.stream("Go") if isinstance(e, ContextCleared)]


# -- compaction ------------------------------------------------------------------------------------------------


def test_the_cut_keeps_whole_round_trips() -> None:
    messages = [prompt("go"), *step("a"), *step("b"), {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
                prompt("more"), *step("c")]  # fmt: skip
    assert plan_cut(messages, 1) == 7  # the last unit: the assistant call and its result
    assert plan_cut(messages, 2) == 6  # ... and the prompt before it
    assert plan_cut(messages, 3) == 5  # ... and the answer before that
    assert plan_cut(messages, 4) == 3  # never between a call (1) and its result (2)
    assert plan_cut(messages, 6) is None  # nothing left to summarise
    for keep in range(1, 6):
        cut = plan_cut(messages, keep)
        assert cut is not None
        assert orphans(messages[:cut]) == [] and orphans(messages[cut:]) == []


def test_the_summary_message_lists_the_memory_files_the_calls_touched() -> None:
    head = [prompt("go"), *step("a", command="create", path="/memories/a.md", file_text="x"), *step("b")]
    touched = memory_files_touched(head)
    assert touched == {"/memories/a.md": ["create"], "/memories": ["view"]}
    message = summary_message("## Requests and intent\n- things", touched)
    text = message["content"][-1]["text"]
    assert text.startswith("<conversation-summary>\n")
    assert "- /memories/a.md (create)\n- /memories (view)" in text


def summariser(summaries: list[RecordedRequest], turns: int, path: str = "/memories/f{n}.md") -> Any:
    """A reply function: summaries for compaction requests, ``turns`` tool calls, then a final answer."""
    counter = {"turn": 0}

    def reply(request: RecordedRequest) -> dict[str, Any]:
        if request.body.get("system") == SUMMARY_SYSTEM:
            summaries.append(request)
            return text_reply(f"## Requests and intent\n- read every file\n## Current work\n- SUMMARY-{len(summaries)}")
        counter["turn"] += 1
        if counter["turn"] <= turns:
            n = counter["turn"] % 10
            return tool_use_reply([("memory", {"command": "view", "path": path.format(n=n)})])
        return text_reply("All done.")

    return reply


def test_a_40_turn_loop_with_clearing_and_compaction_never_breaks_a_pair(
    anthropic_server: FakeAnthropicServer, make_agent: MakeAgent, store: Store
) -> None:
    for n in range(10):
        store.write(f"/memories/f{n}.md", (f"file {n} " * 400).encode(), origin=Origin("user"))
    summaries: list[RecordedRequest] = []
    anthropic_server.script(*[summariser(summaries, 40)] * 80)
    agent = make_agent(context="client", clear_at=3_000, keep_tool_uses=3, compact_at=6_000, keep_recent=4,
                       max_turns=60, backfill_tokens=500)  # fmt: skip
    events = list(agent.stream("Read the files, one per turn"))
    assert events[-1].result.answer == "All done."  # type: ignore[attr-defined]
    assert events[-1].result.turns == 41  # type: ignore[attr-defined]
    assert any(isinstance(e, ContextCleared) for e in events)
    compactions = [e for e in events if isinstance(e, Compacted)]
    assert compactions and compactions[0].progress.endswith("messages into a summary")
    turns = [r for r in anthropic_server.message_requests if r.body.get("system") != SUMMARY_SYSTEM]
    for request in anthropic_server.message_requests:
        assert orphans(request.messages) == [], request.messages
    after = turns[-1].messages[0]["content"]
    summary = next(b["text"] for b in after if b["text"].startswith("<conversation-summary>"))
    assert f"SUMMARY-{len(summaries)}" in summary  # the latest summary is carried forward
    assert "## Requests and intent" in summaries[0].messages[0]["content"]
    assert "## Current work" in summaries[0].messages[0]["content"]
    if len(summaries) > 1:  # each summary is made from a transcript that holds the one before
        assert "SUMMARY-1" in summaries[1].messages[0]["content"]


def test_compaction_reloads_the_memory_backfill(
    anthropic_server: FakeAnthropicServer, make_agent: MakeAgent, store: Store
) -> None:
    store.write("/memories/pref.md", b"- likes tea\n", origin=Origin("user"))
    summaries: list[RecordedRequest] = []
    anthropic_server.script(*[summariser(summaries, 6, "/memories/pref.md")] * 12)
    agent = make_agent(context="client", clear_at=10**6, compact_at=500, keep_recent=1)
    events = list(agent.stream("Go"))
    reloads = [e.progress for e in events if e.progress and e.progress.startswith("[memory backfill] reloaded")]
    assert reloads
    first = anthropic_server.message_requests[-1].messages[0]["content"]
    assert first[0]["text"].startswith('<memory-backfill source="memory directory, reloaded after compaction">')
    assert "- likes tea" in first[0]["text"]


def test_one_huge_message_stops_with_a_clear_error_after_bounded_attempts(
    anthropic_server: FakeAnthropicServer, make_agent: MakeAgent
) -> None:
    huge = ToolResult("z" * 80_000)
    summaries: list[RecordedRequest] = []

    def reply(request: RecordedRequest) -> dict[str, Any]:
        if request.body.get("system") == SUMMARY_SYSTEM:
            summaries.append(request)
            return text_reply("## Requests and intent\n- fetch")
        return tool_use_reply([("fetch", {})])

    anthropic_server.script(*[reply] * 20)
    fetch = ({"name": "fetch", "input_schema": {"type": "object"}}, None, lambda _a: huge)
    agent = make_agent(context="client", compact_at=5_000, clear_at=10**6, extra_tools=[fetch], max_turns=10)
    with pytest.raises(ContextOverflowError, match=r"^the context is still about [\d,]+ tokens after 3 compaction"):
        list(agent.stream("Fetch it"))
    assert len(summaries) <= MAX_COMPACT_ATTEMPTS
    assert orphans(agent.messages) == []


def test_a_huge_prompt_alone_is_refused_without_calling_the_model(
    anthropic_server: FakeAnthropicServer, make_agent: MakeAgent
) -> None:
    agent = make_agent(context="client", compact_at=2_000)
    with pytest.raises(ContextOverflowError, match="shorten it or raise --compact-at"):
        list(agent.stream("w" * 40_000))
    assert anthropic_server.message_requests == []


def test_manual_compaction_with_a_focus(anthropic_server: FakeAnthropicServer, make_agent: MakeAgent) -> None:
    anthropic_server.script(
        tool_use_reply([("memory", {"command": "view", "path": "/memories"})]), text_reply("First done."),
        text_reply("## Requests and intent\n- look around"),
    )  # fmt: skip
    agent = make_agent(context="off", keep_recent=1)
    agent.run("Look around")
    events = list(agent.compact("the memory layout"))
    assert [e.progress for e in events if isinstance(e, Compacted)] == ["[context] compacted 3 messages into a summary"]
    summary_request = anthropic_server.message_requests[-1]
    assert "Pay particular attention to: the memory layout" in summary_request.messages[0]["content"]
    assert agent.messages[0]["content"][-1]["text"].startswith("<conversation-summary>")
    assert orphans(agent.messages) == []


def test_manual_compaction_of_a_short_conversation_says_so(make_agent: MakeAgent) -> None:
    assert [e.progress for e in make_agent().compact()] == ["[context] nothing to compact yet"]


def test_estimates_count_bytes_not_characters() -> None:
    assert estimate_text("abcd") == 1
    assert estimate_text("é" * 4) == 2  # 8 UTF-8 bytes
    assert estimate_message(prompt("abcd")) == 4 + 3 + 1


# -- the pairing invariant, exhaustively ----------------------------------------------------------------------

_rounds = st.lists(
    st.tuples(st.lists(st.integers(1, 3), max_size=4), st.booleans(), st.sampled_from(["view", "create", "other"])),
    min_size=1,
    max_size=8,
)


def _transcript(rounds: list[tuple[list[int], bool, str]], cut_short: bool) -> list[Message]:
    messages: list[Message] = []
    ids = iter(range(10_000))
    for number, (steps, answered, kind) in enumerate(rounds):
        messages.append(prompt(f"prompt {number}"))
        for width in steps:
            calls = [f"t{next(ids)}" for _ in range(width)]
            tool = "web" if kind == "other" else "memory"
            messages.append(
                {"role": "assistant", "content": [call(c, name=tool, command=kind, path="/memories/a") for c in calls]}
            )
            messages.append({"role": "user", "content": [result(c) for c in calls]})
        if answered:
            messages.append({"role": "assistant", "content": [{"type": "text", "text": "done"}]})
    if (
        cut_short
        and messages[-1]["role"] == "user"
        and any(b["type"] == "tool_result" for b in messages[-1]["content"])
    ):
        messages.pop()  # the process died before the results were written
    return messages


@settings(max_examples=300, deadline=None)
@given(rounds=_rounds, cut_short=st.booleans(), keep=st.integers(0, 6), keep_units=st.integers(0, 8))
def test_no_operation_ever_breaks_a_tool_pair(
    rounds: list[tuple[list[int], bool, str]], cut_short: bool, keep: int, keep_units: int
) -> None:
    messages = _transcript(rounds, cut_short)
    repair = answer_pending(messages)
    if repair is not None:
        messages.append(repair)
    assert orphans(messages) == []
    cleared = clear_tool_results(messages, keep=keep, protected=lambda _n, i: i.get("command") == "create")
    assert orphans(cleared.messages) == []
    cut = plan_cut(cleared.messages, keep_units)
    if cut is not None:
        head, tail = cleared.messages[:cut], cleared.messages[cut:]
        first = summary_message("summary", memory_files_touched(head))
        if tail[0]["role"] == "user":
            first, tail = {"role": "user", "content": [*first["content"], *tail[0]["content"]]}, tail[1:]
        compacted = [first, *tail]
        assert orphans(compacted) == []
        assert len(compacted) <= len(cleared.messages)
        assert orphans(clear_tool_results(compacted, keep=keep).messages) == []
