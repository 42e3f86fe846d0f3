"""The agent commands end to end: real ``memdir`` processes (and the CLI in-process) against the fake APIs."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from memdir import ToolResult
from memdir.agent.transcript import orphans
from memdir.cli import cli
from memdir.cli._chat import Chat
from support.anthropic_server import FakeAnthropicServer, RecordedRequest, text_reply, tool_use_reply
from support.openai_server import FakeOpenAIServer, chat_text, chat_tool_calls

from .conftest import MakeAgent

SPICY = {
    "command": "create",
    "path": "/memories/preferences.md",
    "file_text": "The user does not eat spicy food; avoid spicy restaurants.\n",
}


@pytest.fixture
def api_env(anthropic_server: FakeAnthropicServer, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The environment pointing the SDK at the fake server (set here for in-process runs, returned for others)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_server.url)
    return dict(os.environ)


def memdir(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memdir", *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )


def invoke(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input)


def test_remember_in_one_process_recall_in_the_next(
    anthropic_server: FakeAnthropicServer, api_env: dict[str, str], tmp_path: Path
) -> None:
    store = str(tmp_path / "memory")
    anthropic_server.script(tool_use_reply([("memory", SPICY)]), text_reply("Got it: no spicy places."))
    first = memdir("run", "--store", store, "Remember: I don't like spicy food.", env=api_env)
    assert first.returncode == 0, first.stderr
    assert first.stdout == "Got it: no spicy places.\n"
    assert "[turn 1] memory create /memories/preferences.md\n" in first.stderr
    assert (tmp_path / "memory" / "memories" / "preferences.md").read_text() == SPICY["file_text"]

    anthropic_server.script(text_reply("Try the mild noodle bar."))
    second = memdir("run", "--store", store, "Any good restaurants nearby?", env=api_env)
    assert second.returncode == 0, second.stderr
    assert second.stdout == "Try the mild noodle bar.\n"
    assert "[memory backfill] loaded preferences.md (" in second.stderr
    [request] = anthropic_server.message_requests[2:]  # one request: no tool call was needed to recall
    backfill = request.messages[0]["content"][0]["text"]
    assert backfill.startswith('<memory-backfill source="earlier sessions">')
    assert "The user does not eat spicy food; avoid spicy restaurants." in backfill


def test_the_answer_and_the_progress_cannot_act_on_the_terminal(
    anthropic_server: FakeAnthropicServer, api_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model led to answer with an escape sequence (or to name one in a tool call) cannot erase lines or set the
    window title of the terminal it runs in: on a terminal what would act is shown escaped; a pipe gets the answer."""
    monkeypatch.setattr("memdir.cli._agent.stdout_is_tty", lambda: True)
    hostile = {"command": "view", "path": "/memories/\x1b]0;pwned\x07.md"}
    anthropic_server.script(tool_use_reply([("memory", hostile)]), text_reply("Done.\x1b[2K\x1b[1A \u202eok"))
    result = invoke("run", "--store", str(tmp_path / "m"), "Hi")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "Done.\\x1b[2K\\x1b[1A \\u202eok\n"
    assert "\x1b" not in result.stderr and "\\x1b]0;pwned\\x07" in result.stderr


def test_json_output(anthropic_server: FakeAnthropicServer, api_env: dict[str, str], tmp_path: Path) -> None:
    anthropic_server.script(text_reply("Four."))
    result = invoke("run", "--store", str(tmp_path / "m"), "--json", "2+2?")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["answer"] == "Four." and data["turns"] == 1 and data["stop_reason"] == "end_turn"
    assert data["usage"]["input_tokens"] > 0 and data["session_id"]


def test_a_missing_key_is_one_line_saying_what_to_set(tmp_path: Path) -> None:
    result = invoke("run", "--store", str(tmp_path / "m"), "hi")
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1
    assert not (tmp_path / "m").exists()  # no store is made for a session that cannot start
    assert result.stderr.startswith("Error: ANTHROPIC_API_KEY is not set: export ANTHROPIC_API_KEY=")


def test_max_turns(anthropic_server: FakeAnthropicServer, api_env: dict[str, str], tmp_path: Path) -> None:
    anthropic_server.script(tool_use_reply([("memory", {"command": "view", "path": "/memories"})]))
    result = invoke("run", "--store", str(tmp_path / "m"), "--max-turns", "1", "Loop")
    assert result.exit_code == 1
    assert result.stderr.splitlines()[-1].startswith(
        "Error: stopped after 1 turn without a final answer (max_turns is 1); continue with --resume "
    )


