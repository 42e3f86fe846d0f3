"""A directory exists while it holds a file, on every backend: the directory store's empty directories.

SQLite has no directories of its own, so an empty directory the directory store finds on disk (made by hand, or
left by a delete) must not be there for the tool either: `view` says it does not exist, and a file or a rename
may take its path. A directory a delete empties is pruned once the next command is done (or on close), so a note
deleted and written again does not remove and re-make its directory each time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memdir import MemoryTool, open_store


def texts(tool: MemoryTool, *commands: dict[str, Any]) -> list[str]:
    return [tool.execute(c).text for c in commands]


@pytest.fixture
def base(tmp_path: Path) -> Path:
    return tmp_path / "store"


COMMANDS: list[dict[str, Any]] = [
    {"command": "view", "path": "/memories/empty"},
    {"command": "view", "path": "/memories"},
    {"command": "delete", "path": "/memories/empty"},
    {"command": "rename", "old_path": "/memories/empty", "new_path": "/memories/other"},
    {"command": "create", "path": "/memories/empty", "file_text": "now a file\n"},
    {"command": "view", "path": "/memories/empty"},
    {"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/hollow"},
    {"command": "view", "path": "/memories"},
]


def test_a_hand_made_empty_tree_is_not_there_as_on_sqlite(base: Path, tmp_path: Path) -> None:
    answers = []
    for url in (str(base), f"sqlite:///{tmp_path / 'm.db'}"):
        with open_store(url) as store, MemoryTool(store) as tool:
            tool.execute({"command": "create", "path": "/memories/a.md", "file_text": "a\n"})
            if url == str(base):
                (base / "memories" / "empty" / "sub" / "deeper").mkdir(parents=True)
                (base / "memories" / "hollow" / "sub").mkdir(parents=True)
            answers.append(texts(tool, *COMMANDS))
    directory, sqlite = answers
    assert directory == sqlite
    assert directory[0] == "The path /memories/empty does not exist. Please provide a valid path."
    assert directory[4] == "File created successfully at: /memories/empty"
    assert (base / "memories" / "empty").read_bytes() == b"now a file\n"
    assert (base / "memories" / "hollow").read_bytes() == b"a\n"


def test_a_directory_with_a_hidden_file_is_kept_whole(base: Path) -> None:
    with open_store(str(base)) as store, MemoryTool(store) as tool:
        (base / "memories" / "kept").mkdir(parents=True)
        (base / "memories" / "kept" / ".notes").write_bytes(b"a person's own file\n")
        result = tool.execute({"command": "create", "path": "/memories/kept", "file_text": "x"})
        assert result.text == "Error: File /memories/kept already exists"
    assert (base / "memories" / "kept" / ".notes").read_bytes() == b"a person's own file\n"  # nothing lost


def test_a_directory_a_delete_empties_goes_after_the_next_write_or_on_close(base: Path) -> None:
    store = open_store(str(base))
    tool = MemoryTool(store)
    tool.execute({"command": "create", "path": "/memories/topic/a.md", "file_text": "a\n"})
    tool.execute({"command": "delete", "path": "/memories/topic/a.md"})
    assert (base / "memories" / "topic").is_dir()  # still on disk ...
    assert tool.execute({"command": "view", "path": "/memories/topic"}).text == (
        "The path /memories/topic does not exist. Please provide a valid path."  # ... but not there for memdir
    )
    tool.execute({"command": "create", "path": "/memories/topic/b.md", "file_text": "b\n"})  # written again
    assert (base / "memories" / "topic" / "b.md").read_bytes() == b"b\n"
    tool.execute({"command": "delete", "path": "/memories/topic/b.md"})
    tool.execute({"command": "create", "path": "/memories/c.md", "file_text": "c\n"})  # any other write
    assert not (base / "memories" / "topic").exists()
    tool.execute({"command": "rename", "old_path": "/memories/c.md", "new_path": "/memories/moved/c.md"})
    tool.execute({"command": "rename", "old_path": "/memories/moved/c.md", "new_path": "/memories/c.md"})
    assert (base / "memories" / "moved").is_dir()
    tool.close()
    store.close()
    assert not (base / "memories" / "moved").exists()
