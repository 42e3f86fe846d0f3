"""The Memory Stores API and its tables on PostgreSQL: the same tests as on SQLite, on a server over a database of
the test's own in the session's throwaway cluster; and redaction's DELETE of the content row there."""

from __future__ import annotations

import anthropic
import psycopg
import pytest

from memdir.server import ServerConfig

from .test_isolation import alice, bob, test_another_tenants_ids_are_not_found_everywhere
from .test_memories import (
    api,
    store_id,
    test_a_path_another_memory_holds_or_overlaps,
    test_an_update_that_changes_nothing_makes_no_version,
    test_create_answers_basic_by_default_and_retrieve_full,
    test_delete_with_and_without_a_precondition,
    test_paging_over_250_memories_in_path_order,
    test_preconditions_on_update,
    test_prefix_and_depth,
    test_update_content_path_or_both_keeps_the_id,
)
from .test_stores import (
    test_archive,
    test_create_retrieve_update,
    test_list_newest_first_with_paging_filters_and_archived,
)
from .test_versions import (
    test_every_change_is_a_version_and_they_outlive_the_memory,
    test_filters_and_paging,
    test_other_doors_writes_have_ids_too,
    test_the_current_version_cannot_be_redacted,
)

__all__ = [  # collected here again, with `config` below: every one of them runs on PostgreSQL too
    "alice", "api", "bob", "store_id", "test_a_path_another_memory_holds_or_overlaps", "test_an_update_that_changes_nothing_makes_no_version",
    "test_another_tenants_ids_are_not_found_everywhere", "test_archive", "test_create_answers_basic_by_default_and_retrieve_full",
    "test_create_retrieve_update", "test_delete_with_and_without_a_precondition", "test_every_change_is_a_version_and_they_outlive_the_memory",
    "test_filters_and_paging", "test_list_newest_first_with_paging_filters_and_archived", "test_other_doors_writes_have_ids_too",
    "test_paging_over_250_memories_in_path_order", "test_preconditions_on_update", "test_prefix_and_depth",
    "test_the_current_version_cannot_be_redacted", "test_update_content_path_or_both_keeps_the_id",
]  # fmt: skip


@pytest.fixture
def config(pg_url: str) -> ServerConfig:
    return ServerConfig(store_url=pg_url, rate=0)


def test_redaction_empties_the_content_row(pg_url: str, api: anthropic.Anthropic, store_id: str) -> None:
    memories, versions = api.beta.memory_stores.memories, api.beta.memory_stores.memory_versions
    text = "to be redacted on postgres"
    made = memories.create(store_id, path="/a.md", content=text)
    memories.update(made.id, memory_store_id=store_id, content="kept")

    def stored() -> list[bytes]:
        with psycopg.connect(pg_url) as pg:
            rows = pg.execute(
                "SELECT content FROM memdir_blobs WHERE ns = %s AND sha256 = %s", (store_id, made.content_sha256)
            ).fetchall()
        return [bytes(r[0]) for r in rows]

    assert stored() == [text.encode()]
    versions.redact(made.memory_version_id, memory_store_id=store_id)
    assert stored() == [b""]  # the row keeps its hash (every version finds its content's record), not its bytes
    assert versions.retrieve(made.memory_version_id, memory_store_id=store_id).content_sha256 is None
    again = memories.create(store_id, path="/b.md", content=text, view="full")  # the same text, stored again
    assert again.content == text and stored() == [text.encode()]
