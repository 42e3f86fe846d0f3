"""Sub-agents: the ``delegate`` tool runs a fresh agent whose tool calls never enter the caller's context."""

from __future__ import annotations

import json
import re
import subprocess
from collections import deque
from pathlib import Path
from typing import Any

import pytest

from memdir import Origin, Store, ToolResult
from memdir.agent import AgentSettings, Notice
from memdir.agent.prompts import SUBAGENT_SYSTEM, SUMMARY_SYSTEM
from support.anthropic_server import FakeAnthropicServer, RecordedRequest, text_reply, tool_use_reply

from .conftest import MakeAgent

SUB = SUBAGENT_SYSTEM.split("(", 1)[0]
SECRET = "LOOKUP-RESULT-7f3a"
LOOKUP = ({"name": "lookup", "description": "Look a thing up.", "input_schema": {"type": "object"}}, None,
          lambda _args: ToolResult(f"{SECRET}: the answer is 42"))  # fmt: skip
META = re.compile(r"\[sub-agent (\S+): read ([\d,]+) tokens, returned ([\d,]+) tokens, [\d.]+ s, (\d+) turns?\]$")


class Router:
    """Replies by who asks: the caller, a sub-agent (its system prompt), or a summariser."""

    def __init__(self, server: FakeAnthropicServer) -> None:
        self.caller: deque[dict[str, Any]] = deque()
        self.sub: deque[dict[str, Any]] = deque()
        self.summaries: deque[dict[str, Any]] = deque()
        self.server = server
        server.script(*[self] * 40)

    def __call__(self, request: RecordedRequest) -> dict[str, Any]:
        system = request.body.get("system", "")
        queue = self.summaries if system == SUMMARY_SYSTEM else self.sub if system.startswith(SUB) else self.caller
        return queue.popleft()

    def requests(self, *, sub: bool) -> list[RecordedRequest]:
        return [r for r in self.server.message_requests if r.body.get("system", "").startswith(SUB) is sub
                and r.body.get("system") != SUMMARY_SYSTEM]  # fmt: skip


def dump(request: RecordedRequest) -> str:
    return json.dumps(request.messages)


def test_a_subagents_tool_calls_never_reach_the_callers_context(
    anthropic_server: FakeAnthropicServer, make_agent: MakeAgent, store: Store
) -> None:
    store.write("/memories/main.md", b"MAIN-MEMORY-NOTE\n", origin=Origin("user"))
    router = Router(anthropic_server)
    router.caller += [tool_use_reply([("delegate", {"task": "Find the answer."})]), text_reply("It is 42.")]
    router.sub += [
        tool_use_reply([("lookup", {}, "toolu_sub_1"), ("memory", {"command": "view", "path": "/memories"}, "toolu_sub_2")]),
        text_reply("The answer is 42."),
    ]  # fmt: skip
    events = list(make_agent(delegate=True, extra_tools=[LOOKUP]).stream("What is the answer?"))
    assert events[-1].result.answer == "It is 42."  # type: ignore[attr-defined]
    subs, callers = router.requests(sub=True), router.requests(sub=False)
    assert len(subs) == 2 and len(callers) == 2
    for request in callers:
        text = dump(request)
        assert (
            SECRET not in text and "toolu_sub_" not in text and '"lookup"' not in text.replace('"name": "lookup"', "")
        )
    [result] = callers[1].tool_results()
    answer, meta = result["content"].split("\n\n")
    assert answer == "The answer is 42."
    match = META.match(meta)
    assert match is not None and match.group(1) == "general-purpose" and match.group(4) == "2"
    assert int(match.group(2).replace(",", "")) > int(match.group(3))  # it read more than it returned
    # A fresh context: only the task, none of the caller's memory loaded.
    assert subs[0].messages == [{"role": "user", "content": [{"type": "text", "text": "Find the answer."}]}]
    assert "MAIN-MEMORY-NOTE" not in dump(subs[0])
    assert [t["name"] for t in subs[0].body["tools"]] == ["memory", "lookup"]  # the caller's tools but delegate
    progress = [e.progress for e in events if isinstance(e, Notice)]
    assert "[sub-agent general-purpose] [turn 1] lookup {}" in progress


