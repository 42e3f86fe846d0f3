"""The PostgreSQL store's schema: the named migrations that make and upgrade its tables (recorded in
``_memdir_migrations``; what each table holds: `memdir.store.postgres`). Kept beside the SQLite schema's
(`memdir.store._schema`), which each of these follows where the two dialects agree."""

from __future__ import annotations

from ._migrations import Migrations, Schema

__all__ = ["migrations"]

migrations = Migrations("memdir", dialect="postgres")


@migrations("0001_initial")
def _initial(schema: Schema) -> None:
    schema.script(
        """
        CREATE TABLE memdir_files (
            ns TEXT COLLATE "C" NOT NULL,
            path TEXT COLLATE "C" NOT NULL,
            version BIGINT NOT NULL,
            sha256 TEXT COLLATE "C" NOT NULL,
            size BIGINT NOT NULL,
            modified DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (ns, path)
        );
        CREATE TABLE memdir_versions (
            ns TEXT COLLATE "C" NOT NULL,
            version BIGINT NOT NULL,
            path TEXT COLLATE "C" NOT NULL,
            op TEXT NOT NULL,
            actor TEXT NOT NULL,
            session TEXT,
            source TEXT,
            ts DOUBLE PRECISION NOT NULL,
            sha256 TEXT COLLATE "C",
            size BIGINT NOT NULL,
            old_path TEXT COLLATE "C",
            PRIMARY KEY (ns, version)
        );
        CREATE INDEX memdir_versions_by_path ON memdir_versions (ns, path, version);
        CREATE INDEX memdir_versions_by_old_path ON memdir_versions (ns, old_path, version)
            WHERE old_path IS NOT NULL;
        CREATE TABLE memdir_blobs (
            ns TEXT COLLATE "C" NOT NULL,
            sha256 TEXT COLLATE "C" NOT NULL,
            content BYTEA NOT NULL,
            PRIMARY KEY (ns, sha256)
        );
        """
    )


@migrations("0002_namespace_counters")
def _namespace_counters(schema: Schema) -> None:
    # The first schema numbered a namespace's versions max(version) + 1 and summed memdir_files for its usage:
    # two scans per write, and nothing one write could lock to order itself before the next. A row per namespace
    # keeps the counters and is that lock. Backfilled from what is recorded: the highest version number anywhere
    # (a current file's version outlives a pruned log entry), the files and bytes there are now.
    schema.script(
        """
        CREATE TABLE memdir_namespaces (
            ns TEXT COLLATE "C" PRIMARY KEY,
            last_version BIGINT NOT NULL DEFAULT 0,
            files BIGINT NOT NULL DEFAULT 0,
            bytes BIGINT NOT NULL DEFAULT 0
        );
        INSERT INTO memdir_namespaces (ns, last_version, files, bytes)
        SELECT ns, max(last), sum(files), sum(bytes) FROM (
            SELECT ns, max(version) AS last, 0 AS files, 0 AS bytes FROM memdir_versions GROUP BY ns
            UNION ALL
            SELECT ns, max(version), count(*), sum(size) FROM memdir_files GROUP BY ns
        ) AS recorded GROUP BY ns;
        """
    )


@migrations("0003_request_keys")
def _request_keys(schema: Schema) -> None:
    # The idempotency key of the call that made a version (`Origin.request`), written in the version's own
    # transaction. Unique per path: the same call applied twice (a retry racing its lost original) fails instead.
    schema.script(
        """
        ALTER TABLE memdir_versions ADD COLUMN request TEXT COLLATE "C";
        CREATE UNIQUE INDEX memdir_versions_by_request ON memdir_versions (ns, request, path)
            WHERE request IS NOT NULL;
        """
    )


@migrations("0004_hash_chain")
def _hash_chain(schema: Schema) -> None:
    # Tamper evidence, as SQLite's 0005_hash_chain: each version's chain value, the head in the namespace's row
    # (read under its lock by every writer anyway), the pruned runs. Versions recorded before it have no value: the
    # chain starts after each namespace's last version (``chain_from``), 1 in a new namespace.
    schema.script(
        """
        ALTER TABLE memdir_versions ADD COLUMN chain BYTEA;
        ALTER TABLE memdir_namespaces ADD COLUMN chain BYTEA;
        ALTER TABLE memdir_namespaces ADD COLUMN chain_from BIGINT NOT NULL DEFAULT 1;
        UPDATE memdir_namespaces SET chain_from = last_version + 1;
        CREATE TABLE memdir_pruned (
            ns TEXT COLLATE "C" NOT NULL,
            first BIGINT NOT NULL,
            last BIGINT NOT NULL,
            chain BYTEA,
            PRIMARY KEY (ns, first)
        );
        """
    )
