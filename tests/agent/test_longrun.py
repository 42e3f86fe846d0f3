"""Work across sessions: ``memdir init`` sets up the progress log, the feature checklist and the scripts in
memory; every later session starts with them and is asked to update the progress log before it ends."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memdir import MemoryTool, Origin, open_store
from memdir.agent.backfill import load_backfill
from memdir.agent.longrun import Plan, initializer_prompt, templates
from memdir.agent.prompts import WRAP_UP
from memdir.cli import cli
from support.anthropic_server import FakeAnthropicServer, text_reply, tool_use_reply

PROGRESS = "---\nname: Progress log\ndescription: Done and next\ntype: project\n---\n## Done\n- nothing\n## Next\n- add items\n"
FEATURES = "---\nname: Features\ndescription: The scope\ntype: project\n---\n- [ ] add items\n- [ ] list items\n"
SCRIPTS = "---\nname: Scripts\ndescription: Start and test\ntype: project\n---\n- start: ./init.sh\n- test: pytest -q\n"


@pytest.fixture
def api_env(anthropic_server: FakeAnthropicServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_server.url)


@pytest.fixture
def store_dir(tmp_path: Path) -> str:
    return str(tmp_path / "memory")


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def create(path: str, text: str) -> tuple[str, dict[str, str]]:
    return ("memory", {"command": "create", "path": path, "file_text": text})


def test_init_then_a_session_that_starts_from_the_progress_log(
    anthropic_server: FakeAnthropicServer, api_env: None, store_dir: str
) -> None:
    anthropic_server.script(
        tool_use_reply([create("/memories/features.md", FEATURES), create("/memories/progress.md", PROGRESS)]),
        tool_use_reply([create("/memories/scripts.md", SCRIPTS)]),
        text_reply("Set up: 2 features."),
    )
    result = invoke("init", "--store", store_dir, "A todo CLI", "--feature", "add items", "--test", "pytest -q")
    assert result.exit_code == 0, result.output
    assert result.stdout == "Set up: 2 features.\n"
    asked = anthropic_server.message_requests[0].messages[0]["content"][-1]["text"]
    assert asked == initializer_prompt(Plan("A todo CLI", ("add items",), None, "pytest -q"))

    anthropic_server.script(text_reply("Working on add items."), text_reply("Progress log updated."))
    later = invoke("run", "--store", store_dir, "Carry on")
    assert later.exit_code == 0, later.output
    assert later.stdout == "Working on add items.\n"  # the wrap-up's reply is not the answer
    first = anthropic_server.message_requests[3].messages[0]["content"][0]["text"]
    assert "## /memories/progress.md (saved " in first and "## Next\n- add items" in first
    assert "- [ ] list items" in first and "- test: pytest -q" in first
    wrap_up = anthropic_server.message_requests[4].messages[-1]["content"][-1]
    assert wrap_up == {"type": "text", "text": WRAP_UP}
    assert "[memory backfill] loaded progress.md (" in later.stderr


def test_files_the_initializer_did_not_write_come_from_the_options(
    anthropic_server: FakeAnthropicServer, api_env: None, store_dir: str
) -> None:
    anthropic_server.script(tool_use_reply([create("/memories/features.md", FEATURES)]), text_reply("Partly."))
    result = invoke("init", "--store", store_dir, "A todo CLI", "--start", "./init.sh")
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [
        f"Created a new store at {store_dir}.",  # init may create the store it sets up, and says so
        "[turn 1] memory create /memories/features.md",
        "[init] wrote /memories/progress.md from the options",
        "[init] wrote /memories/scripts.md from the options",
    ]
    memory = Path(store_dir) / "memories"
    assert (memory / "features.md").read_text().startswith("---\nname: Features\n")  # the model's, kept
    assert "- Start-up: ./init.sh" in (memory / "scripts.md").read_text()


def test_template_mode_needs_no_model(anthropic_server: FakeAnthropicServer, store_dir: str) -> None:
    result = invoke("init", "--store", store_dir, "A todo CLI", "--template", "--feature", "add", "--feature", "list")
    assert result.exit_code == 0, result.output
    assert anthropic_server.message_requests == []
    memory = Path(store_dir) / "memories"
    assert "- [ ] add\n- [ ] list\n" in (memory / "features.md").read_text()
    progress = (memory / "progress.md").read_text()
    assert "## Done\n- (nothing yet)\n\n## Next\n- add\n" in progress
    assert "only after it was verified end to end" in progress
    index = (memory / "MEMORY.md").read_text()  # auto memory indexed the three notes
    assert "(features.md)" in index and "(progress.md)" in index and "(scripts.md)" in index


def test_init_refuses_to_run_twice(store_dir: str) -> None:
    assert invoke("init", "--store", store_dir, "x", "--template").exit_code == 0
    again = invoke("init", "--store", store_dir, "x", "--template")
    assert again.exit_code == 1
    assert "memory already holds /memories/progress.md" in again.stderr


def test_the_initializer_prompt_says_how_work_is_done() -> None:
    prompt = initializer_prompt(Plan("Build it", ("one",), "./go", "make test"))
    assert "Do not start the work itself" in prompt
    assert "mark a feature done only after verifying it end to end" in prompt
    assert "- one\nStart-up script: ./go\nTest script: make test" in prompt


def test_the_progress_files_are_always_loaded(tmp_path: Path) -> None:
    with open_store(str(tmp_path / "m")) as store:
        tool = MemoryTool(store, auto_memory=False)
        for path, text in templates(Plan("x", ("a",))).items():
            store.write(path, text.encode(), origin=Origin("user"))
        backfill = load_backfill(tool, budget=0)
        assert backfill is not None
        assert [name for name, _tokens in backfill.items][:3] == ["progress.md", "features.md", "scripts.md"]


# -- the wrap-up ---------------------------------------------------------------------------------------------


def seeded(store_dir: str) -> None:
    with open_store(store_dir) as store:
        store.write("/memories/progress.md", PROGRESS.encode(), origin=Origin("user"))


def test_no_wrap_up_when_the_session_updated_the_log(
    anthropic_server: FakeAnthropicServer, api_env: None, store_dir: str
) -> None:
    seeded(store_dir)
    edit = {"command": "str_replace", "path": "/memories/progress.md", "old_str": "- nothing", "new_str": "- add items"}
    anthropic_server.script(tool_use_reply([("memory", edit)]), text_reply("Added."))
    assert invoke("run", "--store", store_dir, "Do it").exit_code == 0
    assert len(anthropic_server.message_requests) == 2


def test_no_wrap_up_when_asked_not_to_or_without_a_log(
    anthropic_server: FakeAnthropicServer, api_env: None, store_dir: str, tmp_path: Path
) -> None:
    seeded(store_dir)
    anthropic_server.script(text_reply("One."), text_reply("Two."))
    assert invoke("run", "--store", store_dir, "--no-wrap-up", "Do it").exit_code == 0
    assert invoke("run", "--store", str(tmp_path / "empty"), "Do it").exit_code == 0
    assert len(anthropic_server.message_requests) == 2


def test_chat_wraps_up_at_the_end(anthropic_server: FakeAnthropicServer, api_env: None, store_dir: str) -> None:
    seeded(store_dir)
    anthropic_server.script(text_reply("Hello."), text_reply("Logged."))
    result = CliRunner().invoke(cli, ["chat", "--store", store_dir], input="Hi\n/exit\n")
    assert result.exit_code == 0, result.output
    assert anthropic_server.message_requests[-1].messages[-1]["content"][-1]["text"] == WRAP_UP
    assert os.path.isdir(store_dir)