def test_the_answer_is_bounded(anthropic_server: FakeAnthropicServer, make_agent: MakeAgent) -> None:
    router = Router(anthropic_server)
    router.caller += [tool_use_reply([("delegate", {"task": "Write a lot."})]), text_reply("ok")]
    router.sub += [text_reply("word " * 1_000)]
    make_agent(delegate=True, subagent_answer_tokens=50).run("Go")
    [result] = router.requests(sub=False)[1].tool_results()
    answer, meta = result["content"].rsplit("\n\n", 1)
    assert answer.endswith("\n[The sub-agent's answer was cut at 50 tokens.]")
    assert len(answer) < 50 * 4 + 60
    match = META.match(meta)
    assert match is not None and int(match.group(3)) <= 65


def test_named_subagents_have_their_own_prompt_model_and_tools(
    anthropic_server: FakeAnthropicServer, make_agent: MakeAgent
) -> None:
    router = Router(anthropic_server)
    router.caller += [tool_use_reply([("delegate", {"task": "Check it.", "agent": "checker"})]), text_reply("ok")]
    router.sub += [text_reply("Checked.")]
    agents = {"checker": {"description": "Checks facts.", "system": "Check every claim twice.",
                          "model": "claude-haiku-4-5", "tools": ["lookup"], "max_turns": 3}}  # fmt: skip
    agent = make_agent(delegate=True, extra_tools=[LOOKUP], subagents=agents)
    agent.run("Go")
    [definition] = [t for t in router.requests(sub=False)[0].body["tools"] if t["name"] == "delegate"]
    assert definition["input_schema"]["properties"]["agent"]["enum"] == ["checker", "general-purpose"]
    assert "- checker: Checks facts." in definition["description"]
    [sub] = router.requests(sub=True)
    assert sub.body["model"] == "claude-haiku-4-5"
    assert "Check every claim twice." in sub.body["system"]
    assert [t["name"] for t in sub.body["tools"]] == ["lookup"]


def test_an_unknown_subagent_is_an_error_result(anthropic_server: FakeAnthropicServer, make_agent: MakeAgent) -> None:
    anthropic_server.script(tool_use_reply([("delegate", {"task": "x", "agent": "nobody"})]), text_reply("ok"))
    make_agent(delegate=True).run("Go")
    [result] = anthropic_server.message_requests[1].tool_results()
    assert result["is_error"] is True
    assert result["content"] == "Error: There is no sub-agent named `nobody`. Use one of: general-purpose."


def test_a_subagent_compacts_itself(anthropic_server: FakeAnthropicServer, make_agent: MakeAgent) -> None:
    big = ({"name": "fetch", "input_schema": {"type": "object"}}, None, lambda _a: ToolResult("z" * 12_000))
    router = Router(anthropic_server)
    router.caller += [tool_use_reply([("delegate", {"task": "Fetch twice."})]), text_reply("ok")]
    router.sub += [tool_use_reply([("fetch", {})]), tool_use_reply([("fetch", {})]), text_reply("Fetched.")]
    router.summaries += [text_reply("## Requests and intent\n- fetch") for _ in range(3)]
    make_agent(delegate=True, extra_tools=[big], context="client", compact_at=3_500, clear_at=10**6,
               keep_recent=1).run("Go")  # fmt: skip
    summaries = [r for r in anthropic_server.message_requests if r.body.get("system") == SUMMARY_SYSTEM]
    assert summaries, "the sub-agent's context should have been compacted"
    assert "<conversation-summary>" in dump(router.requests(sub=True)[-1])
    for request in router.requests(sub=False):
        assert "z" * 100 not in dump(request)


def test_delegate_can_be_withheld(anthropic_server: FakeAnthropicServer, make_agent: MakeAgent) -> None:
    assert AgentSettings().delegate is True
    anthropic_server.script(text_reply("ok"), text_reply("ok"))
    make_agent(delegate=True).run("Hi")
    make_agent(delegate=False).run("Hi")
    first, second = (r.body["tools"] for r in anthropic_server.message_requests)
    assert "delegate" in [t["name"] for t in first] and "delegate" not in [t["name"] for t in second]


# -- sub-agents' own memory ------------------------------------------------------------------------------------


def git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, timeout=60, check=False).stdout


NOTE_WRITE = {"command": "create", "path": "/memories/lesson.md",
              "file_text": "---\nname: Lesson\ndescription: Check the date format first\ntype: feedback\n---\n"}  # fmt: skip


