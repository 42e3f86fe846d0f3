"""The schema of the SQLite layer (`memdir.store._sql`): the SQLite store's database and the directory store's
sidecar share it, created and upgraded by named migrations (`memdir.store._migrations`). Tables:

- ``files``: the current state, one row per file: version, SHA-256, size, time; ``stamp`` is the on-disk
  identity (inode, size, mtime) the directory store last saw, so it can notice edits made outside memdir.
- ``versions``: the append-only change log, numbered per namespace.
- ``blobs``: the content of every version, by namespace and SHA-256 (deduplicated within a namespace, never
  shared across namespaces, so removing a tenant removes its bytes).
- ``namespaces``: per-namespace counters (last version number, file count, bytes) kept in step with writes, and
  the head of the history's hash chain (``chain``: the last version's chain value; ``chain_from``: the first version
  chained, later than 1 where versions predate migration ``0005_hash_chain``).
- ``versions.chain``: each version's chain value, and ``pruned``: the runs of versions `memdir gc` pruned, each with
  the chain value of its last version (`memdir.store._chain`), so the chain survives pruning.
- the directory store's *pending* file operations (rename into place, unlink) that make committed versions
  visible: written with the versions, in the namespace's row (``namespaces.pending``), and replaced by the next
  change once done (`memdir.store._visible`); unused by the SQLite store. The ``pending`` table held them before
  (a row each, inserted and deleted by every change); rows an earlier memdir left there are still finished.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import StorageError
from ._migrations import Migrations, Schema

if TYPE_CHECKING:
    import sqlite3

__all__ = ["check_schema_current", "migrations"]

migrations = Migrations("memdir", dialect="sqlite")


@migrations("0001_initial")
def _initial(schema: Schema) -> None:
    schema.script(
        """
        CREATE TABLE namespaces (
            ns TEXT PRIMARY KEY,
            last_version INTEGER NOT NULL DEFAULT 0,
            files INTEGER NOT NULL DEFAULT 0,
            bytes INTEGER NOT NULL DEFAULT 0
        ) WITHOUT ROWID;
        CREATE TABLE files (
            ns TEXT NOT NULL,
            path TEXT NOT NULL,
            version INTEGER NOT NULL,
            sha256 TEXT NOT NULL,
            size INTEGER NOT NULL,
            modified REAL NOT NULL,
            stamp TEXT,
            PRIMARY KEY (ns, path)
        ) WITHOUT ROWID;
        CREATE TABLE versions (
            ns TEXT NOT NULL,
            version INTEGER NOT NULL,
            path TEXT NOT NULL,
            op TEXT NOT NULL,
            actor TEXT NOT NULL,
            session TEXT,
            source TEXT,
            ts REAL NOT NULL,
            sha256 TEXT,
            size INTEGER NOT NULL,
            old_path TEXT,
            PRIMARY KEY (ns, version)
        ) WITHOUT ROWID;
        CREATE INDEX versions_by_path ON versions (ns, path, version);
        CREATE INDEX versions_by_old_path ON versions (ns, old_path, version) WHERE old_path IS NOT NULL;
        CREATE TABLE blobs (
            ns TEXT NOT NULL,
            sha256 TEXT NOT NULL,
            content BLOB NOT NULL,
            PRIMARY KEY (ns, sha256)
        ) WITHOUT ROWID;
        """
    )


@migrations("0002_request_keys")
def _request_keys(schema: Schema) -> None:
    # The idempotency key of the call that made a version (`Origin.request`), written in the version's own
    # transaction. Unique per path: the same call applied twice (a retry racing its lost original) fails instead.
    schema.script(
        """
        ALTER TABLE versions ADD COLUMN request TEXT;
        CREATE UNIQUE INDEX versions_by_request ON versions (ns, request, path) WHERE request IS NOT NULL;
        """
    )


@migrations("0003_pending_file_operations")
def _pending_file_operations(schema: Schema) -> None:
    # The directory store commits a change's versions before it renames the files into place. Recorded in the same
    # transaction, these rows let the next writer finish what a process killed in between left undone (see
    # `memdir.store._visible`). One row per version: ``op`` is 'install' (``temp`` renamed over ``path``, which
    # holds ``replaces`` until then), 'unlink' (``path``, holding ``sha256``) or 'rename' (``old_path`` to ``path``).
    schema.script(
        """
        CREATE TABLE pending (
            ns TEXT NOT NULL,
            version INTEGER NOT NULL,
            op TEXT NOT NULL,
            path TEXT NOT NULL,
            sha256 TEXT NOT NULL,
            old_path TEXT,
            temp TEXT,
            replaces TEXT,
            PRIMARY KEY (ns, version)
        ) WITHOUT ROWID;
        """
    )


def check_schema_current(conn: sqlite3.Connection) -> None:
    """A read-only database cannot be migrated: it must already have every table this version reads."""
    tables = {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "_memdir_migrations" not in tables:
        raise StorageError("could not open the store: it is read-only and has never been initialised")
    done = {str(r[0]) for r in conn.execute("SELECT name FROM _memdir_migrations WHERE migration_set = 'memdir'")}
    if not set(migrations.names()) <= done:
        raise StorageError("could not open the store: it is read-only and needs an upgrade (run memdir on it once)")


@migrations("0004_pending_in_namespace_row")
def _pending_in_namespace_row(schema: Schema) -> None:
    # A change's pending operations go in the namespace's row, which the change updates anyway (its counters):
    # a row inserted into `pending` and deleted by the next change cost two statements and a page of write-ahead
    # log each (measured: ~6% of the memory tool's time on the directory store). ``pending`` holds the operations
    # (`memdir.store._pending.encode_ops`), ``pending_first``/``pending_last`` their versions' span (checked before
    # every write without decoding the list). The table stays for what an earlier memdir left in it.
    schema.script(
        """
        ALTER TABLE namespaces ADD COLUMN pending TEXT;
        ALTER TABLE namespaces ADD COLUMN pending_first INTEGER;
        ALTER TABLE namespaces ADD COLUMN pending_last INTEGER;
        """
    )


@migrations("0005_hash_chain")
def _hash_chain(schema: Schema) -> None:
    # Tamper evidence (`memdir.store._chain`): each version's chain value, written in the version's transaction, and
    # the chain's head in the namespace's row, which every change updates anyway. Versions recorded before this
    # have no value: the chain starts after the namespace's last version (``chain_from``), 1 in a new namespace.
    # Values are 32-byte BLOBs, not hex: the namespace's row must stay small (see 0004).
    schema.script(
        """
        ALTER TABLE versions ADD COLUMN chain BLOB;
        ALTER TABLE namespaces ADD COLUMN chain BLOB;
        ALTER TABLE namespaces ADD COLUMN chain_from INTEGER NOT NULL DEFAULT 1;
        UPDATE namespaces SET chain_from = last_version + 1;
        CREATE TABLE pruned (
            ns TEXT NOT NULL,
            first INTEGER NOT NULL,
            last INTEGER NOT NULL,
            chain BLOB,
            PRIMARY KEY (ns, first)
        ) WITHOUT ROWID;
        """
    )
