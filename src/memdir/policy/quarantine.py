"""The quarantine: writes the policy held for a person to review, instead of applying them.

A held write never reaches the store: it is not a version, not in `Store.log`, not in a listing, not in the
search index, not loaded into a new session. It waits in the store's auxiliary database (``memdir-quarantine``
migrations) with everything needed to decide on it and to apply it: the file's content as it would have become
(with every secret redacted: a held write waits in a database too), the SHA-256 of the file it was meant to change,
who sent it, what the command was, and what the policy found.

Items are numbered per namespace (1, 2, 3...): one tenant cannot count another's held writes. This module keeps
the table; deciding on an item is the gate's (`memdir.gate.Review`): approving applies the held content through a
gate, re-screened as it will be committed, only if the file is still as it was when the write was held.
Decided items are kept (with their content) until `memdir gc` prunes them after the version retention period.
"""

from __future__ import annotations

import difflib
import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import NotAFileError, NotFoundError, PolicyError
from ..paths import parse
from ..store._migrations import Migrations, Schema, advisory_key
from .findings import Finding

if TYPE_CHECKING:
    from ..store._base import Store
    from ..store._records import Origin

__all__ = ["HeldWrite", "Quarantine"]

migrations = Migrations("memdir-quarantine")


@migrations("0001_quarantine")
def _quarantine_table(schema: Schema) -> None:
    postgres = schema.dialect == "postgres"
    id_column = "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY" if postgres else "INTEGER PRIMARY KEY AUTOINCREMENT"
    real, blob, integer = ("DOUBLE PRECISION", "BYTEA", "BIGINT") if postgres else ("REAL", "BLOB", "INTEGER")
    schema.script(
        f"""
        CREATE TABLE quarantine (
            id {id_column},
            ns TEXT NOT NULL,
            ts {real} NOT NULL,
            status TEXT NOT NULL DEFAULT 'pending',
            path TEXT NOT NULL,
            command TEXT NOT NULL,
            content {blob} NOT NULL,
            base_sha256 TEXT,
            actor TEXT NOT NULL,
            session TEXT,
            source TEXT,
            findings TEXT NOT NULL,
            decided_ts {real},
            decided_by TEXT,
            version {integer},
            reason TEXT
        );
        CREATE INDEX quarantine_by_status ON quarantine (ns, status, id);
        """
    )


@migrations("0002_numbered_per_namespace")
def _numbered_per_namespace(schema: Schema) -> None:
    integer = "BIGINT" if schema.dialect == "postgres" else "INTEGER"
    schema.script(
        f"""
        ALTER TABLE quarantine ADD COLUMN item {integer};
        UPDATE quarantine SET item = (
            SELECT COUNT(*) FROM quarantine AS earlier WHERE earlier.ns = quarantine.ns AND earlier.id <= quarantine.id
        );
        CREATE UNIQUE INDEX quarantine_by_item ON quarantine (ns, item);
        """
    )


_COLUMNS = (
    "item, ts, status, path, command, content, base_sha256, actor, session, source, findings, decided_ts, "
    "decided_by, version, reason"
)


@dataclass(frozen=True, slots=True)
class HeldWrite:
    """One quarantined write. ``command`` is the tool command as sent (text fields redacted as the policy says);
    ``content`` what the file would have held; ``base_sha256`` the file it was meant to change (None: no file)."""

    id: int
    ts: float
    status: str  # pending, approved, rejected
    path: str
    command: dict[str, Any]
    content: bytes
    base_sha256: str | None
    actor: str
    session: str | None
    source: str | None
    findings: list[Finding] = field(default_factory=list)
    decided_ts: float | None = None
    decided_by: str | None = None
    version: int | None = None
    reason: str | None = None

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> HeldWrite:
        (id_, ts, status, path, command, content, base, actor, session, source, found, dts, dby, version, reason) = row
        return cls(
            int(id_), float(ts), str(status), str(path), json.loads(command), bytes(content), base, str(actor),
            session, source, [Finding.from_json(f) for f in json.loads(found)], dts, dby, version, reason,
        )  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        """Everything but the content (a listing shows the diff instead)."""
        return {
            "id": self.id, "time": self.ts, "status": self.status, "path": self.path,
            "command": self.command.get("command"), "actor": self.actor, "session": self.session,
            "source": self.source, "findings": [f.to_json() for f in self.findings],
            "decided_time": self.decided_ts, "decided_by": self.decided_by, "version": self.version,
            "reason": self.reason,
        }  # fmt: skip


