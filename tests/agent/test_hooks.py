"""Hooks: shell commands and callables at SessionStart (startup/resume/compact), PreCompact, PostCompact and Stop;
a failing or slow hook is reported, never fatal."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from memdir.agent import HookRan, Hooks, Notice
from memdir.agent.prompts import SUMMARY_SYSTEM
from support.anthropic_server import FakeAnthropicServer, RecordedRequest, text_reply, tool_use_reply

from .conftest import MakeAgent

VIEW = ("memory", {"command": "view", "path": "/memories"})


def capture(tmp_path: Path, name: str, output: str = "") -> str:
    """A shell command that saves its stdin (the payload) to ``name`` and prints ``output``."""
    target = shlex.quote(str(tmp_path / name))
    return f"cat > {target}; printf %s {shlex.quote(output)}"


def payload(tmp_path: Path, name: str) -> dict[str, Any]:
    return dict(json.loads((tmp_path / name).read_text()))


def test_session_start_output_is_added_to_the_context(
    tmp_path: Path, anthropic_server: FakeAnthropicServer, make_agent: MakeAgent
) -> None:
    hooks = {"SessionStart": ({"command": capture(tmp_path, "start.json", "Today is release day.")},)}
    anthropic_server.script(text_reply("ok"))
    agent = make_agent(hooks=hooks, backfill=False)
    events = list(agent.stream("Hi"))
    [first] = anthropic_server.message_requests[0].messages
    assert first["content"][0]["text"] == (
        '<session-context source="SessionStart hook (startup)">\nToday is release day.\n</session-context>'
    )
    seen = payload(tmp_path, "start.json")
    assert seen["hook_event_name"] == "SessionStart" and seen["source"] == "startup"
    assert seen["session_id"] == agent.session_id
    assert seen["transcript_path"] == str(agent.transcript_path)
    assert [e.progress for e in events if isinstance(e, HookRan)] == [
        f"[hook] SessionStart `{' '.join(capture(tmp_path, 'start.json', 'x').split())[:45]}...` added 1 line to the context"
    ]


def test_resume_runs_session_start_with_source_resume(
    tmp_path: Path, anthropic_server: FakeAnthropicServer, make_agent: MakeAgent
) -> None:
    hooks = {"SessionStart": ({"command": capture(tmp_path, "resume.json", "resumed!"), "matcher": "resume"},)}
    anthropic_server.script(text_reply("one"), text_reply("two"))
    first = make_agent(hooks=hooks)
    first.run("Hi")
    assert not (tmp_path / "resume.json").exists()  # the matcher skipped startup
    first.close()
    make_agent(hooks=hooks, resume=first.session_id).run("Again")
    assert payload(tmp_path, "resume.json")["source"] == "resume"
    last = anthropic_server.message_requests[1].messages[-1]["content"]
    assert "resumed!" in last[0]["text"] and last[1]["text"] == "Again"


def compacting_replies(summaries: list[RecordedRequest]) -> Any:
    turns: list[RecordedRequest] = []

    def reply(request: RecordedRequest) -> dict[str, Any]:
        if request.body.get("system") == SUMMARY_SYSTEM:
            summaries.append(request)
            return text_reply("## Requests and intent\n- THE SUMMARY")
        turns.append(request)
        return tool_use_reply([VIEW]) if len(turns) < 5 else text_reply("done")

    return reply


def test_compaction_runs_pre_and_post_compact_and_session_start_compact(
    tmp_path: Path, anthropic_server: FakeAnthropicServer, make_agent: MakeAgent
) -> None:
    seen: dict[str, dict[str, Any]] = {}
    hooks = {
        "PreCompact": [lambda p: seen.setdefault("pre", p)],
        "PostCompact": [lambda p: seen.setdefault("post", p)],
        "SessionStart": [lambda p: seen.setdefault(p["source"], p) and f"after {p['source']}"],
    }
    summaries: list[RecordedRequest] = []
    anthropic_server.script(*[compacting_replies(summaries)] * 10)
    agent = make_agent(hooks=hooks, context="client", compact_at=300, clear_at=10**6, keep_recent=1)
    agent.run("Go")
    assert seen["pre"]["trigger"] == "auto" and seen["pre"]["hook_event_name"] == "PreCompact"
    assert "THE SUMMARY" in seen["post"]["compact_summary"]
    assert seen["compact"]["source"] == "compact"
    texts = [b["text"] for b in anthropic_server.message_requests[-1].messages[0]["content"] if b["type"] == "text"]
    assert any("after compact" in t for t in texts)


def test_a_pre_compact_hook_can_block_and_back_up_the_transcript(
    tmp_path: Path, anthropic_server: FakeAnthropicServer, make_agent: MakeAgent
) -> None:
    backup = tmp_path / "backup.jsonl"
    command = f'cp "$MEMDIR_TRANSCRIPT" {shlex.quote(str(backup))}; echo "not now" >&2; exit 2'
    anthropic_server.script(tool_use_reply([VIEW]), text_reply("First."))
    agent = make_agent(hooks={"PreCompact": ({"command": command},)}, keep_recent=1)
    agent.run("Look")
    events = list(agent.compact())
    assert [e.progress for e in events if isinstance(e, Notice)] == [
        "[context] compaction blocked by a PreCompact hook"
    ]
    assert next(e.progress for e in events if isinstance(e, HookRan)).endswith("blocked: not now")
    assert agent.transcript_path is not None
    assert backup.read_bytes() == agent.transcript_path.read_bytes()
    assert len(anthropic_server.message_requests) == 2  # no summary request was made


def test_stop_hooks_see_the_answer_and_can_send_the_model_back(
    anthropic_server: FakeAnthropicServer, make_agent: MakeAgent
) -> None:
    answers: list[str] = []

    def stop(p: dict[str, Any]) -> dict[str, Any] | None:
        answers.append(p["answer"])
        return {"decision": "block", "reason": "Also save a summary to memory."} if len(answers) == 1 else None

    anthropic_server.script(text_reply("Draft."), text_reply("Saved."))
    result = make_agent(hooks={"Stop": [stop]}).run("Work")
    assert answers == ["Draft."]  # a stop a hook already sent back is not sent back again
    assert result.answer == "Saved."
    assert anthropic_server.message_requests[1].messages[-1] == {
        "role": "user",
        "content": [{"type": "text", "text": "[Stop hook] Also save a summary to memory."}],
    }


def test_failing_and_slow_hooks_are_reported_and_the_loop_goes_on(
    anthropic_server: FakeAnthropicServer, make_agent: MakeAgent
) -> None:
    def broken(_p: dict[str, Any]) -> None:
        raise ValueError("no config here")

    hooks = Hooks({"SessionStart": ({"command": "echo boom >&2; exit 3"}, {"command": "sleep 5", "timeout": 0.2})})
    hooks.add("SessionStart", broken)
    anthropic_server.script(text_reply("Still fine."))
    events = list(make_agent(hooks=hooks).stream("Hi"))
    lines = [e.progress for e in events if isinstance(e, HookRan)]
    assert lines == [
        "[hook] SessionStart `echo boom >&2; exit 3` failed: exit status 3: boom",
        "[hook] SessionStart `sleep 5` failed: timed out after 0.2 s and was stopped",
        "[hook] SessionStart test_failing_and_slow_hooks_are_reported_and_the_loop_goes_on.<locals>.broken failed: "
        "raised ValueError: no config here",
    ]
    assert events[-1].result.answer == "Still fine."  # type: ignore[attr-defined]


def test_hooks_from_settings_and_library_run_in_order(
    tmp_path: Path, anthropic_server: FakeAnthropicServer, make_agent: MakeAgent
) -> None:
    anthropic_server.script(text_reply("ok"))
    stop_file = tmp_path / "stop.json"
    agent = make_agent(hooks={"Stop": [lambda _p: None]}, settings=None)
    agent.hooks.add("Stop", f"cat > {shlex.quote(str(stop_file))}")
    agent.run("Hi")
    data = json.loads(stop_file.read_text())
    assert data["hook_event_name"] == "Stop" and data["answer"] == "ok" and data["turns"] == 1


def test_clear_starts_a_new_session_with_source_clear(
    anthropic_server: FakeAnthropicServer, make_agent: MakeAgent
) -> None:
    sources: list[tuple[str, str]] = []
    anthropic_server.script(text_reply("one"), text_reply("two"))
    agent = make_agent(hooks={"SessionStart": [lambda p: sources.append((p["source"], p["session_id"]))]})
    agent.run("Hi")
    first = agent.session_id
    agent.clear()
    agent.run("Hi again")
    assert sources == [("startup", first), ("clear", agent.session_id)]
    assert agent.session_id != first
    assert anthropic_server.message_requests[1].messages == [
        {"role": "user", "content": [{"type": "text", "text": "Hi again"}]}
    ]
