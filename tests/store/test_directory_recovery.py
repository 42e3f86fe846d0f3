"""A directory-store writer killed between its COMMIT and the renames that make the change visible.

The next opener (or the next look of a store that was already open) rolls the committed change forward, so the
file holds what the history says and the history never reads "write, then an `external` undo". An edit made by
hand in the meantime still wins and is recorded as `external`; a read-only store finishes nothing.

Real processes: each child stops exactly in that window (`support.crash`) and is killed with SIGKILL.
"""

from __future__ import annotations

import contextlib
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from memdir import Origin, Store, StoreNotFoundError, Version, open_store
from memdir.cli import cli
from memdir.store._fs import TEMP_PREFIX
from memdir.store._records import sha256_hex
from memdir.store._sql import pending_by_namespace
from memdir.store.directory import DirectoryStore
from support.crash import killed_after_commit

USER = Origin("user", None, "cli")

CHILD = r"""
from memdir import Origin, open_store

base, action = sys.argv[1], sys.argv[2]
store = open_store(base)
model = Origin("model", "s-1")
if action == "write":
    store.write("/memories/a.md", b"new\n", origin=model)
elif action == "create":
    store.write("/memories/new/b.md", b"born\n", origin=model, op="create")
elif action == "update":
    store.update("/memories/a.md", lambda f: f.content + b"more\n", origin=model, op="insert")
elif action == "delete":
    store.delete("/memories/a.md", origin=model)
elif action == "delete_dir":
    store.delete("/memories/d", origin=model)
elif action == "move":
    store.move("/memories/a.md", "/memories/moved/a.md", origin=model)
elif action == "move_dir":
    store.move("/memories/d", "/memories/e/d", origin=model)
"""

# What the tree holds (directories with a trailing slash) once each action is visible.
START: dict[str, bytes | None] = {"a.md": b"old\n", "d/": None, "d/x.md": b"x\n", "d/y.md": b"y\n"}
D: dict[str, bytes | None] = {"d/": None, "d/x.md": b"x\n", "d/y.md": b"y\n"}
AFTER: dict[str, dict[str, bytes | None]] = {
    "write": {"a.md": b"new\n", **D},
    "create": {**START, "new/": None, "new/b.md": b"born\n"},
    "update": {"a.md": b"old\nmore\n", **D},
    "delete": D,
    "delete_dir": {"a.md": b"old\n"},
    "move": {"moved/": None, "moved/a.md": b"old\n", **D},
    "move_dir": {"a.md": b"old\n", "e/": None, "e/d/": None, "e/d/x.md": b"x\n", "e/d/y.md": b"y\n"},
}


@pytest.fixture
def base(tmp_path: Path) -> Path:
    path = tmp_path / "store"
    with open_store(str(path)) as store:
        for name, content in START.items():
            if content is not None:
                store.write(f"/memories/{name}", content, origin=USER, op="create")
    return path


def tree(base: Path) -> dict[str, bytes | None]:
    """Everything below ``memories/``: files with their content, directories as ``name/``, hidden files too."""
    root = base / "memories"
    found: dict[str, bytes | None] = {}
    for path in sorted(root.rglob("*")):
        name = path.relative_to(root).as_posix()
        found[name + "/" if path.is_dir() else name] = None if path.is_dir() else path.read_bytes()
    return found


def files_of(entries: dict[str, bytes | None]) -> dict[str, bytes]:
    return {name: content for name, content in entries.items() if content is not None}


def files(base: Path) -> dict[str, bytes]:
    """The memory files as a reader sees them: no directories, no hidden temporary files."""
    return {k: v for k, v in files_of(tree(base)).items() if not k.rsplit("/", 1)[-1].startswith(TEMP_PREFIX)}


def pending_rows(base: Path) -> int:
    """Pending operations recorded in the index (in the namespace's row, or the table an earlier memdir used)."""
    with contextlib.closing(sqlite3.connect(base / ".memdir" / "index.db")) as conn:
        return sum(len(ops) for ops in pending_by_namespace(conn).values())


