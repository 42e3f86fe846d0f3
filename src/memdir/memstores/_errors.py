"""The errors of the Memory Stores API that memdir's own tree has no class for (all under `MemdirError`).

```
MemdirError
├── InvalidRequestError      the request breaks a rule of the API (a path, a name, a size, an archived store): 400
├── StateConflictError       the request does not fit the resource's state (redacting a current version): 409
├── ConflictError
│   └── PreconditionFailedError  a ``content_sha256`` precondition does not hold: 409
└── AlreadyExistsError
    └── PathConflictError    another memory holds the path, or a path above or below it: 409
```

The server answers each with the HTTP status and error type Anthropic's API uses (`memdir.server.routers.
memory_stores`), so the official SDK raises the same exception class it raises against api.anthropic.com.
"""

from __future__ import annotations

from ..errors import AlreadyExistsError, ConflictError, MemdirError

__all__ = ["InvalidRequestError", "PathConflictError", "PreconditionFailedError", "StateConflictError"]


class InvalidRequestError(MemdirError):
    """The request breaks a rule of the Memory Stores API; nothing was changed."""


class StateConflictError(MemdirError):
    """The request does not fit the state of what it names; nothing was changed."""


class PreconditionFailedError(ConflictError):
    """The memory's content no longer has the SHA-256 the request expected; nothing was changed."""


class PathConflictError(AlreadyExistsError):
    """Another memory holds the path, or a path above or below it (a memory cannot also be a directory)."""

    def __init__(self, message: str, *, conflicting_path: str, conflicting_memory_id: str) -> None:
        super().__init__(message)
        self.conflicting_path = conflicting_path
        self.conflicting_memory_id = conflicting_memory_id
