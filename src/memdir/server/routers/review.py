"""The review queue: writes the policy held for a person (`memdir.policy.quarantine`), with diffs; approve, reject.

Each item comes with the diff from the file *as it is now* to what the write would make it, and whether the file
changed since the write was held (``base_changed``): approving applies exactly the held content, re-screened
through the gate as it will be committed (`memdir.gate.Review`), and only to the file as it was when the write
was held; otherwise it is refused and the item stays pending. Items are numbered per namespace and read from the
token's namespace only: a number from another namespace is simply not found. Approving writes as the reviewer
(actor ``user``, channel ``review``; the version's source names the item).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..._wire import iso_time
from ...errors import NotAFileError, NotFoundError, PolicyError
from ...gate import Review
from ...paths import parse
from .._diffs import diff
from .._endpoint import Call, Endpoint
from .._errors import ApiError, json_response
from .._schemas import json_body, ref
from .._schemas import json_response as json_doc

if TYPE_CHECKING:
    from starlette.responses import Response

    from ...gate import GatedStore
    from ...policy.quarantine import HeldWrite

__all__ = ["ENDPOINTS"]

_STATUSES = ("pending", "approved", "rejected", "all")
_MAX_ITEMS = 500
_MAX_REASON = 1000


async def list_items(call: Call) -> Response:
    status = call.query_choice("status", _STATUSES)
    limit = call.query_int("limit", 100, minimum=1, maximum=_MAX_ITEMS)

    def listed(store: GatedStore) -> dict[str, Any]:
        with store.call("review"):  # one audit entry for the listing, the diffs' reads included
            quarantine = Review(store)
            pending = quarantine.items("pending")
            items = pending if status == "pending" else quarantine.items(None if status == "all" else status)
            return {"items": [item_to_json(store, item) for item in items[:limit]], "pending": len(pending)}

    return json_response(await call.run(listed))


async def get_item(call: Call) -> Response:
    item_id = _item_id(call)

    def shown(store: GatedStore) -> dict[str, Any]:
        with store.call("review", None) as receipt:
            item = Review(store).get(item_id)
            receipt.path = item.path
            return item_to_json(store, item)

    return json_response(await call.run(shown))


async def approve(call: Call) -> Response:
    item_id = _item_id(call)

    def approved(store: GatedStore) -> dict[str, Any]:
        quarantine = Review(store)
        _pending(quarantine.get(item_id))
        try:
            version = quarantine.approve(item_id)
        except PolicyError as exc:
            raise _decision_error(quarantine, item_id, exc) from exc
        return {"version": version, "item": item_to_json(store, quarantine.get(item_id))}

    return json_response(await call.run(approved, writes=True, caller=call.caller(channel="review")))


async def reject(call: Call) -> Response:
    item_id = _item_id(call)
    reason = await _reason(call)

    def rejected(store: GatedStore) -> dict[str, Any]:
        quarantine = Review(store)
        _pending(quarantine.get(item_id))
        try:
            item = quarantine.reject(item_id, reason=reason)  # its own audit entry, naming what was found
        except PolicyError as exc:
            raise _decision_error(quarantine, item_id, exc) from exc
        return item_to_json(store, item)

    return json_response(await call.run(rejected, writes=True, caller=call.caller(channel="review")))


def item_to_json(store: GatedStore, item: HeldWrite) -> dict[str, Any]:
    try:
        data = store.read(parse(item.path))
        current, sha, number = data.content, data.sha256, data.version
        label = f"{item.path} (current, version {data.version})"
    except (NotFoundError, NotAFileError):
        current, sha, number, label = b"", None, None, f"{item.path} (missing)"
    changes = diff(current, item.content, label, f"{item.path} (held #{item.id})")
    times = {"time": iso_time(item.ts), "decided_time": None if item.decided_ts is None else iso_time(item.decided_ts)}
    found = {"base_changed": sha != item.base_sha256, "current_version": number, "diff": changes.to_json()}
    return {**item.to_json(), **times, **found}


def _item_id(call: Call) -> int:
    raw = call.request.path_params["item_id"]
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 18:
        raise ApiError("invalid_request", "a review item id is a number (`GET /v1/review` lists them)")
    return int(raw)


def _pending(item: HeldWrite) -> HeldWrite:
    if item.status != "pending":
        raise ApiError("already_decided", f"quarantined write #{item.id} was already {item.status}")
    return item


def _decision_error(quarantine: Review, item_id: int, exc: PolicyError) -> ApiError:
    """Two reviewers may race: the loser finds the item decided. Otherwise the write no longer applies."""
    status = quarantine.get(item_id).status
    if status != "pending":
        return ApiError("already_decided", f"quarantined write #{item_id} was already {status}")
    return ApiError("no_longer_applies", exc.reason)


async def _reason(call: Call) -> str | None:
    """The optional ``{"reason": ...}`` body of a rejection (no body at all is fine)."""
    if not call.request.headers.get("content-type"):
        if await call.body(64 * 1024):
            raise ApiError("unsupported_media_type", 'send the reason as application/json: {"reason": "..."}')
        return None
    body = await call.json_object()
    reason = body.get("reason")
    if reason is not None and (not isinstance(reason, str) or len(reason) > _MAX_REASON):
        raise ApiError("invalid_request", f"'reason' must be text of at most {_MAX_REASON} characters")
    return reason or None


_ID = {
    "name": "item_id",
    "in": "path",
    "required": True,
    "schema": {"type": "integer", "minimum": 1},
    "description": "The item's id, as `GET /v1/review` lists it.",
}
_LIST_PARAMETERS = (
    {"name": "status", "in": "query", "required": False, "schema": {"type": "string", "enum": list(_STATUSES)},
     "description": "Which items (default `pending`)."},
    {"name": "limit", "in": "query", "required": False,
     "schema": {"type": "integer", "minimum": 1, "maximum": _MAX_ITEMS}, "description": "At most this many (100)."},
)  # fmt: skip
_ITEM = json_doc(ref("ReviewItem"), "The item, with its diff against the file as it is now.")

ENDPOINTS = (
    Endpoint(
        "GET",
        "/v1/review",
        list_items,
        "listReview",
        "The writes held for review, oldest first, each with its diff against the current file",
        "review",
        parameters=_LIST_PARAMETERS,
        responses={"200": json_doc(ref("ReviewList"), "The items, and how many are pending.")},
    ),
    Endpoint(
        "GET",
        "/v1/review/{item_id}",
        get_item,
        "getReviewItem",
        "One held write, with its diff",
        "review",
        parameters=(_ID,),
        responses={"200": _ITEM},
        errors=("not_found",),
    ),
    Endpoint(
        "POST",
        "/v1/review/{item_id}/approve",
        approve,
        "approveReviewItem",
        "Apply a held write to the file as it is now (a new version by actor `user`)",
        "review",
        description="No body. A write that no longer applies (its `old_str` is gone, the file it would create "
        "exists) is `409 no_longer_applies` and stays pending.",
        parameters=(_ID,),
        responses={"200": json_doc(ref("Approved"), "The version written, and the item as decided.")},
        errors=("not_found", "already_decided", "no_longer_applies"),
    ),
    Endpoint(
        "POST",
        "/v1/review/{item_id}/reject",
        reject,
        "rejectReviewItem",
        "Discard a held write (optionally saying why)",
        "review",
        parameters=(_ID,),
        request_body={**json_body(ref("Reject")), "required": False},
        responses={"200": _ITEM},
        errors=("not_found", "already_decided", "payload_too_large", "unsupported_media_type"),
    ),
)
