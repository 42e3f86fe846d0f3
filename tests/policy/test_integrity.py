"""`memdir verify`: content that changed outside memdir is reported, and looking records nothing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memdir import DirectoryStore, HistoryUnavailableError, Store, open_store
from memdir.policy.integrity import verify
from memdir.store._base import sha256_hex


def test_a_store_that_only_memdir_wrote_is_in_order(store: Store) -> None:
    store.write("/memories/a.md", b"one")
    store.write("/memories/d/b.md", b"two")
    store.move("/memories/d/b.md", "/memories/c.md")
    store.write("/memories/gone.md", b"x")
    store.delete("/memories/gone.md")
    assert verify(store) == []


def test_outside_edits_to_a_directory_store_are_reported_not_recorded(tmp_path: Path) -> None:
    with DirectoryStore(tmp_path) as store:
        for name in ("edited", "deleted", "kept"):
            store.write(f"/memories/{name}.md", name.encode())
        versions = len(list(store.log()))
        (tmp_path / "memories" / "edited.md").write_bytes(b"changed by hand")
        (tmp_path / "memories" / "deleted.md").unlink()
        (tmp_path / "memories" / "new.md").write_bytes(b"made by hand")

        found = verify(store)
        assert [(d.path, d.problem) for d in found] == [
            ("/memories/deleted.md", "missing"),
            ("/memories/edited.md", "changed"),
            ("/memories/new.md", "unrecorded"),
        ]
        assert found[1].recorded == sha256_hex(b"edited")
        assert found[1].actual == sha256_hex(b"changed by hand")
        assert found[1].detail == "content differs from version 1 (user); changed outside memdir"
        assert verify(store) == found  # looking changed nothing ...
        assert len(list(DirectoryStore(tmp_path, read_only=True).log())) == versions
        store.list_files()  # ... until the store itself looks: then the edits become versions by `external`
        assert verify(store) == []


def test_a_tampered_sqlite_store_is_reported(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with open_store(f"sqlite://{db}") as store:
        store.write("/memories/a.md", b"the truth")
    conn = sqlite3.connect(db)
    conn.execute("UPDATE blobs SET content = ? WHERE sha256 = ?", (b"a lie", sha256_hex(b"the truth")))
    conn.commit()
    conn.close()
    with open_store(f"sqlite://{db}") as store:
        (found,) = verify(store)
    assert (found.path, found.problem, found.actual) == ("/memories/a.md", "changed", sha256_hex(b"a lie"))


def test_a_directory_store_without_history_has_nothing_to_verify_against(tmp_path: Path) -> None:
    with DirectoryStore(tmp_path, history=False) as store, pytest.raises(HistoryUnavailableError):
        verify(store)
