"""memdir doctor: finds what is wrong with a store's files, repairs what can be repaired, deletes nothing."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import sqlite3
from pathlib import Path

import pytest

from cli.helpers import Run
from memdir import CorruptStoreError, NotFoundError, Origin, open_store
from memdir.doctor import diagnose
from support.crash import killed_after_commit

HINT = " Run `memdir doctor --repair` to fix what can be fixed."


@pytest.fixture
def base(tmp_path: Path) -> Path:
    """A directory store with a little history: a.md (two versions) and d/b.md."""
    path = tmp_path / "store"
    with open_store(str(path)) as store:
        store.write("/memories/a.md", b"alpha\n", op="create", origin=Origin("model", "s-1"))
        store.write("/memories/a.md", b"alpha 2\n", origin=Origin("model", "s-1"))
        store.write("/memories/d/b.md", b"bee\n", op="create")
    return path


def files_on_disk(base: Path) -> dict[str, bytes]:
    root = base / "memories"
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def mode(path: Path) -> str:
    return oct(path.lstat().st_mode)[-3:]


def test_a_healthy_store(run: Run, base: Path) -> None:
    result = run("doctor", store=str(base))
    assert (result.exit_code, result.stdout) == (0, f"Checking {base} (directory store)\nNo problems found.\n")


def test_a_damaged_index_is_moved_aside_and_rebuilt_from_the_files(run: Run, base: Path) -> None:
    before = files_on_disk(base)
    index = base / ".memdir" / "index.db"
    index.write_bytes(b"garbage" * 500)
    with pytest.raises(CorruptStoreError):
        open_store(str(base))

    result = run("doctor", store=str(base))
    assert (result.exit_code, result.stdout) == (
        1,
        f"Checking {base} (directory store)\n"
        "error   .memdir/index.db: the history index is damaged (file is not a database)\n"
        f"1 problem found, 0 repaired, 1 remaining.{HINT}\n",
    )

    result = run("doctor", "--repair", store=str(base))
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[1] == "error   .memdir/index.db: the history index is damaged (file is not a database)"
    assert re.fullmatch(
        r"        repaired: the damaged index is kept as index\.db\.corrupt-\d{8}T\d{6}Z; "
        r"index rebuilt from the 2 files on disk \(op and actor `import`\)",
        lines[2],
    )
    assert lines[3:] == ["1 problem found, 1 repaired, 0 remaining."]

    assert files_on_disk(base) == before  # the memory itself never changed
    (aside,) = (base / ".memdir").glob("index.db.corrupt-*")
    assert aside.read_bytes() == b"garbage" * 500  # kept, untouched
    assert mode(index) == "600"
    with open_store(str(base)) as store:
        assert store.read("/memories/a.md").content == b"alpha 2\n"
        (version,) = store.history("/memories/a.md")
        assert (version.op, version.actor, version.sha256) == (
            "import",
            "import",
            hashlib.sha256(b"alpha 2\n").hexdigest(),
        )
        store.write("/memories/a.md", b"alpha 3\n")  # the rebuilt index takes new versions
        assert [v.version for v in store.history("/memories/a.md")][-1] == 3
    assert run("doctor", store=str(base)).stdout.endswith("No problems found.\n")


def test_a_missing_index_is_rebuilt(run: Run, base: Path) -> None:
    (base / ".memdir" / "index.db").unlink()
    result = run("doctor", store=str(base))
    assert result.exit_code == 1
    assert result.stdout.splitlines()[1] == (
        "warning .memdir/index.db: the history index is missing (the history is lost)"
    )
    result = run("doctor", "--repair", store=str(base))
    assert result.exit_code == 0
    assert result.stdout.splitlines()[2] == (
        "        repaired: index rebuilt from the 2 files on disk (op and actor `import`)"
    )


def test_a_check_walks_a_namespace_with_its_writers_kept_out(
    run: Run, base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write's temporary file exists only while it holds the writer lock: walked without the lock, a write in
    progress was reported as "a temporary file left by an interrupted write"."""
    from memdir.doctor._directory import DirectoryDoctor

    visiting = DirectoryDoctor._visit
    writer_could_lock: list[bool] = []

    def visit(self: object, fd: int, where: str, *, tree: bool) -> None:
        if tree:  # what a writer (any process) would try now: its exclusive lock on the namespace root
            other = os.open(base / "memories", os.O_RDONLY | os.O_DIRECTORY)
            try:
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
                writer_could_lock.append(True)
            except BlockingIOError:
                writer_could_lock.append(False)
            finally:
                os.close(other)
        visiting(self, fd, where, tree=tree)

    monkeypatch.setattr(DirectoryDoctor, "_visit", visit)
    assert run("doctor", store=str(base)).exit_code == 0
    assert writer_could_lock and not any(writer_could_lock)


