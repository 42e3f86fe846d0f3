"""The review queue and the audit log of any store a door holds: its own, or a memdir server's.

A store on a memdir server (`memdir.RemoteStore`) keeps its held writes and its audit log on the server, where
its gate runs: `memdir --store http://... review` and `audit` read and decide them there (``/v1/review``,
``/v1/audit``), never in a database of the client's own. For a gated local store they are the gate's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from ..errors import ConfigError, PolicyError
from ..policy.audit import AuditEntry, audit_log
from ..policy.findings import Finding
from ..policy.quarantine import HeldWrite
from ..store._json import parse_time
from ._review import Review
from ._store import GatedStore

if TYPE_CHECKING:
    from ..store._base import Store

__all__ = ["ReviewQueue", "audit_entries", "review_queue"]


class ReviewQueue(Protocol):
    """What a door needs of a review queue, local (`memdir.gate.Review`) or remote (`RemoteReview`)."""

    def items(self, status: str | None = "pending") -> list[HeldWrite]: ...

    def diff(self, item: HeldWrite) -> list[str]: ...

    def approve(self, item: int) -> int: ...

    def reject(self, item: int, *, reason: str | None = None) -> HeldWrite: ...


def review_queue(store: Store) -> ReviewQueue:
    """The review queue of ``store``: a gate's, or the server's for a memdir server's store."""
    if isinstance(store, GatedStore):
        return Review(store)
    if store.runs_commands:
        return RemoteReview(store)
    return Review(GatedStore(store))


def audit_entries(
    store: Store, *, path: str | None = None, since: float | None = None, limit: int | None = None
) -> list[AuditEntry]:
    """The audit log of ``store``, oldest first (the server's for a memdir server's store)."""
    if not store.runs_commands:
        return audit_log(store).entries(path=path, since=since, limit=limit)
    params: dict[str, Any] = {"limit": limit or 5000}
    if path is not None:
        params["path"] = path
    if since is not None:
        params["since"] = repr(since)
    data = _api(store, "GET", "/v1/audit", params=params)
    return [AuditEntry(**_entry_fields(e)) for e in data["entries"]]


class RemoteReview:
    """The review queue of a memdir server's namespace, decided on the server (as the token's user)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._diffs: dict[int, list[str]] = {}

    def items(self, status: str | None = "pending") -> list[HeldWrite]:
        data = _api(self.store, "GET", "/v1/review", params={"status": status or "all", "limit": 500})
        return [self._item(raw) for raw in data["items"]]

    def diff(self, item: HeldWrite) -> list[str]:
        return self._diffs.get(item.id, [])

    def approve(self, item: int) -> int:
        data = _api(self.store, "POST", f"/v1/review/{int(item)}/approve")
        return int(data["version"])

    def reject(self, item: int, *, reason: str | None = None) -> HeldWrite:
        body = {"reason": reason} if reason else {}
        return self._item(_api(self.store, "POST", f"/v1/review/{int(item)}/reject", json=body))

    def _item(self, raw: dict[str, Any]) -> HeldWrite:
        item = HeldWrite(
            id=int(raw["id"]), ts=parse_time(raw["time"]), status=str(raw["status"]), path=str(raw["path"]),
            command={"command": raw.get("command")}, content=b"", base_sha256=None, actor=str(raw["actor"]),
            session=raw.get("session"), source=raw.get("source"),
            findings=[Finding.from_json(f) for f in raw.get("findings", [])],
            decided_ts=None if raw.get("decided_time") is None else parse_time(raw["decided_time"]),
            decided_by=raw.get("decided_by"), version=raw.get("version"),
            reason=raw.get("reason"),
        )  # fmt: skip
        unified = (raw.get("diff") or {}).get("unified")
        self._diffs[item.id] = [str(line) for line in unified] if isinstance(unified, list) else []
        return item


def _api(store: Store, method: str, url: str, **kwargs: Any) -> Any:
    call = getattr(store, "api", None)
    if call is None:
        raise ConfigError(f"{type(store).__name__} has no server API")
    try:
        return call(method, url, **kwargs)
    except PolicyError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"the server's answer to {method} {url} is malformed") from exc


_ENTRY_FIELDS = (
    "ts", "channel", "actor", "session", "source", "command", "path", "new_path", "outcome", "sha256", "size",
    "version", "detail",
)  # fmt: skip


def _entry_fields(raw: dict[str, Any]) -> dict[str, Any]:
    fields = {name: raw.get(name) for name in _ENTRY_FIELDS}
    return {**fields, "ts": parse_time(raw["ts"])}  # ISO 8601 on the wire (seconds from a server before 0.2)
