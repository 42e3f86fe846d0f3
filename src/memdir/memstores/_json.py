"""The JSON the Memory Stores API answers with, field for field what the official SDK parses
(``anthropic.types.beta``: ``BetaManagedAgentsMemoryStore``, ``...Memory``, ``...MemoryPrefix``,
``...MemoryVersion``, ``...Actor``), and the opaque page tokens of its lists.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
from typing import TYPE_CHECKING, Any

from ._errors import InvalidRequestError

if TYPE_CHECKING:
    from ._lineage import VersionRow
    from ._registry import MemoryStoreRecord

__all__ = [
    "API_ACTOR",
    "HALF_MICROSECOND",
    "TOKEN_SESSION",
    "actor_json",
    "decode_page",
    "encode_page",
    "from_rfc3339",
    "memory_json",
    "prefix_json",
    "rfc3339",
    "store_json",
    "version_json",
]

HALF_MICROSECOND = 5e-7
API_ACTOR = "api"  # the actor memdir records for a write made through this API; its session is ``token-<id>``
TOKEN_SESSION = "token-"


def rfc3339(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def from_rfc3339(text: str, field: str) -> float:
    """Seconds since the epoch. Times are answered to the microsecond: compare bounds with `HALF_MICROSECOND`
    of slack, so a time given back as it was answered matches the time it came from."""
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError as exc:
        raise InvalidRequestError(f"{field}: not an RFC 3339 time ({text[:40]!r})") from exc
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return when.timestamp()


def store_json(record: MemoryStoreRecord) -> dict[str, Any]:
    return {
        "type": "memory_store",
        "id": record.id,
        "name": record.name,
        "description": record.description,
        "metadata": record.metadata,
        "created_at": rfc3339(record.created),
        "updated_at": rfc3339(record.updated),
        "archived_at": None if record.archived is None else rfc3339(record.archived),
    }


def memory_json(
    store_id: str,
    memory_id: str,
    path: str,
    *,
    sha256: str,
    size: int,
    version_id: str,
    created: float,
    updated: float,
    content: str | None,
) -> dict[str, Any]:
    return {
        "type": "memory",
        "id": memory_id,
        "memory_store_id": store_id,
        "path": path,
        "content": content,
        "content_sha256": sha256,
        "content_size_bytes": size,
        "memory_version_id": version_id,
        "created_at": rfc3339(created),
        "updated_at": rfc3339(updated),
    }


def prefix_json(path: str) -> dict[str, Any]:
    return {"type": "memory_prefix", "path": path}


def version_json(store_id: str, row: VersionRow, content: str | None) -> dict[str, Any]:
    return {
        "type": "memory_version",
        "id": row.id,
        "memory_id": row.memory_id,
        "memory_store_id": store_id,
        "operation": row.operation,
        "path": None if row.key is None else "/" + row.key,
        "content": content,
        "content_sha256": row.sha256,
        "content_size_bytes": row.size,
        "created_at": rfc3339(row.ts),
        "created_by": actor_json(row.actor, row.session),
        "redacted_at": None if row.redacted is None else rfc3339(row.redacted),
        "redacted_by": None if row.redacted_by is None else _api_actor(row.redacted_by),
    }


def actor_json(actor: str, session: str | None) -> dict[str, Any] | None:
    """Who wrote a version, in the API's four kinds: this API's writes are ``api_actor`` (the token's id, never
    the token), the model's (memory tool, MCP) ``session_actor`` (its session), anyone else's ``user_actor``
    (memdir's actor name: ``user``, ``external``, ``gc``...)."""
    if actor == API_ACTOR and session is not None and session.startswith(TOKEN_SESSION):
        return _api_actor(session.removeprefix(TOKEN_SESSION))
    if actor == "model":
        return None if session is None else {"type": "session_actor", "session_id": session}
    return {"type": "user_actor", "user_id": actor}


def _api_actor(token_id: str) -> dict[str, Any]:
    return {"type": "api_actor", "api_key_id": token_id}


# -- page tokens ----------------------------------------------------------------------------------------------
# Opaque to the client (``page_`` and base64 of a small JSON array): where the previous page stopped. A token is
# only ever a position in the caller's own data, so a forged one can do no more than start a page elsewhere.


def encode_page(kind: str, position: list[Any]) -> str:
    raw = json.dumps([kind, *position], separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return "page_" + base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_page(kind: str, token: str | None) -> list[Any] | None:
    if token is None:
        return None
    body = token.removeprefix("page_")
    try:
        data = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode("utf-8"))
    except (binascii.Error, ValueError) as exc:
        raise InvalidRequestError("page: not a page token from this list (pass next_page as it came)") from exc
    if not token.startswith("page_") or not isinstance(data, list) or not data or data[0] != kind:
        raise InvalidRequestError("page: not a page token from this list (pass next_page as it came)")
    return data[1:]
