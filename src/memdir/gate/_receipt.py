"""The `Receipt` of one door command: what the gate saw it do. It becomes the command's one audit entry, and the
door reads from it what to tell its caller (what was redacted, which quarantine item holds a write).

A door opens one with `GatedStore.call` around the store operations of a command; operations made outside any
call are recorded one entry each.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..store._records import sha256_hex

if TYPE_CHECKING:
    from ..policy.findings import Finding

__all__ = ["Receipt", "active"]


@dataclass(slots=True)
class Receipt:
    """One command as the gate saw it. ``outcome`` is the policy's action when it acted; ``content`` and
    ``regions`` are what the (first) write stored and where it changed the text (character offsets in the stored
    text, after redaction); ``held`` the quarantine item a held write waits in."""

    command: str
    path: str | None = None
    new_path: str | None = None
    sha256: str | None = None
    size: int | None = None
    version: int | None = None
    findings: list[Finding] = field(default_factory=list)
    outcome: str | None = None
    content: bytes | None = None
    regions: tuple[tuple[int, int], ...] = ()
    held: int | None = None
    failed: bool = False
    detail: str | None = None
    wrote_once: bool = False
    discarded: bool = False
    owner: object = None  # the store whose audit log records it (`Scope`: another store's operations never join)

    def read(self, content: bytes, version: int | None, path: str | None = None) -> None:
        """Content the command read: recorded when it is the command's own path's (``path`` None: it is)."""
        if not self.wrote_once and (path is None or self.path in (None, path)):
            self.sha256, self.size, self.version = sha256_hex(content), len(content), version

    def wrote(self, content: bytes, version: int | None, sha256: str | None = None, path: str | None = None) -> None:
        """The command's first write of its own path is what its entry records (others, such as index upkeep,
        are calls of their own)."""
        if self.wrote_once or (path is not None and self.path not in (None, path)):
            return
        self.wrote_once = True
        self.sha256, self.size, self.version = sha256 or sha256_hex(content), len(content), version
        self.content = content

    def discard(self) -> None:
        """Nothing happened after all (an upkeep that found nothing to change): no entry is recorded."""
        self.discarded = True


_ACTIVE: contextvars.ContextVar[Receipt | None] = contextvars.ContextVar("memdir_gate_receipt", default=None)


def active() -> Receipt | None:
    """The receipt of the command running in this context, if a door opened one."""
    return _ACTIVE.get()
