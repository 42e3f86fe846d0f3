"""`Store.prune_history`: the contract, on every backend.

A version goes once it stopped being current before the cut-off; current versions, recent history, the sources
of kept renames and the content they need stay; numbers are never reused; the pruned log still replays.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from backends import StoreFactory
from memdir import HistoryUnavailableError, NotFoundError, Store, Version, open_store, parse
from memdir.archive import export_namespace, import_namespace
from memdir.store import DirectoryStore
from memdir.store._records import sha256_hex

DAY = 86_400.0
T0 = 1_700_000_000.0


@pytest.fixture(params=["memory", "sqlite", "directory"])
def backend(request: pytest.FixtureRequest) -> str:
    """The backends that keep their own history. (A remote store prunes on its server: `memdir gc` runs there.)"""
    return str(request.param)


def at(store: Store, day: float, path: str, op: str, content: bytes | None = None, *, old: str | None = None) -> int:
    """Record a change made ``day`` days after T0 (a rename passes the moved content, a delete None)."""
    version = Version(
        version=1,
        path=parse(path),
        op=op,
        actor="model",
        session="s",
        source=None,
        timestamp=T0 + day * DAY,
        sha256=None if content is None else sha256_hex(content),
        size=len(content or b""),
        old_path=None if old is None else parse(old),
    )
    return store.import_version(version, None if op in ("delete", "rename") else content).version


def numbers(store: Store) -> list[int]:
    return [v.version for v in store.log()]


def test_superseded_versions_go_and_current_ones_stay(store: Store) -> None:
    at(store, 0, "/memories/a.md", "create", b"one")
    at(store, 1, "/memories/a.md", "write", b"two")
    at(store, 2, "/memories/a.md", "write", b"three")
    at(store, 0, "/memories/b.md", "create", b"old but current")

    assert store.prune_history(T0 + 10 * DAY) == 2
    assert numbers(store) == [3, 4]
    assert store.read("/memories/a.md").content == b"three"
    assert [v.version for v in store.history("/memories/a.md")] == [3]
    assert store.read("/memories/b.md").content == b"old but current"


def test_a_version_current_within_the_retention_period_stays(store: Store) -> None:
    at(store, 0, "/memories/a.md", "create", b"one")
    at(store, 5, "/memories/a.md", "write", b"two")  # "one" was current until day 5
    assert store.prune_history(T0 + 4 * DAY) == 0
    assert store.prune_history(T0 + 6 * DAY) == 1
    assert store.read_version("/memories/a.md", 2) == b"two"


def test_pruned_content_is_gone_and_needed_content_stays(store: Store) -> None:
    at(store, 0, "/memories/a.md", "create", b"secret draft")
    at(store, 1, "/memories/a.md", "write", b"shared")
    at(store, 0, "/memories/b.md", "create", b"shared")
    store.prune_history(T0 + 2 * DAY)
    with pytest.raises(NotFoundError):
        store.read_blob(sha256_hex(b"secret draft"))
    assert store.read_blob(sha256_hex(b"shared")) == b"shared"


def test_a_deleted_file_keeps_its_history_for_the_retention_period(store: Store) -> None:
    at(store, 0, "/memories/gone.md", "create", b"x")
    at(store, 1, "/memories/gone.md", "write", b"y")
    at(store, 3, "/memories/gone.md", "delete")

    assert store.prune_history(T0 + 2 * DAY) == 1  # only "x", replaced on day 1
    assert [v.op for v in store.history("/memories/gone.md")] == ["write", "delete"]
    assert store.read_version("/memories/gone.md", 2) == b"y"

    assert store.prune_history(T0 + 4 * DAY) == 2  # the deletion is older than the cut-off: all of it goes
    with pytest.raises(NotFoundError):
        store.history("/memories/gone.md")


def test_numbers_are_never_reused_after_the_newest_version_is_pruned(store: Store) -> None:
    at(store, 0, "/memories/a.md", "create", b"x")
    at(store, 1, "/memories/a.md", "delete")
    assert store.prune_history(T0 + 2 * DAY) == 2
    assert list(store.log()) == []
    assert store.write("/memories/b.md", b"new").version == 3


def test_a_kept_rename_keeps_the_version_it_moved(store: Store) -> None:
    at(store, 0, "/memories/old.md", "create", b"content")
    at(store, 1, "/memories/mid.md", "rename", b"content", old="/memories/old.md")
    at(store, 2, "/memories/new.md", "rename", b"content", old="/memories/mid.md")

    assert store.prune_history(T0 + 10 * DAY) == 0  # the current file came by renames: its whole chain stays
    assert [v.op for v in store.history("/memories/new.md")] == ["create", "rename", "rename"]


def test_the_pruned_log_still_exports_and_imports(store: Store, tmp_path: Path) -> None:
    at(store, 0, "/memories/a.md", "create", b"a1")
    at(store, 1, "/memories/a.md", "write", b"a2")
    at(store, 2, "/memories/b.md", "rename", b"a2", old="/memories/a.md")
    at(store, 3, "/memories/c.md", "create", b"c")
    at(store, 4, "/memories/c.md", "delete")
    at(store, 5, "/memories/d.md", "create", b"d")
    store.prune_history(T0 + 3.5 * DAY)

    export_namespace(store, tmp_path / "pruned.zip")
    with open_store("memory:") as copy:
        import_namespace(copy, tmp_path / "pruned.zip")
        assert [(e.path.virtual, copy.read(e.path).content) for e in copy.list_files()] == [
            ("/memories/b.md", b"a2"),
            ("/memories/d.md", b"d"),
        ]


def test_nothing_goes_with_a_cut_off_before_the_history(store: Store) -> None:
    at(store, 0, "/memories/a.md", "create", b"1")
    at(store, 1, "/memories/a.md", "write", b"2")
    assert store.prune_history(T0 - DAY) == 0
    assert numbers(store) == [1, 2]


def test_the_namespaces_are_pruned_apart(make_store: StoreFactory) -> None:
    one, two = make_store("one"), make_store("two")
    for store in (one, two):
        at(store, 0, "/memories/a.md", "create", b"1")
        at(store, 1, "/memories/a.md", "write", b"2")
    assert one.prune_history(T0 + 2 * DAY) == 1
    assert numbers(two) == [1, 2]
    assert two.read_version("/memories/a.md", 1) == b"1"


def test_a_directory_store_without_history_cannot_prune(tmp_path: Path) -> None:
    with DirectoryStore(tmp_path / "plain", history=False) as store, pytest.raises(HistoryUnavailableError):
        store.prune_history(T0)


def test_a_directory_store_records_outside_edits_before_pruning(tmp_path: Path) -> None:
    with DirectoryStore(tmp_path / "s") as store:
        store.write("/memories/a.md", b"memdir")
        (tmp_path / "s" / "memories" / "a.md").write_bytes(b"edited by hand")
        assert store.prune_history(T0 * 2) == 1  # the memdir version, replaced by the outside edit
        (only,) = store.history("/memories/a.md")
        assert (only.actor, store.read_version("/memories/a.md", only.version)) == ("external", b"edited by hand")
