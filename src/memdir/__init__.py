"""memdir: persistent, secure, versioned memory for LLM agents.

The application side of Claude's client-side memory tool (``memory_20250818``): stores chosen by URL,
the six memory commands with the protocol's exact strings, history for every change.

    >>> import memdir
    >>> store = memdir.open_store("memory:")
    >>> tool = memdir.MemoryTool(store)
    >>> tool.execute({"command": "create", "path": "/memories/notes.md", "file_text": "hello\\n"}).text
    'File created successfully at: /memories/notes.md'
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ._version import __version__ as __version__  # re-exported
from .errors import (
    AgentError,
    AlreadyExistsError,
    ArchiveError,
    AuthenticationError,
    ConfigError,
    ConflictError,
    ContextOverflowError,
    CorruptStoreError,
    EncodingError,
    HistoryUnavailableError,
    LimitError,
    MaxTurnsError,
    MemdirError,
    MissingCredentialsError,
    NotADirectoryError_,
    NotAFileError,
    NotFoundError,
    PathError,
    PolicyError,
    ProviderError,
    QuotaError,
    RateLimitError,
    SessionError,
    StorageError,
    StorageFullError,
    StorageUnavailableError,
    StoreNotFoundError,
)
from .paths import MemoryPath, parse
from .policy import Finding, Limits, WritePolicy, scan
from .search import SearchHit
from .store import (
    ANY,
    MISSING,
    DirectoryStore,
    Entry,
    FileData,
    MemoryStore,
    Origin,
    Quota,
    SQLiteStore,
    Stat,
    Store,
    Usage,
    Version,
    open_store,
    register_backend,
    store_exists,
)
from .tool import MemoryTool, ToolResult

if TYPE_CHECKING:
    from .agent import Agent, AgentResult, AgentSettings
    from .store.remote import RemoteStore


# A library logs, an application decides where logs go: without this, Python's last-resort handler would
# print memdir's warnings (and the tracebacks it logs for unexpected errors) on the embedding program's stderr.
logging.getLogger("memdir").addHandler(logging.NullHandler())

__all__ = [
    "ANY",
    "MISSING",
    "Agent",
    "AgentError",
    "AgentResult",
    "AgentSettings",
    "AlreadyExistsError",
    "ArchiveError",
    "AuthenticationError",
    "ConfigError",
    "ConflictError",
    "ContextOverflowError",
    "CorruptStoreError",
    "DirectoryStore",
    "EncodingError",
    "Entry",
    "FileData",
    "Finding",
    "HistoryUnavailableError",
    "LimitError",
    "Limits",
    "MaxTurnsError",
    "MemdirError",
    "MemoryPath",
    "MemoryStore",
    "MemoryTool",
    "MissingCredentialsError",
    "NotADirectoryError_",
    "NotAFileError",
    "NotFoundError",
    "Origin",
    "PathError",
    "PolicyError",
    "ProviderError",
    "Quota",
    "QuotaError",
    "RateLimitError",
    "RemoteStore",
    "SQLiteStore",
    "SearchHit",
    "SessionError",
    "Stat",
    "StorageError",
    "StorageFullError",
    "StorageUnavailableError",
    "Store",
    "StoreNotFoundError",
    "ToolResult",
    "Usage",
    "Version",
    "WritePolicy",
    "open_store",
    "parse",
    "register_backend",
    "scan",
    "store_exists",
]


_AGENT = frozenset({"Agent", "AgentResult", "AgentSettings"})


def __getattr__(name: str) -> Any:
    """The agent is imported on first use: `import memdir` (and `memdir --help`) stays fast."""
    if name in _AGENT:
        from . import agent

        return getattr(agent, name)
    if name == "RemoteStore":  # needs httpx: loaded only by programs that talk to a server
        from .store.remote import RemoteStore

        return RemoteStore
    raise AttributeError(f"module 'memdir' has no attribute {name!r}")
