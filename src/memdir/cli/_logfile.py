"""The memdir log: ``memdir.log`` in the data directory, where the CLI keeps what went wrong.

It is for problems, not for traffic: only warnings and errors are written (an unexpected error with its
traceback), each line with its time (UTC) and level. Its size is bounded: past `MAX_BYTES` it is rotated, keeping
`BACKUPS` older files (``memdir.log.1``...). A server's per-request records go to stderr only (`memdir.server._logs`).
Files are created ``0600``: a traceback can quote memory content.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import time
from typing import TYPE_CHECKING, Any

from ..config import data_dir

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["BACKUPS", "MAX_BYTES", "log_path", "open_log"]

MAX_BYTES = 1024 * 1024
BACKUPS = 3
_FORMAT = "%(asctime)s %(levelname)s %(name)s [pid %(process)d]: %(message)s"


def log_path() -> str:
    return str(data_dir() / "memdir.log")


class _UtcFormatter(logging.Formatter):
    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        del datefmt
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z"


class _LogFile(logging.handlers.RotatingFileHandler):
    """Created ``0600`` (and its directory ``0700``) when the first record comes, not before."""

    def __init__(self) -> None:
        super().__init__(log_path(), maxBytes=MAX_BYTES, backupCount=BACKUPS, delay=True, encoding="utf-8")
        self.setLevel(logging.WARNING)
        self.setFormatter(_UtcFormatter(_FORMAT))

    def _open(self) -> Any:
        os.makedirs(os.path.dirname(self.baseFilename), mode=0o700, exist_ok=True)
        os.close(os.open(self.baseFilename, os.O_CREAT | os.O_APPEND | os.O_WRONLY, 0o600))
        return super()._open()


def open_log() -> Callable[[], None]:
    """Attach the memdir log for one command; returns what detaches it (a program embedding the CLI, or a
    test runner, goes on with its own logging afterwards).

    Without a handler, Python's last-resort handler would print a traceback on stderr after all."""
    logger = logging.getLogger("memdir")
    handler = _LogFile()
    logger.addHandler(handler)

    def close() -> None:
        logger.removeHandler(handler)
        handler.close()

    return close
