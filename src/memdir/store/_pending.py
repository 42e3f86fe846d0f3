"""The directory store's pending file operations as its index records them (`memdir.store._visible` does them).

A change's versions commit before its files are renamed into place. The operations still to do are written in the
same transaction, in the namespace's row (``namespaces.pending``, ``pending_first``, ``pending_last``: migration
``0004_pending_in_namespace_row``), and replaced by the next change once done. Rows of the ``pending`` table, where
an earlier memdir kept them (a row each), are still read and finished. This module encodes and decodes them;
`memdir.store._sql.SqlIndex` reads and writes them with the rest of the change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, cast

from ..errors import CorruptStoreError

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Sequence

__all__ = [
    "PENDING_COLUMNS",
    "PendingKind",
    "PendingOp",
    "decode_ops",
    "encode_ops",
    "other_pending",
    "pending_by_namespace",
    "pending_columns",
]

PendingKind = Literal["install", "unlink", "rename"]


@dataclass(frozen=True, slots=True)
class PendingOp:
    """A file operation that makes committed ``version`` visible in the directory store (`memdir.store._visible`):
    ``install`` renames ``temp`` (beside ``path``, content ``sha256``) over ``path``, whose content is
    ``replaces`` until then (None: no file); ``unlink`` removes ``path`` (content ``sha256``); ``rename`` moves
    ``old_path`` (content ``sha256``) to ``path``."""

    version: int
    op: PendingKind
    path: str
    sha256: str
    old_path: str | None = None
    temp: str | None = None
    replaces: str | None = None


PENDING_COLUMNS = "version, op, path, sha256, old_path, temp, replaces"


def pending_by_namespace(conn: sqlite3.Connection) -> dict[str, list[PendingOp]]:
    """Every namespace's pending operations, oldest first (for `memdir doctor`, which reads without a store)."""
    found: dict[str, list[PendingOp]] = {}
    for namespace, *row in conn.execute(f"SELECT ns, {PENDING_COLUMNS} FROM pending ORDER BY ns, version"):
        found.setdefault(str(namespace), []).append(PendingOp(*row))
    columns = {str(r[1]) for r in conn.execute("PRAGMA table_info(namespaces)")}
    if "pending" in columns:  # an index from before 0004 has them in the table only
        for namespace, text in conn.execute("SELECT ns, pending FROM namespaces WHERE pending IS NOT NULL"):
            found.setdefault(str(namespace), []).extend(decode_ops(conn, str(namespace), text))
    return {ns: sorted(ops, key=lambda op: op.version) for ns, ops in found.items()}


def encode_ops(ops: Sequence[PendingOp]) -> str:
    """What the versions rows of the same transaction do not hold: the temporary file, the content replaced and,
    for an unlink (whose version records no content), the content removed. Kept short: the namespace's row must
    stay small (a row longer than about a quarter of a page spills into a page of its own).

    A line per operation, ``version kind temp replaces removed`` ('-' for none): none of these fields can hold
    a space (numbers, our own temporary names, hexadecimal digests), and this runs in every change, where
    `json.dumps` cost several times as much."""
    return "\n".join(
        f"{o.version} {o.op} {o.temp or '-'} {o.replaces or '-'} {(o.sha256 if o.op == 'unlink' else None) or '-'}"
        for o in ops
    )


def pending_columns(ops: Sequence[PendingOp]) -> tuple[str | None, int | None, int | None]:
    """The namespace row's ``pending``, ``pending_first`` and ``pending_last`` for ``ops``."""
    if not ops:
        return None, None, None
    versions = [o.version for o in ops]
    return encode_ops(ops), min(versions), max(versions)


def decode_ops(conn: sqlite3.Connection, namespace: str, text: object) -> list[PendingOp]:
    """The operations `encode_ops` wrote, completed from their versions (path, content, old path). One whose
    version is gone (its history pruned) cannot be checked, so it is left out, as the roll-forward drops it."""
    try:
        items = [_fields(line) for line in str(text).split("\n")]
    except ValueError as exc:
        raise CorruptStoreError("the store's database is damaged (pending operations); run `memdir doctor`") from exc
    ops: list[PendingOp] = []
    for version, kind, temp, replaces, removed in items:
        row = conn.execute(
            "SELECT path, sha256, old_path FROM versions WHERE ns = ? AND version = ?", (namespace, version)
        ).fetchone()
        if row is None:
            continue
        path, sha, old = row
        content = removed if kind == "unlink" else sha
        if content is not None:
            ops.append(PendingOp(version, kind, str(path), str(content), old, temp, replaces))
    return ops


def _fields(line: str) -> tuple[int, PendingKind, str | None, str | None, str | None]:
    version, kind, temp, replaces, removed = line.split(" ")
    if kind not in ("install", "unlink", "rename"):
        raise ValueError(f"unknown pending operation {kind!r}")
    return int(version), cast("PendingKind", kind), _or_none(temp), _or_none(replaces), _or_none(removed)


def _or_none(field: str) -> str | None:
    return None if field == "-" else field


def other_pending(first: int | None, last: int | None, in_table: int, ignoring: Sequence[tuple[int, int]]) -> bool:
    """Whether a namespace row's pending operations (versions ``first`` to ``last``, and rows of the legacy table)
    include any outside the version ranges ``ignoring`` (a writer's own, noted done)."""
    if in_table:
        return True  # left by an earlier memdir: the roll-forward sorts them out
    if first is None or last is None:
        return False
    return not any(low <= first and last <= high for low, high in ignoring)
