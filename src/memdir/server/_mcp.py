"""MCP over streamable HTTP at ``/mcp``: the tools of ``memdir mcp``, one server per token.

`memdir.integrations.mcp.build_server` serves one store with one session id, so each token gets its own
`MCPServer` over its namespace's store (session id ``mcp-<token id>``), created on the token's first MCP request.
Its session manager runs in the app's lifespan task group, as the SDK requires, and is stopped when the server
shuts down (or, once ``limit`` servers exist, when it is the least recently used one and has no request in flight).

The endpoint is *stateless* (each POST carries a whole JSON-RPC exchange, answered as JSON): with several worker
processes any of them can answer any request, and every request is authenticated again, so a revoked token's
next call fails. The SDK's DNS-rebinding protection stays on for a loopback host.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from starlette.authentication import AuthCredentials

from ..gate import Caller
from ..integrations.mcp import build_server
from ._errors import exception_response
from ._guard import request_info

if TYPE_CHECKING:
    from anyio.abc import TaskGroup, TaskStatus
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from starlette.types import Receive, Scope, Send

    from ._auth import Principal
    from ._services import Services

__all__ = ["McpEndpoint", "McpGateway"]


@dataclass
class _Slot:
    manager: StreamableHTTPSessionManager
    lease: contextlib.ExitStack  # holds the namespace's store open while the server lives
    stop: anyio.Event = field(default_factory=anyio.Event)
    in_flight: int = 0


class McpGateway:
    def __init__(self, services: Services, *, limit: int = 32) -> None:
        self.services = services
        self.limit = limit
        self._slots: dict[str, _Slot] = {}
        self._lock = anyio.Lock()
        self._group: TaskGroup | None = None

    @contextlib.asynccontextmanager
    async def running(self) -> Any:
        """The lifespan of every per-token MCP server (entered in the app's lifespan)."""
        async with anyio.create_task_group() as group:
            self._group = group
            try:
                yield self
            finally:
                for slot in list(self._slots.values()):
                    slot.stop.set()
                self._slots.clear()
                self._group = None

    async def handle(self, principal: Principal, scope: Scope, receive: Receive, send: Send) -> None:
        slot = await self._slot(principal)
        slot.in_flight += 1
        try:
            # The SDK reads who is calling from the scope; the principal is the token's id, never the token.
            access = AccessToken(token=principal.token_id, client_id=principal.token_id, scopes=[])
            child = {**scope, "user": AuthenticatedUser(access), "auth": AuthCredentials([])}
            await slot.manager.handle_request(child, receive, send)
        finally:
            slot.in_flight -= 1

    async def _slot(self, principal: Principal) -> _Slot:
        async with self._lock:
            slot = self._slots.pop(principal.token_id, None)
            if slot is None:
                slot = await self._start(principal)
                await self._evict()
            self._slots[principal.token_id] = slot  # re-inserted: the dict's order is least recently used first
            return slot

    async def _start(self, principal: Principal) -> _Slot:
        if self._group is None:
            raise RuntimeError("the MCP gateway is not running")
        config = self.services.config
        lease = contextlib.ExitStack()
        # The namespace's store behind its gate, for this token: the server's policy, limits and audit.
        caller = Caller("model", f"mcp-{principal.token_id}", None, "mcp", principal.token_id, pinned=True)
        gated = self.services.tenants.gated(principal.namespace, caller)
        store = await anyio.to_thread.run_sync(lease.enter_context, gated)
        try:
            server = build_server(store, session=caller.session, **config.tool_options)
            # Builds the session manager (the Starlette app it returns is unused: requests come through here).
            server.streamable_http_app(
                stateless_http=True,
                json_response=True,
                host=config.host,
                max_request_body_size=config.max_body_bytes,
            )
            slot = _Slot(server.session_manager, lease)
            await self._group.start(self._run, slot)
        except BaseException:
            lease.close()
            raise
        return slot

    @staticmethod
    async def _run(slot: _Slot, *, task_status: TaskStatus[None]) -> None:
        try:
            async with slot.manager.run():
                task_status.started()
                await slot.stop.wait()
        finally:
            slot.lease.close()

    async def _evict(self) -> None:
        idle = [key for key, slot in self._slots.items() if slot.in_flight == 0]
        for key in idle[: max(0, len(self._slots) + 1 - self.limit)]:
            self._slots.pop(key).stop.set()


class McpEndpoint:
    """The ASGI app at ``/mcp``: authenticate, charge the rate limit, hand over to the token's MCP server."""

    def __init__(self, services: Services) -> None:
        self.services = services

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request_info(scope)["route"] = "/mcp"
        try:
            principal = await self.services.gate.admit(scope)
        except Exception as exc:
            await exception_response(exc)(scope, receive, send)
            return
        await self.services.mcp.handle(principal, scope, receive, send)
