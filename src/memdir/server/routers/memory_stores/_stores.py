"""The memory stores themselves: create, list, retrieve, update, archive, delete."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ...._format import is_text
from ....memstores import InvalidRequestError, Memories, StoreChanges, decode_page, encode_page, store_json
from ..._errors import json_response
from ._common import api_caller, blocking, created_bounds, flag, limit, origin, owned, registry

if TYPE_CHECKING:
    from starlette.responses import Response

    from ....gate import GatedStore
    from ....memstores import MemoryStoreRecord
    from ..._endpoint import Call

__all__ = ["archive_store", "create_store", "delete_store", "list_stores", "retrieve_store", "update_store"]


async def create_store(call: Call) -> Response:
    body = await call.json_object()
    tenant, stores = call.principal.tenant, registry(call)

    def create(store: GatedStore) -> dict[str, Any]:
        with store.call("store-create") as receipt:  # an entry in the audit log of the namespace creating it
            name, description, metadata = (_redacted(store, body.get(k)) for k in ("name", "description", "metadata"))
            made = stores.create(tenant, name, description, metadata)
            receipt.detail = made.id
            return store_json(made)

    return json_response(await call.run(create, writes=True, caller=api_caller(call)))


async def list_stores(call: Call) -> Response:
    count = limit(call)
    gte, lte = created_bounds(call)
    archived = flag(call, "include_archived")
    position = decode_page("stores", call.query_text("page", max_chars=400))
    after = None if position is None else _store_position(position)
    tenant, stores = call.principal.tenant, registry(call)
    found = await blocking(
        call, lambda: stores.list(
            tenant, include_archived=archived, created_gte=gte, created_lte=lte, after=after, limit=count + 1
        ),
    )  # fmt: skip
    following = encode_page("stores", [found[count - 1].created, found[count - 1].id]) if len(found) > count else None
    return json_response({"data": [store_json(r) for r in found[:count]], "next_page": following})


def _store_position(position: list[Any]) -> tuple[float, str]:
    if len(position) != 2 or not isinstance(position[1], str) or not _time(position[0]):
        raise InvalidRequestError("page: not a page token from this list (pass next_page as it came)")
    return float(position[0]), position[1]


async def retrieve_store(call: Call) -> Response:
    return json_response(store_json(await owned(call)))


async def update_store(call: Call) -> Response:
    record = await owned(call)
    body = await call.json_object()
    tenant, stores = call.principal.tenant, registry(call)

    def update(store: GatedStore) -> MemoryStoreRecord:
        with store.call("store-update") as receipt:  # one entry in the store's own audit log
            receipt.detail = record.id
            name, description, metadata = (_redacted(store, body.get(k)) for k in ("name", "description", "metadata"))
            return stores.update(tenant, record.id, StoreChanges(name, description, metadata))

    updated = await call.run(
        update,
        writes=True,
        namespace=record.id,
        caller=api_caller(call),
    )
    return json_response(store_json(updated))


def _redacted(store: GatedStore, value: Any) -> Any:
    """A store's name, description or metadata (keys and values) as the registry keeps them: any secret in the
    text redacted by the gate (the registry's own checks then judge what is kept, whatever was sent)."""
    if isinstance(value, str):
        return store.redacted(value)
    if isinstance(value, dict):
        return {_key(store, k): _redacted(store, v) for k, v in value.items()}
    return value


def _key(store: GatedStore, key: Any) -> Any:
    """A metadata key holding a secret is refused, as a file name holding one is: redacted, two keys could become
    one and a value be lost, and a key is answered on every read."""
    if not isinstance(key, str):
        return key
    if not is_text(key):  # else redacting it would change it, and it would read as a secret
        raise InvalidRequestError("metadata: a key is not valid UTF-8 text (it holds an unpaired surrogate)")
    if store.redacted(key) != key:
        raise InvalidRequestError("metadata: a key holds a secret; name it otherwise (values may hold one: redacted)")
    return key


async def archive_store(call: Call) -> Response:
    record = await owned(call)
    tenant, stores = call.principal.tenant, registry(call)

    def archive(store: GatedStore) -> MemoryStoreRecord:
        with store.call("store-archive") as receipt:
            receipt.detail = record.id
            return stores.archive(tenant, record.id)

    archived = await call.run(archive, writes=True, namespace=record.id, caller=api_caller(call))
    return json_response(store_json(archived))


async def delete_store(call: Call) -> Response:
    """Delete every memory, remove every version's content, forget the ids, then the store itself (last, so a
    delete interrupted half way can be sent again)."""
    record = await owned(call)
    tenant, stores, who = call.principal.tenant, registry(call), origin(call)

    def delete(store: GatedStore) -> None:
        with store.call("store-delete", "/memories") as receipt:  # one entry, the memories' deletions included
            receipt.detail = record.id
            Memories(store, record.id).delete_everything(who)
            stores.remove(tenant, record.id)

    await call.run(delete, writes=True, namespace=record.id, caller=api_caller(call))
    return json_response({"type": "memory_store_deleted", "id": record.id})


def _time(value: object) -> bool:
    """A creation time a page token may carry: a finite number (JSON as Python reads it has NaN and Infinity)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value >= 0
