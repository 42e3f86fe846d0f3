"""``memdir gc``: expire files nobody used for their TTL, and prune history older than the retention period.

A file expires when ``[policy.ttl]`` has a rule for it (the first glob that matches) and it was neither read nor
written for that long. "Used" comes from the audit log's access times (`AuditLog.last_access`, kept without a
write per read) and the file's own modification time, whichever is later. Expired files are deleted as
versions by the actor ``gc`` (not ``user``: the history should show that no person decided it), the source
naming the rule; their history stays like any deleted file's.

With ``keep_versions`` set, versions that stopped being current longer ago than that are pruned
(`Store.prune_history`), and decided quarantine items older than that are forgotten.

`plan` never changes anything (``memdir gc`` prints it); `apply` carries a plan out (``memdir gc --apply``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import HistoryUnavailableError, NotFoundError
from ..paths import MemoryPath
from ..store._base import prunable_versions
from ..store._records import Origin
from .audit import AuditEntry, audit_log
from .quarantine import Quarantine

if TYPE_CHECKING:
    from ..store._base import Store
    from .config import PolicyConfig, TtlRule

__all__ = ["Expired", "GcPlan", "GcResult", "apply", "plan"]

GC_ACTOR = "gc"


@dataclass(frozen=True, slots=True)
class Expired:
    path: MemoryPath
    last_used: float
    rule: TtlRule
    version: int


@dataclass(frozen=True, slots=True)
class GcPlan:
    now: float
    expired: list[Expired] = field(default_factory=list)
    prune_before: float | None = None  # None: no retention configured
    prunable: int = 0  # versions that would be pruned


@dataclass(frozen=True, slots=True)
class GcResult:
    deleted: list[str]
    skipped: list[str]  # used or changed since the plan was made
    versions_pruned: int
    quarantine_pruned: int


def plan(store: Store, config: PolicyConfig, *, now: float | None = None) -> GcPlan:
    """What `apply` would do now."""
    now = time.time() if now is None else now
    expired: list[Expired] = []
    if config.ttl:
        used = audit_log(store).last_access()
        for entry in store.list_files(MemoryPath.root()):
            rule = config.ttl_for(entry.path)
            last = max(entry.modified, used.get(entry.path.virtual, 0.0))
            if rule is not None and now - last > rule.seconds:
                expired.append(Expired(entry.path, last, rule, entry.version))
    prune_before = None if config.keep_versions is None else now - config.keep_versions
    prunable = 0
    if prune_before is not None:
        try:
            prunable = len(prunable_versions(store.log(), prune_before))
        except HistoryUnavailableError:
            prune_before = None
    return GcPlan(now, expired, prune_before, prunable)


def apply(store: Store, planned: GcPlan) -> GcResult:
    """Carry ``planned`` out. A file used or changed since the plan was made is left alone."""
    deleted, skipped = [], []
    audit = audit_log(store)
    fresh = audit.last_access()
    for item in planned.expired:
        stat = store.stat(item.path)
        if stat is None or stat.version != item.version or fresh.get(item.path.virtual, 0.0) > item.last_used:
            skipped.append(item.path.virtual)
            continue
        origin = Origin(
            actor=GC_ACTOR, source=f"expired: not used for {_days(item.rule.seconds)} ({item.rule.pattern})"
        )
        try:
            versions = store.delete(item.path, origin=origin)
        except NotFoundError:
            skipped.append(item.path.virtual)
            continue
        deleted.append(item.path.virtual)
        audit.record(AuditEntry(time.time(), "gc", GC_ACTOR, None, origin.source, "delete", item.path.virtual,
                                version=versions[-1].version if versions else None), flush=True)  # fmt: skip
    pruned = quarantined = 0
    if planned.prune_before is not None:
        pruned = store.prune_history(planned.prune_before)
        quarantined = Quarantine(store).prune(planned.prune_before)
    return GcResult(deleted, skipped, pruned, quarantined)


def _days(seconds: float) -> str:
    if seconds >= 86_400 and seconds % 86_400 == 0:
        return f"{int(seconds // 86_400)}d"
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{int(seconds // 3600)}h"
    return f"{seconds:g}s"
