"""The quarantine: writes the policy held for a person to review, instead of applying them.

A held write never reaches the store: it is not a version, not in `Store.log`, not in a listing, not in the
search index, not loaded into a new session. It waits in the store's auxiliary database (``memdir-quarantine``
migrations) with everything needed to decide on it and to apply it: the command as the model sent it (after
redaction: a secret the policy redacts is never held either), the file's content as it would have become, the
SHA-256 of the file it was meant to change, who sent it, and what the policy found.

`Quarantine.approve` re-runs the held command through the memory tool, as actor ``user`` on behalf of the
original actor (the version's source says so and names the item); so it applies to the file *as it is now*, with
the tool's own checks: an edit whose ``old_str`` is gone, or a create whose file appeared meanwhile, is refused
with the tool's words and the item stays pending. `Quarantine.reject` discards it. Decided items are kept (with
their content) until `memdir gc` prunes them after the version retention period.
"""

from __future__ import annotations

import difflib
import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import NotAFileError, NotFoundError, PolicyError
from ..paths import parse
from ..store._migrations import Migrations, Schema
from .findings import Finding

if TYPE_CHECKING:
    from ..store._base import Origin, Store

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


_COLUMNS = (
    "id, ts, status, path, command, content, base_sha256, actor, session, source, findings, decided_ts, "
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
    """The held writes of one store namespace."""

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
        """Keep a write for review; returns its id."""
        with self._db.transaction("hold a write for review") as conn:
            row = conn.execute(
                "INSERT INTO quarantine (ns, ts, path, command, content, base_sha256, actor, session, source, "
                "findings) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (
                    self.store.namespace, time.time(), path, json.dumps(command, ensure_ascii=False), content,
                    base_sha256, origin.actor, origin.session, origin.source,
                    json.dumps([f.to_json() for f in findings]),
                ),
            ).fetchone()  # fmt: skip
        return int(row[0])

    def items(self, status: str | None = "pending") -> list[HeldWrite]:
        """Held writes, oldest first (``status=None``: all of them)."""
        query = f"SELECT {_COLUMNS} FROM quarantine WHERE ns = ?" + (" AND status = ?" if status else "")
        params: tuple[Any, ...] = (self.store.namespace, status) if status else (self.store.namespace,)
        with self._db.reading("read the quarantine") as conn:
            rows = conn.execute(query + " ORDER BY id", params).fetchall()
        return [HeldWrite.from_row(r) for r in rows]

    def get(self, item_id: int) -> HeldWrite:
        with self._db.reading("read the quarantine") as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM quarantine WHERE ns = ? AND id = ?", (self.store.namespace, item_id)
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

    def approve(self, item_id: int, *, by: str = "user") -> int:
        """Apply a pending write as a new version (actor ``by``); returns the version number."""
        from ..tool import MemoryTool  # the tool uses this module: import at call time
        from .pipeline import WritePolicy

        item = self._claim(item_id, "approved", by)
        source = f"approved quarantine #{item.id}; written by {item.actor}" + (
            f" ({item.source})" if item.source else ""
        )
        tool = MemoryTool(
            self.store, actor=by, session=item.session, source=source, policy=WritePolicy.allow_all(), channel="review"
        )
        with tool:
            result = tool.execute(item.command)
        if result.is_error:
            self._release(item_id)
            raise PolicyError(f"quarantined write #{item_id} no longer applies; it stays pending: {result.text}")
        stat = self.store.stat(parse(item.path))
        version = stat.version if stat is not None and stat.version is not None else 0
        with self._db.transaction("record a review") as conn:
            conn.execute("UPDATE quarantine SET version = ? WHERE id = ?", (version, item_id))
        return version

    def reject(self, item_id: int, *, by: str = "user", reason: str | None = None) -> None:
        self._claim(item_id, "rejected", by, reason)

    def prune(self, before: float) -> int:
        """Forget decided items decided before ``before``; returns how many."""
        with self._db.transaction("prune the quarantine") as conn:
            cursor = conn.execute(
                "DELETE FROM quarantine WHERE ns = ? AND status != 'pending' AND decided_ts < ?",
                (self.store.namespace, before),
            )
            return cursor.rowcount

    def _claim(self, item_id: int, status: str, by: str, reason: str | None = None) -> HeldWrite:
        """Mark a pending item decided, atomically: two reviewers cannot both approve it."""
        item = self.get(item_id)
        with self._db.transaction("record a review") as conn:
            cursor = conn.execute(
                "UPDATE quarantine SET status = ?, decided_ts = ?, decided_by = ?, reason = ? "
                "WHERE ns = ? AND id = ? AND status = 'pending'",
                (status, time.time(), by, reason, self.store.namespace, item_id),
            )
        if cursor.rowcount != 1:
            raise PolicyError(f"quarantined write #{item_id} was already {item.status}")
        return item

    def _release(self, item_id: int) -> None:
        with self._db.transaction("record a review") as conn:
            conn.execute(
                "UPDATE quarantine SET status = 'pending', decided_ts = NULL, decided_by = NULL WHERE id = ?",
                (item_id,),
            )
