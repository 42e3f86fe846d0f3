"""The namespace limits of a replayed version (an archive's import, `POST /v1/versions`, migrate-store) are
checked in the backend's own transaction, as any write's are: a write another process makes meanwhile counts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memdir import MemoryStore, QuotaError, Store, Version, open_store
from memdir.gate import Caller, GatedStore, Rules
from memdir.policy import Limits


def replayed(path: str) -> Version:
    source = MemoryStore()
    return source.write(path, b"replayed\n", op="create")


@pytest.mark.parametrize("kind", ["sqlite", "directory"])
def test_a_write_made_during_a_replay_counts_against_its_namespace_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    store: Store = open_store(f"sqlite://{tmp_path / 'm.db'}" if kind == "sqlite" else str(tmp_path / "dir"))
    gate = GatedStore(store, Caller("user"), Rules(limits=Limits(max_files=1)))
    real = store.import_version

    def another_writer_first(version: Version, content: bytes | None, **options: Any) -> Version:
        # Another process's write, landing after the gate screened the replay and before its transaction.
        store.write("/memories/meanwhile.md", b"written meanwhile\n", op="create")
        return real(version, content, **options)

    monkeypatch.setattr(store, "import_version", another_writer_first)
    with pytest.raises(QuotaError, match="would hold 2 files, over the limit of 1"):
        gate.import_version(replayed("/memories/a.md"), b"replayed\n")
    assert [e.path.virtual for e in store.list_files()] == ["/memories/meanwhile.md"]
    store.close()
