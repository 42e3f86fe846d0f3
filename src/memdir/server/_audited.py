"""The audit log of what people do through the API (channel ``http``): the web page's reads and writes.

The memory tool records its own commands (channel ``tool``), and a quarantine approval its write (``review``).
The store API (``/v1/files``...) is the store contract that `RemoteStore` speaks: whoever runs the tool on top
of it records there. The endpoints made for a person — view, diff, edit, restore, reject — record here, so the
audit log answers "who read or changed this" for them too. As everywhere in the log, content is never recorded,
only its SHA-256 and size.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, TypeVar

from .._wire import code_for
from ..errors import MemdirError
from ..policy.audit import AuditEntry, audit_log
from ..store._records import sha256_hex

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..store import Store
    from ..store._records import Origin, Version

__all__ = ["CHANNEL", "record", "write"]

CHANNEL = "http"
V = TypeVar("V", bound="Version")


def record(
    store: Store,
    origin: Origin,
    command: str,
    path: str | None,
    *,
    content: bytes | None = None,
    version: Version | int | None = None,
    outcome: str = "ok",
    detail: str | None = None,
    channel: str = CHANNEL,
) -> None:
    """One entry: the content read (its hash and size), or the version written. Writes are flushed at once;
    reads wait in the log's buffer (flushed within a second, before anyone reads the log, and when the server
    closes the store), so a page view costs no transaction of its own."""
    sha256, size = (None, None) if content is None else (sha256_hex(content), len(content))
    number = version if isinstance(version, int) or version is None else version.version
    if version is not None and not isinstance(version, int):
        sha256, size = version.sha256, version.size
    entry = AuditEntry(
        time.time(), channel, origin.actor, origin.session, origin.source, command, path, None, outcome, sha256,
        size, number, detail,
    )  # fmt: skip
    audit_log(store).record(entry, flush=outcome != "ok" or command not in _READS)


_READS = frozenset({"view", "show", "diff"})


def write(store: Store, origin: Origin, command: str, path: str, change: Callable[[], V]) -> V:
    """Run ``change`` (one write) and record it, or record its refusal (the error's code) and re-raise: a
    conflicting edit is worth knowing about too."""
    try:
        version = change()
    except MemdirError as exc:
        record(store, origin, command, path, outcome="error", detail=code_for(exc))
        raise
    record(store, origin, command, version.path.virtual, version=version)
    return version