def test_temp_files_symlinks_and_modes(run: Run, base: Path, tmp_path: Path) -> None:
    root = base / "memories"
    (root / ".memdir-tmp-4242-abcdef").write_bytes(b"half a write")
    (tmp_path / "outside.txt").write_text("not memory\n")
    os.symlink(tmp_path / "outside.txt", root / "link.md")
    os.chmod(root / "a.md", 0o644)
    os.chmod(root / "d", 0o755)

    result = run("doctor", store=str(base))
    assert (result.exit_code, result.stdout) == (
        1,
        f"Checking {base} (directory store)\n"
        "warning memories/.memdir-tmp-4242-abcdef: a temporary file left by an interrupted write\n"
        "warning memories/a.md: mode 0644, should be 0600 (memory is private)\n"
        "warning memories/d: mode 0755, should be 0700 (memory is private)\n"
        "warning memories/link.md: a symbolic link: memdir never follows it; the model cannot see it\n"
        f"4 problems found, 0 repaired, 4 remaining.{HINT}\n",
    )

    result = run("doctor", "--repair", store=str(base))
    assert (result.exit_code, result.stdout) == (
        1,
        f"Checking {base} (directory store)\n"
        "warning memories/.memdir-tmp-4242-abcdef: a temporary file left by an interrupted write\n"
        "        repaired: removed\n"
        "warning memories/a.md: mode 0644, should be 0600 (memory is private)\n"
        "        repaired: mode set to 0600\n"
        "warning memories/d: mode 0755, should be 0700 (memory is private)\n"
        "        repaired: mode set to 0700\n"
        "warning memories/link.md: a symbolic link: memdir never follows it; the model cannot see it\n"
        "4 problems found, 3 repaired, 1 remaining.\n",
    )
    assert not (root / ".memdir-tmp-4242-abcdef").exists()
    assert (mode(root / "a.md"), mode(root / "d")) == ("600", "700")
    assert (root / "link.md").is_symlink()  # reported, never deleted
    assert mode(tmp_path / "outside.txt") == "644"  # and never followed
    assert (tmp_path / "outside.txt").read_text() == "not memory\n"


def test_names_contents_and_file_types_memdir_cannot_use_are_reported_only(run: Run, base: Path) -> None:
    root = base / "memories"
    (root / ".hidden.md").write_bytes(b"x")
    os.chmod(root / ".hidden.md", 0o600)
    fd = os.open(os.fsencode(root) + b"/bad\xff.md", os.O_CREAT | os.O_WRONLY, 0o600)
    os.close(fd)
    (root / "bin.md").write_bytes(b"\xff\xfe binary")
    (root / "pic.png").write_bytes(b"\x89PNG\r\n\x1a\n\xff")
    for name in ("bin.md", "pic.png"):
        os.chmod(root / name, 0o600)
    os.mkfifo(root / "pipe.md", 0o600)

    result = run("doctor", "--repair", store=str(base))
    assert (result.exit_code, result.stdout) == (
        1,
        f"Checking {base} (directory store)\n"
        "warning memories/.hidden.md: a name the path rules refuse (names starting with '.' are hidden and reserved):"
        " the model cannot see it\n"
        "warning memories/bad\\xff.md: a name the path rules refuse (not valid UTF-8): the model cannot see it\n"
        "warning memories/bin.md: the content is not UTF-8 text: the model's text commands refuse it\n"
        "warning memories/pipe.md: not a regular file or directory: memdir ignores it\n"
        "info    namespace default: 2 files changed outside memdir (recorded as versions when the store is next used)\n"
        "        repaired: recorded as versions by actor `external`\n"
        "4 problems found, 0 repaired, 4 remaining.\n",
    )
    assert sorted(os.listdir(root)) == [".hidden.md", "a.md", "bad\udcff.md", "bin.md", "d", "pic.png", "pipe.md"]


