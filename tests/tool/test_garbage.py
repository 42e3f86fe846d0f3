"""A memory-tool command leaves no reference cycles behind, on every backend.

Garbage in a cycle waits for CPython's cyclic collector, and each young collection promotes survivors until a
full pass runs over the embedding program's whole heap: with the Anthropic SDK loaded, a pause of tens of
milliseconds every thousand commands or so (the directory store's pending file operations once held themselves
through the actions that noted what they did). Freed by reference counting, nothing waits.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest

from memdir import MemoryTool, Store

NOTE = "".join(f"- note {i}: the customer prefers email follow-ups on Tuesdays\n" for i in range(16))
INDEX_NOTE = "---\nname: prefs\ndescription: what the user prefers\ntype: user\n---\nEmail on Tuesdays.\n"

COMMANDS: list[dict[str, Any]] = [
    {"command": "create", "path": "/memories/bench/note.md", "file_text": NOTE},
    {"command": "view", "path": "/memories/bench/note.md"},
    {"command": "str_replace", "path": "/memories/bench/note.md", "old_str": "note 7:", "new_str": "note seven:"},
    {"command": "insert", "path": "/memories/bench/note.md", "insert_line": 3, "insert_text": "- inserted\n"},
    {"command": "view", "path": "/memories"},
    {"command": "rename", "old_path": "/memories/bench/note.md", "new_path": "/memories/bench/old.md"},
    {"command": "delete", "path": "/memories/bench/old.md"},
    {"command": "create", "path": "/memories/prefs.md", "file_text": INDEX_NOTE},  # auto memory indexes it
    {"command": "rename", "old_path": "/memories/prefs.md", "new_path": "/memories/user/prefs.md"},
    {"command": "delete", "path": "/memories/user"},
    # Errors too: each is an exception caught on its way to a result.
    {"command": "view", "path": "/memories/missing.md"},
    {"command": "str_replace", "path": "/memories/MEMORY.md", "old_str": "absent", "new_str": "x"},
    {"command": "create", "path": "/memories/../etc/passwd", "file_text": "x"},
    {"command": "rename", "old_path": "/memories/missing", "new_path": "/memories/elsewhere"},
    {"command": "nonsense"},
]


@pytest.fixture
def collector_off() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


# Not "remote": its test server runs in this process, and the web framework's own garbage would count here.
@pytest.mark.parametrize("backend", ["memory", "sqlite", "directory", "postgres"], indirect=True)
@pytest.mark.usefixtures("collector_off")
def test_no_command_leaves_cyclic_garbage(store: Store) -> None:
    tool = MemoryTool(store)
    for command in COMMANDS:  # once to warm caches (compiled patterns, prepared statements, lazy imports)
        tool.execute(command)
    gc.collect()
    left = {}
    for command in COMMANDS:
        result = tool.execute(command)
        del result
        left[f"{command['command']} {command.get('path', command.get('old_path', ''))}"] = gc.collect()
    tool.close()
    assert left == dict.fromkeys(left, 0)
