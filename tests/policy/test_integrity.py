"""`memdir verify`: content that changed outside memdir is reported, looking records nothing, and a store only
memdir wrote verifies clean: files, the history's chain and the audit log's chain (tampering: test_integrity_tamper).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
from pathlib import Path

import pytest

from backends import live_server
from memdir import DirectoryStore, HistoryUnavailableError, MemoryTool, Origin, Store, open_store
from memdir.archive import export_namespace, import_namespace
from memdir.policy.audit import audit_log
from memdir.policy.integrity import IntegrityReport, verify
from memdir.store._records import sha256_hex


def test_a_store_that_only_memdir_wrote_is_in_order(store: Store) -> None:
    store.write("/memories/a.md", b"one")
    store.write("/memories/d/b.md", b"two")
    store.move("/memories/d/b.md", "/memories/c.md")
    store.write("/memories/gone.md", b"x")
    store.delete("/memories/gone.md")
    report = verify(store)
    assert report.ok and report.discrepancies == () and report.files == 2
    assert report.history is not None
    assert (report.history.entries, report.history.checked, report.history.start, report.history.last) == (5, 5, 1, 5)
    assert report.audit is not None and report.audit.ok


def test_a_mix_of_every_kind_of_change_and_a_prune_verifies_clean(store: Store, tmp_path: Path) -> None:
    # Versions imported from another store's export (into the empty namespace, as `memdir import` wants), writes,
    # edits, renames of a file and of a directory, deletes, a restore, versions replayed one by one, audited tool
    # commands, and a prune in the middle: every chain stays whole, the destination computing its own.
    with open_store(f"sqlite://{tmp_path / 'other.db'}") as other:
        other.write("/memories/imported/one.md", b"1")
        other.write("/memories/imported/one.md", b"2")
        other.move("/memories/imported/one.md", "/memories/imported/two.md")
        export_namespace(other, tmp_path / "other.tar")
        replayed = list(other.log())
    import_namespace(store, tmp_path / "other.tar")
    with MemoryTool(store, actor="model", session="s1") as tool:
        tool.execute({"command": "create", "path": "/memories/notes.md", "file_text": "a\nb\n"})
        tool.execute({"command": "str_replace", "path": "/memories/notes.md", "old_str": "a", "new_str": "A"})
        tool.execute({"command": "insert", "path": "/memories/notes.md", "insert_line": 0, "insert_text": "top"})
        tool.execute({"command": "create", "path": "/memories/dir/x.md", "file_text": "x"})
        tool.execute({"command": "rename", "old_path": "/memories/dir", "new_path": "/memories/moved"})
        tool.execute({"command": "view", "path": "/memories/notes.md"})
        tool.execute({"command": "delete", "path": "/memories/moved/x.md"})
    store.restore("/memories/notes.md", len(replayed) + 1, origin=Origin(source="restored from version 4"))
    store.delete("/memories/imported")
    for version in replayed[:2]:  # replayed one by one, as `memdir migrate-store` does
        store.import_version(version, b"replayed")
    pruned = store.prune_history(float("inf"))  # everything superseded goes
    store.write("/memories/after.md", b"written after the prune")

    report = verify(store)
    assert report.ok, report.lines()
    assert report.history is not None and report.audit is not None
    assert pruned > 0 and report.history.pruned == pruned
    assert report.history.checked == report.history.entries == report.history.last - pruned
    assert report.audit.entries >= 7 and report.audit.checked == report.audit.entries


def test_the_head_is_the_newest_versions_chain_value_and_moves_with_every_change(store: Store) -> None:
    store.write("/memories/a.md", b"1")
    first = store.verify_chain().head
    store.write("/memories/a.md", b"2")
    second = store.verify_chain()
    assert first is not None and second.head is not None and second.head != first
    assert (second.last, second.ok) == (2, True)


def test_outside_edits_to_a_directory_store_are_reported_not_recorded(tmp_path: Path) -> None:
    with DirectoryStore(tmp_path) as store:
        for name in ("edited", "deleted", "kept"):
            store.write(f"/memories/{name}.md", name.encode())
        versions = len(list(store.log()))
        (tmp_path / "memories" / "edited.md").write_bytes(b"changed by hand")
        (tmp_path / "memories" / "deleted.md").unlink()
        (tmp_path / "memories" / "new.md").write_bytes(b"made by hand")

        found = verify(store).discrepancies
        assert [(d.path, d.problem) for d in found] == [
            ("/memories/deleted.md", "missing"),
            ("/memories/edited.md", "changed"),
            ("/memories/new.md", "unrecorded"),
        ]
        assert found[1].recorded == sha256_hex(b"edited")
        assert found[1].actual == sha256_hex(b"changed by hand")
        assert found[1].detail == "content differs from version 1 (user); changed outside memdir"
        assert verify(store).discrepancies == found  # looking changed nothing ...
        assert len(list(DirectoryStore(tmp_path, read_only=True).log())) == versions
        store.list_files()  # ... until the store itself looks: then the edits become versions by `external`
        after = verify(store)
        assert after.ok and after.history is not None and after.history.checked == versions + 3


def test_a_tampered_sqlite_store_is_reported(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with open_store(f"sqlite://{db}") as store:
        store.write("/memories/a.md", b"the truth")
    conn = sqlite3.connect(db)
    conn.execute("UPDATE blobs SET content = ? WHERE sha256 = ?", (b"a lie", sha256_hex(b"the truth")))
    conn.commit()
    conn.close()
    with open_store(f"sqlite://{db}") as store:
        (found,) = verify(store).discrepancies
    assert (found.path, found.problem, found.actual) == ("/memories/a.md", "changed", sha256_hex(b"a lie"))


def test_a_directory_store_without_history_has_nothing_to_verify_against(tmp_path: Path) -> None:
    with DirectoryStore(tmp_path, history=False) as store, pytest.raises(HistoryUnavailableError):
        verify(store)


def test_the_report_reads_back_from_its_json(store: Store) -> None:
    store.write("/memories/a.md", b"1")
    with MemoryTool(store) as tool:
        tool.execute({"command": "view", "path": "/memories/a.md"})
    report = verify(store)
    assert IntegrityReport.from_json(report.to_json()) == report
    assert audit_log(store).verify_chain() == report.audit


def test_a_remote_store_is_verified_by_its_server(tmp_path: Path) -> None:
    # The server checks where the data is; the client shows its report.
    with open_store(live_server(tmp_path).url_for()) as remote:
        remote.write("/memories/a.md", b"1")
        remote.write("/memories/a.md", b"2")
        report = verify(remote)
        assert report.ok and report.history is not None and report.history.checked == 2
        with contextlib.closing(sqlite3.connect(tmp_path / "remote.db")) as conn, conn:
            conn.execute("UPDATE versions SET actor = 'mallory' WHERE version = 1")
        tampered = verify(remote).history
        assert tampered is not None and [(b.kind, b.first) for b in tampered.breaks] == [("edited", 1)]
        assert remote.verify_chain() == tampered


def test_a_history_index_lost_under_the_audit_log_is_reported(tmp_path: Path) -> None:
    """A directory store's index deleted (or its WAL lost) starts a new history whose own chain is intact: the audit
    log, which recorded the versions written, is what says versions were lost."""
    base = tmp_path / "store"
    with open_store(str(base)) as store, MemoryTool(store) as tool:
        for text in ("one", "two", "three"):
            tool.execute({"command": "create", "path": f"/memories/{text}.md", "file_text": text})
    for name in ("index.db", "index.db-wal", "index.db-shm"):
        with contextlib.suppress(FileNotFoundError):
            (base / ".memdir" / name).unlink()
    with open_store(str(base)) as store:
        report = verify(store)
    assert not report.ok and report.history is not None
    (lost,) = report.history.breaks
    assert lost.kind == "truncated" and "the audit log records version 3, but the history ends at" in lost.detail


def test_a_write_landing_during_the_check_is_no_outside_change(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The listing, each file and the history are read one after another: memdir's own write in between made
    `verify` report tampering. A discrepancy must be found again when the check is made again."""
    store = open_store(f"sqlite://{tmp_path / 'm.db'}")
    for name in ("a.md", "b.md"):
        store.write(f"/memories/{name}", b"one\n")
    reading = type(store).read
    sneaked: list[str] = []

    def read_with_a_writer_in_between(self: Store, path: object) -> object:
        if not sneaked:  # the first read of the check: another process's write commits now
            sneaked.append("b.md")
            store.write("/memories/b.md", b"two\n")
        return reading(self, path)

    monkeypatch.setattr(type(store), "read", read_with_a_writer_in_between)
    report = verify(store)
    assert sneaked and report.ok, report.lines()
    store.close()


def test_a_check_pauses_a_directory_stores_writers(tmp_path: Path) -> None:
    store = DirectoryStore(tmp_path / "s")
    store.write("/memories/a.md", b"one\n")
    fd = os.open(store.root, os.O_RDONLY | os.O_DIRECTORY)  # where a writer (any process) takes its lock
    try:
        with store.writers_paused(), pytest.raises(BlockingIOError):
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free again
    finally:
        os.close(fd)
        store.close()
