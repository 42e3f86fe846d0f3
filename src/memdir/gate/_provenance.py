"""Who a change is recorded as: the `Caller` the door admitted, never what a door or a replayed version claims.

A pinned caller's actor and session stand whatever ``origin=`` a door passes; the time is the clock's; only an admin
caller may record versions with the metadata they carry, or the operations memdir alone records (``external``, an
outside edit it found; ``import``, a version replayed from an archive). Every label is redacted of secrets, and an
idempotency key that holds one is kept as its digest.
"""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING

from ..errors import PolicyError
from ..store._records import Origin, sha256_hex
from ._screen import redacted_label, secrets_in_name

if TYPE_CHECKING:
    from ..policy.pipeline import WritePolicy
    from ..store._records import Version
    from ._caller import Caller

__all__ = ["ADMIN_OPS", "origin_of", "provenance_of", "request_key"]

# Only memdir itself records these: an outside edit it found (`external`), a version replayed from an archive.
ADMIN_OPS = frozenset({"external", "import"})


def origin_of(caller: Caller, policy: WritePolicy, given: Origin | None, op: str) -> Origin:
    """Who a change is recorded as: the caller (a pinned one's actor and session whatever the door passes),
    with any secret in the labels redacted."""
    if op in ADMIN_OPS and not caller.admin:
        raise PolicyError(f"'{op}' versions are recorded by memdir itself, not written by a client")
    if given is None:
        actor, session, source, request = caller.actor, caller.session, caller.source, caller.request
    elif caller.pinned:
        actor, session, source = caller.actor, caller.session, given.source or caller.source
        request = given.request or caller.request
    else:
        actor, session, source = given.actor, given.session, given.source or caller.source
        request = given.request or caller.request
    return Origin(
        redacted_label(policy, actor) or actor,
        redacted_label(policy, session),
        redacted_label(policy, source),
        None if request is None else request_key(policy, request),
    )


def request_key(policy: WritePolicy, key: str) -> str:
    """An idempotency key as the store records it with the versions it made: a key that holds a secret is
    kept as its digest (redacted, two keys could no longer be told apart; a digest still answers a retry)."""
    return "sha256:" + sha256_hex(key.encode("utf-8")) if secrets_in_name(policy, key) else key


def provenance_of(caller: Caller, policy: WritePolicy, version: Version) -> Version:
    """An imported version as it will be recorded: as carried for an admin caller, else the caller's, now (and
    never an operation only memdir records)."""
    if caller.admin:  # as carried, with any secret in its labels redacted
        return dataclasses.replace(
            version,
            actor=redacted_label(policy, version.actor) or version.actor,
            session=redacted_label(policy, version.session),
            source=redacted_label(policy, version.source),
        )
    who = origin_of(caller, policy, None, "write")
    # The operations memdir alone records (an outside edit it found, a file it rebuilt) would pass the
    # caller's change off as memdir's: replayed by anyone else, it is the caller's write.
    op = "write" if version.op in ADMIN_OPS else version.op
    return dataclasses.replace(
        version, op=op, actor=who.actor, session=who.session, source=who.source, timestamp=time.time()
    )
