"""Structured logs: one JSON object per line on stderr.

Each request gets one line from the ``memdir.server.access`` logger — method, route (the endpoint's template,
never the memory path or query), status, duration, namespace, token id and process id. The token itself is
never logged, nor a request body. Other records (start-up, shutdown, unexpected errors with their traceback)
use the same shape.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import sys
from typing import Any

__all__ = ["ACCESS", "JsonFormatter", "configure_logging", "uvicorn_log_config"]

ACCESS = logging.getLogger("memdir.server.access")

# Attributes every record has (and uvicorn's terminal-only `color_message`): the rest are a record's own fields.
_STANDARD = frozenset(logging.makeLogRecord({}).__dict__) | {"message", "asctime", "color_message"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            "pid": os.getpid(),
        }
        entry.update({k: v for k, v in record.__dict__.items() if k not in _STANDARD and not k.startswith("_")})
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def configure_logging(level: int = logging.INFO) -> None:
    """Send every log record to stderr as JSON (called in each server process)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # The MCP SDK logs every stateless request at INFO; its warnings and errors are what matter here.
    logging.getLogger("mcp").setLevel(logging.WARNING)


def uvicorn_log_config() -> dict[str, Any]:
    """uvicorn's own records through the same JSON handler; its access log is replaced by ours."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": JsonFormatter}},
        "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"}},
        "loggers": {
            "uvicorn": {"handlers": ["stderr"], "level": "INFO", "propagate": False},
            "uvicorn.access": {"handlers": [], "level": "WARNING", "propagate": False},
        },
    }
