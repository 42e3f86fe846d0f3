"""What one server runs with (``memdir serve`` options), and how it reaches worker processes."""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError

__all__ = ["CONFIG_ENV", "ServerConfig"]

KIB = 1024
MIB = 1024 * KIB

# `memdir serve --workers N` starts workers that import the app by name; the configuration travels to them
# in this environment variable, as JSON.
CONFIG_ENV = "MEMDIR_SERVE_CONFIG"


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """Bounds and settings of one server. Every size is in bytes; ``rate`` 0 turns rate limiting off."""

    store_url: str | None = None
    host: str = "127.0.0.1"
    port: int = 8765
    # A JSON request (a tool command, a move...): a 100 KiB memory file, JSON-escaped, fits many times over.
    max_body_bytes: int = 1 * MIB
    # Raw file content (PUT /v1/files, POST /v1/versions): images may hold up to 5 MiB (SPEC.md's limit).
    max_upload_bytes: int = 8 * MIB
    max_archive_bytes: int = 256 * MIB
    # Path plus query string as sent: a memory path is at most 1,024 bytes, percent-encoding triples it.
    max_url_bytes: int = 8 * KIB
    max_header_bytes: int = 16 * KIB
    # Slow clients (seconds): a request head must be complete this long after the connection is ready for it,
    # its body this long after the head; past either the client gets 408 and the connection is closed.
    header_timeout: float = 10.0
    body_timeout: float = 60.0
    rate: float = 100.0  # requests per second and token (token bucket refill)
    burst: int = 200  # bucket size: how many requests a token may send at once
    max_open_namespaces: int = 64  # stores kept open at once (least recently used are closed)
    tool_options: dict[str, Any] = field(default_factory=dict)  # MemoryTool options (limits, create_overwrites)
    # Namespace -> store URL: serve exactly these, each from its own store (``memdir serve --claude-code``: one
    # per Claude Code memory directory); ``store_url`` then only keeps the tokens. Empty: every namespace of
    # ``store_url``.
    namespaces: dict[str, str] = field(default_factory=dict)
    claude_code: bool = False  # the Claude Code overview (`memdir.server.routers.claude_code`) is on

    def __post_init__(self) -> None:
        for name in ("max_body_bytes", "max_upload_bytes", "max_archive_bytes", "max_url_bytes", "max_header_bytes"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"server setting {name} must be positive")
        if not (self.header_timeout > 0 and self.body_timeout > 0):
            raise ConfigError("the header and body time limits must be positive numbers of seconds")
        if self.rate < 0 or self.burst < 1:
            raise ConfigError("the rate limit needs rate >= 0 (0: off) and burst >= 1")
        if self.max_open_namespaces < 1:
            raise ConfigError("max_open_namespaces must be at least 1")

    def to_env(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_env(cls) -> ServerConfig:
        raw = os.environ.get(CONFIG_ENV)
        if not raw:
            raise ConfigError(f"{CONFIG_ENV} is not set: start workers with `memdir serve --workers N`")
        data = json.loads(raw)
        return cls(**data)