def remember_then_recall(anthropic_server: FakeAnthropicServer, make_agent: MakeAgent, scope: str) -> Router:
    router = Router(anthropic_server)
    for _ in range(2):
        router.caller += [tool_use_reply([("delegate", {"task": "Parse dates.", "agent": "parser"})]), text_reply("ok")]
    router.sub += [tool_use_reply([("memory", NOTE_WRITE)]), text_reply("Done."), text_reply("Done again.")]
    agents = {"parser": {"description": "Parses.", "memory": scope}}
    agent = make_agent(delegate=True, subagents=agents, auto_memory=True)
    agent.run("First")
    agent.run("Second")
    return router


def test_local_memory_is_kept_out_of_git(
    anthropic_server: FakeAnthropicServer, make_agent: MakeAgent, store: Store
) -> None:
    git("init", "-q")
    router = remember_then_recall(anthropic_server, make_agent, "local")
    saved = Path(".agent-memory-local/parser/memories/lesson.md")
    assert saved.read_text().startswith("---\nname: Lesson\n")
    assert Path(".agent-memory-local/parser/memories/MEMORY.md").read_text() == (
        "- [Lesson](lesson.md) — Check the date format first\n"
    )
    assert git("check-ignore", str(saved)).strip() == str(saved)
    assert git("status", "--porcelain", "--untracked-files=all") == ""  # nothing of it shows up for a commit
    # Its own memory is loaded at its next start; the caller's memory never is, and stays untouched.
    later = router.requests(sub=True)[-1]
    assert "Check the date format first" in dump(later) and "<memory-backfill" in dump(later)
    assert store.stat("/memories/lesson.md") is None


def test_project_memory_is_for_version_control(anthropic_server: FakeAnthropicServer, make_agent: MakeAgent) -> None:
    git("init", "-q")
    remember_then_recall(anthropic_server, make_agent, "project")
    untracked = git("status", "--porcelain", "--untracked-files=all").split()
    assert ".agent-memory/parser/memories/lesson.md" in untracked
    assert not any(".memdir/" in path for path in untracked)  # the store's history database is ignored


def test_user_memory_lives_in_the_data_dir(
    anthropic_server: FakeAnthropicServer, make_agent: MakeAgent, _isolated_home: Path
) -> None:
    remember_then_recall(anthropic_server, make_agent, "user")
    assert (_isolated_home / "agent-memory" / "parser" / "memories" / "lesson.md").is_file()


def test_without_auto_memory_a_subagent_has_no_memory_of_its_own(
    anthropic_server: FakeAnthropicServer, make_agent: MakeAgent
) -> None:
    router = Router(anthropic_server)
    router.caller += [tool_use_reply([("delegate", {"task": "x", "agent": "parser"})]), text_reply("ok")]
    router.sub += [text_reply("Done.")]
    agents = {"parser": {"memory": "local", "tools": []}}
    make_agent(delegate=True, subagents=agents, auto_memory=False).run("Go")
    [sub] = router.requests(sub=True)
    assert sub.body.get("tools", []) == [] and not Path(".agent-memory-local").exists()


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"memory": "team"}, "'memory' must be one of user, project, local"),
        ({"colour": "red"}, "unknown key 'colour'"),
        ({"tools": "lookup"}, "'tools' must be a list"),
    ],
)
def test_bad_subagent_settings_are_clear_errors(entry: dict[str, Any], message: str) -> None:
    from memdir import ConfigError
    from memdir.agent import load_agent_settings

    with pytest.raises(ConfigError, match=re.escape(message)):
        load_agent_settings({"subagents": {"parser": entry}}, environ={})


def test_the_cli_offers_delegate_unless_told_not_to(
    anthropic_server: FakeAnthropicServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from click.testing import CliRunner

    from memdir.cli import cli

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_server.url)
    anthropic_server.script(text_reply("ok"), text_reply("ok"))
    store = str(tmp_path / "m")
    assert CliRunner().invoke(cli, ["run", "--store", store, "Hi"]).exit_code == 0
    assert CliRunner().invoke(cli, ["run", "--store", store, "--no-delegate", "Hi"]).exit_code == 0
    first, second = ([t["name"] for t in r.body["tools"]] for r in anthropic_server.message_requests)
    assert first == ["memory", "delegate"] and second == ["memory"]
