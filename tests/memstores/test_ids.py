"""Ids: a store's random; a memory's and a version's keyed by the database's secret key, so the same version has
the same id in every process that takes it in, and no one without the key can compute or guess one."""

from __future__ import annotations

import secrets
from pathlib import Path

from memdir import open_store
from memdir.memstores import MEMORY, STORE, VERSION, Lineage, is_id, new_id
from memdir.memstores._ids import IdKey


def test_keyed_ids_are_stable_per_key_and_unrelated_across_keys() -> None:
    one, other = IdKey(secrets.token_bytes(32), "memstore_a"), IdKey(secrets.token_bytes(32), "memstore_a")
    assert one.version(7) == one.version(7) and one.memory(7) == one.memory(7)
    assert one.version(7) != one.version(8) and one.version(7) != other.version(7)
    assert is_id(VERSION, one.version(7)) and is_id(MEMORY, one.memory(7))
    assert one.memory(7)[4:] != one.version(7)[7:]  # a memory's id is not its first version's
    assert IdKey(b"k", "memstore_a").version(1) != IdKey(b"k", "memstore_b").version(1)  # the namespace counts
    assert is_id(STORE, new_id(STORE)) and new_id(STORE) != new_id(STORE)
    assert not is_id(MEMORY, "mem_" + "A" * 24) and not is_id(MEMORY, "mem_x") and not is_id(MEMORY, 5)


def test_every_opener_of_a_database_uses_its_key(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path / 'm.db'}"
    with open_store(url, namespace="memstore_x") as first, open_store(url, namespace="memstore_x") as second:
        assert Lineage(first).ids.version(3) == Lineage(second).ids.version(3)
    with (
        open_store(f"sqlite://{tmp_path / 'n.db'}", namespace="memstore_x") as elsewhere,
        open_store(url, namespace="memstore_x") as again,
    ):
        assert Lineage(elsewhere).ids.version(3) != Lineage(again).ids.version(3)  # another database, another key
