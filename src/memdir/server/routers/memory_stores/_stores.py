"""The memory stores themselves: create, list, retrieve, update, archive, delete."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ....memstores import InvalidRequestError, Memories, StoreChanges, decode_page, encode_page, store_json
from ..._errors import json_response
from ._common import api_caller, blocking, created_bounds, flag, limit, origin, owned, registry

if TYPE_CHECKING:
    from starlette.responses import Response

    from ....store import Store
    from ..._endpoint import Call

__all__ = ["archive_store", "create_store", "delete_store", "list_stores", "retrieve_store", "update_store"]


async def create_store(call: Call) -> Response:
    body = await call.json_object()
    tenant, stores = call.principal.tenant, registry(call)

    def create(_store: Store) -> dict[str, Any]:
        return store_json(stores.create(tenant, body.get("name"), body.get("description"), body.get("metadata")))

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
    if len(position) != 2 or not isinstance(position[0], int | float) or not isinstance(position[1], str):
        raise InvalidRequestError("page: not a page token from this list (pass next_page as it came)")
    return float(position[0]), position[1]


async def retrieve_store(call: Call) -> Response:
    return json_response(store_json(await owned(call)))


async def update_store(call: Call) -> Response:
    record = await owned(call)
    body = await call.json_object()
    changes = StoreChanges(body.get("name"), body.get("description"), body.get("metadata"))
    tenant, stores = call.principal.tenant, registry(call)
    updated = await call.run(
        lambda _store: stores.update(tenant, record.id, changes),
        writes=True,
        namespace=record.id,
        caller=api_caller(call),
    )
    return json_response(store_json(updated))


async def archive_store(call: Call) -> Response:
    record = await owned(call)
    tenant, stores = call.principal.tenant, registry(call)
    archived = await call.run(
        lambda _store: stores.archive(tenant, record.id), writes=True, namespace=record.id, caller=api_caller(call)
    )
    return json_response(store_json(archived))


async def delete_store(call: Call) -> Response:
    """Delete every memory, remove every version's content, forget the ids, then the store itself (last, so a
    delete interrupted half way can be sent again)."""
    record = await owned(call)
    tenant, stores, who = call.principal.tenant, registry(call), origin(call)

    def delete(store: Store) -> None:
        Memories(store, record.id).delete_everything(who)
        stores.remove(tenant, record.id)

    await call.run(delete, writes=True, namespace=record.id, caller=api_caller(call))
    return json_response({"type": "memory_store_deleted", "id": record.id})
