"""memdir over HTTP: ``memdir serve``, a multi-tenant API, MCP over streamable HTTP, tokens.

    >>> from memdir.server import ServerConfig, create_app
    >>> app = create_app(ServerConfig(store_url="sqlite:///srv/memdir/memory.db"))  # doctest: +SKIP

The app is plain ASGI (Starlette); `serve` runs it with uvicorn. Modules: `tokens` (the token registry),
``_app`` (assembly and lifespan), ``routers/`` (the endpoints by area); the wire format, shared with
`memdir.RemoteStore`, is `memdir._wire`. Importing this package is cheap: the app's modules load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._app import create_app
    from ._config import ServerConfig
    from ._run import listen, serve

__all__ = ["ServerConfig", "create_app", "listen", "serve"]


def __getattr__(name: str) -> Any:
    # Starlette and uvicorn load only when the app is asked for: `import memdir.server` stays cheap.
    if name == "create_app":
        from ._app import create_app

        return create_app
    if name == "ServerConfig":
        from ._config import ServerConfig

        return ServerConfig
    if name in ("serve", "listen"):
        from . import _run

        return getattr(_run, name)
    raise AttributeError(f"module 'memdir.server' has no attribute {name!r}")
