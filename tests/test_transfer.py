"""migrate-store's library (`memdir.transfer`): a namespace and its whole history copied between every pair of
backends; resumed after any interruption without a version lost or doubled; other content refused; bad URLs
refused before anything is written."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from backends import BACKENDS, live_server, store_url
from memdir import (
    MISSING,
    ConfigError,
    CorruptStoreError,
    Origin,
    RedactedError,
    StorageError,
    Store,
    Version,
    open_store,
    parse,
)
from memdir.errors import TransferError
from memdir.store._records import sha256_hex
from memdir.transfer import copy_namespace, migrate_store
from support.redaction import redacted_history

MODEL = Origin("model", "s-1", "chat")
USER = Origin("user", None, "cli")
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
LOCAL = ["memory", "sqlite", "directory"]


def build_history(store: Store) -> None:
    """Every kind of change: create, edits, a file and a directory renamed, delete, re-create, restore, binary
    and non-ASCII content, content shared by two files."""
    store.write("/memories/notes.md", b"one\n", expect=MISSING, origin=MODEL, op="create")
    store.update("/memories/notes.md", lambda f: f.content + b"two\n", origin=MODEL, op="str_replace")
    store.update("/memories/notes.md", lambda f: b"zero\n" + f.content, origin=MODEL, op="insert")
    store.write("/memories/projects/a.md", "é ü\n".encode(), origin=MODEL, op="create")
    store.write("/memories/projects/b.md", b"bee\n", origin=Origin("model", "s-2"), op="create")
    store.write("/memories/pic.png", PNG, origin=USER, op="create")
    store.move("/memories/pic.png", "/memories/img/pic.png", origin=USER)
    store.move("/memories/projects", "/memories/archive/projects", origin=MODEL)
    store.delete("/memories/archive/projects/b.md", origin=USER)
    store.write("/memories/projects/b.md", b"bee again\n", origin=MODEL, op="create")
    store.restore("/memories/notes.md", 1, origin=USER)
    store.write("/memories/日本語.md", b"one\n", origin=Origin("model", "s-2"), op="create")


def changes(store: Store) -> list[tuple[object, ...]]:
    """The log without the numbers a store gives, times to the millisecond (PostgreSQL may keep microseconds)."""
    return [
        (v.path, v.op, v.actor, v.session, v.source, round(v.timestamp, 3), v.sha256, v.size, v.old_path)
        for v in store.log()
    ]


def files_of(store: Store) -> dict[str, bytes]:
    return {e.path.virtual: store.read(e.path).content for e in store.list_files()}


def histories_of(store: Store) -> dict[str, list[tuple[str, str, bytes | None]]]:
    paths = {v.path.virtual for v in store.log()}
    return {
        p: [(v.op, v.actor, None if v.deleted else store.read_version(p, v.version)) for v in store.history(p)]
        for p in sorted(paths)
    }


@pytest.fixture
def places(tmp_path: Path) -> Callable[[str], Path]:
    def place(name: str) -> Path:
        path = tmp_path / name
        path.mkdir(exist_ok=True)
        return path

    return place


def opened(kind: str, place: Path, namespace: str = "default") -> Store:
    return open_store(store_url(kind, place), namespace=namespace)


# -- every pair of backends ----------------------------------------------------------------------------------


@pytest.mark.parametrize("source", BACKENDS)
@pytest.mark.parametrize("target", BACKENDS)
def test_every_pair_keeps_files_and_history(source: str, target: str, places: Callable[[str], Path]) -> None:
    with opened(source, places("a")) as src, opened(target, places("b")) as dst:
        build_history(src)
        report = copy_namespace(src, dst)
        assert changes(dst) == changes(src)
        assert [v.version for v in dst.log()] == list(range(1, 14))
        assert files_of(dst) == files_of(src)
        assert histories_of(dst) == histories_of(src)
        assert dst.usage() == src.usage()
        assert (report.versions, report.present, report.copied, report.files) == (13, 0, 13, 5)
        assert report.bytes == src.usage().bytes
        assert not report.dry_run


@pytest.mark.parametrize("source", BACKENDS)
def test_ops_actors_sessions_and_sources_survive(source: str, places: Callable[[str], Path]) -> None:
    with opened(source, places("a")) as src, opened("sqlite", places("b")) as dst:
        build_history(src)
        copy_namespace(src, dst)
        copied = list(dst.log())
    assert [v.op for v in copied] == [
        "create", "str_replace", "insert", "create", "create", "create", "rename", "rename", "rename", "delete",
        "create", "restore", "create",
    ]  # fmt: skip
    # A memdir server records a write sent without a session under its token's (`token-<id>`): who wrote it.
    sessions = {(v.actor, None if (v.session or "").startswith("token-") else v.session, v.source) for v in copied}
    assert sessions == {("model", "s-1", "chat"), ("model", "s-2", None), ("user", None, "cli")}
    moved = [v for v in copied if v.op == "rename"]
    assert [(v.old_path.virtual if v.old_path else None, v.path.virtual) for v in moved] == [
        ("/memories/pic.png", "/memories/img/pic.png"),
        ("/memories/projects/a.md", "/memories/archive/projects/a.md"),
        ("/memories/projects/b.md", "/memories/archive/projects/b.md"),
    ]


def test_times_in_the_past_are_kept_exactly(tmp_path: Path) -> None:
    with open_store("memory:") as src, open_store(f"sqlite://{tmp_path / 'b.db'}") as dst:
        src.import_version(version(1, "/memories/a.md", "create", b"a", at=1_000_000_000.123456), b"a")
        src.import_version(version(2, "/memories/a.md", "delete", None, at=1_000_000_060.5), None)
        copy_namespace(src, dst)
        assert [v.timestamp for v in dst.log()] == [1_000_000_000.123456, 1_000_000_060.5]


def version(number: int, path: str, op: str, content: bytes | None, *, at: float) -> Version:
    sha = None if content is None else sha256_hex(content)
    return Version(number, parse(path), op, "model", "s-1", None, at, sha, len(content or b""))


def test_a_pruned_source_copies_what_it_kept(tmp_path: Path) -> None:
    with open_store(f"sqlite://{tmp_path / 'a.db'}") as src, open_store(str(tmp_path / "b")) as dst:
        for number, at in enumerate((100.0, 200.0, 300.0), start=1):
            src.import_version(
                version(number, "/memories/a.md", "write", f"v{number}".encode(), at=at), f"v{number}".encode()
            )
        src.import_version(version(4, "/memories/b.md", "create", b"b", at=400.0), b"b")
        assert src.prune_history(before=250.0) == 1  # v1 stopped being current at 200
        assert [v.version for v in src.log()] == [2, 3, 4]
        report = copy_namespace(src, dst)
        assert [v.version for v in dst.log()] == [1, 2, 3]
        assert changes(dst) == changes(src)
        assert files_of(dst) == {"/memories/a.md": b"v3", "/memories/b.md": b"b"}
    assert (report.versions, report.copied, report.files) == (3, 3, 2)


# -- resuming ----------------------------------------------------------------------------------------------


def interrupt_after(
    monkeypatch: pytest.MonkeyPatch, store: Store, count: int, error: BaseException, *, applied: bool = False
) -> None:
    """Make ``store``'s import fail on its call number ``count + 1``: before applying it, or (``applied``) after,
    as when a server applied a change and the answer was lost."""
    real = store.import_version
    calls = 0

    def import_version(version: Version, content: bytes | None) -> Version:
        nonlocal calls
        calls += 1
        if calls <= count:
            return real(version, content)
        if applied:
            real(version, content)
        raise error

    monkeypatch.setattr(store, "import_version", import_version)


@pytest.mark.parametrize("target", BACKENDS)
@pytest.mark.parametrize(
    ("error", "applied"),
    [
        (StorageError("could not reach the memdir server (ConnectError)"), False),
        (StorageError("the memdir server did not answer in time; the change may have been applied"), True),
        (KeyboardInterrupt(), False),
    ],
    ids=["network-error", "answer-lost", "ctrl-c"],
)
def test_an_interrupted_copy_resumes_without_losing_or_doubling_a_version(
    target: str, error: BaseException, applied: bool, places: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    with opened("sqlite", places("a")) as src, opened(target, places("b")) as dst:
        build_history(src)
        interrupt_after(monkeypatch, dst, 5, error, applied=applied)
        with pytest.raises((TransferError, KeyboardInterrupt)) as stopped:
            copy_namespace(src, dst)
        if isinstance(error, StorageError):
            assert str(stopped.value) == (
                f"the copy stopped at the source's version 6 (5 of 13 versions copied before it): {error}; "
                "run the same command again to resume"
            )
        monkeypatch.undo()
        held = 6 if applied else 5
        assert len(list(dst.log())) == held
        seen: list[tuple[int, int]] = []
        report = copy_namespace(src, dst, progress=lambda done, total: seen.append((done, total)))
        assert (report.present, report.copied, report.versions) == (held, 13 - held, 13)
        assert seen[0] == (held, 13) and seen[-1] == (13, 13)
        assert changes(dst) == changes(src)
        assert files_of(dst) == files_of(src)


def test_running_again_after_a_complete_copy_copies_only_what_the_source_gained(tmp_path: Path) -> None:
    with open_store(f"sqlite://{tmp_path / 'a.db'}") as src, open_store(str(tmp_path / "b")) as dst:
        build_history(src)
        copy_namespace(src, dst)
        again = copy_namespace(src, dst)
        assert (again.present, again.copied) == (13, 0)
        src.write("/memories/later.md", b"later\n", origin=MODEL, op="create")
        src.delete("/memories/notes.md", origin=USER)
        caught_up = copy_namespace(src, dst)
        assert (caught_up.present, caught_up.copied, caught_up.versions) == (13, 2, 15)
        assert changes(dst) == changes(src)


def test_a_source_written_to_during_the_copy_is_reported_and_the_next_run_catches_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with open_store(f"sqlite://{tmp_path / 'a.db'}") as src, open_store(f"sqlite://{tmp_path / 'b.db'}") as dst:
        build_history(src)
        real = src.read_blob

        def read_blob(sha256: str) -> bytes:
            if not src.stat("/memories/meanwhile.md"):
                src.write("/memories/meanwhile.md", b"news\n", origin=MODEL, op="create")
            return real(sha256)

        monkeypatch.setattr(src, "read_blob", read_blob)
        with pytest.raises(TransferError, match="the source changed during the copy"):
            copy_namespace(src, dst)
        monkeypatch.undo()
        assert len(list(dst.log())) == 13  # the history as it was when the copy began
        report = copy_namespace(src, dst)
        assert (report.present, report.copied) == (13, 1)
        assert files_of(dst) == files_of(src)


def test_damaged_source_content_is_never_copied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with open_store(f"sqlite://{tmp_path / 'a.db'}") as src, open_store(f"sqlite://{tmp_path / 'b.db'}") as dst:
        build_history(src)
        monkeypatch.setattr(src, "read_blob", lambda _sha256: b"rotten")
        with pytest.raises(TransferError, match="content for version 1 does not match its SHA-256"):
            copy_namespace(src, dst)
        assert list(dst.log()) == []


# -- refusals ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("target", LOCAL)
def test_a_destination_with_other_content_is_refused_untouched(target: str, places: Callable[[str], Path]) -> None:
    with opened("sqlite", places("a")) as src, opened(target, places("b")) as dst:
        build_history(src)
        dst.write("/memories/mine.md", b"mine\n", origin=USER, op="create")
        before = changes(dst)
        with pytest.raises(TransferError) as refused:
            copy_namespace(src, dst)
        assert str(refused.value) == (
            "namespace 'default' of the destination already holds other content: copy into an empty namespace or "
            "store (migrate-store never merges two histories or overwrites one)"
        )
        with pytest.raises(TransferError):
            copy_namespace(src, dst, dry_run=True)
        assert changes(dst) == before


def test_files_dropped_into_a_directory_destination_count_as_other_content(tmp_path: Path) -> None:
    (tmp_path / "b" / "memories").mkdir(parents=True)
    (tmp_path / "b" / "memories" / "hand.md").write_text("by hand\n")
    with open_store("memory:") as src, open_store(str(tmp_path / "b")) as dst:
        build_history(src)
        with pytest.raises(TransferError, match="already holds other content"):
            copy_namespace(src, dst)


def test_a_destination_written_to_after_a_partial_copy_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with open_store(f"sqlite://{tmp_path / 'a.db'}") as src, open_store(f"sqlite://{tmp_path / 'b.db'}") as dst:
        build_history(src)
        interrupt_after(monkeypatch, dst, 4, StorageError("gone"))
        with pytest.raises(TransferError):
            copy_namespace(src, dst)
        monkeypatch.undo()
        dst.write("/memories/other.md", b"other\n", origin=USER, op="create")
        with pytest.raises(TransferError) as refused:
            copy_namespace(src, dst)
        assert str(refused.value) == (
            "namespace 'default' of the destination holds the first 4 of the source's 13 versions and then others: "
            "it was written to after an earlier copy, or the source's history was pruned since; copy into an empty "
            "namespace or store (migrate-store never merges two histories or overwrites one)"
        )
        assert len(list(dst.log())) == 5


def test_files_changed_on_a_directory_destination_after_a_partial_copy_are_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with open_store(f"sqlite://{tmp_path / 'a.db'}") as src, open_store(str(tmp_path / "b")) as dst:
        build_history(src)
        interrupt_after(monkeypatch, dst, 4, StorageError("gone"))
        with pytest.raises(TransferError):
            copy_namespace(src, dst)
        monkeypatch.undo()
        (tmp_path / "b" / "memories" / "notes.md").unlink()  # by hand, between two runs
        with pytest.raises(TransferError) as refused:
            copy_namespace(src, dst)
        assert "holds the first 4 of the source's 13 versions and then changes found on its disk" in str(refused.value)


def test_a_source_pruned_after_the_copy_is_refused_rather_than_mixed(tmp_path: Path) -> None:
    with open_store(f"sqlite://{tmp_path / 'a.db'}") as src, open_store(f"sqlite://{tmp_path / 'b.db'}") as dst:
        build_history(src)
        copy_namespace(src, dst)
        assert src.prune_history(before=time.time() + 60) > 0  # the first version goes too
        with pytest.raises(TransferError, match="already holds other content"):
            copy_namespace(src, dst)


def test_a_destination_written_to_during_the_copy_fails_verification(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with open_store(f"sqlite://{tmp_path / 'a.db'}") as src, open_store(f"sqlite://{tmp_path / 'b.db'}") as dst:
        build_history(src)
        real = dst.import_version

        def import_version(version: Version, content: bytes | None) -> Version:
            done = real(version, content)
            if done.version == 3:
                dst.write("/memories/intruder.md", b"hi\n", origin=USER, op="create")
            return done

        monkeypatch.setattr(dst, "import_version", import_version)
        with pytest.raises(TransferError) as failed:
            copy_namespace(src, dst)
        assert str(failed.value) == (
            "the destination's history (14 versions) does not match the source's (13) after the copy: "
            "was the destination written to meanwhile?"
        )


# -- URLs ----------------------------------------------------------------------------------------------------


def seeded(url: str, *namespaces: str) -> str:
    """``url``, whose namespaces each got one file, created and edited."""
    for name in namespaces:
        with open_store(url, namespace=name) as store:
            store.write(f"/memories/{name}.md", name.encode(), origin=MODEL, op="create")
            store.update(f"/memories/{name}.md", lambda f: f.content + b"!", origin=MODEL, op="str_replace")
    return url


def seeded_sqlite(path: Path, *namespaces: str) -> str:
    return seeded(f"sqlite://{path}", *namespaces)


MANY = [kind for kind in BACKENDS if kind != "remote"]  # a server URL reaches one namespace (see below)


@pytest.mark.parametrize("source", MANY)
@pytest.mark.parametrize("target", MANY)
def test_all_namespaces_are_copied_and_empty_ones_skipped(
    source: str, target: str, places: Callable[[str], Path]
) -> None:
    src_url = seeded(store_url(source, places("a")), "default", "work", "notes")
    open_store(src_url, namespace="idle").close()  # known by name, no history
    dst_url = store_url(target, places("b"))
    seen: list[tuple[str, int, int]] = []
    reports = migrate_store(src_url, dst_url, namespace=None, progress=lambda *step: seen.append(step))
    assert [(r.namespace, r.versions, r.copied) for r in reports] == [
        ("default", 2, 2),
        ("notes", 2, 2),
        ("work", 2, 2),
    ]
    assert seen[-1] == ("work", 2, 2)
    for name in ("default", "notes", "work"):
        with open_store(src_url, namespace=name) as src, open_store(dst_url, namespace=name) as dst:
            assert changes(dst) == changes(src)


def test_one_namespace_is_copied_by_url(tmp_path: Path) -> None:
    src_url = seeded_sqlite(tmp_path / "a.db", "default", "work")
    (report,) = migrate_store(src_url, str(tmp_path / "b"), namespace="work")
    assert (report.namespace, report.destination, report.versions, report.files) == ("work", "work", 2, 1)
    with open_store(str(tmp_path / "b")) as default:
        assert list(default.log()) == []


def test_a_dry_run_writes_nothing(tmp_path: Path) -> None:
    src_url = seeded_sqlite(tmp_path / "a.db", "default", "work")
    (report,) = migrate_store(src_url, str(tmp_path / "b"), dry_run=True)
    assert (report.versions, report.present, report.copied, report.remaining, report.dry_run) == (2, 0, 0, 2, True)
    reports = migrate_store(src_url, f"sqlite://{tmp_path / 'c.db'}", namespace=None, dry_run=True)
    assert [r.remaining for r in reports] == [2, 2]
    assert [p.name for p in tmp_path.iterdir()] == ["a.db"]


def test_a_dry_run_after_an_interruption_shows_what_is_left(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with open_store(f"sqlite://{tmp_path / 'a.db'}") as src, open_store(str(tmp_path / "b")) as dst:
        build_history(src)
        interrupt_after(monkeypatch, dst, 9, StorageError("gone"))
        with pytest.raises(TransferError):
            copy_namespace(src, dst)
    (report,) = migrate_store(f"sqlite://{tmp_path / 'a.db'}", str(tmp_path / "b"), dry_run=True)
    assert (report.present, report.remaining) == (9, 4)


@pytest.mark.parametrize(
    ("src", "dst", "message"),
    [
        ("nope:x", "{tmp}/b", "unknown store URL scheme 'nope': use a directory path or one of "),
        ("sqlite://{tmp}/a.db", "nope://x", "unknown store URL scheme 'nope': use a directory path or one of "),
        ("sqlite://{tmp}/a.db", "sqlite://{tmp}/a.db", "SRC_URL and DST_URL name the same store: nothing to copy"),
        ("sqlite://{tmp}/a.db", "sqlite://{tmp}/../{name}/a.db", "SRC_URL and DST_URL name the same store"),
        ("{tmp}/d", "file://{tmp}/d/", "SRC_URL and DST_URL name the same store: nothing to copy"),
        ("sqlite://{tmp}/missing.db", "{tmp}/b", "the source does not exist: there is no SQLite database named "),
        ("{tmp}/missing", "{tmp}/b", "the source does not exist: there is no directory named 'missing' there"),
        ("", "{tmp}/b", "empty store URL"),
    ],
)
def test_bad_urls_are_refused_before_anything_is_written(src: str, dst: str, message: str, tmp_path: Path) -> None:
    seeded_sqlite(tmp_path / "a.db", "default")
    (tmp_path / "d" / "memories").mkdir(parents=True)
    (tmp_path / "d" / "memories" / "x.md").write_text("x\n")
    before = sorted(p.name for p in tmp_path.iterdir())
    fill = {"tmp": str(tmp_path), "name": tmp_path.name}
    with pytest.raises(ConfigError) as refused:
        migrate_store(src.format(**fill), dst.format(**fill))
    assert str(refused.value).startswith(message)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_an_unreadable_source_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "junk.db").write_bytes(b"this is not a database, not at all" * 100)
    with pytest.raises(CorruptStoreError, match="not a memdir SQLite database"):
        migrate_store(f"sqlite://{tmp_path / 'junk.db'}", str(tmp_path / "b"))
    assert not (tmp_path / "b").exists()


def test_an_empty_source_namespace_is_an_error(tmp_path: Path) -> None:
    src_url = seeded_sqlite(tmp_path / "a.db", "default")
    with pytest.raises(ConfigError, match="namespace 'typo' of the source has no history: nothing to copy"):
        migrate_store(src_url, str(tmp_path / "b"), namespace="typo")
    open_store(f"sqlite://{tmp_path / 'empty.db'}").close()
    with pytest.raises(ConfigError, match="the source holds no namespace with history: nothing to copy"):
        migrate_store(f"sqlite://{tmp_path / 'empty.db'}", str(tmp_path / "c"), namespace=None)
    assert not (tmp_path / "b").exists()
    assert not (tmp_path / "c").exists()


# -- memdir servers ----------------------------------------------------------------------------------------


def test_a_server_destination_takes_one_namespace_at_a_time(tmp_path: Path) -> None:
    src_url = seeded_sqlite(tmp_path / "a.db", "default", "work")
    server = live_server(tmp_path / "server")
    with pytest.raises(ConfigError, match="reaches only its token's namespace"):
        migrate_store(src_url, server.url_for("work", admin=True), namespace=None)
    with open_store(server.url_for("work")) as remote:
        assert list(remote.log()) == []
    (report,) = migrate_store(src_url, server.url_for("archive", admin=True), namespace="work")
    assert (report.namespace, report.destination, report.copied) == ("work", "archive", 2)


def test_two_tokens_of_one_server_copy_between_its_namespaces_but_not_into_the_same(tmp_path: Path) -> None:
    server = live_server(tmp_path)
    with open_store(server.url_for("work")) as work:
        build_history(work)
    (report,) = migrate_store(server.url_for("work"), server.url_for("copy", admin=True))
    assert (report.namespace, report.destination, report.copied) == ("work", "copy", 13)
    with pytest.raises(ConfigError, match="name the same namespace of the same store"):
        migrate_store(server.url_for("work"), server.url_for("work", admin=True))


def test_a_server_destination_needs_an_admin_token(tmp_path: Path) -> None:
    """Any other token's writes are recorded as the token's, now: the copy would not be the source's history."""
    src_url = seeded_sqlite(tmp_path / "a.db", "work")
    server = live_server(tmp_path / "server")
    with pytest.raises(TransferError, match="not an admin token"):
        migrate_store(src_url, server.url_for("copy"), namespace="work")
    with open_store(server.url_for("copy")) as remote:
        assert list(remote.log()) == []  # refused before anything was written