def test_settings_files_and_options(
    anthropic_server: FakeAnthropicServer, api_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "memdir.toml").write_text('[agent]\nmodel = "claude-project"\ncontext = "off"\nmax_turns = 1\n')
    monkeypatch.chdir(tmp_path)
    view = tool_use_reply([("memory", {"command": "view", "path": "/memories"})])
    anthropic_server.script(view, view, text_reply("ok"))
    assert invoke("run", "--store", "m", "Go").exit_code == 1  # max_turns = 1 from the file
    assert invoke("run", "--store", "m", "--max-turns", "3", "--model", "claude-cli", "Go").exit_code == 0
    bodies = [r.body for r in anthropic_server.message_requests]
    assert [b["model"] for b in bodies] == ["claude-project", "claude-cli", "claude-cli"]
    assert all("context_management" not in b for b in bodies)


def test_the_openai_provider_from_the_command_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAIServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        server.script(chat_tool_calls([("memory", SPICY)]), chat_text("Saved."))
        result = invoke("run", "--store", str(tmp_path / "m"), "--provider", "openai", "--model", "qwen3", "Remember")
        assert result.exit_code == 0, result.stderr
        assert result.stdout == "Saved.\n"
        assert server.chat_requests[0].headers["authorization"] == "Bearer memdir-local"


