"""The review queue: held writes, and a person's decision on each, carried out through the gate.

A held write is its content as it would have been stored (every secret redacted) and the file it was meant to
change. Approving it writes exactly that content, as a new version by the reviewer on behalf of the original
writer (the version's source names the item), through a gate whose policy still redacts or refuses secrets
(screened as it will be committed) but leaves injected instructions to the reviewer's judgement. It applies only
to the file as the reviewer saw it: if the file changed since the write was held (or appeared, for a new file),
the approval is refused and the item stays pending, so a reviewer never approves a diff other than the one shown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import AlreadyExistsError, ConflictError, MemdirError, NotFoundError, PolicyError
from ..paths import parse
from ..policy.quarantine import HeldWrite, Quarantine
from ..store._records import MISSING

if TYPE_CHECKING:
    from ..store._records import Expect, Op
    from ._store import GatedStore

__all__ = ["Review"]

_OPS: dict[str, Op] = {"create": "create", "str_replace": "str_replace", "insert": "insert", "restore": "restore"}


class Review:
    """The held writes of a gated store's namespace; decisions are made as the gate's caller."""

    def __init__(self, gate: GatedStore) -> None:
        self.gate = gate
        self.table = Quarantine(gate.inner)

    def items(self, status: str | None = "pending") -> list[HeldWrite]:
        return self.table.items(status)

    def get(self, item: int) -> HeldWrite:
        return self.table.get(item)

    def diff(self, item: HeldWrite) -> list[str]:
        return self.table.diff(item)

    def approve(self, item: int) -> int:
        """Apply a pending write as a new version; returns its number. `PolicyError` when it no longer applies
        (the item then stays pending) or was already decided."""
        held = self.table.claim(item, "approved", self._reviewer())
        try:
            version = self._apply(held)
        except MemdirError as exc:
            self.table.release(item)
            raise PolicyError(f"quarantined write #{item} no longer applies; it stays pending: {_why(exc)}") from exc
        self.table.applied(item, version)  # the write itself is in the audit log, channel `review`
        return version

    def reject(self, item: int, *, reason: str | None = None) -> HeldWrite:
        # The reason is kept with the item and answered with it: a secret in it is redacted, as in a label.
        kept = None if reason is None else self.gate.redacted(reason)
        held = self.table.claim(item, "rejected", self._reviewer(), kept)
        # A rejection writes nothing, so it gets its own entry, naming what was found (never the content).
        with self.gate.call("reject", held.path) as receipt:
            receipt.findings = held.findings
        return self.table.get(item)

    def _reviewer(self) -> str:
        """Who decided, as the item records it (the caller's actor, any secret in it redacted)."""
        return self.gate.redacted(self.gate.caller.actor)

    def prune(self, before: float) -> int:
        return self.table.prune(before)

    def _apply(self, held: HeldWrite) -> int:
        target = parse(held.path)
        current = self.gate.inner.stat(target)
        now = current.sha256 if current is not None and current.kind == "file" else None
        if current is not None and current.kind != "file":
            raise AlreadyExistsError(f"{held.path} is a directory now")
        if now != held.base_sha256:
            raise ConflictError(
                f"{held.path} changed since the write was held" if held.base_sha256 else f"{held.path} exists now",
                current=current.version if current is not None else None,
            )
        expect: Expect = MISSING if current is None else (current.version or 0)
        source = f"approved quarantine #{held.id}; written by {held.actor}" + (
            f" ({held.source})" if held.source else ""
        )
        gate = self.gate.with_caller(session=held.session, source=source, channel="review").with_rules(
            self.gate.rules.approving()
        )
        op = _OPS.get(str(held.command.get("command")), "write")
        return gate.write(target, held.content, expect=expect, op=op).version


def _why(exc: MemdirError) -> str:
    if isinstance(exc, ConflictError | AlreadyExistsError | NotFoundError):
        return f"{exc}; reject it, or ask for the change again"
    return str(exc)
