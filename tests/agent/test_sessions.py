"""Session transcripts: append-only, durable, private; resume rebuilds the exact transcript."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memdir import DirectoryStore, SessionError, Store
from memdir.agent.sessions import SessionLog, find_session, list_sessions, read_session, sessions_dir, store_key
from support.anthropic_server import FakeAnthropicServer, text_reply, tool_use_reply

from .conftest import MakeAgent

VIEW = ("memory", {"command": "view", "path": "/memories"})


def records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_every_message_is_recorded_as_it_happens(anthropic_server: FakeAnthropicServer, make_agent: MakeAgent) -> None:
    anthropic_server.script(tool_use_reply([VIEW]), text_reply("Empty."))
    agent = make_agent()
    agent.run("What is in memory?")
    path = agent.transcript_path
    assert path is not None and path.parent == sessions_dir()
    kinds = [(r["type"], r.get("message", {}).get("role")) for r in records(path)]  # type: ignore[union-attr]
    assert kinds == [("session", None), ("message", "user"), ("message", "assistant"), ("message", "user"),
                     ("message", "assistant")]  # fmt: skip
    header = records(path)[0]
    assert header["id"] == agent.session_id and header["model"] == "claude-sonnet-5-5"
    assert records(path)[1]["prompt"] == "What is in memory?"
    assert "usage" in records(path)[2]


def test_transcripts_are_private(anthropic_server: FakeAnthropicServer, make_agent: MakeAgent) -> None:
    anthropic_server.script(text_reply("ok"))
    agent = make_agent()
    agent.run("secret")
    assert agent.transcript_path is not None
    assert oct(agent.transcript_path.stat().st_mode)[-3:] == "600"
    assert oct(agent.transcript_path.parent.stat().st_mode)[-3:] == "700"


def test_resume_continues_with_the_exact_transcript(
    anthropic_server: FakeAnthropicServer, make_agent: MakeAgent
) -> None:
    anthropic_server.script(tool_use_reply([VIEW]), text_reply("Empty."), text_reply("Still empty."))
    first = make_agent(context="client", clear_at=1, keep_tool_uses=0)  # clearing recorded, then replayed
    first.run("What is in memory?")
    before = list(first.messages)
    first.close()
    resumed = make_agent(resume=first.session_id, context="client", clear_at=1, keep_tool_uses=0)
    assert resumed.session_id == first.session_id
    assert resumed.messages == before
    resumed.run("And now?")
    assert anthropic_server.message_requests[-1].messages[: len(before)] == before
    assert records(first.transcript_path or resumed.transcript_path)[-1]["type"] == "message"  # type: ignore[arg-type]


def test_a_secret_reaches_the_model_but_not_the_session_file(
    anthropic_server: FakeAnthropicServer, make_agent: MakeAgent, store: Store
) -> None:
    """A key typed into a prompt, and the model's tool call carrying it, are redacted on the way to the session
    file as memory redacts them (the model reads the live conversation as sent); a resumed session reads them so."""
    key = "AKIAQ7W3E9R5T1Y8U2I7"
    create = {"command": "create", "path": "/memories/aws.md", "file_text": f"deploy key {key}\n"}
    anthropic_server.script(tool_use_reply([("memory", create)]), text_reply(f"Saved {key}."), text_reply("ok"))
    agent = make_agent()
    agent.run(f"Remember my deploy key {key}")
    assert key in json.dumps(anthropic_server.message_requests[-1].messages)  # the live session, as sent
    assert agent.transcript_path is not None
    on_disk = agent.transcript_path.read_text()
    assert key not in on_disk
    records_with_it = [r for r in records(agent.transcript_path) if "[REDACTED:aws-access-key]" in json.dumps(r)]
    assert len(records_with_it) == 4  # the prompt, the model's call, the tool's note naming the label, the answer
    assert key.encode() not in store.read("/memories/aws.md").content
    agent.close()
    resumed = make_agent(resume=agent.session_id)
    assert key not in json.dumps(resumed.messages) and len(resumed.messages) == 4
    resumed.run("Thanks")  # the redacted transcript is a valid conversation to continue
    assert key not in json.dumps(anthropic_server.message_requests[-1].messages)


def test_resume_by_prefix_and_latest(anthropic_server: FakeAnthropicServer, make_agent: MakeAgent) -> None:
    anthropic_server.script(text_reply("one"), text_reply("two"))
    a, b = make_agent(), make_agent()
    a.run("first")
    b.run("second")
    assert find_session(a.session_id[:-2]) == a.transcript_path
    assert find_session("") == b.transcript_path  # the latest written
    with pytest.raises(SessionError, match="no session match 'nope'"):
        find_session("nope")


def test_a_torn_last_record_is_dropped_and_cut_before_appending(tmp_path: Path) -> None:
    log = SessionLog.create({"id": "s1", "started": "2026-01-01T00:00:00Z"}, tmp_path)
    log.append({"type": "message", "message": {"role": "user", "content": "hi"}, "prompt": "hi"})
    log.close()
    with log.path.open("ab") as fh:
        fh.write(b'{"type": "message", "message": {"role": "assis')  # the process died mid-write
    resumed, state = SessionLog.resume(log.path)
    assert state.messages == [{"role": "user", "content": "hi"}]
    resumed.append({"type": "message", "message": {"role": "assistant", "content": "hello"}})
    resumed.close()
    assert [m["content"] for m in read_session(log.path).messages] == ["hi", "hello"]


def test_a_damaged_record_in_the_middle_is_an_error(tmp_path: Path) -> None:
    log = SessionLog.create({"id": "s2", "started": "x"}, tmp_path)
    log.close()
    with log.path.open("ab") as fh:
        fh.write(b"not json\n" + json.dumps({"type": "message", "message": {"role": "user"}}).encode() + b"\n")
    with pytest.raises(SessionError, match="session s2 is damaged at line 2"):
        read_session(log.path)


def test_resuming_with_nothing_to_resume(make_agent: MakeAgent) -> None:
    with pytest.raises(SessionError, match="there is no session to resume yet"):
        make_agent(resume="")


def test_the_listing(anthropic_server: FakeAnthropicServer, make_agent: MakeAgent) -> None:
    anthropic_server.script(tool_use_reply([VIEW]), text_reply("ok"))
    agent = make_agent()
    agent.run("Tour my memory\nplease")
    [info] = list_sessions()
    assert (info.id, info.turns, info.first_prompt) == (agent.session_id, 2, "Tour my memory\nplease")
    assert info.tokens == agent.usage.total > 0
    assert info.started.endswith("Z")


def test_a_killed_turn_is_repaired_on_resume(tmp_path: Path, anthropic_server: FakeAnthropicServer,
                                             make_agent: MakeAgent) -> None:  # fmt: skip
    log = SessionLog.create({"id": "s3", "started": "x"}, sessions_dir())
    log.append({"type": "message", "message": {"role": "user", "content": [{"type": "text", "text": "go"}]}})
    call = {"type": "tool_use", "id": "toolu_x", "name": "memory", "input": {"command": "view", "path": "/memories"}}
    log.append({"type": "message", "message": {"role": "assistant", "content": [call]}})
    log.close()  # killed before the tool result was written
    anthropic_server.script(text_reply("Resumed."))
    make_agent(resume="s3").run("continue")
    messages = anthropic_server.message_requests[0].messages
    assert messages[2]["content"][0]["tool_use_id"] == "toolu_x"
    assert messages[2]["content"][0]["is_error"] is True
    assert messages[2]["content"][0]["content"].startswith("The session was interrupted")
    assert messages[3] == {"role": "user", "content": [{"type": "text", "text": "continue"}]}


def test_sessions_belong_to_their_store_and_namespace(
    anthropic_server: FakeAnthropicServer, make_agent: MakeAgent, tmp_path: Path
) -> None:
    anthropic_server.script(text_reply("on a"), text_reply("on b"), text_reply("on a, team"))
    one, two = DirectoryStore(tmp_path / "a"), DirectoryStore(tmp_path / "b")
    team = DirectoryStore(tmp_path / "a", namespace="team")
    on_a = make_agent(target=one, store_url=str(tmp_path / "a"))
    on_a.run("first")
    on_b = make_agent(target=two, store_url=f"file://{tmp_path / 'b'}")
    on_b.run("second")
    on_team = make_agent(target=team, store_url=str(tmp_path / "a" / ".." / "a"))  # another spelling, same store
    on_team.run("third")
    a_key = store_key(str(tmp_path / "a"))
    assert [s.id for s in list_sessions(store=a_key, namespace="default")] == [on_a.session_id]
    assert [s.id for s in list_sessions(store=a_key, namespace="team")] == [on_team.session_id]
    assert len(list_sessions()) == 3
    # The latest of store b is b's, though store a's team session ran after it.
    assert find_session("", store=store_key(str(tmp_path / "b")), namespace="default") == on_b.transcript_path
    with pytest.raises(SessionError) as refused:
        make_agent(target=two, store_url=str(tmp_path / "b"), resume=on_a.session_id)
    assert str(refused.value) == (
        f"session {on_a.session_id} ran on {a_key} (namespace default), not on this store "
        f"({store_key(str(tmp_path / 'b'))}, namespace default): its transcript holds that store's memory. "
        f"Resume it with --store {a_key}"
    )
    with pytest.raises(SessionError, match="there is no session to resume yet on this store"):
        make_agent(target=DirectoryStore(tmp_path / "c"), store_url=str(tmp_path / "c"), resume="")