# -- listing namespaces ---------------------------------------------------------------------------------------


def test_stores_list_the_namespaces_that_have_history(tmp_path: Path) -> None:
    url = seeded_sqlite(tmp_path / "a.db", "b", "a")
    open_store(url, namespace="idle").close()
    with open_store(url) as store:
        assert store.namespaces() == ["a", "b"]
    (tmp_path / "d" / "namespaces" / "hand").mkdir(parents=True)
    (tmp_path / "d" / "namespaces" / "hand" / "x.md").write_text("x\n")  # never opened: no history yet
    (tmp_path / "d" / "namespaces" / "empty").mkdir()
    with open_store(str(tmp_path / "d"), namespace="kept") as store:
        store.write("/memories/k.md", b"k")
        assert store.namespaces() == ["hand", "kept"]
    with open_store("memory:shared", namespace="one") as one, open_store("memory:shared", namespace="two") as two:
        two.write("/memories/t.md", b"t")
        assert one.namespaces() == ["two"]
    with open_store(live_server(tmp_path).url_for("work")) as remote:
        assert remote.namespaces() == ["work"]


def test_a_store_that_cannot_list_its_namespaces_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    from memdir.store import MemoryStore

    monkeypatch.setattr(MemoryStore, "namespaces", Store.namespaces)
    with pytest.raises(ConfigError, match="MemoryStore cannot list its namespaces: name the namespace to use"):
        migrate_store("memory:x", "memory:y", namespace=None)


