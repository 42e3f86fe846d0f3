"""Stores: one small contract (`Store`), backends chosen by URL through `open_store`.

==========================  ===================================================================
URL                         backend
==========================  ===================================================================
``PATH`` / ``file:PATH``    `DirectoryStore`: plain Markdown files, history in a hidden sidecar
``sqlite:PATH``             `SQLiteStore`: one database file (``sqlite:///abs/path.db``)
``memory:`` / ``memory:N``  `MemoryStore`: in this process only (``N`` shares one by name)
``http://`` / ``https://``  `RemoteStore`: a namespace on a memdir server (``memdir serve``), by token
``postgresql://``           `PostgresStore`: a namespace in a PostgreSQL database shared by many servers
                            (``postgres://`` too; needs the ``memdir[postgres]`` extra)
``claude-code:``            a Claude Code memory directory, in place (`memdir.claudecode`)
==========================  ===================================================================

A backend is a `Store` subclass plus an opener registered for a URL scheme with `register_backend`, and a
check of whether a URL names a store that is already there (`store_exists`; ``open_store(url, create=False)``
refuses a URL that names none with `StoreNotFoundError` instead of creating one).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..config import default_store_url
from ..errors import ConfigError, StoreNotFoundError
from ._base import Store
from ._exists import directory_exists, postgres_exists, sqlite_exists
from ._records import (
    ANY,
    DEFAULT_NAMESPACE,
    MISSING,
    Entry,
    Expect,
    FileData,
    Op,
    Origin,
    Quota,
    Stat,
    Usage,
    Version,
    check_namespace,
)
from ._urls import redact_url
from .directory import DirectoryStore
from .memory import MemoryStore
from .sqlite import SQLiteStore

__all__ = [
    "ANY",
    "DEFAULT_NAMESPACE",
    "MISSING",
    "DirectoryStore",
    "Entry",
    "Expect",
    "FileData",
    "MemoryStore",
    "Op",
    "Origin",
    "Quota",
    "SQLiteStore",
    "Stat",
    "Store",
    "Usage",
    "Version",
    "check_url",
    "open_store",
    "redact_url",
    "register_backend",
    "store_exists",
    "url_scheme",
]

Opener = Callable[..., Store]
Exists = Callable[[str], bool]
_BACKENDS: dict[str, Opener] = {}
_EXISTS: dict[str, Exists] = {}


def register_backend(scheme: str, opener: Opener, exists: Exists | None = None) -> None:
    """Make ``scheme:...`` URLs open with ``opener(url, namespace=..., **options)``. ``exists(url)`` says whether
    a store is already there (without it, every URL of the scheme counts as one: nothing to create)."""
    _BACKENDS[scheme.lower()] = opener
    _EXISTS[scheme.lower()] = exists or (lambda _url: True)


def _after_scheme(url: str) -> str:
    rest = url.split(":", 1)[1]
    return rest[2:] if rest.startswith("//") else rest


def _open_memory(url: str, *, namespace: str, **options: Any) -> Store:
    _no_options("memory", options)
    name = _after_scheme(url)
    return MemoryStore(namespace=namespace, name=name or None)


def _sqlite_path(url: str) -> str:
    path = _after_scheme(url)
    if not path:
        raise ConfigError("a sqlite: URL needs a file path, e.g. sqlite:///home/me/memory.db")
    return path


def _open_sqlite(url: str, *, namespace: str, **options: Any) -> Store:
    _no_options("sqlite", options)
    return SQLiteStore(Path(_sqlite_path(url)).expanduser(), namespace=namespace)


def _directory_path(url: str) -> str:
    path = _after_scheme(url) if url.lower().startswith("file:") else url
    if not path:
        raise ConfigError("a file: URL needs a directory path, e.g. file:///home/me/memory")
    return path


def _open_directory(url: str, *, namespace: str, **options: Any) -> Store:
    return DirectoryStore(Path(_directory_path(url)).expanduser(), namespace=namespace, **options)


def _open_remote(url: str, *, namespace: str, **options: Any) -> Store:
    from .remote import RemoteStore  # httpx loads only when a server is used

    return RemoteStore(url, namespace=namespace, **options)


def _open_postgres(url: str, *, namespace: str, **options: Any) -> Store:
    _no_options("postgresql", options)  # pool settings go in the URL's query (?pool_max=20), like libpq's own
    try:
        from .postgres import PostgresStore  # psycopg loads only when PostgreSQL is used
    except ImportError as exc:
        raise ConfigError("postgresql: stores need psycopg: pip install 'memdir[postgres]'") from exc
    return PostgresStore(url, namespace=namespace)


def _open_claude_code(url: str, *, namespace: str, **options: Any) -> Store:
    from ..claudecode import open_url  # reads Claude Code's settings: loaded only for claude-code: URLs

    return open_url(url, namespace=namespace, **options)


def _no_options(scheme: str, options: dict[str, Any]) -> None:
    if options:
        raise ConfigError(f"{scheme}: stores take no options (got {', '.join(sorted(options))})")


def _check_remote(url: str) -> None:
    from .remote import check_server_url  # httpx loads only when a server is used

    check_server_url(url)


def _postgres_exists(url: str) -> bool:
    try:
        return postgres_exists(url)
    except ImportError as exc:
        raise ConfigError("postgresql: stores need psycopg: pip install 'memdir[postgres]'") from exc


register_backend("memory", _open_memory)
register_backend("sqlite", _open_sqlite, lambda url: sqlite_exists(_sqlite_path(url)))
register_backend("file", _open_directory, lambda url: directory_exists(_directory_path(url)))
register_backend("http", _open_remote)
register_backend("https", _open_remote)
register_backend("postgresql", _open_postgres, _postgres_exists)
register_backend("postgres", _open_postgres, _postgres_exists)
register_backend("claude-code", _open_claude_code)

# What each built-in scheme's URL needs before anything is opened (see `check_url`).
_CHECKS: dict[str, Callable[[str], object]] = {
    "sqlite": _sqlite_path,
    "file": _directory_path,
    "http": _check_remote,
    "https": _check_remote,
}


def open_store(
    url: str | None = None, *, namespace: str = DEFAULT_NAMESPACE, create: bool = True, **options: Any
) -> Store:
    """Open the store a URL names (the default store when ``url`` is None); see the table above.

    ``namespace`` selects a tenant: each namespace has its own ``/memories`` and nothing in one is
    reachable from another. ``create=False`` opens only a store that is already there (`store_exists`):
    otherwise it raises `StoreNotFoundError` and creates nothing, which is what a program that only reads wants
    (a mistyped URL is an error, not a new empty store).
    """
    check_namespace(namespace)
    target = url if url is not None else default_store_url()
    scheme = url_scheme(target)
    if not create and not store_exists(target):
        raise StoreNotFoundError(redact_url(target))
    if scheme is None:
        return _open_directory(target, namespace=namespace, **options)
    return _BACKENDS[scheme](target, namespace=namespace, **options)


def store_exists(url: str | None = None) -> bool:
    """Whether ``url`` (the default store when None) names a store that is already there; creates nothing.

    A directory store is there when its directory holds memdir's layout (``memories/``, ``namespaces/`` or the
    ``.memdir`` sidecar), a SQLite store when its file exists, a PostgreSQL store when the database holds memdir's
    tables; ``memory:`` and remote (``http(s)://``) stores always are. `ConfigError` for an unusable URL."""
    target = url if url is not None else default_store_url()
    scheme = url_scheme(target)
    if scheme is None:
        return directory_exists(_directory_path(target))
    return _EXISTS[scheme](target)


def check_url(url: str) -> None:
    """`ConfigError` for a URL no backend can open: an empty one, an unknown scheme, a ``sqlite:`` or ``file:``
    URL without a path, a server URL that does not parse. Opens, reaches and creates nothing: what a command
    checks before it acts on a URL, so that ``memdir where`` and ``memdir ls`` judge a URL alike."""
    check = _CHECKS.get(url_scheme(url) or "file")
    if check is not None:
        check(url)


def url_scheme(url: str) -> str | None:
    """The registered scheme ``url`` names, or None for a plain directory path. Opens nothing: `ConfigError` for
    an empty URL or a scheme no backend is registered for (so a caller can check a URL before acting on it)."""
    if not url:
        raise ConfigError("empty store URL")
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    # A one-letter "scheme" is a Windows drive (C:\...), and a plain path has none: both are directories.
    if len(scheme) <= 1 or "/" in scheme or "\\" in scheme:
        return None
    if scheme not in _BACKENDS:
        known = ", ".join(sorted(f"{s}:" for s in _BACKENDS))
        raise ConfigError(f"unknown store URL scheme {scheme!r}: use a directory path or one of {known}")
    return scheme
