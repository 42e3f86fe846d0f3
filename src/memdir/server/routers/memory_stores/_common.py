"""What the Memory Stores API's handlers share: the memory store a request names (checked against the token's
tenant), who its writes are recorded as, and its query parameters."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, TypeVar

import anyio.to_thread

from ....memstores import API_ACTOR, TOKEN_SESSION, InvalidRequestError, Registry, from_rfc3339
from ....memstores._json import HALF_MICROSECOND
from ....store._records import Origin
from ..._errors import ApiError

if TYPE_CHECKING:
    from collections.abc import Callable

    from ....gate import Caller
    from ....memstores import MemoryStoreRecord
    from ..._endpoint import Call

__all__ = ["blocking", "created_bounds", "flag", "limit", "origin", "owned", "registry", "view_full"]

T = TypeVar("T")
MAX_LIMIT = 100
MAX_FULL = 20  # `view=full` pages hold at most this many, as the API documents
SOURCE = "memory stores API"


def registry(call: Call) -> Registry:
    return Registry(call.services.admin.aux)  # kept with the tokens


async def blocking(call: Call, work: Callable[..., T], *args: Any) -> T:
    """A registry read: in the event loop on a local SQLite file (as the token check), in a worker thread when
    the database is over the network."""
    if call.services.gate.offload:
        return await anyio.to_thread.run_sync(work, *args)
    return work(*args)


async def owned(call: Call, *, writable: bool = False) -> MemoryStoreRecord:
    """The memory store in the URL, if the token's tenant owns it (else 404, exactly as for an unknown id)."""
    wanted = call.request.path_params["memory_store_id"]
    record = await blocking(call, registry(call).get, call.principal.tenant, wanted)
    if writable and record.archived is not None:
        raise InvalidRequestError(
            f"memory store {record.id} is archived: its memories can be read, deleted and redacted, not written"
        )
    return record


def origin(call: Call) -> Origin:
    """Who a write through this API is recorded as: actor ``api``, session ``token-<token id>`` (the token's
    public id, never the token)."""
    return Origin(API_ACTOR, TOKEN_SESSION + call.principal.token_id, SOURCE)


def api_caller(call: Call) -> Caller:
    """The gate's caller for this API: the token, pinned as actor ``api`` in its session ``token-<id>``, channel
    ``memory_stores`` in the audit log (whatever ``X-Memdir-*`` headers say: the SDK sends none)."""
    session = TOKEN_SESSION + call.principal.token_id
    return dataclasses.replace(
        call.caller(actor=API_ACTOR, session=session, actors=frozenset({API_ACTOR}), channel="memory_stores"),
        actor=API_ACTOR, session=session, source=SOURCE,
    )  # fmt: skip


def view_full(call: Call, *, default: str) -> bool:
    value = call.query_text("view", max_chars=10) or default
    if value not in ("basic", "full"):
        raise ApiError("invalid_request", "query parameter 'view' must be basic or full")
    return value == "full"


def limit(call: Call, *, full: bool = False) -> int:
    asked = call.query_int("limit", 20, minimum=1, maximum=MAX_LIMIT)
    return min(asked, MAX_FULL) if full else asked


def flag(call: Call, name: str) -> bool:
    value = call.query_text(name, max_chars=10)
    if value is None:
        return False
    if value.lower() not in ("true", "false", "1", "0"):
        raise ApiError("invalid_request", f"query parameter {name!r} must be true or false")
    return value.lower() in ("true", "1")


def created_bounds(call: Call) -> tuple[float | None, float | None]:
    """``created_at[gte]`` and ``created_at[lte]`` (RFC 3339), as the SDK sends them."""
    bounds: list[float | None] = []
    for name, slack in (("created_at[gte]", -HALF_MICROSECOND), ("created_at[lte]", HALF_MICROSECOND)):
        raw = call.query_text(name, max_chars=64)
        bounds.append(None if raw is None else from_rfc3339(raw, name) + slack)
    return bounds[0], bounds[1]
