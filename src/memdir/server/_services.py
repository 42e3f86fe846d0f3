"""What handlers and the MCP endpoint need of the app's shared services, as a protocol: they depend on this
shape, not on the module that assembles the app (`memdir.server._app.Services` fulfils it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from starlette.types import Receive, Scope, Send

    from ..store import Store
    from ._auth import Gate, Principal
    from ._config import ServerConfig
    from ._tenants import Tenants
    from .tokens import TokenRegistry

__all__ = ["McpHandler", "Services"]


class McpHandler(Protocol):
    async def handle(self, principal: Principal, scope: Scope, receive: Receive, send: Send) -> None: ...


class Services(Protocol):
    """Configuration, the admin store (the default namespace: the tokens' database), tokens, the namespaces'
    stores, authentication, the MCP servers."""

    @property
    def config(self) -> ServerConfig: ...

    @property
    def admin(self) -> Store: ...

    @property
    def tokens(self) -> TokenRegistry: ...

    @property
    def gate(self) -> Gate: ...

    @property
    def tenants(self) -> Tenants: ...

    @property
    def mcp(self) -> McpHandler: ...

    @property
    def openapi(self) -> dict[str, Any]: ...