def test_a_file_too_large_to_read_is_reported_only(run: Run, base: Path) -> None:
    giant = base / "memories" / "d" / "build.log.md"
    with open(giant, "wb") as fh:
        fh.truncate(64 * 1024 * 1024 + 1)  # sparse: one byte over what memdir reads, costing no disk
    os.chmod(giant, 0o600)

    result = run("doctor", "--repair", store=str(base))
    assert (result.exit_code, result.stdout) == (
        1,
        f"Checking {base} (directory store)\n"
        "warning memories/d/build.log.md: too large to read (67,108,865 bytes, more than 64 MiB): memdir ignores it;"
        " the model cannot see it\n"
        "1 problem found, 0 repaired, 1 remaining.\n",
    )
    assert giant.stat().st_size == 64 * 1024 * 1024 + 1


def test_files_changed_outside_memdir_are_recorded(run: Run, base: Path) -> None:
    (base / "memories" / "a.md").write_bytes(b"edited in vim\n")
    (base / "memories" / "d" / "b.md").unlink()
    result = run("doctor", store=str(base))
    assert (result.exit_code, result.stdout) == (
        0,
        f"Checking {base} (directory store)\n"
        "info    namespace default: 2 files changed outside memdir (recorded as versions when the store is next used)\n"
        "No problems found.\n",
    )
    assert run("doctor", "--repair", store=str(base)).exit_code == 0
    with open_store(str(base)) as store:
        assert [(v.op, v.actor) for v in store.history("/memories/a.md")][-1] == ("write", "external")
        assert [(v.op, v.actor) for v in store.history("/memories/d/b.md")][-1] == ("delete", "external")


def test_a_chmod_alone_is_not_an_outside_change(run: Run, base: Path) -> None:
    os.chmod(base / "memories" / "a.md", 0o600)  # the same mode: only the ctime moves
    assert run("doctor", store=str(base)).stdout.endswith("No problems found.\n")


WRITER = """
from memdir import open_store

open_store(sys.argv[1]).write("/memories/d/b.md", b"bee 2\\n")
"""


def test_a_change_a_killed_writer_committed_is_not_a_leftover_and_repair_puts_it_in_place(run: Run, base: Path) -> None:
    with killed_after_commit(WRITER, str(base)):
        pass
    (temp,) = (base / "memories" / "d").glob(".memdir-tmp-*")
    pending = (
        "info    namespace default: 1 committed change not yet put in place on disk (a writer was stopped before it "
        "could; done when the store is next used)\n"
    )
    result = run("doctor", store=str(base))
    assert (result.exit_code, result.stdout) == (0, f"Checking {base} (directory store)\n{pending}No problems found.\n")
    assert temp.read_bytes() == b"bee 2\n"  # committed content: not removed as a leftover

    result = run("doctor", "--repair", store=str(base))
    assert (result.exit_code, result.stdout) == (
        0,
        f"Checking {base} (directory store)\n{pending}"
        "        repaired: put in place (files edited by hand meanwhile are kept, and recorded as versions by actor "
        "`external`)\n"
        "No problems found.\n",
    )
    assert files_on_disk(base) == {"a.md": b"alpha 2\n", "d/b.md": b"bee 2\n"}
    with open_store(str(base)) as store:
        assert [v.actor for v in store.history("/memories/d/b.md")] == ["user", "user"]


