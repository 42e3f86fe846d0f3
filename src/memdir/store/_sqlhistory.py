"""Reading and pruning a namespace's history in SQLite, for both SQL-backed stores (the SQLite store and the
directory store's sidecar): the log, a path's versions, the versions of an idempotency key, `memdir gc`'s prune,
redaction of a content, and the hash chain's report. A mixin of `memdir.store._sql.SqlIndex`, which records the
changes these read."""

from __future__ import annotations

import contextlib
import sqlite3
from typing import TYPE_CHECKING

from ..errors import ConflictError
from ..paths import MemoryPath
from . import _checkpoint
from ._base import prunable_versions
from ._chain import ChainReport, history_report, record_pruned
from ._db import translate
from ._records import Version

if TYPE_CHECKING:
    from collections.abc import Iterator

    from ._db import _Session

__all__ = ["VERSION_COLUMNS", "SqlHistory", "version_of_row"]

VERSION_COLUMNS = "version, path, op, actor, session, source, ts, sha256, size, old_path"


def version_of_row(row: tuple[object, ...]) -> Version:
    version, path, op, actor, session, source, ts, sha, size, old = row
    return Version(
        version=int(version),  # type: ignore[call-overload]
        path=MemoryPath(tuple(str(path).split("/")) if path else ()),
        op=str(op),
        actor=str(actor),
        session=None if session is None else str(session),
        source=None if source is None else str(source),
        timestamp=float(ts),  # type: ignore[arg-type]
        sha256=None if sha is None else str(sha),
        size=int(size),  # type: ignore[call-overload]
        old_path=None if old is None else MemoryPath(tuple(str(old).split("/"))),
    )


class SqlHistory:
    """The history half of `SqlIndex` (see the module docstring)."""

    if TYPE_CHECKING:  # the index's own
        namespace: str
        conn: sqlite3.Connection
        _writer_key: str | None

        def transaction(self, doing: str) -> _Session: ...
        def reading(self, doing: str) -> _Session: ...

    def prune(self, before: float) -> int:
        """`Store.prune_history` for both SQL-backed stores: one transaction, so a reader sees the log before or
        after, never half-pruned."""
        with self.transaction("prune the history") as conn:
            rows = conn.execute(
                f"SELECT {VERSION_COLUMNS}, chain FROM versions WHERE ns = ? ORDER BY version", (self.namespace,)
            ).fetchall()
            gone = sorted(prunable_versions((version_of_row(r[:-1]) for r in rows), before))
            record_pruned(conn, "", self.namespace, gone, {int(r[0]): r[-1] for r in rows})
            for at in range(0, len(gone), 500):
                chunk = gone[at : at + 500]
                conn.execute(
                    f"DELETE FROM versions WHERE ns = ? AND version IN ({','.join('?' * len(chunk))})",
                    (self.namespace, *chunk),
                )
            # Content no remaining version (nor a current file) needs; the namespace's counters are unchanged.
            conn.execute(
                "DELETE FROM blobs WHERE ns = ?1 AND sha256 NOT IN "
                "(SELECT sha256 FROM versions WHERE ns = ?1 AND sha256 IS NOT NULL) "
                "AND sha256 NOT IN (SELECT sha256 FROM files WHERE ns = ?1)",
                (self.namespace,),
            )
        return len(gone)

    def chain_report(self) -> ChainReport:
        """`Store.verify_chain` for both SQLite-backed stores."""
        with self.reading("verify the history") as conn:
            return history_report(conn, "", self.namespace)

    def redact(self, sha: str) -> bool:
        """`Store.redact_content` for both SQL-backed stores: the blob row keeps its hash, and loses its bytes."""
        with self.transaction("redact content") as conn:
            if conn.execute("SELECT 1 FROM files WHERE ns = ? AND sha256 = ?", (self.namespace, sha)).fetchone():
                raise ConflictError("a current file holds this content: change or delete the file first")
            # Emptying the row alone would only mark the old bytes' pages free, to stay in the file until SQLite
            # reuses them: secure_delete makes SQLite overwrite what it frees (with zeros) in this transaction.
            conn.execute("PRAGMA secure_delete = ON")
            try:
                removed = conn.execute(
                    "UPDATE blobs SET content = X'' WHERE ns = ? AND sha256 = ? AND length(content) > 0",
                    (self.namespace, sha),
                ).rowcount
            finally:
                conn.execute("PRAGMA secure_delete = OFF")
        self._truncate_wal()
        return removed > 0

    def _truncate_wal(self) -> None:
        """Copy the WAL into the database and empty it: frames written before the redaction may still hold the
        bytes. Best effort: a reader holding an old snapshot keeps the checkpoint from finishing (it waits for
        the busy timeout), and the WAL is then rewritten from its start by later writes. A background checkpoint
        would make SQLite refuse this one outright: none runs meanwhile (`_checkpoint.held`)."""
        try:
            with _checkpoint.held(self._writer_key) if self._writer_key else contextlib.nullcontext():
                self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        except sqlite3.Error as exc:
            raise translate(exc, "redact content") from exc

    def requested(self, key: str) -> list[Version]:
        """`Store.requested` for both SQL-backed stores."""
        return self._versions("WHERE ns = ? AND request = ? ORDER BY version", (self.namespace, key))

    def touching(self, key: str, before: int | None) -> list[Version]:
        limit = before if before is not None else 1 << 62
        return self._versions(
            f"WHERE ns = ? AND path = ? AND version < ? UNION SELECT {VERSION_COLUMNS} FROM versions "
            "WHERE ns = ? AND old_path = ? AND version < ? ORDER BY version",
            (self.namespace, key, limit, self.namespace, key, limit),
        )

    def log(self, since: int) -> Iterator[Version]:
        last = since
        while rows := self._versions("WHERE ns = ? AND version > ? ORDER BY version LIMIT 500", (self.namespace, last)):
            yield from rows
            last = rows[-1].version

    def _versions(self, where: str, args: tuple[object, ...]) -> list[Version]:
        """The versions ``SELECT ... FROM versions {where}`` finds (errors said as reading the history)."""
        try:
            rows = self.conn.execute(f"SELECT {VERSION_COLUMNS} FROM versions {where}", args).fetchall()
        except sqlite3.Error as exc:
            raise translate(exc, "read the history") from exc
        return [version_of_row(r) for r in rows]
