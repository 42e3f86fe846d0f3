"""Running the app with uvicorn (``memdir serve``): one process, or ``workers`` processes sharing the socket."""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING, Any

import uvicorn

from ._app import create_app
from ._config import CONFIG_ENV, ServerConfig
from ._logs import configure_logging, uvicorn_log_config
from ._protocols import http_protocol

if TYPE_CHECKING:
    from starlette.applications import Starlette

__all__ = ["app_from_environment", "serve", "uvicorn_options"]

# In-flight requests get this long to finish after SIGTERM/SIGINT; then connections are closed anyway.
GRACEFUL_SHUTDOWN_SECONDS = 30


def serve(config: ServerConfig, *, workers: int = 1) -> None:
    """Serve until SIGTERM or SIGINT, then finish the requests in flight and close the stores."""
    configure_logging()
    _raise_open_file_limit()
    options = {
        "host": config.host,
        "port": config.port,
        "log_config": uvicorn_log_config(),
        "timeout_graceful_shutdown": GRACEFUL_SHUTDOWN_SECONDS,
        **uvicorn_options(),
    }
    if workers <= 1:
        uvicorn.run(create_app(config), **options)
        return
    create_app(config).state.services.close()  # fail here, once, if the store cannot be used
    os.environ[CONFIG_ENV] = config.to_env()
    uvicorn.run(f"{__name__}:app_from_environment", factory=True, workers=workers, **options)


def uvicorn_options() -> dict[str, Any]:
    """What every memdir server runs uvicorn with (`serve`, and the tests' servers)."""
    return {
        "http": os.environ.get("MEMDIR_HTTP_PROTOCOL") or http_protocol(),
        "loop": "auto",  # uvloop when installed (a dependency), asyncio otherwise
        "access_log": False,  # memdir writes its own, one JSON line per request
        "server_header": False,
    }


def app_from_environment() -> Starlette:
    """The app of a worker process started by `serve` (its configuration comes in ``MEMDIR_SERVE_CONFIG``)."""
    configure_logging()
    return create_app(ServerConfig.from_env())


def _raise_open_file_limit() -> None:
    """Each open namespace holds a database connection per worker thread: allow as many files as the system does."""
    with contextlib.suppress(ImportError, ValueError, OSError):
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        target = 65536 if hard == resource.RLIM_INFINITY else hard
        if soft != resource.RLIM_INFINITY and soft < target:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