def test_counters_that_disagree_with_the_index_are_fixed(run: Run, base: Path) -> None:
    with sqlite3.connect(base / ".memdir" / "index.db") as conn:
        conn.execute("UPDATE namespaces SET files = 99, bytes = 7")
    conn.close()
    result = run("doctor", "--repair", store=str(base))
    assert (result.exit_code, result.stdout) == (
        0,
        f"Checking {base} (directory store)\n"
        "error   .memdir/index.db: namespace default: counters say 99 files, 7 bytes, last version 3; "
        "the tables hold 2 files, 12 bytes, last version 3\n"
        "        repaired: counters set from the tables\n"
        "1 problem found, 1 repaired, 0 remaining.\n",
    )
    with open_store(str(base)) as store:
        assert (store.usage().files, store.usage().bytes) == (2, 12)


def test_other_namespaces_are_checked_too(run: Run, base: Path) -> None:
    with open_store(str(base), namespace="team") as store:
        store.write("/memories/t.md", b"t")
    os.chmod(base / "namespaces" / "team" / "t.md", 0o666)
    (base / "namespaces" / "not a namespace!").mkdir()
    result = run("doctor", store=str(base))
    assert result.stdout.splitlines()[1:3] == [
        "warning namespaces/not a namespace!: not a namespace directory memdir can use; left alone",
        "warning namespaces/team/t.md: mode 0666, should be 0600 (memory is private)",
    ]


def test_no_store_at_the_location(run: Run, tmp_path: Path) -> None:
    result = run("doctor", store=str(tmp_path))
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        f"Error: no store at {tmp_path} (check --store or MEMDIR_STORE; a writing command such as `memdir write` "
        "creates it)\n"
    )
    assert list(tmp_path.iterdir()) == []  # the doctor creates no store
    result = run("doctor", store=f"sqlite://{tmp_path / 'none.db'}")
    assert (result.exit_code, result.stderr.startswith(f"Error: no store at sqlite://{tmp_path / 'none.db'} ")) == (
        1,
        True,
    )
    assert list(tmp_path.iterdir()) == []


def test_an_unknown_scheme_is_a_one_line_error(run: Run) -> None:
    result = run("doctor", store="bogus:x")
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        "Error: unknown store URL scheme 'bogus': use a directory path or one of claude-code:, file:, http:, https:, memory:, postgres:, postgresql:, sqlite:\n"
    )


def test_an_in_memory_store(run: Run) -> None:
    result = run("doctor", store="memory:")
    assert (result.exit_code, result.stdout) == (
        0,
        "Checking memory: (memory store)\n"
        "info    store: an in-memory store lives inside one process: nothing on disk to check\n"
        "No problems found.\n",
    )


# -- the SQLite store ------------------------------------------------------------------------------------------


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "memory.db"
    with open_store(f"sqlite://{path}") as store:
        for n in range(60):
            store.write(f"/memories/f{n:02}.md", f"MARKER-{n:02}\n".encode() + os.urandom(1500).hex().encode())
    return path


def test_a_healthy_sqlite_store(run: Run, db: Path) -> None:
    result = run("doctor", store=f"sqlite://{db}")
    assert (result.exit_code, result.stdout) == (0, f"Checking sqlite://{db} (sqlite store)\nNo problems found.\n")


