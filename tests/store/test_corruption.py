"""Damaged store files: a clean `CorruptStoreError` / `StorageError` (no host path in it), memory files left
alone, and the memory tool answering with an error result instead of raising.

Damage is made deterministically: garbage over the whole file, a valid header over garbage, a truncated file,
or one page of the database overwritten where a known file's content lives.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memdir import CorruptStoreError, MemdirError, MemoryTool, StorageError, Store, open_store

PAGE = 4096
MARKER = "MARKER-7f3a9c-"
BIG = MARKER + "q" * 20_000 + "\n"


def fill(store: Store) -> None:
    tool = MemoryTool(store)
    for i in range(30):
        assert not tool.execute(
            {"command": "create", "path": f"/memories/f{i}.md", "file_text": f"{i}\n" * 50}
        ).is_error
    assert not tool.execute({"command": "create", "path": "/memories/big.md", "file_text": BIG}).is_error


def garbage(path: Path) -> None:
    path.write_bytes(b"this is not a database " * (path.stat().st_size // 23 + 1))


def header_then_garbage(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[:100] + bytes((i * 7919) % 251 for i in range(len(data) - 100)))


def truncated(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:1500])


def zero_length_garbage_tail(path: Path) -> None:
    data, page = path.read_bytes(), page_size(path)
    path.write_bytes(data[:page] + b"\xff" * (len(data) - page))


DAMAGE: dict[str, Callable[[Path], None]] = {
    "garbage": garbage,
    "header-then-garbage": header_then_garbage,
    "truncated": truncated,
    "garbage-after-first-page": zero_length_garbage_tail,
}


def store_files(tmp_path: Path, kind: str) -> tuple[str, Path]:
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'memory.db'}", tmp_path / "memory.db"
    return str(tmp_path / "store"), tmp_path / "store" / ".memdir" / "index.db"


def snapshot(memories: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(memories)): (p.read_bytes(), p.stat().st_mtime_ns) for p in memories.rglob("*") if p.is_file()
    }


@pytest.mark.parametrize("damage", DAMAGE.values(), ids=DAMAGE.keys())
@pytest.mark.parametrize("kind", ["sqlite", "directory"])
def test_opening_a_damaged_store_raises_a_clean_error(
    tmp_path: Path, kind: str, damage: Callable[[Path], None]
) -> None:
    url, db = store_files(tmp_path, kind)
    store = open_store(url)
    fill(store)
    store.close()
    memories = tmp_path / "store" / "memories"
    before = snapshot(memories) if kind == "directory" else {}
    damage(db)
    damaged = db.read_bytes()
    with pytest.raises(StorageError) as caught:
        open_store(url)
    message = str(caught.value)
    assert isinstance(caught.value, CorruptStoreError), f"{type(caught.value).__name__}: {message}"
    assert "damaged" in message or "not a memdir SQLite database" in message
    assert str(tmp_path) not in message and db.name not in message, "a host path leaked"
    assert "\n" not in message
    # Nothing was "repaired" behind the user's back, and the memory files are untouched.
    assert db.read_bytes() == damaged
    if kind == "directory":
        assert snapshot(memories) == before


def page_size(db: Path) -> int:
    """The database's page size, from its header (the directory store's sidecar uses 1 KiB, SQLite 4 KiB)."""
    value = int.from_bytes(db.read_bytes()[16:18], "big")
    return 65536 if value == 1 else value


def find_page(db: Path, needle: bytes) -> int:
    data = db.read_bytes()
    at = data.find(needle)
    assert at >= 0, "the marker is not in the database file"
    return at - at % page_size(db)


def damage_page_holding(db: Path, needle: bytes) -> None:
    """Overwrite the page holding ``needle``, and every overflow page of the same content."""
    data, size = bytearray(db.read_bytes()), page_size(db)
    start = find_page(db, needle)
    data[start : start + size] = b"\xa5" * size
    at = 0
    while (at := data.find(b"q" * 64, at)) >= 0:
        page = at - at % size
        data[page : page + size] = b"\xa5" * size
        at = page + size
    db.write_bytes(bytes(data))


@pytest.fixture(params=["sqlite", "directory"])
def damaged_inside(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, Store, Path]:
    """A store that opens fine but whose database has a damaged page (the one holding big.md's content)."""
    kind = str(request.param)
    url, db = store_files(tmp_path, kind)
    store = open_store(url)
    fill(store)
    store.close()
    damage_page_holding(db, MARKER.encode())
    reopened = open_store(url)
    request.addfinalizer(reopened.close)
    return kind, reopened, tmp_path


def test_the_tool_answers_a_damaged_store_with_an_error_result(damaged_inside: tuple[str, Store, Path]) -> None:
    kind, store, home = damaged_inside
    tool = MemoryTool(store)
    memories = home / "store" / "memories"
    damaged = "Error: The memory store is damaged and nothing was changed: "
    commands: list[dict[str, Any]] = [
        {"command": "view", "path": "/memories/big.md"},
        {"command": "str_replace", "path": "/memories/big.md", "old_str": MARKER, "new_str": "edited"},
        {"command": "insert", "path": "/memories/big.md", "insert_line": 0, "insert_text": "top"},
        # The same bytes as big.md: recording them must look up big.md's content, on the damaged page.
        {"command": "create", "path": "/memories/copy.md", "file_text": BIG},
        {"command": "view", "path": "/memories"},
        {"command": "create", "path": "/memories/new.md", "file_text": "new\n"},
        {"command": "rename", "old_path": "/memories/f1.md", "new_path": "/memories/moved.md"},
        {"command": "delete", "path": "/memories/big.md"},
    ]
    failed = []
    for command in commands:
        before = snapshot(memories) if kind == "directory" else {}
        result = tool.execute(command)  # never raises
        assert "Internal error" not in result.text and "Traceback" not in result.text, result.text
        assert str(home) not in result.text, "a host path leaked"
        if result.is_error:
            failed.append(command["command"])
            assert result.text.startswith(damaged), result.text
            assert "memdir doctor" in result.text
            if kind == "directory":  # the files on disk are the memory: a failed command changed none of them
                assert snapshot(memories) == before, f"{command['command']} failed but changed the files"
    if kind == "sqlite":  # every command that needs the damaged page says so
        assert failed[:4] == ["view", "str_replace", "insert", "create"], failed
    else:  # the file itself comes from disk; recording content in the history meets the damage
        assert "create" in failed, failed


def test_a_directory_store_still_serves_its_files_when_the_history_is_damaged(tmp_path: Path) -> None:
    url, db = store_files(tmp_path, "directory")
    store = open_store(url)
    fill(store)
    store.close()
    damage_page_holding(db, MARKER.encode())
    store = open_store(url)
    tool = MemoryTool(store)
    view = tool.execute({"command": "view", "path": "/memories/big.md"})
    assert not view.is_error, view.text
    assert MARKER in view.text
    store.close()


def test_a_garbage_write_ahead_log_is_ignored(tmp_path: Path) -> None:
    # A torn or foreign -wal file fails its checksums: SQLite keeps the last committed state.
    url, db = store_files(tmp_path, "sqlite")
    store = open_store(url)
    fill(store)
    store.close()
    Path(f"{db}-wal").write_bytes(os.urandom(3 * PAGE))
    store = open_store(url)
    assert store.read("/memories/f3.md").content == b"3\n" * 50
    assert len(store.list_files()) == 31
    store.close()


def test_a_sidecar_replaced_by_a_directory_is_a_clean_storage_error(tmp_path: Path) -> None:
    url, db = store_files(tmp_path, "directory")
    open_store(url).close()
    db.unlink()
    db.mkdir()
    with pytest.raises(StorageError) as caught:
        open_store(url)
    assert str(tmp_path) not in str(caught.value)


def test_a_file_that_is_not_sqlite_is_never_overwritten(tmp_path: Path) -> None:
    precious = tmp_path / "notes.txt"
    precious.write_text("my precious notes, not a database\n" * 10)
    with pytest.raises(CorruptStoreError) as caught:
        open_store(f"sqlite:///{precious}")
    assert "not a memdir SQLite database" in str(caught.value)
    assert str(tmp_path) not in str(caught.value)
    assert precious.read_text() == "my precious notes, not a database\n" * 10
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_errors_from_a_damaged_store_are_memdir_errors(tmp_path: Path) -> None:
    url, db = store_files(tmp_path, "sqlite")
    store = open_store(url)
    fill(store)
    store.close()
    damage_page_holding(db, MARKER.encode())
    store = open_store(url)
    with pytest.raises(MemdirError) as caught:
        store.read("/memories/big.md")
    assert isinstance(caught.value, CorruptStoreError)
    assert str(tmp_path) not in str(caught.value)
    store.close()
