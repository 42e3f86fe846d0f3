"""Whether a store URL names a store that is already there, per backend, without creating anything.

`memdir.open_store(url, create=False)` asks this first, so that a typo in a store URL given to a reading command
(``memdir --store sqlite:///nonexistent/x.db ls``) is an error naming the URL rather than a new, empty store:

- a directory store exists when the directory holds memdir's layout: ``memories/`` (the SDK helper's layout,
  the default namespace), ``namespaces/`` or the ``.memdir`` sidecar. An existing directory without any of them
  (``--store ~`` by mistake) is not a store, and opening it for reading must not fill it with memdir's folders;
- a SQLite store exists when its file does;
- a PostgreSQL store exists when the database holds memdir's tables (a database without them is reachable, but
  opening it would create them);
- ``memory:`` stores live in the process and remote stores on their server: both always exist here.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..errors import storage_error_from_os

__all__ = ["directory_exists", "postgres_exists", "sqlite_exists"]

# What only memdir puts in a directory store's base directory (see `memdir.store.directory`).
_DIRECTORY_MARKERS = ("memories", "namespaces", ".memdir")


def directory_exists(path: str) -> bool:
    base = Path(path).expanduser()
    # Anything under one of those names counts, a link or a file too: opening then reports what is wrong with it.
    return any(_stat(base / name) is not None for name in _DIRECTORY_MARKERS)


def sqlite_exists(path: str) -> bool:
    found = _stat(Path(path).expanduser(), follow=True)
    return found is not None and stat.S_ISREG(found.st_mode)


def _stat(path: Path, *, follow: bool = False) -> os.stat_result | None:
    """None when nothing is there. A directory that may not be read is not the same as no store (`StorageError`,
    "permission denied", as opening it would say): `os.path.lexists` and `Path.is_file` would answer False."""
    try:
        return os.stat(path, follow_symlinks=follow)
    except (FileNotFoundError, NotADirectoryError, ValueError):  # ValueError: a NUL in the path names nothing
        return None
    except OSError as exc:
        raise storage_error_from_os(exc, "open the store") from exc


def postgres_exists(url: str) -> bool:
    """True when the database holds memdir's tables. A server that cannot be reached, or a wrong login, raises
    the store's own `StorageError` here (as opening it would)."""
    import psycopg  # loads only when PostgreSQL is used

    from ._pg import _connect_defaults, split_url, translate

    dsn, _options = split_url(url)
    try:
        with psycopg.connect(dsn, autocommit=True, **_connect_defaults(dsn)) as conn:
            row = conn.execute("SELECT to_regclass('memdir_versions') IS NOT NULL").fetchone()
    except psycopg.Error as exc:
        raise translate(exc, "open the store") from exc
    return bool(row and row[0])
