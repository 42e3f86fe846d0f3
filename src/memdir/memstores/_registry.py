"""Memory stores: which tenant owns which store, and each store's name, description, metadata and state.

A memory store is a namespace of the served store, named by the store's id (``memstore_...``); this registry
(table ``memstores``, kept with the tokens in the served store's auxiliary database) says which tenant owns it.
Every look-up takes the tenant: a store of another tenant is not found, exactly like a store that does not exist,
so no answer tells one tenant anything about another's ids.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import NotFoundError
from ._errors import InvalidRequestError
from ._ids import STORE, is_id, new_id
from ._schema import migrations

if TYPE_CHECKING:
    from ..store._db import AuxConnection, AuxDatabase

__all__ = ["MemoryStoreRecord", "Registry", "StoreChanges", "token_tenant"]

MAX_NAME = 255
MAX_DESCRIPTION = 1024
MAX_PAIRS = 16
MAX_KEY = 64
MAX_VALUE = 512

_COLUMNS = "id, tenant, name, description, metadata, created, updated, archived"


@dataclass(frozen=True, slots=True)
class MemoryStoreRecord:
    id: str
    tenant: str
    name: str
    description: str
    metadata: dict[str, str]
    created: float
    updated: float
    archived: float | None = None

    @property
    def namespace(self) -> str:
        """The namespace holding the store's memories (the memory tool's ``/memories`` there)."""
        return self.id


@dataclass(frozen=True, slots=True)
class StoreChanges:
    """What an update changes: None leaves a field as it is; ``metadata`` maps keys to a value or to None
    (remove)."""

    name: str | None = None
    description: str | None = None
    metadata: dict[str, str | None] | None = None


def _record(row: tuple[Any, ...]) -> MemoryStoreRecord:
    id_, tenant, name, description, metadata, created, updated, archived = row
    return MemoryStoreRecord(
        str(id_), str(tenant), str(name), str(description), json.loads(metadata), float(created), float(updated),
        None if archived is None else float(archived),
    )  # fmt: skip


class Registry:
    """The memory stores kept in one auxiliary database."""

    def __init__(self, db: AuxDatabase) -> None:
        self._db = db
        db.ensure(migrations)

    def create(self, tenant: str, name: object, description: object, metadata: object) -> MemoryStoreRecord:
        now = time.time()
        record = MemoryStoreRecord(
            new_id(STORE), tenant, check_name(name), check_description(description), check_metadata(metadata),
            now, now,
        )  # fmt: skip
        with self._db.transaction("create a memory store") as conn:
            conn.execute(
                f"INSERT INTO memstores ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (record.id, tenant, record.name, record.description, json.dumps(record.metadata), now, now, None),
            )
        return record

    def get(self, tenant: str, store_id: object) -> MemoryStoreRecord:
        """The tenant's store; `NotFoundError` for any other id (malformed, unknown, another tenant's)."""
        if not is_id(STORE, store_id):
            raise _not_found(store_id)
        with self._db.reading("read a memory store") as conn:
            found = _row(conn, tenant, str(store_id))
        if found is None:
            raise _not_found(store_id)
        return found

    def owner(self, namespace: str) -> str | None:
        """The tenant owning the memory store held by ``namespace``, if it is one."""
        if not is_id(STORE, namespace):
            return None
        with self._db.reading("read a memory store") as conn:
            row = conn.execute("SELECT tenant FROM memstores WHERE id = ?", (namespace,)).fetchone()
        return None if row is None else str(row[0])

    def update(self, tenant: str, store_id: object, changes: StoreChanges) -> MemoryStoreRecord:
        with self._db.transaction("update a memory store") as conn:
            current = self._writable(conn, tenant, store_id)
            metadata = _merged(current.metadata, changes.metadata)
            name = current.name if changes.name is None else check_name(changes.name)
            description = current.description if changes.description is None else check_description(changes.description)
            if (name, description, metadata) == (current.name, current.description, current.metadata):
                return current
            now = time.time()
            conn.execute(
                "UPDATE memstores SET name = ?, description = ?, metadata = ?, updated = ? WHERE id = ?",
                (name, description, json.dumps(metadata), now, current.id),
            )
        return MemoryStoreRecord(current.id, tenant, name, description, metadata, current.created, now)

    def archive(self, tenant: str, store_id: object) -> MemoryStoreRecord:
        """Archive the store (once: archiving an archived store answers it unchanged)."""
        with self._db.transaction("archive a memory store") as conn:
            current = _row(conn, tenant, str(store_id)) if is_id(STORE, store_id) else None
            if current is None:
                raise _not_found(store_id)
            if current.archived is not None:
                return current
            now = time.time()
            conn.execute("UPDATE memstores SET archived = ?, updated = ? WHERE id = ?", (now, now, current.id))
        return MemoryStoreRecord(
            current.id, tenant, current.name, current.description, current.metadata, current.created, now, now
        )

    def remove(self, tenant: str, store_id: str) -> None:
        with self._db.transaction("delete a memory store") as conn:
            conn.execute("DELETE FROM memstores WHERE id = ? AND tenant = ?", (store_id, tenant))

    def list(
        self,
        tenant: str,
        *,
        include_archived: bool,
        created_gte: float | None,
        created_lte: float | None,
        after: tuple[float, str] | None,
        limit: int,
    ) -> list[MemoryStoreRecord]:
        """The tenant's stores, newest first, from after the ``(created, id)`` of the previous page's last."""
        where: list[str] = ["tenant = ?"]
        params: list[Any] = [tenant]
        if not include_archived:
            where.append("archived IS NULL")
        if created_gte is not None:
            where.append("created >= ?")
            params.append(created_gte)
        if created_lte is not None:
            where.append("created <= ?")
            params.append(created_lte)
        if after is not None:
            where.append("(created < ? OR (created = ? AND id < ?))")
            params += [after[0], after[0], after[1]]
        sql = f"SELECT {_COLUMNS} FROM memstores WHERE {' AND '.join(where)} ORDER BY created DESC, id DESC LIMIT ?"
        with self._db.reading("list memory stores") as conn:
            rows = conn.execute(sql, (*params, limit)).fetchall()
        return [_record(r) for r in rows]

    @staticmethod
    def _writable(conn: AuxConnection, tenant: str, store_id: object) -> MemoryStoreRecord:
        current = _row(conn, tenant, str(store_id)) if is_id(STORE, store_id) else None
        if current is None:
            raise _not_found(store_id)
        if current.archived is not None:
            raise InvalidRequestError(f"memory store {current.id} is archived: it can no longer be changed")
        return current


def _row(conn: AuxConnection, tenant: str, store_id: str) -> MemoryStoreRecord | None:
    row = conn.execute(f"SELECT {_COLUMNS} FROM memstores WHERE id = ? AND tenant = ?", (store_id, tenant)).fetchone()
    return None if row is None else _record(row)


def _not_found(store_id: object) -> NotFoundError:
    shown = store_id[:80] if isinstance(store_id, str) else ""
    return NotFoundError(f"no memory store {shown!r}")


def check_name(value: object) -> str:
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_NAME or not _no_control(value):
        raise InvalidRequestError(f"name: must be 1 to {MAX_NAME} characters without control characters")
    return value


def check_description(value: object) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > MAX_DESCRIPTION:
        raise InvalidRequestError(f"description: must be text of at most {MAX_DESCRIPTION:,} characters")
    return value


def check_metadata(value: object) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise InvalidRequestError("metadata: must be an object whose values are strings")
    return _checked_pairs(value)


def _merged(current: dict[str, str], changes: dict[str, str | None] | None) -> dict[str, str]:
    if changes is None:
        return current
    if not isinstance(changes, dict) or not all(v is None or isinstance(v, str) for v in changes.values()):
        raise InvalidRequestError("metadata: must be an object whose values are strings or null")
    merged = dict(current)
    for key, value in changes.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return _checked_pairs(merged)


def _checked_pairs(pairs: dict[str, str]) -> dict[str, str]:
    if len(pairs) > MAX_PAIRS:
        raise InvalidRequestError(f"metadata: at most {MAX_PAIRS} key-value pairs")
    for key, value in pairs.items():
        if not 1 <= len(key) <= MAX_KEY or len(value) > MAX_VALUE:
            raise InvalidRequestError(
                f"metadata: keys are 1 to {MAX_KEY} characters and values at most {MAX_VALUE} characters"
            )
    return dict(pairs)


def _no_control(text: str) -> bool:
    return not any(ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0 for ch in text)


def token_tenant(db: AuxDatabase, namespace: str) -> str:
    """The tenant a new token for ``namespace`` belongs to by default: the owner of the memory store the namespace
    holds (so that token sees the store's siblings too), or the tenant named after the namespace."""
    return Registry(db).owner(namespace) or namespace
