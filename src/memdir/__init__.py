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

from .errors import (
    AlreadyExistsError,
    ArchiveError,
    ConfigError,
    ConflictError,
    CorruptStoreError,
    EncodingError,
    HistoryUnavailableError,
    LimitError,
    MemdirError,
    NotADirectoryError_,
    NotAFileError,
    NotFoundError,
    PathError,
    StorageError,
)
from .paths import MemoryPath, parse
from .policy import Limits
from .store import (
    ANY,
    MISSING,
    DirectoryStore,
    Entry,
    FileData,
    MemoryStore,
    Origin,
    SQLiteStore,
    Stat,
    Store,
    Usage,
    Version,
    open_store,
    register_backend,
)
from .tool import MemoryTool, ToolResult

__version__ = "0.1.0"

# A library logs, an application decides where logs go: without this, Python's last-resort handler would
# print memdir's warnings (and the tracebacks it logs for unexpected errors) on the embedding program's stderr.
logging.getLogger("memdir").addHandler(logging.NullHandler())

__all__ = [
    "ANY",
    "MISSING",
    "AlreadyExistsError",
    "ArchiveError",
    "ConfigError",
    "ConflictError",
    "CorruptStoreError",
    "DirectoryStore",
    "EncodingError",
    "Entry",
    "FileData",
    "HistoryUnavailableError",
    "LimitError",
    "Limits",
    "MemdirError",
    "MemoryPath",
    "MemoryStore",
    "MemoryTool",
    "NotADirectoryError_",
    "NotAFileError",
    "NotFoundError",
    "Origin",
    "PathError",
    "SQLiteStore",
    "Stat",
    "StorageError",
    "Store",
    "ToolResult",
    "Usage",
    "Version",
    "open_store",
    "parse",
    "register_backend",
]