def test_resume_after_the_process_was_killed(
    anthropic_server: FakeAnthropicServer, api_env: dict[str, str], tmp_path: Path
) -> None:
    gate = threading.Event()

    def hang(_request: RecordedRequest) -> dict[str, Any]:
        gate.wait(30)
        return text_reply("too late")

    store = str(tmp_path / "memory")
    anthropic_server.script(tool_use_reply([("memory", SPICY)]), hang)
    process = subprocess.Popen(
        [sys.executable, "-m", "memdir", "run", "--store", store, "Remember my food preference."],
        env=api_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while len(anthropic_server.message_requests) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        gate.set()
    killed = anthropic_server.message_requests[1].messages
    anthropic_server.script(text_reply("Resumed."))
    resumed = memdir("run", "--store", store, "Go on.", "--resume", env=api_env)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout == "Resumed." + "\n"
    assert anthropic_server.message_requests[2].messages == [
        *killed,
        {"role": "user", "content": [{"type": "text", "text": "Go on."}]},
    ]


def test_chat_with_piped_input_and_slash_commands(
    anthropic_server: FakeAnthropicServer, api_env: dict[str, str], tmp_path: Path
) -> None:
    anthropic_server.script(
        tool_use_reply([("memory", SPICY)]), text_reply("Noted, no spice."),
        text_reply("## Requests and intent\n- remember food"),  # the /compact summary
        text_reply("Fresh start."),
    )  # fmt: skip
    lines = ["Remember: no spicy food", "/memory", "/context", "/compact food", "/nope", "/clear", "Hello again",
             "/resume", "/exit", "never sent"]  # fmt: skip
    result = invoke("chat", "--store", str(tmp_path / "m"), input="\n".join(lines) + "\n")
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "Noted, no spice.\n" in out and "Fresh start.\n" in out
    assert "Memory: 1 file, 59 bytes under /memories" in out
    assert "Loaded at start: nothing" in out
    for category in ("system", "tools", "memory", "messages", "total", "counted"):
        assert f"\n{category}" in "\n" + out
    assert "Started a new conversation (session " in out
    assert "Continue one with /resume SESSION." in out
    assert "[context] compacted " in result.stderr
    assert "Unknown command /nope; /help lists them." in result.stderr
    assert len(anthropic_server.message_requests) == 4  # nothing after /exit
    assert anthropic_server.message_requests[3].messages[0]["content"][-1]["text"] == "Hello again"


def test_chat_ctrl_c_cancels_the_turn_not_the_session(
    anthropic_server: FakeAnthropicServer, make_agent: MakeAgent, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    def interrupted(_args: dict[str, Any]) -> ToolResult:
        raise KeyboardInterrupt  # Ctrl-C while a tool runs

    anthropic_server.script(tool_use_reply([("slow", {})]), text_reply("Still here."))
    agent = make_agent(extra_tools=[({"name": "slow", "input_schema": {"type": "object"}}, None, interrupted)])
    monkeypatch.setattr(sys, "stdin", io.StringIO("Do the slow thing\nAre you there?\n"))
    Chat(agent, interactive=False).loop()
    captured = capsys.readouterr()
    assert "[cancelled]" in captured.err
    assert "Still here.\n" in captured.out
    last = anthropic_server.message_requests[-1].messages
    assert orphans(last) == []
    assert last[2]["content"][0]["content"].startswith("The user cancelled this tool call")


def test_sessions_lists_what_ran(
    anthropic_server: FakeAnthropicServer, api_env: dict[str, str], tmp_path: Path
) -> None:
    anthropic_server.script(tool_use_reply([("memory", {"command": "view", "path": "/memories"})]), text_reply("ok"))
    run = invoke("run", "--store", str(tmp_path / "m"), "--json", "Look at\n  my memory")
    session = json.loads(run.stdout)["session_id"]
    listing = invoke("sessions", "--store", str(tmp_path / "m"))
    assert listing.exit_code == 0
    [line] = listing.stdout.splitlines()
    fields = line.split("\t")
    assert fields[0] == session and fields[2] == "2" and int(fields[3]) > 0
    assert fields[4] == "Look at my memory"
    assert json.loads(invoke("sessions", "--json", "--store", str(tmp_path / "m")).stdout)[0]["first_prompt"] == (
        "Look at\n  my memory"
    )


def test_resume_on_another_store_is_refused_and_sessions_lists_only_this_stores(
    anthropic_server: FakeAnthropicServer, api_env: dict[str, str], tmp_path: Path
) -> None:
    anthropic_server.script(text_reply("Noted on A."))
    on_a = invoke("run", "--store", str(tmp_path / "a"), "--json", "Remember the code word: apple")
    session = json.loads(on_a.stdout)["session_id"]
    other = invoke("run", "--store", str(tmp_path / "b"), "--resume", session, "What is the code word?")
    assert (other.exit_code, other.stdout) == (1, "")
    assert other.stderr.startswith(f"Error: session {session} ran on file://{tmp_path / 'a'} (namespace default), ")
    assert other.stderr.endswith(f"Resume it with --store file://{tmp_path / 'a'}\n")
    assert len(anthropic_server.message_requests) == 1  # nothing was sent with A's memory
    latest = invoke("run", "--store", str(tmp_path / "b"), "--resume", "", "Hello?")
    assert latest.exit_code == 1
    assert "there is no session to resume yet on this store" in latest.stderr
    empty = invoke("sessions", "--store", str(tmp_path / "b"))
    assert (empty.exit_code, empty.stdout) == (0, "")
    assert empty.stderr == (
        f"No sessions yet for file://{tmp_path / 'b'} (namespace default); --all lists every store's.\n"
    )
    listed = invoke("sessions", "--all").stdout.splitlines()
    assert [line.split("\t")[4:6] for line in listed] == [[f"file://{tmp_path / 'a'}", "default"]]


def test_chat_says_where_it_is_once_and_resume_counts_in_words(
    anthropic_server: FakeAnthropicServer, api_env: dict[str, str], tmp_path: Path
) -> None:
    anthropic_server.script(text_reply("One."), text_reply("Two."))
    store = str(tmp_path / "m")
    first = invoke("chat", "--store", store, input="Say one\n")
    assert first.stderr.splitlines()[:3] == [
        f"Created a new store at {store}.",
        f"memdir chat: store file://{store} (namespace default), model claude-sonnet-5-5.",
        "/help lists the commands; /exit or Ctrl-D ends the chat.",
    ]
    second = invoke("chat", "--store", store, input="Say two\n/resume\n")
    assert second.stderr.count("memdir chat: store") == 1
    assert "\t1 turn\tSay one" in second.stdout
    assert "turns\tSay one" not in second.stdout


def test_the_chat_input_history_keeps_no_secret(tmp_path: Path, make_agent: MakeAgent) -> None:
    """Up/down history recalls what was typed in this chat; its file keeps it as the session file does."""
    from memdir.cli._chat import _history

    key = "AKIAQ7W3E9R5T1Y8U2I7"
    history = _history(tmp_path / "chat_history", make_agent().kept_on_disk())
    history.append_string(f"my deploy key is {key}")
    on_disk = (tmp_path / "chat_history").read_text()
    assert key not in on_disk and "my deploy key is [REDACTED:aws-access-key]" in on_disk
    assert history.get_strings()[-1] == f"my deploy key is {key}"
