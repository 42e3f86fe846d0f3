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

import importlib
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
    RedactedError,
    SessionError,
    StorageError,
    StorageFullError,
    StorageUnavailableError,
    StoreNotFoundError,
)

if TYPE_CHECKING:
    from .agent import Agent, AgentResult, AgentSettings
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
    from .store.remote import RemoteStore
    from .tool import MemoryTool, ToolResult


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
    "RedactedError",
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


# Imported on first use, so `import memdir` costs a few milliseconds instead of ~300 (the stores, the policy and
# search pull in SQLite, YAML, the secret rules...): a command that needs none of it, like the Claude Code hooks'
# `memdir claude-code snapshot` with nothing to record (`memdir._launch`), runs in a fraction of the time.
_STORE_NAMES: tuple[str, ...] = (
    "ANY",
    "MISSING",
    "DirectoryStore",
    "Entry",
    "FileData",
    "MemoryStore",
    "Origin",
    "Quota",
)
_STORE_NAMES += ("SQLiteStore", "Stat", "Store", "Usage", "Version", "open_store", "register_backend", "store_exists")
_LAZY = {
    **dict.fromkeys(("Agent", "AgentResult", "AgentSettings"), ".agent"),
    **dict.fromkeys(("MemoryPath", "parse"), ".paths"),
    **dict.fromkeys(("Finding", "Limits", "WritePolicy", "scan"), ".policy"),
    "SearchHit": ".search",
    **dict.fromkeys(_STORE_NAMES, ".store"),
    "RemoteStore": ".store.remote",  # needs httpx: loaded only by programs that talk to a server
    **dict.fromkeys(("MemoryTool", "ToolResult"), ".tool"),
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'memdir' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # found directly from now on
    return value
