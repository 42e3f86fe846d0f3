"""The ASGI app: the routers' endpoints, ``/mcp``, and the lifespan that owns stores and MCP servers.

Layers, outermost first: `Guard` (URL and header bounds, the access log, last-resort errors), Starlette's router
(404/405 as JSON), then each endpoint's wrapper (`Endpoint.route`: authentication and rate limit, then the
handler). Shutting down (uvicorn: SIGTERM or SIGINT) stops accepting connections, lets requests in flight
finish, then leaves the lifespan: MCP servers stop and every store is closed.
"""

from __future__ import annotations

import contextlib
import gc
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.routing import Match, Route

from ..store import DEFAULT_NAMESPACE, open_store
from ._auth import Gate
from ._config import ServerConfig
from ._errors import ApiError, error_response
from ._guard import Guard, request_info
from ._mcp import McpEndpoint, McpGateway
from ._openapi import openapi_document
from ._protocols import DEADLINES_KEY
from ._ratelimit import RateLimiter
from ._tenants import Tenants
from .routers import ROUTERS
from .routers.memory_stores import MEMORY_STORES_PREFIX
from .routers.memory_stores._errors import ANTHROPIC
from .tokens import TokenRegistry

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from starlette.requests import Request
    from starlette.responses import Response

    from ..store import Store
    from ._endpoint import Endpoint

__all__ = ["Services", "create_app", "endpoints"]

log = logging.getLogger("memdir.server")


@dataclass
class Services:
    """What the handlers share: configuration, tokens, the namespaces' stores, the MCP servers."""

    config: ServerConfig
    admin: Store  # the store's default namespace, opened for its auxiliary database (the tokens)
    tokens: TokenRegistry
    gate: Gate
    tenants: Tenants
    openapi: dict[str, Any] = field(default_factory=dict)
    mcp: McpGateway = field(init=False)

    def __post_init__(self) -> None:
        self.mcp = McpGateway(self)

    def close(self) -> None:
        self.tenants.close()
        self.admin.close()


def endpoints() -> list[Endpoint]:
    return [endpoint for router in ROUTERS for endpoint in router.ENDPOINTS]


def create_app(config: ServerConfig | None = None) -> Starlette:
    """The app for ``config`` (its store is opened now: a store that cannot be used fails before serving)."""
    config = config or ServerConfig()
    services = _services(config)
    table = endpoints()
    services.openapi = openapi_document(table)
    routes = [endpoint.route(services) for endpoint in table]
    routes.append(Route("/mcp", McpEndpoint(services)))
    app = Starlette(
        routes=routes,
        middleware=[Middleware(Guard, max_url_bytes=config.max_url_bytes, max_header_bytes=config.max_header_bytes)],
        exception_handlers={HTTPException: _http_error},  # type: ignore[dict-item]
        lifespan=_lifespan(services),
    )
    app.router.redirect_slashes = False  # one URL per resource; "/v1/usage/" is not "/v1/usage"
    app.state.services = services
    return app


def _services(config: ServerConfig) -> Services:
    admin = open_store(config.store_url, namespace=DEFAULT_NAMESPACE)
    try:
        tokens = TokenRegistry(admin.aux)
    except BaseException:
        admin.close()
        raise
    limiter = RateLimiter(config.rate, config.burst)
    urls = config.namespaces or None
    tenants = Tenants(config.store_url, config.max_open_namespaces, config.tool_options, urls)
    gate = Gate(tokens, limiter, offload=admin.aux.dialect != "sqlite")
    return Services(config, admin, tokens, gate, tenants)


def _lifespan(services: Services) -> Any:
    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[dict[str, Any]]:
        try:
            async with services.mcp.running():
                # Everything made so far (modules, the app, the SDK's schemas) lives as long as the process.
                # Frozen, it leaves the collector's generations, so a full collection scans only what requests
                # made: the p99 of `view` under load went from 76 ms to 25 ms (docs/benchmarks.md).
                gc.freeze()
                log.info("memdir server ready", extra={"store": _display(services.config.store_url)})
                # The lifespan state reaches the server's connections (memdir.server._protocols): their limits.
                yield {DEADLINES_KEY: (services.config.header_timeout, services.config.body_timeout)}
        finally:
            services.close()
            log.info("memdir server stopped; stores closed")

    return lifespan


def _display(url: str | None) -> str:
    from ..store import redact_url  # a PostgreSQL URL may carry a password: never log it

    return redact_url(url) if url else "(the default store)"


async def _http_error(request: Request, exc: HTTPException) -> Response:
    """The router's own 404 and 405, in the API's error shape (Anthropic's, under the Memory Stores API)."""
    request_info(request.scope).setdefault("route", "-")
    if exc.status_code == 405:
        allowed = _allowed(request)
        message = f"{request.method} is not allowed here (allowed: {allowed})"
        error = ApiError("method_not_allowed", message, headers={"Allow": allowed})
    elif exc.status_code == 404:
        error = ApiError("route_not_found", f"no such endpoint: {request.method} {_shown(request)}")
    else:
        error = ApiError("invalid_request", str(exc.detail))
    if request.url.path.startswith(MEMORY_STORES_PREFIX):
        return ANTHROPIC.response(error)
    return error_response(error)


def _allowed(request: Request) -> str:
    """The methods the request's path takes: each endpoint is a route of its own, and the router's 405 names only
    those of the first whose path matched (``PUT /v1/memory_stores/{id}`` would say ``GET, HEAD``)."""
    methods: set[str] = set()
    for route in request.app.router.routes:
        if isinstance(route, Route) and route.methods and route.matches(request.scope)[0] is not Match.NONE:
            methods |= route.methods
    return ", ".join(sorted(methods))


def _shown(request: Request) -> str:
    path = request.url.path
    return path if len(path) <= 200 else path[:200] + "…"