def kill_in_the_window(base: Path, action: str, meanwhile: Callable[[], object] = lambda: None) -> None:
    """Run ``action`` in a child stopped after its COMMIT, check the window is real, run ``meanwhile``, SIGKILL."""
    with killed_after_commit(CHILD, str(base), action):
        assert files(base) == files_of(START)  # committed, and nothing visible yet
        assert pending_rows(base) > 0
        meanwhile()


def outside_edits(store: Store) -> list[Version]:
    return [v for v in store.log() if v.actor == "external"]


@pytest.mark.parametrize("action", list(AFTER))
def test_a_change_committed_before_a_kill_is_put_in_place_on_reopen(base: Path, action: str) -> None:
    kill_in_the_window(base, action)
    with open_store(str(base)) as store:
        assert pending_rows(base) == 0  # finished on open, before any look
        assert tree(base) == AFTER[action]  # the committed content, no temporary file, no empty directory
        assert outside_edits(store) == []
        assert {e.path.key: store.read(e.path).content for e in store.list_files()} == files_of(AFTER[action])
        assert {v.actor for v in list(store.log())[3:]} == {"model"}  # after the three files of START


def test_a_store_open_during_the_kill_sees_the_change_at_its_next_look(base: Path) -> None:
    with open_store(str(base)) as store:
        kill_in_the_window(base, "write")
        data = store.read("/memories/a.md")
        assert data.content == b"new\n"
        assert [(v.op, v.actor) for v in store.history("/memories/a.md")] == [("create", "user"), ("write", "model")]
        assert data.version == store.history("/memories/a.md")[-1].version
        assert TEMP_PREFIX not in "".join(tree(base))
        assert pending_rows(base) == 0


@pytest.mark.parametrize(
    ("action", "history", "left"),
    [
        ("write", [("create", "user"), ("write", "model"), ("write", "external")], {"a.md": b"by hand\n", **D}),
        ("delete", [("create", "user"), ("delete", "model"), ("create", "external")], {"a.md": b"by hand\n", **D}),
        ("move", [("create", "user"), ("rename", "model"), ("create", "external")], {"a.md": b"by hand\n", **D}),
    ],
)
def test_a_hand_edit_made_in_the_window_wins_and_is_recorded_as_external(
    base: Path, action: str, history: list[tuple[str, str]], left: dict[str, bytes | None]
) -> None:
    kill_in_the_window(base, action, meanwhile=lambda: (base / "memories" / "a.md").write_bytes(b"by hand\n"))
    with open_store(str(base)) as store:
        assert tree(base) == left  # the edit kept, the committed copy not put over it, no temporary file left
        assert pending_rows(base) == 0
        assert [(v.op, v.actor) for v in store.history("/memories/a.md")] == history
        assert store.read("/memories/a.md").content == b"by hand\n"
        if action == "move":  # the move was recorded, and (at a listing) its file found missing at the destination
            store.list_files()
            moved = [(v.op, v.actor) for v in store.history("/memories/moved/a.md")]
            assert moved == [("create", "user"), ("rename", "model"), ("delete", "external")]


def test_a_read_only_store_finishes_nothing_and_reads_the_disk_as_it_is(base: Path) -> None:
    kill_in_the_window(base, "write")
    (temp,) = [name for name in tree(base) if name.startswith(TEMP_PREFIX)]
    with DirectoryStore(base, read_only=True) as store:
        assert store.read("/memories/a.md").content == b"old\n"
        assert [e.path.key for e in store.list_files()] == ["a.md", "d/x.md", "d/y.md"]
    assert (base / "memories" / temp).read_bytes() == b"new\n"
    assert pending_rows(base) == 1
    with open_store(str(base)) as store:  # the first writable opener finishes it
        assert store.read("/memories/a.md").content == b"new\n"
        assert outside_edits(store) == []


def test_a_read_only_store_makes_no_directory(tmp_path: Path) -> None:
    with pytest.raises(StoreNotFoundError):
        DirectoryStore(tmp_path / "nothing-here", read_only=True)
    assert list(tmp_path.iterdir()) == []


def test_a_temporary_file_removed_meanwhile_leaves_the_disk_as_it_is(base: Path) -> None:
    def remove_temp() -> None:
        for path in (base / "memories").glob(TEMP_PREFIX + "*"):
            path.unlink()  # as `memdir doctor --repair` of an older release would have

    kill_in_the_window(base, "write", meanwhile=remove_temp)
    with open_store(str(base)) as store:
        assert store.read("/memories/a.md").content == b"old\n"
        assert [(v.op, v.actor) for v in store.history("/memories/a.md")][-1] == ("write", "external")
        assert pending_rows(base) == 0