# -- content redacted in the source ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "target"), [(kind, "sqlite") for kind in BACKENDS if kind != "remote"] + [("sqlite", "directory")]
)
def test_redacted_content_is_copied_as_redacted(source: str, target: str, places: Callable[[str], Path]) -> None:
    with opened(source, places("a")) as src, opened(target, places("b")) as dst:
        first = redacted_history(src)
        report = copy_namespace(src, dst)
        assert (report.copied, report.versions) == (3, 3)
        copied = list(dst.log())
        assert [(v.path, v.op, v.actor) for v in copied] == [(v.path, v.op, v.actor) for v in src.log()]
        assert files_of(dst) == {"/memories/moved.md": b"the new text\n"}
        assert copied[0].sha256 is not None and copied[0].sha256 != first.sha256
        with pytest.raises(RedactedError):
            dst.read_blob(copied[0].sha256)  # the stand-in is redacted too
        again = copy_namespace(src, dst)  # a second run recognises the redacted version as the source's
        assert (again.present, again.copied) == (3, 0)


def test_a_copy_stopped_before_the_stand_ins_were_redacted_redacts_them_when_run_again(
    places: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    with opened("sqlite", places("a")) as src, opened("sqlite", places("b")) as dst:
        redacted_history(src)

        def killed(sha256: str) -> bool:
            raise KeyboardInterrupt  # as if the run were stopped between the copy and the redaction

        monkeypatch.setattr(dst, "redact_content", killed)
        with pytest.raises(KeyboardInterrupt):
            copy_namespace(src, dst)
        stand_in = next(iter(dst.log()))
        assert stand_in.sha256 is not None and dst.read_blob(stand_in.sha256).startswith(b"[content removed")
        monkeypatch.undo()
        report = copy_namespace(src, dst)
        assert (report.present, report.copied) == (3, 0)
        with pytest.raises(RedactedError):
            dst.read_blob(stand_in.sha256)
