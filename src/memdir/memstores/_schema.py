"""The tables of the Memory Stores API (migration set ``memdir-memstores``), in a store's auxiliary database.

- ``memstores``: one row per memory store: its id (also the name of the namespace that holds its memories), the
  tenant that owns it, name, description, metadata (JSON), times, and when it was archived. Kept with the
  tokens, in the served store's auxiliary database.
- ``memstore_memories``: the memory ids of a namespace and the file each one is now (``path``, the key below
  ``/memories``; NULL once deleted). An id follows its file through renames.
- ``memstore_versions``: one row per version of the namespace (its number in the store's change log), with the
  memory it belongs to, the operation as the API words it, and what the API shows of it; a redaction nulls
  ``path``, ``sha256`` and ``size`` here (and the content goes from the store itself).
- ``memstore_cursor``: the last version of the store's log these tables have taken in (`memdir.memstores._lineage`).
- ``memstore_keys``: the random key memory and version ids are made with (`memdir.memstores._ids.IdKey`).

Rows carry the namespace: one database serves every namespace of a SQLite or PostgreSQL store.
"""

from __future__ import annotations

from ..store._migrations import Migrations, Schema

__all__ = ["migrations"]

migrations = Migrations("memdir-memstores")


@migrations("0001-memory-stores")
def _tables(schema: Schema) -> None:
    postgres = schema.dialect == "postgres"
    real, integer = ("DOUBLE PRECISION", "BIGINT") if postgres else ("REAL", "INTEGER")
    schema.script(
        f"""
        CREATE TABLE memstores (
            id TEXT PRIMARY KEY,
            tenant TEXT NOT NULL,
            name TEXT NOT NULL,
            description TEXT NOT NULL,
            metadata TEXT NOT NULL,
            created {real} NOT NULL,
            updated {real} NOT NULL,
            archived {real}
        );
        CREATE INDEX memstores_by_tenant ON memstores (tenant, created, id);
        CREATE TABLE memstore_memories (
            ns TEXT NOT NULL,
            id TEXT NOT NULL,
            path TEXT,
            created {real} NOT NULL,
            PRIMARY KEY (ns, id)
        );
        CREATE UNIQUE INDEX memstore_memories_by_path ON memstore_memories (ns, path) WHERE path IS NOT NULL;
        CREATE TABLE memstore_versions (
            ns TEXT NOT NULL,
            id TEXT NOT NULL,
            version {integer} NOT NULL,
            memory_id TEXT NOT NULL,
            operation TEXT NOT NULL,
            ts {real} NOT NULL,
            path TEXT,
            sha256 TEXT,
            size {integer},
            actor TEXT NOT NULL,
            session TEXT,
            redacted {real},
            redacted_by TEXT,
            PRIMARY KEY (ns, id)
        );
        CREATE UNIQUE INDEX memstore_versions_by_number ON memstore_versions (ns, version);
        CREATE INDEX memstore_versions_by_memory ON memstore_versions (ns, memory_id, version);
        CREATE INDEX memstore_versions_by_content ON memstore_versions (ns, sha256);
        CREATE TABLE memstore_cursor (
            ns TEXT PRIMARY KEY,
            last {integer} NOT NULL
        );
        """
    )


@migrations("0002-id-key")
def _id_key(schema: Schema) -> None:
    schema.script(
        """
        CREATE TABLE memstore_keys (
            name TEXT PRIMARY KEY,
            key TEXT NOT NULL
        );
        """
    )