TWO = b"two\n"


def _plant_in_table(conn: sqlite3.Connection, version: int, stale: str) -> None:
    """Where an earlier memdir recorded pending operations: a row each in table ``pending``."""
    conn.execute(
        "INSERT INTO pending (ns, version, op, path, sha256, temp, replaces) VALUES ('default', ?, 'install', "
        "'a.md', ?, ?, ?)",
        (version, sha256_hex(b"one\n"), stale, sha256_hex(TWO)),
    )


def _plant_in_namespace_row(conn: sqlite3.Connection, version: int, stale: str) -> None:
    """Where changes record them now: the namespace's row (the rest of the operation is in the version's row)."""
    op = f"{version} install {stale} {sha256_hex(TWO)} -"
    conn.execute(
        "UPDATE namespaces SET pending = ?, pending_first = ?, pending_last = ? WHERE ns = 'default'",
        (op, version, version),
    )


@pytest.mark.parametrize("plant", [_plant_in_table, _plant_in_namespace_row], ids=["table", "namespace-row"])
def test_a_stale_row_never_puts_old_content_back(
    tmp_path: Path, plant: Callable[[sqlite3.Connection, int, str], None]
) -> None:
    """A row whose version is no longer current (its clean-up lost, say) is dropped, its copy removed."""
    base = tmp_path / "store"
    with open_store(str(base)) as store:
        first = store.write("/memories/a.md", b"one\n", origin=USER, op="create")
        store.write("/memories/a.md", b"two\n", origin=USER)
    stale = TEMP_PREFIX + "4242-stale"
    (base / "memories" / stale).write_bytes(b"one\n")
    with contextlib.closing(sqlite3.connect(base / ".memdir" / "index.db")) as conn, conn:
        plant(conn, first.version, stale)
    assert pending_rows(base) == 1
    with open_store(str(base)) as store:
        assert tree(base) == {"a.md": b"two\n"}
        assert pending_rows(base) == 0
        assert outside_edits(store) == []


# -- migrate-store into a directory destination --------------------------------------------------------------

COPIER = r"""
sys.argv = ["memdir", "migrate-store", *sys.argv[1:]]
from memdir.cli import main

main()
"""


def source_history(url: str) -> int:
    """Creates, an edit, a directory move and a delete: every kind of file operation a copy replays."""
    model = Origin("model", "s-1")
    with open_store(url) as store:
        store.write("/memories/a.md", b"a\n", origin=model, op="create")
        store.write("/memories/p/b.md", b"b\n", origin=model, op="create")
        store.update("/memories/a.md", lambda f: f.content + b"more\n", origin=model, op="insert")
        store.move("/memories/p", "/memories/q/p", origin=model)
        store.delete("/memories/a.md", origin=model)
        store.write("/memories/c.md", b"c\n", origin=model, op="create")
        return len(list(store.log()))


def changes(store: Store) -> list[tuple[object, ...]]:
    return [(v.path, v.op, v.actor, v.session, v.sha256, v.size, v.old_path) for v in store.log()]


@pytest.mark.parametrize("stop_at", range(1, 7))
def test_migrate_store_killed_between_a_commit_and_its_rename_resumes(tmp_path: Path, stop_at: int) -> None:
    src, dst = f"sqlite://{tmp_path / 'src.db'}", str(tmp_path / "dst")
    assert source_history(src) == 6
    with killed_after_commit(COPIER, src, dst, stop_at=stop_at):
        pass
    result = CliRunner().invoke(cli, ["migrate-store", src, dst])
    assert result.exit_code == 0, result.output
    assert f"({6 - stop_at} now, {stop_at} by an earlier run)" in result.output
    with open_store(src) as source, open_store(dst) as copy:
        assert changes(copy) == changes(source)
        assert {e.path.key: sha256_hex(copy.read(e.path).content) for e in copy.list_files()} == {
            e.path.key: e.sha256 for e in source.list_files()
        }
    assert not [p for p in (tmp_path / "dst").rglob(TEMP_PREFIX + "*")]


