"""Where memdir keeps things when it is not told: the user data directory and the default store.

``MEMDIR_HOME`` moves everything memdir writes by default (tests point it at a temporary directory);
otherwise it is the platform's user data directory (``~/.local/share/memdir`` on Linux,
``~/Library/Application Support/memdir`` on macOS, ``%LOCALAPPDATA%\\memdir`` on Windows).
``MEMDIR_STORE`` names the store to use when no ``--store`` is given; without it the default store is one per
project (`memdir.project.resolve_store`: the git repository's, under the data directory).
"""

from __future__ import annotations

from ._home import data_dir

__all__ = ["data_dir", "default_store_url"]


def default_store_url() -> str:
    """``MEMDIR_STORE`` if set, else the project's default store (see `memdir.project`)."""
    from .project import resolve_store  # it reads the settings files: only when no store was named

    return resolve_store().url
