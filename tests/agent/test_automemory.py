"""Auto memory through the agent, against the fake Messages API: the index's load limit, the tool's upkeep as
the model sees it, the switch, the instructions file, and what comes back after a compaction."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memdir import Origin, Store
from memdir.agent import InstructionsLoaded
from memdir.agent.prompts import AUTO_MEMORY_GUIDANCE, SUMMARY_SYSTEM
from memdir.automemory import AutoMemoryConfig
from support.anthropic_server import FakeAnthropicServer, RecordedRequest, text_reply, tool_use_reply

from .conftest import MakeAgent

NOTE = "---\nname: Tea\ndescription: The user drinks green tea\ntype: user\n---\n\nGreen tea, no sugar.\n"
CLOCK = AutoMemoryConfig(clock=lambda: 1_800_000_000.0)  # 2027-01-15T08:00:00Z
COMPACTION = {"type": "compaction", "content": "Summary of the start.", "encrypted_content": "e==", "signature": "s"}


def memory(**command: Any) -> tuple[str, dict[str, Any]]:
    return ("memory", command)


def first_text(request: RecordedRequest) -> str:
    return "\n".join(b["text"] for b in request.messages[0]["content"] if b["type"] == "text")


def last_results(request: RecordedRequest) -> list[dict[str, Any]]:
    return request.tool_results()


# -- the index's load limit ---------------------------------------------------------------------------------


def test_a_300_line_index_loads_only_its_first_200_lines(
    anthropic_server: FakeAnthropicServer, make_agent: MakeAgent, store: Store
) -> None:
    store.write("/memories/MEMORY.md", "".join(f"- note {n}\n" for n in range(1, 301)).encode(), origin=Origin("user"))
    anthropic_server.script(text_reply("ok"))
    make_agent(auto_memory=True).run("Hi")
    text = first_text(anthropic_server.message_requests[0])
    assert "## /memories/MEMORY.md (first 200 lines or 25 KB)\n- note 1\n" in text
    assert "- note 200\n" in text and "- note 201" not in text


def test_a_45_kb_index_loads_only_its_first_25_kb(
    anthropic_server: FakeAnthropicServer, make_agent: MakeAgent, store: Store
) -> None:
    line = "- " + "x" * 300 + "\n"  # 303 bytes: 150 lines are 45,450 bytes, 84 of them fit in 25,600
    store.write("/memories/MEMORY.md", (line * 150).encode(), origin=Origin("user"))
    anthropic_server.script(text_reply("ok"))
    make_agent(auto_memory=True).run("Hi")
    section = first_text(anthropic_server.message_requests[0]).split("(first 200 lines or 25 KB)\n", 1)[1]
    assert section.split("\n\n## ", 1)[0].count("x" * 300) == 25 * 1024 // len(line) == 84


def test_the_model_is_warned_near_the_limit_and_told_off_past_it(
    anthropic_server: FakeAnthropicServer, make_agent: MakeAgent, store: Store
) -> None:
    store.write("/memories/MEMORY.md", "".join(f"- n{n}.md\n" for n in range(175)).encode(), origin=Origin("user"))
    anthropic_server.script(
        tool_use_reply([memory(command="insert", path="/memories/MEMORY.md", insert_line=175,
                               insert_text="".join(f"- m{n}.md\n" for n in range(10)))]),
        tool_use_reply([memory(command="insert", path="/memories/MEMORY.md", insert_line=185,
                               insert_text="".join(f"- k{n}.md\n" for n in range(20)))]),
        text_reply("I will rewrite the index."),
    )  # fmt: skip
    make_agent(auto_memory=True).run("Note these")
    [near] = last_results(anthropic_server.message_requests[1])
    assert "is_error" not in near
    assert near["content"].startswith(
        "The file /memories/MEMORY.md has been edited.\n\nNote: /memories/MEMORY.md is now 185 lines"
    )
    [over] = last_results(anthropic_server.message_requests[2])
    assert over["is_error"] is True
    assert over["content"].startswith(
        "The file /memories/MEMORY.md has been edited.\n\nError: /memories/MEMORY.md is now 205 lines"
    )
    assert "everything after line 200 will be dropped at the next load. Rewrite the index" in over["content"]
    assert store.read("/memories/MEMORY.md").content.count(b"\n") == 205  # the write was saved


# -- the tool's upkeep, as the model drives it ------------------------------------------------------------------


def test_modified_is_set_on_create_str_replace_and_insert(
    anthropic_server: FakeAnthropicServer, make_agent: MakeAgent, store: Store
) -> None:
    path = "/memories/tea.md"
    stamped = NOTE.replace("type: user\n", "type: user\nmodified: 2027-01-15T08:00:00Z\n")
    anthropic_server.script(
        tool_use_reply([memory(command="create", path=path, file_text=NOTE)]),
        tool_use_reply([memory(command="str_replace", path=path, old_str="no sugar", new_str="one sugar")]),
        tool_use_reply([memory(command="insert", path=path, insert_line=8, insert_text="Never after 6pm.")]),
        text_reply("Saved."),
    )
    seen: list[str] = []
    agent = make_agent(auto_memory=CLOCK)
    for event in agent.stream("Remember my tea"):
        if type(event).__name__ == "ToolFinished":
            seen.append(store.read(path).content.decode())
    assert seen == [
        stamped,
        stamped.replace("no sugar", "one sugar"),
        stamped.replace("no sugar", "one sugar") + "Never after 6pm.\n",
    ]
    assert [r["content"] for r in last_results(anthropic_server.message_requests[1])] == [
        "File created successfully at: /memories/tea.md"
    ]


def test_the_index_line_is_added_moved_and_removed(
    anthropic_server: FakeAnthropicServer, make_agent: MakeAgent, store: Store
) -> None:
    store.write("/memories/MEMORY.md", b"# What I know\n", origin=Origin("user"))
    anthropic_server.script(
        tool_use_reply([memory(command="create", path="/memories/tea.md", file_text=NOTE)]),
        tool_use_reply([memory(command="rename", old_path="/memories/tea.md", new_path="/memories/drinks/tea.md")]),
        tool_use_reply([memory(command="delete", path="/memories/drinks/tea.md")]),
        text_reply("Done."),
    )
    index: list[str] = []
    for event in make_agent(auto_memory=True).stream("Tidy up"):
        if type(event).__name__ == "ToolFinished":
            index.append(store.read("/memories/MEMORY.md").content.decode())
    assert index == [
        "# What I know\n- [Tea](tea.md) — The user drinks green tea\n",
        "# What I know\n- [Tea](drinks/tea.md) — The user drinks green tea\n",
        "# What I know\n",
    ]


@pytest.mark.parametrize(("config", "env", "on"), [("false", "0", True), ("true", "1", False), ("false", None, False)])
def test_the_environment_beats_the_config_both_ways(
    anthropic_server: FakeAnthropicServer,
    make_agent: MakeAgent,
    store: Store,
    _isolated_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    config: str,
    env: str | None,
    on: bool,
) -> None:
    (_isolated_home / "config.toml").write_text(f"[memory]\nauto_memory = {config}\n")
    if env is not None:
        monkeypatch.setenv("MEMDIR_DISABLE_AUTO_MEMORY", env)
    anthropic_server.script(tool_use_reply([memory(command="create", path="/memories/tea.md", file_text=NOTE)]),
                            text_reply("ok"))  # fmt: skip
    make_agent(auto_memory=None).run("Remember my tea")  # None: the settings and the environment decide
    assert (AUTO_MEMORY_GUIDANCE in anthropic_server.message_requests[0].body["system"]) is on
    assert (b"modified:" in store.read("/memories/tea.md").content) is on
    assert (store.stat("/memories/MEMORY.md") is not None) is on


def test_the_guidance_says_what_to_save_and_what_not(
    anthropic_server: FakeAnthropicServer, make_agent: MakeAgent
) -> None:
    anthropic_server.script(text_reply("ok"))
    make_agent(auto_memory=True).run("Hi")
    system = anthropic_server.message_requests[0].body["system"]
    for words in (
        "corrections the user made, preferences they confirmed, decisions",
        "what can be read from the code or the files at hand, what the project instructions already say, secrets",
        "Not every session needs a memory write",
        "user (who the user is", "feedback (corrections", "project (facts and decisions", "reference (where",
        "name: Testing preferences", "mark a feature done only after you verified it end to end",
    ):  # fmt: skip
        assert words in system


# -- the instructions file --------------------------------------------------------------------------------------


def test_instruction_files_are_loaded_whole_first(
    anthropic_server: FakeAnthropicServer, make_agent: MakeAgent, store: Store
) -> None:
    Path("MEMDIR.md").write_text("# Rules\nAlways answer in French.\n" + "filler line\n" * 400)
    Path("CLAUDE.md").write_text("Use pnpm, never npm.\n")
    store.write("/memories/a.md", b"alpha\n", origin=Origin("user"))
    anthropic_server.script(text_reply("ok"))
    events = list(make_agent(auto_memory=True).stream("Hi"))
    memdir_md, claude_md, backfill, prompt = anthropic_server.message_requests[0].messages[0]["content"]
    assert memdir_md["text"].startswith('<project-instructions source="MEMDIR.md">\n')
    assert memdir_md["text"].count("filler line") == 400  # whole, however long
    assert "Use pnpm, never npm." in claude_md["text"]
    assert backfill["text"].startswith("<memory-backfill") and prompt["text"] == "Hi"
    assert [e.progress.split(" (")[0] for e in events if isinstance(e, InstructionsLoaded)] == [
        "[instructions] loaded MEMDIR.md", "[instructions] loaded CLAUDE.md"
    ]  # fmt: skip


COMPACT_RULES = (
    "# Project\nBe brief.\n\n## Compact Instructions\nKeep every file path and error message.\n\n## Other\nx\n"
)


def test_compact_instructions_steer_native_compaction(
    anthropic_server: FakeAnthropicServer, make_agent: MakeAgent
) -> None:
    Path("AGENTS.md").write_text(COMPACT_RULES)
    anthropic_server.script(text_reply("ok"))
    make_agent(compact_instructions="Keep the user's name.").run("Hi")
    compact = anthropic_server.message_requests[0].body["context_management"]["edits"][1]
    assert compact["instructions"] == "Keep the user's name.\n\nKeep every file path and error message."


def test_compact_instructions_steer_the_client_summary(
    anthropic_server: FakeAnthropicServer, make_agent: MakeAgent
) -> None:
    Path("MEMDIR.md").write_text(COMPACT_RULES)
    anthropic_server.script(tool_use_reply([memory(command="view", path="/memories")]), text_reply("one"),
                            text_reply("## Requests and intent\n- look"))  # fmt: skip
    agent = make_agent(context="off", keep_recent=1)
    agent.run("Look")
    list(agent.compact())
    summary = anthropic_server.message_requests[-1]
    assert summary.body["system"] == SUMMARY_SYSTEM
    assert (
        "Follow the project's compact instructions:\nKeep every file path and error message."
        in (summary.messages[0]["content"])
    )


# -- after a compaction -----------------------------------------------------------------------------------------


def touch_files(anthropic_server: FakeAnthropicServer, store: Store) -> list[str]:
    """Seven memory files the model views in this order (big.md over 5,000 tokens); the script for it."""
    order = ["f0", "f1", "big", "f2", "f3", "f4", "f5"]
    for name in order:
        text = "B" * 24_000 if name == "big" else f"content of {name}\n"
        store.write(f"/memories/{name}.md", text.encode(), origin=Origin("user"))
    store.write("/memories/MEMORY.md", b"- [F](f0.md) the index line\n", origin=Origin("user"))
    anthropic_server.script(
        *[tool_use_reply([memory(command="view", path=f"/memories/{name}.md")]) for name in order],
        text_reply("Read them all."),
    )
    return order


def test_client_compaction_puts_back_instructions_index_and_the_5_newest_files(
    anthropic_server: FakeAnthropicServer, make_agent: MakeAgent, store: Store
) -> None:
    Path("MEMDIR.md").write_text("Rule: version 1.\n")
    touch_files(anthropic_server, store)
    hooks = {"SessionStart": [lambda p: "git log says: fix bug" if p["source"] == "compact" else None]}
    agent = make_agent(auto_memory=True, context="off", keep_recent=1, hooks=hooks, backfill_tokens=0)
    agent.run("Read the files")
    Path("MEMDIR.md").write_text("Rule: version 2.\n")  # edited on disk while the session ran
    anthropic_server.script(text_reply("## Requests and intent\n- read files"), text_reply("ok"))
    events = list(agent.compact())
    agent.run("Go on")
    text = first_text(anthropic_server.message_requests[-1])
    assert "Rule: version 2." in text and "Rule: version 1." not in text
    assert text.index("<project-instructions") < text.index("reloaded after compaction")
    assert "## /memories/MEMORY.md" in text and "- [F](f0.md) the index line" in text
    reread = [
        line.split(" (")[0] for line in text.split("\n") if line.startswith(("## /memories/f", "## /memories/big"))
    ]
    assert reread == ["## /memories/f5.md", "## /memories/f4.md", "## /memories/f3.md", "## /memories/f2.md",
                      "## /memories/big.md"]  # fmt: skip
    assert "## /memories/big.md (referenced file: about 6,000 tokens, too long to load here" in text
    assert "B" * 100 not in text and "content of f1" not in text and "content of f5" in text
    assert "git log says: fix bug" in text
    assert text.index("reloaded after compaction") < text.index("<conversation-summary>")
    progress = [e.progress for e in events if e.progress]
    assert "[instructions] reloaded MEMDIR.md (5 tokens)" in progress


def test_native_compaction_pauses_and_gets_the_same_back(
    anthropic_server: FakeAnthropicServer, make_agent: MakeAgent, store: Store
) -> None:
    Path("MEMDIR.md").write_text("Rule: version 1.\n")
    store.write("/memories/MEMORY.md", b"- [Tea](tea.md)\n", origin=Origin("user"))
    store.write("/memories/tea.md", b"green tea\n", origin=Origin("user"))
    anthropic_server.script(
        tool_use_reply([memory(command="view", path="/memories/tea.md")]),
        {"content": [COMPACTION], "stop_reason": "compaction"},
        text_reply("Carrying on."),
    )
    hooks = {"SessionStart": [lambda p: "after compaction" if p["source"] == "compact" else None]}
    agent = make_agent(auto_memory=True, hooks=hooks)

    def edit_rules(event: object) -> None:
        if type(event).__name__ == "ToolFinished":
            Path("MEMDIR.md").write_text("Rule: version 2.\n")

    for event in agent.stream("Tea?"):
        edit_rules(event)
    last = anthropic_server.message_requests[2].messages
    assert last[-2] == {"role": "assistant", "content": [COMPACTION]}
    assert last[-1]["role"] == "user"
    text = "\n".join(b["text"] for b in last[-1]["content"])
    assert "Rule: version 2." in text and "- [Tea](tea.md)" in text
    assert "## /memories/tea.md (saved" in text and "green tea" in text
    assert "after compaction" in text


def test_off_means_the_index_is_neither_loaded_nor_kept(
    anthropic_server: FakeAnthropicServer, make_agent: MakeAgent, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = "- [Coffee](coffee.md) — the user drinks coffee\n"
    store.write("/memories/MEMORY.md", index.encode(), origin=Origin("user"))
    store.write("/memories/notes.md", b"a plain note\n", origin=Origin("user"))
    monkeypatch.setenv("MEMDIR_DISABLE_AUTO_MEMORY", "1")
    anthropic_server.script(tool_use_reply([memory(command="create", path="/memories/tea.md", file_text=NOTE)]),
                            text_reply("ok"))  # fmt: skip
    agent = make_agent(auto_memory=None)
    agent.run("Remember my tea")
    first = first_text(anthropic_server.message_requests[0])
    assert "a plain note" in first  # the backfill itself still runs
    assert "the user drinks coffee" not in first  # not as the index, not as an ordinary recent file either
    assert [name for name, _ in agent.backfill.items if "MEMORY" in name] == []  # type: ignore[union-attr]
    assert store.read("/memories/MEMORY.md").content.decode() == index  # not maintained: no line for tea.md
    assert b"modified:" not in store.read("/memories/tea.md").content