# A writer records that its changes are in place (pending rows dropped, files' stamps noted) with its next
# command's transaction, or when it is closed. One that ends without either leaves rows for done changes.
UNCLOSED = (
    "import os, sys\n"
    + CHILD
    + "\nos._exit(0)  # no close, no atexit: what the writer noted after its COMMIT is never recorded\n"
)


@pytest.mark.parametrize("action", list(AFTER))
def test_a_writer_that_ends_without_closing_leaves_rows_the_next_opener_finds_done(base: Path, action: str) -> None:
    subprocess.run([sys.executable, "-c", UNCLOSED, str(base), action], check=True)
    assert files(base) == files_of(AFTER[action])  # the change is in place: the writer ran to its end
    assert pending_rows(base) > 0  # only its record of that is missing
    result = CliRunner().invoke(cli, ["--store", str(base), "doctor"])
    assert "not yet put in place" not in result.output  # done changes are not reported as interrupted
    with open_store(str(base)) as store:
        assert pending_rows(base) == 0
        assert tree(base) == AFTER[action]
        assert outside_edits(store) == []
        assert {e.path.key: store.read(e.path).content for e in store.list_files()} == files_of(AFTER[action])
        assert {v.actor for v in list(store.log())[3:]} == {"model"}


def unstamped(base: Path) -> int:
    with contextlib.closing(sqlite3.connect(base / ".memdir" / "index.db")) as conn:
        return int(conn.execute("SELECT count(*) FROM files WHERE stamp IS NULL").fetchone()[0])


def test_what_a_writer_noted_is_recorded_by_its_next_command_or_on_close(base: Path) -> None:
    writer = DirectoryStore(base)
    writer.write("/memories/a.md", b"one\n")
    assert (pending_rows(base), unstamped(base)) == (1, 1)  # noted, not recorded yet
    assert writer.read("/memories/a.md").version == 4  # the noted stamp vouches for the file: no re-hash
    with DirectoryStore(base) as other:  # another store object reads and writes in between
        assert other.read("/memories/a.md").content == b"one\n"
        other.write("/memories/d/x.md", b"x2\n")
    writer.write("/memories/a.md", b"two\n")
    assert (pending_rows(base), unstamped(base)) == (1, 1)  # the first write's record went with the second's
    writer.close()
    assert (pending_rows(base), unstamped(base)) == (0, 0)
    with open_store(str(base)) as store:
        assert [v.actor for v in store.history("/memories/a.md")] == ["user", "user", "user"]  # no `external`
        assert store.read("/memories/a.md").content == b"two\n"


def test_a_new_sidecar_has_small_pages_and_an_old_one_keeps_its_own(tmp_path: Path) -> None:
    """1 KiB pages for a sidecar made now (its rows are small: less write-ahead log per change); a sidecar made
    with SQLite's default 4 KiB pages opens, reads and writes as it is."""
    with open_store(str(tmp_path / "new")) as store:
        store.write("/memories/a.md", b"one\n")
    assert _page_size(tmp_path / "new" / ".memdir" / "index.db") == 1024

    old = tmp_path / "old"
    (old / ".memdir").mkdir(parents=True)
    with contextlib.closing(sqlite3.connect(old / ".memdir" / "index.db")) as conn:
        conn.execute("PRAGMA journal_mode = WAL")  # fixes the page size at the default
    with open_store(str(old)) as store:
        store.write("/memories/a.md", b"one\n")
        store.write("/memories/a.md", b"two\n")
        assert store.read("/memories/a.md").content == b"two\n"
        assert len(store.history("/memories/a.md")) == 2
    assert _page_size(old / ".memdir" / "index.db") == 4096


def _page_size(db: Path) -> int:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return int(conn.execute("PRAGMA page_size").fetchone()[0])


def counters(base: Path) -> tuple[int, int, int, int, int]:
    """The namespace row's counters, and what the tables say they should be."""
    with contextlib.closing(sqlite3.connect(base / ".memdir" / "index.db")) as conn:
        row = conn.execute(
            "SELECT n.last_version, n.files, n.bytes, (SELECT max(version) FROM versions), "
            "(SELECT coalesce(sum(size), 0) FROM files) FROM namespaces n WHERE n.ns = 'default'"
        ).fetchone()
    last, files, size, highest, total = (int(x) for x in row)
    return last, files, size, highest, total