def test_a_sqlite_file_that_is_not_a_database_is_left_alone(run: Run, tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    path.write_bytes(b"garbage" * 1000)
    os.chmod(path, 0o600)
    result = run("doctor", "--repair", store=f"sqlite://{path}")
    assert (result.exit_code, result.stdout) == (
        1,
        f"Checking sqlite://{path} (sqlite store)\n"
        "error   memory.db: the database is damaged (file is not a database)\n"
        "error   memory.db: nothing in it can be read, so nothing was salvaged; move it away to start an empty store\n"
        "2 problems found, 0 repaired, 2 remaining.\n",
    )
    assert path.read_bytes() == b"garbage" * 1000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memory.db"]


def _leaf_page_holding(data: bytearray, page_size: int, markers: list[bytes]) -> int:
    """A b-tree *leaf* page holding one of ``markers``. Blobs live in a WITHOUT ROWID table, an index b-tree,
    whose interior pages hold whole rows too (a split promotes one), and stale copies of a row can linger in
    the free space of an interior page; damaging an interior page loses a whole subtree, which is not the
    partial damage this test is about. So the first marker found on a leaf is used."""
    for marker in markers:
        at = data.find(marker)
        while at != -1:
            page = at // page_size
            if page and data[page * page_size] in (0x0A, 0x0D):  # index / table b-tree leaf
                return page
            at = data.find(marker, at + 1)
    raise AssertionError("no leaf page holds any of the markers")


def test_a_damaged_sqlite_store_is_salvaged_and_the_original_kept(run: Run, db: Path) -> None:
    data = bytearray(db.read_bytes())
    page_size = int.from_bytes(data[16:18], "big")
    page = _leaf_page_holding(data, page_size, [f"MARKER-{n}".encode() for n in range(30, 40)])
    data[page * page_size : (page + 1) * page_size] = b"\xff" * page_size
    db.write_bytes(bytes(data))
    damaged = bytes(data)
    url = f"sqlite://{db}"

    result = run("doctor", store=url)
    assert result.exit_code == 1
    assert (
        result.stdout.splitlines()[1] == "error   memory.db: the database is damaged (database disk image is malformed)"
    )

    result = run("doctor", "--repair", store=url)
    lines = result.stdout.splitlines()
    assert re.fullmatch(
        r"        repaired: [\d,]+ rows salvaged into a new database; the original is kept as "
        r"memory\.db\.corrupt-\d{8}T\d{6}Z",
        lines[2],
    )
    (aside,) = db.parent.glob("memory.db.corrupt-*[0-9]Z")
    assert aside.read_bytes() == damaged  # the original, byte for byte
    assert mode(db) == "600"
    with open_store(url) as store:
        readable = 0
        for n in range(60):
            with contextlib.suppress(CorruptStoreError, NotFoundError):
                readable += store.read(f"/memories/f{n:02}.md").content.startswith(f"MARKER-{n:02}".encode())
        assert 50 <= readable < 60  # only the rows on the damaged page are lost
        assert store.usage().files == sum(1 for _ in store.list_files())
    final = run("doctor", store=url)
    assert "remaining" in final.stdout or final.stdout.endswith("No problems found.\n")
    assert "the database is damaged" not in final.stdout


def test_sqlite_counters_missing_content_and_modes(run: Run, db: Path) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE namespaces SET files = 1, last_version = 2")
        conn.execute("DELETE FROM blobs WHERE sha256 = (SELECT sha256 FROM files WHERE path = 'f07.md')")
    conn.close()
    os.chmod(db, 0o644)
    total = _bytes(db)
    result = run("doctor", "--repair", store=f"sqlite://{db}")
    assert result.exit_code == 1
    assert result.stdout.splitlines()[1:] == [
        "warning memory.db: mode 0644, should be 0600 (memory is private)",
        "        repaired: mode set to 0600",
        f"error   memory.db: namespace default: counters say 1 file, {total:,} bytes, last version 2; "
        f"the tables hold 60 files, {total:,} bytes, last version 60",
        "        repaired: counters set from the tables",
        "error   memory.db: namespace default: the content of 1 version is missing",
        "3 problems found, 2 repaired, 1 remaining.",
    ]
    assert mode(db) == "600"


def _bytes(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        total = int(conn.execute("SELECT sum(size) FROM files").fetchone()[0])
    conn.close()
    return total


def test_diagnose_returns_findings(base: Path) -> None:
    os.chmod(base / "memories" / "a.md", 0o640)
    report = diagnose(str(base))
    assert not report.ok
    (finding,) = report.findings
    assert (finding.severity, finding.where, finding.repaired, finding.remains) == (
        "warning",
        "memories/a.md",
        None,
        True,
    )
    assert diagnose(str(base), repair=True).ok
    assert diagnose(str(base)).findings == []


def _damage_page(path: Path, name: str) -> None:
    """Overwrite the root page of the b-tree ``name`` (an index) with garbage: the tables stay readable."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        (root,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (name,)).fetchone()
        (size,) = conn.execute("PRAGMA page_size").fetchone()
    with path.open("r+b") as f:
        f.seek((root - 1) * size)
        f.write(b"\xa5" * size)


def test_a_damaged_index_keeps_the_history_it_can_still_read(run: Run, base: Path) -> None:
    """Damage in an index's own b-tree (a tester's 2,000 bytes at offset 8192) leaves every version readable: the
    repair copies them into a new index, where it used to rebuild from the files and keep one version each."""
    index = base / ".memdir" / "index.db"
    _damage_page(index, "versions_by_path")
    assert "the history index is damaged" in run("doctor", store=str(base)).stdout
    result = run("doctor", "--repair", store=str(base))
    assert result.exit_code == 0, result.stdout
    assert re.search(
        r"repaired: \d+ rows of history salvaged into a new index; the damaged one is kept as", result.stdout
    )
    with open_store(str(base)) as store:
        assert [(v.version, v.actor) for v in store.history("/memories/a.md")] == [(1, "model"), (2, "model")]
    assert run("doctor", store=str(base)).stdout.endswith("No problems found.\n")


def test_an_index_that_cannot_be_read_for_a_full_disk_is_not_repaired(
    run: Run, base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite's "disk is full" or "disk I/O error" says nothing of damage: the doctor says so and changes nothing
    (it used to call the index damaged, and --repair set a sound history aside for an empty index)."""
    from memdir.doctor import _shared

    def full(path: Path) -> sqlite3.Connection:
        error = sqlite3.OperationalError("database or disk is full")
        error.sqlite_errorname = "SQLITE_FULL"  # type: ignore[attr-defined]
        raise error

    index = base / ".memdir" / "index.db"
    before = index.read_bytes()
    monkeypatch.setattr(_shared, "open_readonly", full)
    result = run("doctor", "--repair", store=str(base))
    assert result.exit_code == 1
    assert "could not be checked (database or disk is full; is the disk full?): nothing was changed" in result.stdout
    assert index.read_bytes() == before and not list(index.parent.glob("index.db.*"))


def test_a_damaged_auxiliary_database_is_found_and_salvaged(run: Run, base: Path) -> None:
    """The audit log, review queue and search index: damaged, their commands send the user to the doctor, which
    used to find nothing."""
    with open_store(str(base)) as store:
        store.search("alpha")  # the search index, in aux.db
    aux = base / ".memdir" / "aux.db"
    _damage_page(aux, "sqlite_autoindex__memdir_migrations_1")
    result = run("doctor", store=str(base))
    assert result.exit_code == 1 and "aux.db: the audit, review and search database is damaged" in result.stdout
    repaired = run("doctor", "--repair", store=str(base))
    assert repaired.exit_code == 0 and "salvaged into a new database" in repaired.stdout
    assert run("doctor", store=str(base)).stdout.endswith("No problems found.\n")


def _half_made(path: Path, *, rows: bool = False) -> None:
    """A store's database as another process leaves it between two of its first migrations."""
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("CREATE TABLE _memdir_migrations (migration_set TEXT, name TEXT, applied_at REAL)")
        conn.execute("CREATE TABLE versions (ns TEXT, version INTEGER)")
        if rows:
            conn.execute("INSERT INTO versions VALUES ('default', 1)")
    os.chmod(path, 0o600)  # as memdir makes it


def test_a_store_another_process_is_creating_is_not_damage(run: Run, tmp_path: Path) -> None:
    _half_made(tmp_path / "m.db")
    result = run("doctor", store=f"sqlite://{tmp_path / 'm.db'}")
    assert result.exit_code == 0 and "creating this store's tables right now" in result.stdout


@pytest.mark.parametrize("how", ["older", "with rows"])
def test_a_store_that_lost_tables_it_had_is_damage(run: Run, tmp_path: Path, how: str) -> None:
    _half_made(tmp_path / "m.db", rows=how == "with rows")
    if how == "older":
        os.utime(tmp_path / "m.db", (1_700_000_000, 1_700_000_000))
    result = run("doctor", store=f"sqlite://{tmp_path / 'm.db'}")
    assert result.exit_code == 1 and "could not check the tables" in result.stdout
