"""The storage contract, asserted identically on every backend (memory, SQLite, directory)."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import pytest

from backends import StoreFactory
from memdir import (
    ANY,
    MISSING,
    AlreadyExistsError,
    ConflictError,
    DirectoryStore,
    FileData,
    MemoryPath,
    NotADirectoryError_,
    NotAFileError,
    NotFoundError,
    Origin,
    PathError,
    Quota,
    QuotaError,
    Store,
    Usage,
    Version,
)

MODEL = Origin(actor="model", session="s-1")


def test_write_then_read_round_trips_bytes_and_reports_version_and_hash(store: Store) -> None:
    content = "héllo\nwörld\n".encode()
    version = store.write("/memories/a.md", content, expect=MISSING, origin=MODEL, op="create")
    data = store.read("/memories/a.md")
    assert data.content == content
    assert data.version == version.version == 1
    assert data.sha256 == version.sha256 == hashlib.sha256(content).hexdigest()
    assert (version.op, version.actor, version.session, version.size) == ("create", "model", "s-1", len(content))


def test_versions_increase_per_change(store: Store) -> None:
    first = store.write("/memories/a.md", b"1")
    second = store.write("/memories/a.md", b"2")
    third = store.write("/memories/b.md", b"3")
    assert first.version < second.version < third.version


def test_expect_missing_refuses_an_existing_file(store: Store) -> None:
    store.write("/memories/a.md", b"old")
    with pytest.raises(AlreadyExistsError):
        store.write("/memories/a.md", b"new", expect=MISSING)
    assert store.read("/memories/a.md").content == b"old"


def test_expect_version_detects_a_concurrent_change(store: Store) -> None:
    store.write("/memories/a.md", b"one")
    seen = store.read("/memories/a.md")
    store.write("/memories/a.md", b"two")
    with pytest.raises(ConflictError):
        store.write("/memories/a.md", b"three", expect=seen.version)
    assert store.read("/memories/a.md").content == b"two"
    current = store.read("/memories/a.md").version
    store.write("/memories/a.md", b"three", expect=current)
    assert store.read("/memories/a.md").content == b"three"


def test_expect_version_on_a_missing_file_is_a_conflict(store: Store) -> None:
    with pytest.raises(ConflictError):
        store.write("/memories/a.md", b"x", expect=7)
    assert store.stat("/memories/a.md") is None


def test_expect_any_creates_or_overwrites(store: Store) -> None:
    store.write("/memories/a.md", b"1", expect=ANY)
    store.write("/memories/a.md", b"2", expect=ANY)
    assert store.read("/memories/a.md").content == b"2"


def test_parents_are_created_and_directories_are_implied(store: Store) -> None:
    store.write("/memories/x/y/z.md", b"deep")
    stat = store.stat("/memories/x/y")
    assert stat is not None and stat.kind == "dir" and stat.size == 4


def test_a_file_cannot_be_written_below_a_file(store: Store) -> None:
    store.write("/memories/a.md", b"file")
    with pytest.raises(NotADirectoryError_):
        store.write("/memories/a.md/b.md", b"x")


def test_a_file_cannot_replace_a_directory(store: Store) -> None:
    store.write("/memories/d/f.md", b"x")
    with pytest.raises(NotAFileError):
        store.write("/memories/d", b"y")
    with pytest.raises(NotAFileError):
        store.write("/memories", b"y")


def test_read_errors(store: Store) -> None:
    store.write("/memories/d/f.md", b"x")
    with pytest.raises(NotFoundError):
        store.read("/memories/nope.md")
    with pytest.raises(NotAFileError):
        store.read("/memories/d")
    with pytest.raises(NotAFileError):
        store.read("/memories")


def test_stat_reports_files_directories_and_nothing(store: Store) -> None:
    store.write("/memories/d/a.md", b"12345")
    store.write("/memories/d/e/b.md", b"123")
    file_stat = store.stat("/memories/d/a.md")
    assert file_stat is not None and (file_stat.kind, file_stat.size) == ("file", 5)
    dir_stat = store.stat("/memories/d")
    assert dir_stat is not None and (dir_stat.kind, dir_stat.size) == ("dir", 8)
    root = store.stat("/memories")
    assert root is not None and (root.kind, root.size) == ("dir", 8)
    assert store.stat("/memories/none") is None


def test_list_files_is_recursive_and_sorted(store: Store) -> None:
    for name in ("b.md", "a/z.md", "a/b/c.md", "a.md"):
        store.write(f"/memories/{name}", name.encode())
    assert [e.path.key for e in store.list_files()] == ["a/b/c.md", "a/z.md", "a.md", "b.md"]
    assert [e.path.key for e in store.list_files("/memories/a")] == ["a/b/c.md", "a/z.md"]
    assert [e.size for e in store.list_files("/memories/a/b")] == [len(b"a/b/c.md")]


def test_list_files_errors_and_empty_root(store: Store) -> None:
    assert store.list_files() == []
    store.write("/memories/f.md", b"x")
    with pytest.raises(NotFoundError):
        store.list_files("/memories/missing")
    with pytest.raises(NotADirectoryError_):
        store.list_files("/memories/f.md")


def test_delete_a_file_and_a_tree(store: Store) -> None:
    for name in ("keep.md", "d/a.md", "d/e/b.md"):
        store.write(f"/memories/{name}", b"x")
    (gone,) = store.delete("/memories/keep.md", origin=MODEL)
    assert gone.deleted and gone.op == "delete" and gone.actor == "model"
    versions = store.delete("/memories/d")
    assert sorted(v.path.key for v in versions) == ["d/a.md", "d/e/b.md"]
    assert store.list_files() == []
    assert store.stat("/memories/d") is None


def test_delete_errors(store: Store) -> None:
    with pytest.raises(NotFoundError):
        store.delete("/memories/missing.md")
    with pytest.raises(PathError):
        store.delete("/memories")


def test_empty_directories_disappear_with_their_last_file(store: Store) -> None:
    store.write("/memories/p/q/r.md", b"x")
    store.delete("/memories/p/q/r.md")
    assert store.stat("/memories/p") is None
    store.write("/memories/m/n.md", b"x")
    store.move("/memories/m/n.md", "/memories/n.md")
    assert store.stat("/memories/m") is None


def test_move_a_file_and_a_tree(store: Store) -> None:
    store.write("/memories/a.md", b"A")
    store.write("/memories/d/x.md", b"X")
    store.write("/memories/d/e/y.md", b"Y")
    (moved,) = store.move("/memories/a.md", "/memories/new/place/a2.md")
    assert moved.op == "rename" and moved.old_path is not None and moved.old_path.key == "a.md"
    assert store.read("/memories/new/place/a2.md").content == b"A"
    store.move("/memories/d", "/memories/f")
    assert [e.path.key for e in store.list_files("/memories/f")] == ["f/e/y.md", "f/x.md"]
    assert store.stat("/memories/d") is None


def test_move_errors(store: Store) -> None:
    store.write("/memories/a.md", b"A")
    store.write("/memories/b.md", b"B")
    store.write("/memories/d/x.md", b"X")
    with pytest.raises(NotFoundError):
        store.move("/memories/none.md", "/memories/c.md")
    with pytest.raises(AlreadyExistsError):
        store.move("/memories/a.md", "/memories/b.md")
    with pytest.raises(AlreadyExistsError):
        store.move("/memories/a.md", "/memories/d")
    with pytest.raises(AlreadyExistsError):  # onto itself: the destination is there (not a directory into itself)
        store.move("/memories/a.md", "/memories/a.md")
    with pytest.raises(NotFoundError):
        store.move("/memories/none.md", "/memories/none.md")
    with pytest.raises(PathError):
        store.move("/memories/d", "/memories/d/inside")
    with pytest.raises(PathError):
        store.move("/memories", "/memories/x")
    with pytest.raises(NotADirectoryError_):
        store.move("/memories/d", "/memories/a.md/d")
    assert store.read("/memories/b.md").content == b"B"


def test_update_applies_a_change_atomically_and_records_the_op(store: Store) -> None:
    store.write("/memories/n.md", b"1\n")
    version = store.update("/memories/n.md", lambda cur: cur.content + b"2\n", origin=MODEL, op="insert")
    assert store.read("/memories/n.md").content == b"1\n2\n"
    assert version.op == "insert"


def test_a_write_over_the_quota_fails_and_changes_nothing(store: Store) -> None:
    quota = Quota(max_files=2, max_bytes=100)
    store.write("/memories/a.md", b"a" * 60, quota=quota)
    log = list(store.log())
    with pytest.raises(QuotaError) as refused:
        store.write("/memories/b.md", b"b" * 41, quota=quota)
    held = (refused.value.held_files, refused.value.held_bytes, refused.value.added_files, refused.value.added_bytes)
    assert held == (1, 60, 1, 41)
    assert (refused.value.limit, refused.value.maximum) == ("bytes", 100)
    assert str(refused.value) == "the namespace would hold 101 bytes, over the limit of 100"
    assert store.stat("/memories/b.md") is None
    assert list(store.log()) == log
    assert store.usage() == Usage(1, 60)
    store.write("/memories/b.md", b"b" * 40, quota=quota)  # exactly at both limits
    with pytest.raises(QuotaError, match="would hold 3 files, over the limit of 2"):
        store.write("/memories/c.md", b"", quota=quota)
    with pytest.raises(QuotaError):
        store.update("/memories/b.md", lambda cur: cur.content + b"+", quota=quota)
    assert store.read("/memories/b.md").content == b"b" * 40
    # Only growth is refused: replacing a file adds none, and shrinking passes a full namespace.
    store.write("/memories/a.md", b"a" * 59, quota=quota)
    store.update("/memories/b.md", lambda cur: cur.content + b"+", quota=quota)
    assert store.usage() == Usage(2, 100)
    with pytest.raises(QuotaError):
        store.update("/memories/a.md", lambda cur: cur.content + b"+", quota=quota)
    assert store.read("/memories/a.md").content == b"a" * 59


def test_an_imported_write_is_held_to_the_quota_in_its_own_transaction(store: Store) -> None:
    from memdir import MemoryStore

    source = MemoryStore()
    for name in ("a", "b"):
        source.write(f"/memories/{name}.md", name.encode() * 10, op="create")
    source.move("/memories/b.md", "/memories/c.md")
    source.delete("/memories/a.md")
    first, second, moved, deleted = list(source.log())
    quota = Quota(max_files=1, max_bytes=15)
    store.import_version(first, b"a" * 10, quota=quota)
    log = list(store.log())
    with pytest.raises(QuotaError, match="would hold 2 files, over the limit of 1"):
        store.import_version(second, b"b" * 10, quota=quota)
    assert list(store.log()) == log and store.stat("/memories/b.md") is None
    with pytest.raises(QuotaError, match="would hold 16 bytes"):
        store.import_version(dataclasses.replace(first, op="write"), b"a" * 16, quota=quota)
    assert store.read("/memories/a.md").content == b"a" * 10
    # Only growth is refused: a move and a deletion take nothing.
    store.import_version(dataclasses.replace(moved, old_path=first.path, path=second.path), None, quota=quota)
    store.import_version(dataclasses.replace(deleted, path=second.path), None, quota=quota)
    assert store.usage() == Usage(0, 0)


def test_update_writes_nothing_when_the_change_fails(store: Store) -> None:
    store.write("/memories/n.md", b"same")

    def fail(_: FileData) -> bytes:
        raise ValueError("no")

    with pytest.raises(ValueError):
        store.update("/memories/n.md", fail)
    assert store.read("/memories/n.md").content == b"same"
    assert len(store.history("/memories/n.md")) == 1
    with pytest.raises(NotFoundError):
        store.update("/memories/none.md", lambda cur: cur.content)


def test_history_follows_a_file_through_edits_renames_and_deletion(store: Store) -> None:
    store.write("/memories/a.md", b"v1", origin=MODEL, op="create")
    store.write("/memories/a.md", b"v2", origin=Origin(actor="user"))
    store.move("/memories/a.md", "/memories/b.md")
    store.write("/memories/b.md", b"v3")
    store.delete("/memories/b.md")
    history = store.history("/memories/b.md")
    assert [v.op for v in history] == ["create", "write", "rename", "write", "delete"]
    assert [v.actor for v in history][:2] == ["model", "user"]
    assert history[-1].deleted
    assert store.read_version("/memories/b.md", history[0].version) == b"v1"
    assert store.read_version("/memories/b.md", history[3].version) == b"v3"
    # The old name keeps its own story, up to the rename away.
    assert [v.op for v in store.history("/memories/a.md")] == ["create", "write", "rename"]


def test_history_of_a_directory_rename_reaches_each_file(store: Store) -> None:
    store.write("/memories/d/x.md", b"x1")
    store.move("/memories/d", "/memories/e")
    assert [v.op for v in store.history("/memories/e/x.md")] == ["write", "rename"]


@pytest.mark.parametrize("moved", ["file", "directory"])
def test_history_after_sixty_back_and_forth_renames_has_every_version(store: Store, moved: str) -> None:
    """Renaming back and forth used to make `history` exponential (each rename into a name walked that name's
    whole past again): 28 renames took 12 s, and 60 did not finish in 60 s (they would take years); the walk is now
    linear, and this takes well under a second on every backend."""
    names, leaf = (("a.md", "b.md"), "") if moved == "file" else (("a", "b"), "/f.md")
    made = [store.write(f"/memories/{names[0]}{leaf}", b"v0", origin=MODEL, op="create")]
    if moved == "directory":
        store.write("/memories/a/sibling.md", b"not f's history")
    for i in range(60):
        moves = store.move(f"/memories/{names[i % 2]}", f"/memories/{names[(i + 1) % 2]}")
        made += [v for v in moves if "sibling" not in v.path.key]
    made.append(store.write(f"/memories/{names[0]}{leaf}", b"v1"))
    history = store.history(f"/memories/{names[0]}{leaf}")
    assert [v.version for v in history] == [v.version for v in made]
    assert [v.op for v in history] == ["create"] + ["rename"] * 60 + ["write"]
    assert store.read_version(f"/memories/{names[0]}{leaf}", history[0].version) == b"v0"


def test_history_asks_the_backend_about_each_name_a_bounded_number_of_times(monkeypatch: pytest.MonkeyPatch) -> None:
    """The walk back through renames looks each (name, bound) up at most once: 40 renames back and forth take a
    handful of lookups, where the old recursion made millions (it is stopped here after 200)."""
    from memdir import MemoryStore

    store = MemoryStore()
    store.write("/memories/a.md", b"v0")
    for i in range(40):
        store.move(f"/memories/{'ab'[i % 2]}.md", f"/memories/{'ba'[i % 2]}.md")
    calls: list[str] = []
    touching = store._versions_touching

    def counted(path: MemoryPath, before: int | None) -> list[Version]:
        calls.append(path.key)
        assert len(calls) <= 200, "history looked names up again and again"
        return touching(path, before)

    monkeypatch.setattr(store, "_versions_touching", counted)
    assert len(store.history("/memories/a.md")) == 41
    assert sorted(set(calls)) == ["a.md", "b.md"] and len(calls) <= 4


def test_read_version_errors(store: Store) -> None:
    store.write("/memories/a.md", b"1")
    (deleted,) = store.delete("/memories/a.md")
    with pytest.raises(NotFoundError):
        store.read_version("/memories/a.md", deleted.version)
    with pytest.raises(NotFoundError):
        store.read_version("/memories/a.md", 999)
    with pytest.raises(NotFoundError):
        store.history("/memories/never.md")


def test_restore_brings_back_old_content_as_a_new_version(store: Store) -> None:
    first = store.write("/memories/a.md", b"original")
    store.write("/memories/a.md", b"changed")
    store.delete("/memories/a.md")
    restored = store.restore("/memories/a.md", first.version, origin=Origin(actor="user"))
    assert restored.op == "restore" and restored.actor == "user"
    assert store.read("/memories/a.md").content == b"original"
    assert store.history("/memories/a.md")[-1].version == restored.version


def test_log_lists_every_version_in_order(store: Store) -> None:
    store.write("/memories/a.md", b"1")
    store.write("/memories/b.md", b"2")
    store.delete("/memories/a.md")
    log = list(store.log())
    assert [v.version for v in log] == sorted(v.version for v in log)
    assert [(v.op, v.path.key) for v in log] == [("write", "a.md"), ("write", "b.md"), ("delete", "a.md")]
    assert [v.path.key for v in store.log(since=log[0].version)] == ["b.md", "a.md"]


def test_usage_counts_files_and_bytes(store: Store) -> None:
    store.write("/memories/a.md", b"12345")
    store.write("/memories/d/b.md", b"123")
    store.write("/memories/a.md", b"12")
    assert (store.usage().files, store.usage().bytes) == (2, 5)
    store.delete("/memories/d")
    assert (store.usage().files, store.usage().bytes) == (1, 2)


def test_namespaces_are_isolated(make_store: StoreFactory) -> None:
    alice, bob = make_store("alice"), make_store("bob")
    alice.write("/memories/secret.md", b"alice's")
    assert bob.stat("/memories/secret.md") is None
    assert bob.list_files() == []
    bob.write("/memories/secret.md", b"bob's")
    assert alice.read("/memories/secret.md").content == b"alice's"
    assert [v.actor for v in bob.history("/memories/secret.md")] == ["user"]
    assert len(alice.history("/memories/secret.md")) == 1
    # Version numbers are per namespace: one tenant cannot infer another's activity.
    assert bob.read("/memories/secret.md").version == 1


def test_a_namespace_name_must_be_safe(make_store: StoreFactory) -> None:
    from memdir import ConfigError

    for bad in ("", "../x", ".hidden", "a/b", "x" * 65):
        with pytest.raises(ConfigError):
            make_store(bad)


def test_import_version_replays_history_with_its_metadata(store: Store) -> None:
    from memdir import MemoryStore

    source = MemoryStore()
    source.write("/memories/a.md", b"one", origin=Origin("model", "s9", "web"), op="create")
    source.write("/memories/a.md", b"two", origin=Origin("user"))
    source.move("/memories/a.md", "/memories/b.md")
    source.delete("/memories/b.md")
    source.write("/memories/c.md", b"three")
    for version in source.log():
        content = source.read_blob(version.sha256) if version.sha256 and version.op != "rename" else None
        store.import_version(version, content)
    replayed = [(v.op, v.path.key, v.actor, v.session, v.source, v.timestamp) for v in store.log()]
    original = [(v.op, v.path.key, v.actor, v.session, v.source, v.timestamp) for v in source.log()]
    assert replayed == original
    assert store.read("/memories/c.md").content == b"three"
    assert store.read_version("/memories/b.md", store.history("/memories/b.md")[0].version) == b"one"


def test_an_imported_rename_moves_and_is_checked_like_a_move(store: Store) -> None:
    from memdir import MemoryStore

    source = MemoryStore()
    source.write("/memories/a.md", b"a")
    (rename,) = source.move("/memories/a.md", "/memories/d/a.md")
    store.write("/memories/a.md", b"a")
    store.write("/memories/d", b"a file where the directory should be")
    with pytest.raises(NotADirectoryError_):
        store.import_version(rename, b"a")
    store.delete("/memories/d")
    store.write("/memories/d/a.md", b"taken")
    with pytest.raises(AlreadyExistsError):
        store.import_version(rename, None)
    store.delete("/memories/d/a.md")
    store.import_version(rename, b"a")  # content given or not, a rename moves: it never copies
    assert [e.path.key for e in store.list_files()] == ["d/a.md"]
    assert (store.usage().files, store.usage().bytes) == (1, 1)


def test_list_files_reports_versions_and_hashes(store: Store) -> None:
    first = store.write("/memories/a.md", b"1")
    second = store.write("/memories/d/b.md", b"22")
    entries = store.list_files()
    assert [(e.version, e.sha256) for e in entries] == [(first.version, first.sha256), (second.version, second.sha256)]
    assert store.read_blob(hashlib.sha256(b"22").hexdigest()) == b"22"
    with pytest.raises(NotFoundError):
        store.read_blob(hashlib.sha256(b"never stored").hexdigest())


def test_a_directory_store_without_history_checks_the_quota_before_writing(tmp_path: Path) -> None:
    # No index holds its counters: the check uses the walk `usage` caches, so it cannot be exact under races,
    # and the store says so (the memory tool then checks the limits itself).
    with DirectoryStore(tmp_path, history=False) as store:
        assert not store.checks_quota
        store.write("/memories/a.md", b"a" * 60, quota=Quota(max_bytes=100))
        with pytest.raises(QuotaError, match="would hold 101 bytes"):
            store.write("/memories/b.md", b"b" * 41, quota=Quota(max_bytes=100))
        assert [e.path.virtual for e in store.list_files()] == ["/memories/a.md"]
        store.write("/memories/a.md", b"a" * 100, quota=Quota(max_files=1, max_bytes=100))  # a replacement
        assert store.read("/memories/a.md").content == b"a" * 100
