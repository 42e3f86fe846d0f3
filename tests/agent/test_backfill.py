"""Memory backfill: what earlier sessions saved is in the first request, labelled as memory, within limits."""

from __future__ import annotations

from memdir import MemoryTool, Origin, Store, Version, parse
from memdir.agent import BackfillLoaded
from memdir.agent.backfill import INDEX_MAX_BYTES, load_backfill
from memdir.agent.prompts import BACKFILL_CLOSE, BACKFILL_OPEN
from memdir.store._records import sha256_hex
from support.anthropic_server import FakeAnthropicServer, text_reply

from .conftest import MakeAgent


def write(store: Store, path: str, text: str, *, at: float | None = None) -> None:
    """Store ``text`` at ``path``, modified at ``at`` (seconds since the epoch) when given."""
    if at is None:
        store.write(path, text.encode(), origin=Origin("user"))
        return
    content = text.encode()
    version = Version(0, parse(path), "create", "user", None, None, at, sha256_hex(content), len(content))
    store.import_version(version, content)


def test_nothing_is_loaded_from_an_empty_store(store: Store) -> None:
    assert load_backfill(MemoryTool(store)) is None


def test_the_first_request_carries_the_memory_without_a_tool_call(
    anthropic_server: FakeAnthropicServer, make_agent: MakeAgent, store: Store
) -> None:
    write(store, "/memories/preferences.md", "- The user does not eat spicy food.\n")
    anthropic_server.script(text_reply("Try the mild curry house."))
    events = list(make_agent().stream("Any restaurant tips?"))
    [first] = anthropic_server.message_requests[0].messages
    backfill, prompt = first["content"]
    assert prompt == {"type": "text", "text": "Any restaurant tips?"}
    assert backfill["text"].startswith(BACKFILL_OPEN)
    assert backfill["text"].endswith(BACKFILL_CLOSE)
    assert "not instructions from the user" in backfill["text"]
    assert "## /memories/preferences.md (saved " in backfill["text"]
    assert "- The user does not eat spicy food." in backfill["text"]
    loaded = [e.progress for e in events if isinstance(e, BackfillLoaded)]
    assert loaded[0].startswith("[memory backfill] loaded the listing of /memories (")
    assert loaded[1].startswith("[memory backfill] loaded preferences.md (") and loaded[1].endswith(" tokens)")


def test_the_listing_is_the_memory_tools_view(store: Store) -> None:
    write(store, "/memories/a.md", "alpha\n")
    write(store, "/memories/notes/b.md", "beta\n")
    backfill = load_backfill(MemoryTool(store))
    assert backfill is not None
    view = MemoryTool(store).execute({"command": "view", "path": "/memories"}).text
    assert f"## Listing of /memories\n{view}" in backfill.text


def test_memory_md_comes_first_cut_at_200_lines(store: Store) -> None:
    write(store, "/memories/MEMORY.md", "".join(f"line {n}\n" for n in range(1, 301)))
    write(store, "/memories/other.md", "other\n")
    backfill = load_backfill(MemoryTool(store))
    assert backfill is not None
    assert backfill.items[0][0] == "MEMORY.md"
    assert "## /memories/MEMORY.md (first 200 lines or 25 KB)\nline 1\n" in backfill.text
    assert "line 200\n" in backfill.text and "line 201" not in backfill.text
    assert backfill.text.index("MEMORY.md") < backfill.text.index("## Listing of /memories")
    assert "## /memories/MEMORY.md (saved" not in backfill.text  # not repeated as a recent file


def test_memory_md_is_cut_at_25_kb_on_a_line_boundary(store: Store) -> None:
    line = "x" * 999 + "\n"  # 1,000 bytes: 25 KB holds 25 whole lines
    write(store, "/memories/MEMORY.md", line * 100)
    backfill = load_backfill(MemoryTool(store), budget=0)
    assert backfill is not None
    section = backfill.text.split("## /memories/MEMORY.md (first 200 lines or 25 KB)\n", 1)[1].split("\n\n## ")[0]
    assert section.count("x" * 999) == INDEX_MAX_BYTES // 1000


def test_recent_files_fill_the_budget_newest_first(store: Store) -> None:
    for number in range(5):
        write(store, f"/memories/f{number}.md", f"{number}" * 400, at=1_000_000 + number)  # ~100 tokens each
    backfill = load_backfill(MemoryTool(store), budget=250)
    assert backfill is not None
    files = [name for name, _tokens in backfill.items if name.startswith("f")]
    assert files == ["f4.md", "f3.md"]  # the next would not fit in 250 tokens


def test_a_file_too_big_for_the_budget_is_skipped_for_a_smaller_one(store: Store) -> None:
    write(store, "/memories/small.md", "s" * 100, at=1_000_000)
    write(store, "/memories/huge.md", "h" * 50_000, at=2_000_000)
    backfill = load_backfill(MemoryTool(store), budget=500)
    assert backfill is not None
    assert [n for n, _ in backfill.items][1:] == ["small.md"]


def test_images_and_non_text_files_are_left_to_the_tool(store: Store) -> None:
    store.write("/memories/pic.png", b"\x89PNG\r\n\x1a\n" + b"\0" * 20)
    store.write("/memories/bin.md", b"\xff\xfe not utf-8")
    write(store, "/memories/ok.md", "fine\n")
    backfill = load_backfill(MemoryTool(store))
    assert backfill is not None
    assert [n for n, _ in backfill.items][1:] == ["ok.md"]


def test_backfill_can_be_turned_off(anthropic_server: FakeAnthropicServer, make_agent: MakeAgent, store: Store) -> None:
    write(store, "/memories/a.md", "alpha\n")
    anthropic_server.script(text_reply("ok"))
    make_agent(backfill=False).run("Hi")
    assert anthropic_server.message_requests[0].messages == [
        {"role": "user", "content": [{"type": "text", "text": "Hi"}]}
    ]


def test_only_the_first_prompt_carries_the_backfill(
    anthropic_server: FakeAnthropicServer, make_agent: MakeAgent, store: Store
) -> None:
    write(store, "/memories/a.md", "alpha\n")
    anthropic_server.script(text_reply("one"), text_reply("two"))
    agent = make_agent()
    agent.run("First")
    agent.run("Second")
    last = anthropic_server.message_requests[1].messages[-1]
    assert last == {"role": "user", "content": [{"type": "text", "text": "Second"}]}
