"""Who is at the door: the `Caller` a gated store records on every version and audit entry it writes."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["UNTRUSTED_PREFIX", "Caller"]

UNTRUSTED_PREFIX = "untrusted"


@dataclass(frozen=True, slots=True)
class Caller:
    """The caller of a gated store, as the door that admitted it knows it.

    ``actor``, ``session`` and ``source`` are recorded on what it writes (``source`` starting with ``untrusted``
    marks content that may carry injected instructions: screened more strictly). ``channel`` names the door
    (``tool``, ``mcp``, ``http``, ``web``, ``cli``, ``review``, ``import``, ``python``...) in the audit log;
    ``principal`` who was authenticated (a token id; None for the local user).

    ``request`` is the idempotency key of the change being made (a server's ``Idempotency-Key``), recorded with its
    versions by stores that keep keys.

    ``pinned``: the actor and session were settled by authentication (a server's token), so an ``origin=`` a
    door passes to a write cannot change them, and `GatedStore.with_caller` keeps them. ``admin``: the caller may
    record versions with the metadata they carry (`Store.import_version` keeping actor and time; the ``external``
    and ``import`` operations); anyone else's provenance is set by the gate.
    """

    actor: str = "user"
    session: str | None = None
    source: str | None = None
    channel: str = "python"
    principal: str | None = None
    admin: bool = False
    pinned: bool = False
    request: str | None = None

    @property
    def untrusted(self) -> bool:
        return (self.source or "").startswith(UNTRUSTED_PREFIX)