class Quarantine:
    """The held writes of one store namespace (the table; `memdir.gate.Review` decides on them)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._db = store.aux
        self._db.ensure(migrations)

    def hold(
        self,
        command: dict[str, Any],
        path: str,
        content: bytes,
        *,
        base_sha256: str | None,
        origin: Origin,
        findings: list[Finding],
    ) -> int:
        """Keep a write for review; returns its number in the namespace."""
        ns = self.store.namespace
        with self._db.transaction("hold a write for review") as conn:
            if self._db.dialect == "postgres":  # two servers holding at once must not take the same number
                conn.execute("SELECT pg_advisory_xact_lock(?)", (advisory_key(f"memdir-quarantine:{ns}"),))
            row = conn.execute(
                "INSERT INTO quarantine (ns, item, ts, path, command, content, base_sha256, actor, session, source, "
                "findings) VALUES (?, (SELECT COALESCE(MAX(item), 0) + 1 FROM quarantine WHERE ns = ?), "
                "?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING item",
                (
                    ns, ns, time.time(), path, json.dumps(command, ensure_ascii=False), content, base_sha256,
                    origin.actor, origin.session, origin.source, json.dumps([f.to_json() for f in findings]),
                ),
            ).fetchone()  # fmt: skip
        return int(row[0])

    def items(self, status: str | None = "pending") -> list[HeldWrite]:
        """Held writes, oldest first (``status=None``: all of them)."""
        query = f"SELECT {_COLUMNS} FROM quarantine WHERE ns = ?" + (" AND status = ?" if status else "")
        params: tuple[Any, ...] = (self.store.namespace, status) if status else (self.store.namespace,)
        with self._db.reading("read the quarantine") as conn:
            rows = conn.execute(query + " ORDER BY item", params).fetchall()
        return [HeldWrite.from_row(r) for r in rows]

    def get(self, item_id: int) -> HeldWrite:
        with self._db.reading("read the quarantine") as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM quarantine WHERE ns = ? AND item = ?", (self.store.namespace, item_id)
            ).fetchone()
        if row is None:
            raise NotFoundError(f"no quarantined write #{item_id} in namespace {self.store.namespace!r}")
        return HeldWrite.from_row(row)

    def diff(self, item: HeldWrite) -> list[str]:
        """A unified diff from the file as it is now (empty when missing) to what the held write would make it."""
        try:
            current = self.store.read(parse(item.path)).content
            label = f"{item.path} (current)"
        except (NotFoundError, NotAFileError):
            current, label = b"", f"{item.path} (missing)"
        old = current.decode("utf-8", "replace").splitlines(keepends=True)
        new = item.content.decode("utf-8", "replace").splitlines(keepends=True)
        return list(difflib.unified_diff(old, new, label, f"{item.path} (held #{item.id})"))

    def claim(self, item_id: int, status: str, by: str, reason: str | None = None) -> HeldWrite:
        """Mark a pending item decided, atomically: two reviewers cannot both decide it."""
        item = self.get(item_id)
        with self._db.transaction("record a review") as conn:
            cursor = conn.execute(
                "UPDATE quarantine SET status = ?, decided_ts = ?, decided_by = ?, reason = ? "
                "WHERE ns = ? AND item = ? AND status = 'pending'",
                (status, time.time(), by, reason, self.store.namespace, item_id),
            )
        if cursor.rowcount != 1:
            raise PolicyError(f"quarantined write #{item_id} was already {item.status}")
        return item

    def release(self, item_id: int) -> None:
        """Put a claimed item back to pending (its approval could not be applied)."""
        with self._db.transaction("record a review") as conn:
            conn.execute(
                "UPDATE quarantine SET status = 'pending', decided_ts = NULL, decided_by = NULL "
                "WHERE ns = ? AND item = ?",
                (self.store.namespace, item_id),
            )

    def applied(self, item_id: int, version: int) -> None:
        with self._db.transaction("record a review") as conn:
            conn.execute(
                "UPDATE quarantine SET version = ? WHERE ns = ? AND item = ?", (version, self.store.namespace, item_id)
            )

    def prune(self, before: float) -> int:
        """Forget decided items decided before ``before``; returns how many."""
        with self._db.transaction("prune the quarantine") as conn:
            cursor = conn.execute(
                "DELETE FROM quarantine WHERE ns = ? AND status != 'pending' AND decided_ts < ?",
                (self.store.namespace, before),
            )
            return cursor.rowcount
