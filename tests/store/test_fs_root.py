"""The command's root keeps the directories it opened: each walked once, forgotten when one is removed or moved."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memdir import MemoryTool, open_store
from memdir.errors import NotFoundError
from memdir.paths import MemoryPath
from memdir.store import _fs

A = MemoryPath(("a",))
AB = MemoryPath(("a", "b"))


def _open_fds() -> set[int]:
    return {int(name) for name in os.listdir("/proc/self/fd")}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "f.md").write_text("x")
    return tmp_path


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc to count open descriptors")
def test_a_directory_is_opened_once_per_root_and_closed_with_it(tree: Path) -> None:
    before = _open_fds()
    with _fs.open_root(tree) as root:
        with _fs.walk(root, AB) as first:
            first_fd = first.fd  # a borrowed handle: leaving the block does not close what the root keeps
        with _fs.walk(root, AB) as second:
            assert second.fd == first_fd
            assert os.listdir(second.fd) == ["f.md"]
        assert len(_open_fds() - before) == 2  # the root and a/b
    assert _open_fds() == before


def test_a_removed_directory_is_walked_again_not_reused(tree: Path) -> None:
    with _fs.open_root(tree) as root:
        with _fs.walk(root, AB) as kept:
            kept_fd = kept.fd
        with _fs.walk(root, A) as a:
            _fs.remove_tree(a, "b")
        with pytest.raises(NotFoundError):
            _fs.walk(root, AB)  # not the descriptor of the removed directory
        os.fstat(kept_fd)  # still open: a caller may hold it until the root closes
        with _fs.walk(root, AB, create=True) as made:
            assert os.listdir(made.fd) == []
            assert made.fd != kept_fd


def test_a_moved_directory_is_not_reached_by_its_old_path(tmp_path: Path) -> None:
    """Rename a directory, then write under its old name: a new directory, not the moved one."""
    with open_store(str(tmp_path / "store")) as store:
        tool = MemoryTool(store, audit=False, auto_memory=False)
        assert not tool.execute({"command": "create", "path": "/memories/a/b/f.md", "file_text": "one\n"}).is_error
        assert not tool.execute({"command": "rename", "old_path": "/memories/a", "new_path": "/memories/c"}).is_error
        assert not tool.execute({"command": "create", "path": "/memories/a/b/f.md", "file_text": "two\n"}).is_error
        assert store.read("/memories/c/b/f.md").content == b"one\n"
        assert store.read("/memories/a/b/f.md").content == b"two\n"
        root = tmp_path / "store" / "memories"
        assert (root / "c" / "b" / "f.md").read_text() == "one\n"
        assert (root / "a" / "b" / "f.md").read_text() == "two\n"


def test_temporary_names_are_unique_without_a_system_call_each(monkeypatch: pytest.MonkeyPatch) -> None:
    names = _fs._files._TempNames()
    first = [names.next() for _ in range(3)]
    assert len(set(first)) == 3 and all(n.startswith(f"{_fs.TEMP_PREFIX}{os.getpid()}-") for n in first)
    monkeypatch.setattr(os, "getpid", lambda: 1 / 0)  # no call per name
    assert names.next() not in first
    monkeypatch.undo()
    names._reset()  # what a forked child does: a new random part, so a name is never reused
    assert names.next() not in first