def test_a_change_counts_in_memory_and_a_failed_one_counts_nothing(base: Path) -> None:
    # A change numbers and counts its versions in memory and writes the namespace's row once at its end; one
    # that fails after counting (here: an outside edit recorded, then the edit refused) leaves the row as it was.
    with DirectoryStore(base) as store:
        store.write("/memories/a.md", b"one\n")
        store.write("/memories/d/b.md", b"two\n")
        store.delete("/memories/d")  # a change of one version per file below
        (base / "memories" / "a.md").write_bytes(b"edited by hand\n")
        before = counters(base)

        def refuse(_: object) -> bytes:
            raise ValueError("no")

        with pytest.raises(ValueError):
            store.update("/memories/a.md", refuse)
        assert counters(base) == before
        store.write("/memories/c.md", b"three\n")
        versions = [v.version for v in store.log()]
    assert versions == list(range(1, len(versions) + 1))
    last, files, size, highest, total = counters(base)
    assert (last, files, size) == (highest, 2, total) == (versions[-1], 2, len(b"edited by hand\n") + 6)


@pytest.mark.parametrize("edit", ["append", "replace", "create"])
def test_an_outside_edit_while_a_write_is_in_flight_is_not_overwritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: str
) -> None:
    """Another program writes the file after memdir read it and before the COMMIT (the temporary file's fsync is
    the long part of that window): the write is refused, nothing of it lands, and the edit stays, recorded as an
    ``external`` version. It used to be renamed over, with no version anywhere (a tester lost 16 of 50 appends)."""
    from memdir.errors import ConflictError
    from memdir.store import _writer

    base = tmp_path / "store"
    note = base / "memories" / "a.md"
    with open_store(str(base)) as store:
        if edit != "create":
            store.write("/memories/a.md", b"old\n", op="create", origin=USER)
        real = _writer._fs.write_temp

        def meanwhile(*args: object, **options: object) -> str:
            if edit == "replace":  # an editor: a new file renamed over the old
                (base / "memories" / "b.tmp").write_bytes(b"by hand\n")
                (base / "memories" / "b.tmp").rename(note)
            else:
                with note.open("ab") as f:
                    f.write(b"by hand\n")
            return real(*args, **options)  # type: ignore[arg-type]

        monkeypatch.setattr(_writer._fs, "write_temp", meanwhile)
        with pytest.raises(ConflictError, match="changed on disk by another program"):
            if edit == "create":
                store.write("/memories/a.md", b"new\n", op="create", origin=USER)
            else:
                store.update("/memories/a.md", lambda before: before.content + b"by memdir\n", origin=USER)
        monkeypatch.setattr(_writer._fs, "write_temp", real)
        expected = b"by hand\n" if edit in ("replace", "create") else b"old\nby hand\n"
        assert note.read_bytes() == expected
        assert store.read("/memories/a.md").content == expected
        assert [v.actor for v in store.history("/memories/a.md")][-1] == "external"
        assert not [p for p in (base / "memories").iterdir() if p.name.startswith(TEMP_PREFIX)]


def test_the_tool_says_the_file_changed_on_disk_meanwhile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memdir import MemoryTool
    from memdir.store import _writer

    base = tmp_path / "store"
    with open_store(str(base)) as store, MemoryTool(store) as tool:
        tool.execute({"command": "create", "path": "/memories/a.md", "file_text": "old\n"})
        real = _writer._fs.write_temp

        def meanwhile(*args: object, **options: object) -> str:
            (base / "memories" / "a.md").write_bytes(b"by hand\n")
            return real(*args, **options)  # type: ignore[arg-type]

        monkeypatch.setattr(_writer._fs, "write_temp", meanwhile)
        result = tool.execute({"command": "str_replace", "path": "/memories/a.md", "old_str": "old", "new_str": "x"})
        assert result.is_error and result.text == (
            "Error: /memories/a.md was changed on disk by another program while it was being written; nothing was "
            "written: read it again"
        )
