"""The audit log (`memdir.policy.audit`) and the integrity check (`memdir.policy.integrity`), per namespace.

The log holds who read or wrote what, when, by which way in, and the SHA-256 of the content — never the content.
Reading it flushes what the server buffered first, so a read that just happened is in the answer.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import TYPE_CHECKING, Any

from ..._wire import iso_time
from ...policy.audit import audit_log
from ...policy.integrity import verify
from .._endpoint import Call, Endpoint
from .._errors import ApiError, json_response
from .._schemas import json_response as json_doc
from .._schemas import ref

if TYPE_CHECKING:
    from starlette.responses import Response

    from ...gate import GatedStore

__all__ = ["ENDPOINTS"]

_MAX_ENTRIES = 5000


async def entries(call: Call) -> Response:
    path = call.query_path("path")
    since = _since(call.query_text("since", max_chars=64))
    limit = call.query_int("limit", 200, minimum=1, maximum=_MAX_ENTRIES)

    def read(store: GatedStore) -> list[dict[str, Any]]:
        found = audit_log(store.inner).entries(path=None if path is None else path.virtual, since=since, limit=limit)
        return [{**entry.to_json(), "ts": iso_time(entry.ts)} for entry in found]

    return json_response({"entries": await call.run(read)})


def _since(raw: str | None) -> float | None:
    """Seconds since the epoch, or an ISO 8601 date or time (UTC unless it says otherwise)."""
    if raw is None:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        seconds = _iso(raw)
    if not math.isfinite(seconds):
        raise ApiError("invalid_request", "query parameter 'since' must be a finite time")
    return seconds


def _iso(raw: str) -> float:
    try:
        when = dt.datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise ApiError(
            "invalid_request", "query parameter 'since' must be seconds since the epoch or an ISO 8601 date or time"
        ) from None
    return (when if when.tzinfo else when.replace(tzinfo=dt.UTC)).timestamp()


async def integrity(call: Call) -> Response:
    def check(store: GatedStore) -> dict[str, Any]:
        return verify(store).to_json()

    return json_response(await call.run(check))


_PARAMETERS = (
    {"name": "path", "in": "query", "required": False, "schema": {"type": "string"},
     "description": "Only this file, or the files below this directory (`/memories/notes.md`)."},
    {"name": "since", "in": "query", "required": False, "schema": {"type": "string"},
     "description": "From this time on: seconds since the epoch, or ISO 8601 (`2026-11-29T14:00:00Z`)."},
    {"name": "limit", "in": "query", "required": False,
     "schema": {"type": "integer", "minimum": 1, "maximum": _MAX_ENTRIES},
     "description": "Only the last N entries (default 200)."},
)  # fmt: skip

ENDPOINTS = (
    Endpoint(
        "GET",
        "/v1/audit",
        entries,
        "auditLog",
        "The audit log: every read and write, oldest first (the last `limit` entries)",
        "audit",
        parameters=_PARAMETERS,
        responses={"200": json_doc(ref("AuditPage"), "The entries, oldest first.")},
        errors=("path_error",),
    ),
    Endpoint(
        "GET",
        "/v1/verify",
        integrity,
        "verifyIntegrity",
        "Check every file against its history, and the history and audit log against their hash chains "
        "(`memdir verify`)",
        "audit",
        responses={"200": json_doc(ref("Integrity"), "Whether all files match their history, and what does not.")},
    ),
)
