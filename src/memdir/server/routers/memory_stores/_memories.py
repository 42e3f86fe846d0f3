"""The memories of a memory store, and their versions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ....memstores import (
    API_ACTOR,
    TOKEN_SESSION,
    InvalidRequestError,
    Memories,
    VersionFilter,
    check_sha256,
    decode_page,
    encode_page,
    prefix_path,
)
from ....paths import MemoryPath
from ..._errors import json_response
from ._common import api_caller, created_bounds, limit, origin, owned, view_full

if TYPE_CHECKING:
    from starlette.responses import Response

    from ....gate import GatedStore
    from ....store import Store
    from ..._endpoint import Call

__all__ = [
    "create_memory",
    "delete_memory",
    "list_memories",
    "list_versions",
    "redact_version",
    "retrieve_memory",
    "retrieve_version",
    "update_memory",
]

_OPERATIONS = ("created", "modified", "deleted")
_MAX_DEPTH = 512  # deeper than any path (1,024 bytes) goes: other doors write more than the API's 20 segments


async def create_memory(call: Call) -> Response:
    record = await owned(call, writable=True)
    body = await call.json_object()
    full, who = view_full(call, default="basic"), origin(call)
    if "content" not in body or "path" not in body:
        raise InvalidRequestError("the body must hold 'path' and 'content'")

    def create(store: Store) -> dict[str, Any]:
        return Memories(store, record.id).create(body["path"], body["content"], who, full=full)

    return json_response(await call.run(create, writes=True, namespace=record.id, caller=api_caller(call)))


async def retrieve_memory(call: Call) -> Response:
    record = await owned(call)
    full, memory_id = view_full(call, default="full"), call.request.path_params["memory_id"]
    found = await call.run(
        lambda store: Memories(store, record.id).retrieve(memory_id, full=full),
        namespace=record.id,
        caller=api_caller(call),
    )
    return json_response(found)


async def update_memory(call: Call) -> Response:
    record = await owned(call, writable=True)
    body = await call.json_object()
    full, who, memory_id = view_full(call, default="basic"), origin(call), call.request.path_params["memory_id"]
    expected = _precondition(body.get("precondition"))

    def update(store: Store) -> dict[str, Any]:
        return Memories(store, record.id).update(
            memory_id, path=body.get("path"), content=body.get("content"), expected=expected, origin=who, full=full
        )

    return json_response(await call.run(update, writes=True, namespace=record.id, caller=api_caller(call)))


def _precondition(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, dict) or value.get("type") != "content_sha256":
        raise InvalidRequestError("precondition: must be {'type': 'content_sha256', 'content_sha256': '<64 hex>'}")
    return check_sha256(value.get("content_sha256"), "precondition.content_sha256")


async def delete_memory(call: Call) -> Response:
    record = await owned(call)
    raw = call.query_text("expected_content_sha256", max_chars=64)
    expected = None if raw is None else check_sha256(raw, "expected_content_sha256")
    who, memory_id = origin(call), call.request.path_params["memory_id"]
    deleted = await call.run(
        lambda store: Memories(store, record.id).delete(memory_id, expected, who),
        writes=True,
        namespace=record.id,
        caller=api_caller(call),
    )
    return json_response(deleted)


async def list_memories(call: Call) -> Response:
    record = await owned(call)
    full = view_full(call, default="basic")
    count, depth = limit(call, full=full), call.query_int("depth", 0, minimum=0, maximum=_MAX_DEPTH)
    prefix = prefix_path(call.query_text("path_prefix", max_chars=1100) or "/")
    position = decode_page("memories", call.query_text("page", max_chars=2000))
    if position is not None and not all(isinstance(p, str) for p in position):
        raise InvalidRequestError("page: not a page token from this list (pass next_page as it came)")

    def page(store: Store) -> tuple[list[dict[str, Any]], list[str] | None]:
        return Memories(store, record.id).listing(prefix, depth=depth, limit=count, after=position, full=full)

    items, following = await call.run(page, namespace=record.id, caller=api_caller(call))
    token = None if following is None else encode_page("memories", following)
    return json_response({"data": items, "next_page": token})


async def list_versions(call: Call) -> Response:
    record = await owned(call)
    full = view_full(call, default="basic")
    count, where = limit(call, full=full), _version_filter(call)

    def page(store: Store) -> tuple[list[dict[str, Any]], int | None]:
        return Memories(store, record.id).versions(where, count, full=full)

    items, following = await call.run(page, namespace=record.id, caller=api_caller(call))
    token = None if following is None else encode_page("versions", [following])
    return json_response({"data": items, "next_page": token})


def _version_filter(call: Call) -> VersionFilter:
    operation = call.query_text("operation", max_chars=20)
    if operation is not None and operation not in _OPERATIONS:
        raise InvalidRequestError(f"operation: must be one of {', '.join(_OPERATIONS)}")
    session, key = call.query_text("session_id", max_chars=256), call.query_text("api_key_id", max_chars=64)
    gte, lte = created_bounds(call)
    position = decode_page("versions", call.query_text("page", max_chars=200))
    if position is not None and not (len(position) == 1 and _version_number(position[0])):
        raise InvalidRequestError("page: not a page token from this list (pass next_page as it came)")
    actor, by = (API_ACTOR, TOKEN_SESSION + key) if key is not None else ("model", session) if session else (None, None)
    # memdir has no service accounts; a version cannot be both an API key's and a session's either
    nobody = call.query_text("service_account_id", max_chars=64) is not None or None not in (key, session)
    return VersionFilter(
        memory_id=call.query_text("memory_id", max_chars=64), operation=operation, actor=actor, session=by,
        nobody=nobody, created_gte=gte, created_lte=lte, before=None if position is None else position[0],
    )  # fmt: skip


def _version_number(value: object) -> bool:
    """A version number a page token may carry: one the database can compare (a forged 10**23 made it fail)."""
    return type(value) is int and 0 < value < 2**63


async def retrieve_version(call: Call) -> Response:
    record = await owned(call)
    full, version_id = view_full(call, default="full"), call.request.path_params["memory_version_id"]
    found = await call.run(
        lambda store: Memories(store, record.id).version(version_id, full=full),
        namespace=record.id,
        caller=api_caller(call),
    )
    return json_response(found)


async def redact_version(call: Call) -> Response:
    """Redact a version; recorded in the audit log (command ``redact``), which keeps no content either."""
    record = await owned(call)
    version_id, token_id = call.request.path_params["memory_version_id"], call.principal.token_id

    def redact(store: GatedStore) -> dict[str, Any]:
        # One audit entry (the gate's, command `redact`), naming the version and never its content; redacting
        # again changes nothing and records nothing.
        with store.call("redact") as receipt:
            before, answer = Memories(store, record.id).redact(version_id, token_id)
            if before.redacted is not None:
                receipt.discard()
            else:
                receipt.path = None if before.key is None else MemoryPath(tuple(before.key.split("/"))).virtual
                receipt.version, receipt.detail = before.number, f"memory version {before.id}"
        return answer

    return json_response(await call.run(redact, writes=True, namespace=record.id, caller=api_caller(call)))
