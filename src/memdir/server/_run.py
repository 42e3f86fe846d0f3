"""Running the app with uvicorn (``memdir serve``): one process, or ``workers`` processes sharing the socket.

The listening socket is bound here (`listen`), before anything else starts: a port already in use is one clear
`ConfigError`, and the caller learns the address actually bound (port 0 picks a free one). `serve` returns the
signal that stopped the server (SIGINT or SIGTERM), so that the program can end with the status a signal gives
(uvicorn itself swallows Ctrl-C and returns normally).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import signal
import socket
from typing import TYPE_CHECKING, Any

import uvicorn
from uvicorn.supervisors import Multiprocess

from ..errors import ConfigError
from ._app import create_app
from ._config import CONFIG_ENV, ServerConfig
from ._logs import configure_logging, uvicorn_log_config
from ._protocols import http_protocol

if TYPE_CHECKING:
    from starlette.applications import Starlette

__all__ = ["app_from_environment", "listen", "serve", "uvicorn_options"]

log = logging.getLogger("memdir.server")

# In-flight requests get this long to finish after SIGTERM/SIGINT; then connections are closed anyway.
GRACEFUL_SHUTDOWN_SECONDS = 30


def listen(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host``:``port``, as uvicorn would bind it (``SO_REUSEADDR``). `ConfigError` in
    one line when the port is taken or the address cannot be used."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(
                f"port {port} on {host} is already in use (another memdir serve?): stop it, or choose another "
                "port with --port"
            ) from exc
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    sock.set_inheritable(True)  # worker processes accept on it
    return sock


def serve(config: ServerConfig, *, workers: int = 1, sock: socket.socket | None = None) -> int | None:
    """Serve until SIGTERM or SIGINT, then finish the requests in flight and close the stores. Returns the
    signal that stopped it (None if none did). ``sock``: an already bound socket (`listen`), else one is bound."""
    configure_logging()
    _raise_open_file_limit()
    listening = sock if sock is not None else listen(config.host, config.port)
    host, port = listening.getsockname()[:2]
    log.info("memdir server listening", extra={"address": f"http://{f'[{host}]' if ':' in host else host}:{port}"})
    options = {
        "host": config.host,
        "port": port,
        "log_config": uvicorn_log_config(),
        "timeout_graceful_shutdown": GRACEFUL_SHUTDOWN_SECONDS,
        **uvicorn_options(),
    }
    try:
        if workers <= 1:
            return _serve_here(uvicorn.Config(create_app(config), **options), listening)
        create_app(config).state.services.close()  # fail here, once, if the store cannot be used
        os.environ[CONFIG_ENV] = config.to_env()
        factory = uvicorn.Config(f"{__name__}:app_from_environment", factory=True, workers=workers, **options)
        supervisor = _Supervisor(factory, sockets=[listening])
        supervisor.run()
        return supervisor.stopped_by
    finally:
        listening.close()


def _serve_here(config: uvicorn.Config, listening: socket.socket) -> int | None:
    server = uvicorn.Server(config)
    try:
        server.run(sockets=[listening])
    except KeyboardInterrupt:
        # uvicorn shut down gracefully, then raised SIGINT again with Python's own handler: Ctrl-C.
        return signal.SIGINT
    if not server.started:
        raise ConfigError("the server did not start; the log above says why")
    return None


class _Supervisor(Multiprocess):
    """uvicorn's worker supervisor, remembering which signal stopped it."""

    stopped_by: int | None = None

    def handle_int(self) -> None:
        self.stopped_by = signal.SIGINT
        super().handle_int()

    def handle_term(self) -> None:
        self.stopped_by = signal.SIGTERM
        super().handle_term()


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
