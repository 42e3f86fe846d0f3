"""Who is asking: the token, the namespace it opens, the tenant it belongs to, and its rate limit.

The namespace of a request comes from its token and from nothing else. No path, query parameter, header or body
field can name one: the handlers receive the `Principal` made here and open only ``principal.namespace`` (or, for
the Memory Stores API, a memory store that ``principal.tenant`` owns, checked by `memdir.memstores`).

The token travels as ``Authorization: Bearer <token>`` or as ``X-Api-Key: <token>`` (what Anthropic's API clients
send): either is accepted, once.

Tokens are looked up on every request (a revocation applies at once, on every server). On a SQLite store that
is a read from a local file, done in the event loop; on PostgreSQL it is a network round trip, which would stall
every request of the process meanwhile (for seconds while the database restarts), so it runs in a worker thread.
A token's last use is recorded at most once a minute (`TokenInfo.touch_due`), always in a worker thread: it is a
write, which may wait for the database's writer.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio.to_thread

from ..errors import MemdirError
from ._errors import ApiError
from ._guard import request_info
from .tokens import TOUCH_SECONDS

if TYPE_CHECKING:
    from starlette.types import Scope

    from ._ratelimit import RateLimiter
    from .tokens import TokenInfo, TokenRegistry

__all__ = ["Gate", "Principal"]

log = logging.getLogger("memdir.server")


@dataclass(frozen=True, slots=True)
class Principal:
    token_id: str
    namespace: str
    admin: bool = False  # an admin token: its imports keep the provenance they carry
    tenant: str = ""  # who owns the memory stores this token reaches (`TokenInfo.tenant`)


class Gate:
    """Authenticates a request and charges its token's rate limit."""

    def __init__(self, tokens: TokenRegistry, limiter: RateLimiter, *, offload: bool = False) -> None:
        self.tokens = tokens
        self.limiter = limiter
        self.offload = offload  # look tokens up in a worker thread (the database is over the network)
        self._tried: dict[str, float] = {}  # token id -> when this process last recorded (or tried) a use

    async def admit(self, scope: Scope) -> Principal:
        """The principal of an authenticated request within its rate limit; `ApiError` otherwise."""
        token = _bearer(scope)
        if self.offload:
            info = await anyio.to_thread.run_sync(self.tokens.verify, token)
        else:
            info = self.tokens.verify(token)
        principal = self._admitted(scope, info)
        now = time.time()
        # Once per token and minute in this process too: requests racing the first record, or a store that
        # cannot record it (read-only), do not each pay for a write.
        if info is not None and info.touch_due(now) and now - self._tried.get(info.id, 0.0) >= TOUCH_SECONDS:
            self._tried[info.id] = now
            await anyio.to_thread.run_sync(self._touch, info.id)
        return principal

    def _touch(self, token_id: str) -> None:
        try:
            self.tokens.touch(token_id)
        except MemdirError as exc:  # a read-only or busy store: the request goes on, its use is noted next time
            log.warning("could not record a token's use: %s", exc)

    def _admitted(self, scope: Scope, info: TokenInfo | None) -> Principal:
        if info is None:
            # One message for every refusal: which of them it was is no business of the sender.
            raise ApiError("unauthorized", "the bearer token is not valid (unknown, malformed, expired or revoked)")
        principal = Principal(info.id, info.namespace, admin=info.admin, tenant=info.tenant)
        logged = request_info(scope)
        logged["namespace"], logged["token_id"] = principal.namespace, principal.token_id
        wait = self.limiter.check(principal.token_id)
        if wait > 0:
            retry = self.limiter.retry_after_header(wait)
            raise ApiError(
                "rate_limited",
                f"too many requests with this token; retry after {retry} s",
                headers={"Retry-After": retry},
                retry_after=round(wait, 3),
            )
        return principal


def _bearer(scope: Scope) -> str:
    values: list[bytes] = [v for k, v in scope["headers"] if k == b"authorization"]
    keys: list[bytes] = [v for k, v in scope["headers"] if k == b"x-api-key"]
    if not values and not keys:
        raise ApiError("unauthorized", "this endpoint needs an Authorization: Bearer <token> (or X-Api-Key) header")
    if len(values) + len(keys) > 1:
        # Two credentials are ambiguous, and a proxy and the server might each pick a different one.
        raise ApiError("unauthorized", "send exactly one Authorization or X-Api-Key header")
    if keys:
        token = keys[0].decode("latin-1").strip()
        if not token:
            raise ApiError("unauthorized", "the X-Api-Key header is empty")
        return token
    scheme, _, token = values[0].decode("latin-1").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ApiError("unauthorized", "the Authorization header must read: Bearer <token>")
    return token.strip()
