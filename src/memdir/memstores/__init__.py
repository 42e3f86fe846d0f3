"""Memory stores: Anthropic's Managed Agents Memory Stores API over memdir's namespaces, and `memdir sync`.

A memory store is a namespace whose memories are its files (``/food.md`` is ``/memories/food.md``), with ids
that follow files through renames and versions that outlive them (`Lineage`, derived from the store's change
log, so every door's writes have ids). `Registry` says which tenant owns which store; `Memories` is what the
API's endpoints do on one store (`memdir.server.routers.memory_stores` serves them). `memdir.memstores.sync`
mirrors a memdir store and any Memory Stores API endpoint (`sync`, `open_side`).
"""

from ._errors import InvalidRequestError, PathConflictError, PreconditionFailedError, StateConflictError
from ._ids import MEMORY, STORE, VERSION, is_id, new_id
from ._json import API_ACTOR, TOKEN_SESSION, decode_page, encode_page, from_rfc3339, store_json
from ._lineage import Lineage, VersionFilter
from ._memories import MAX_CONTENT_BYTES, Memories, check_sha256
from ._paths import api_path, memory_path, prefix_path
from ._registry import MemoryStoreRecord, Registry, StoreChanges, token_tenant
from ._sides import ApiSide, Item, Side, StoreSide, open_side
from ._sync import Change, SyncReport, sync

__all__ = [
    "API_ACTOR",
    "MAX_CONTENT_BYTES",
    "MEMORY",
    "STORE",
    "TOKEN_SESSION",
    "VERSION",
    "ApiSide",
    "Change",
    "InvalidRequestError",
    "Item",
    "Lineage",
    "Memories",
    "MemoryStoreRecord",
    "PathConflictError",
    "PreconditionFailedError",
    "Registry",
    "Side",
    "StateConflictError",
    "StoreChanges",
    "StoreSide",
    "SyncReport",
    "VersionFilter",
    "api_path",
    "check_sha256",
    "decode_page",
    "encode_page",
    "from_rfc3339",
    "is_id",
    "memory_path",
    "new_id",
    "open_side",
    "prefix_path",
    "store_json",
    "sync",
    "token_tenant",
]
