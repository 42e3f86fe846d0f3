"""The user data directory memdir keeps its own files in (``MEMDIR_HOME`` moves it), in a module of its own:
the settings, the project's store and the log all need it, and it needs nothing of theirs."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

__all__ = ["data_dir"]


def data_dir() -> Path:
    home = os.environ.get("MEMDIR_HOME")
    if home:
        return Path(home).expanduser()
    return Path(platformdirs.user_data_dir("memdir", appauthor=False))
