"""The served store's namespaces, opened once and shared by every request (never one open per request).

A namespace's `Store` is opened on first use and kept; at most ``limit`` stay open (each holds database
connections, one per worker thread). The least recently used is closed when its last request has finished:
requests hold a lease, so a store is never closed under one.

Writes queue on an async lock per database before they take a worker thread: the database admits one writer at
a time anyway, and a writer that finds it busy otherwise sleeps in SQLite's busy handler (1, 2, 5... up to 100 ms
at a time), which under load left some writes waiting a second or more. Waiting on the lock costs no thread, so
reads go on in the meantime. Across worker processes, the one writer each then takes an ``flock`` on a file beside
the SQLite database (``<db>-memdir-writes``): the kernel hands it over the moment it is released.

Each namespace also keeps its `MemoryTool`s, one per (actor, session): a tool reads the policy settings when it
is made, and closing it flushes the audit records it buffered, which happens when the namespace is closed.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import fcntl
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from ..errors import NotFoundError
from ..policy.audit import audit_log
from ..store import open_store
from ..tool import MemoryTool

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    from ..store import Store

__all__ = ["Tenants"]


_TOOLS_PER_NAMESPACE = 256


@dataclass(slots=True)
class _Slot:
    store: Store
    leases: int = 0
    retired: bool = False
    tools: OrderedDict[tuple[str, str | None], MemoryTool] = field(default_factory=OrderedDict)

    def close(self) -> None:
        for tool in self.tools.values():
            tool.close()  # flushes the audit records it buffered
        # Reads recorded by the API's own endpoints (`memdir.server._audited`) wait in the store's shared buffer
        # even when no tool was made: flush them before the store's database goes.
        audit_log(self.store).close()
        self.store.close()


class Tenants:
    def __init__(
        self,
        url: str | None,
        limit: int = 64,
        tool_options: dict[str, Any] | None = None,
        urls: Mapping[str, str] | None = None,
    ) -> None:
        self.url = url
        self.limit = limit
        self.tool_options = tool_options or {}
        # When given, the namespaces served and the store each one is (one store per namespace); else every
        # namespace of ``url``.
        self.urls = urls
        # One SQLite file serves every namespace, so its writers share one lock; other stores lock per namespace.
        self._shared_writes = urls is None and (url or "").lower().startswith("sqlite:")
        self._write_locks: dict[str, anyio.Lock] = {}
        self._process_lock: int | None = None  # the flock file's descriptor (SQLite stores)
        self._open: OrderedDict[str, _Slot] = OrderedDict()
        self._lock = threading.Lock()
        self._closed = False

    @contextlib.contextmanager
    def lease(self, namespace: str) -> Iterator[Store]:
        """The store of ``namespace``, kept open while the ``with`` block runs."""
        slot = self._acquire(namespace)
        try:
            yield slot.store
        finally:
            self._release(slot)

    @contextlib.contextmanager
    def between_processes(self) -> Iterator[None]:
        """Held (in the worker thread) around a write to a SQLite store, so writers in several processes take
        turns without SQLite's sleeping busy handler. Other stores have their own cross-process locks."""
        if not self._shared_writes:
            yield
            return
        fd = self._lock_file()
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)

    def _lock_file(self) -> int:
        with self._lock:
            if self._process_lock is None:
                database = (self.url or "").split(":", 1)[1].removeprefix("//")
                # A file of its own: flock on it never touches the POSIX locks SQLite holds on the database.
                name = os.path.expanduser(database) + "-memdir-writes"
                self._process_lock = os.open(name, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
            return self._process_lock

    def write_lock(self, namespace: str) -> anyio.Lock:
        """The lock a write to ``namespace`` holds (taken in the event loop, before the worker thread)."""
        key = "" if self._shared_writes else namespace
        lock = self._write_locks.get(key)
        if lock is None:
            lock = self._write_locks[key] = anyio.Lock()
        return lock

    @contextlib.contextmanager
    def tool(self, namespace: str, actor: str, session: str | None, request: str | None = None) -> Iterator[MemoryTool]:
        """The memory tool of ``namespace`` acting as (``actor``, ``session``), kept open while the block runs;
        its changes carry the idempotency key ``request`` when one is given."""
        slot = self._acquire(namespace)
        try:
            tool = self._tool(slot, (actor, session))
            yield tool if request is None else _keyed(tool, request)
        finally:
            self._release(slot)

    def _tool(self, slot: _Slot, key: tuple[str, str | None]) -> MemoryTool:
        with self._lock:
            found = slot.tools.get(key)
            if found is not None:
                slot.tools.move_to_end(key)
                return found
        made = MemoryTool(slot.store, actor=key[0], session=key[1], **self.tool_options)
        with self._lock:
            tool = slot.tools.setdefault(key, made)
            stale = slot.tools.popitem(last=False)[1] if len(slot.tools) > _TOOLS_PER_NAMESPACE else None
        if tool is not made:
            made.close()
        if stale is not None:
            stale.close()
        return tool

    def _acquire(self, namespace: str) -> _Slot:
        with self._lock:
            if self._closed:
                raise RuntimeError("the server is shutting down")
            slot = self._open.get(namespace)
            if slot is None:
                # Opening under the lock: a first request per namespace pays once, and two never open it twice.
                slot = _Slot(self._open_store(namespace))
                self._open[namespace] = slot
                self._evict()
            self._open.move_to_end(namespace)
            slot.leases += 1
            return slot

    def _open_store(self, namespace: str) -> Store:
        if self.urls is None:
            return open_store(self.url, namespace=namespace)
        url = self.urls.get(namespace)
        if url is None:
            raise NotFoundError(f"this server has no namespace {namespace!r}")
        return open_store(url)

    def _release(self, slot: _Slot) -> None:
        with self._lock:
            slot.leases -= 1
            close = slot.retired and slot.leases == 0
        if close:
            slot.close()

    def _evict(self) -> None:
        while len(self._open) > self.limit:
            _, oldest = self._open.popitem(last=False)
            oldest.retired = True
            if oldest.leases == 0:
                oldest.close()

    def close(self) -> None:
        """Close every store (at shutdown, once requests have finished)."""
        with self._lock:
            self._closed = True
            slots = list(self._open.values())
            self._open.clear()
        for slot in slots:
            slot.close()
        if self._process_lock is not None:
            os.close(self._process_lock)
            self._process_lock = None


def _keyed(tool: MemoryTool, request: str) -> MemoryTool:
    """A twin of the shared ``tool`` whose changes record the idempotency key ``request``.

    The shared tool serves concurrent requests, so its origin must not change under them: the twin has its own
    guard (which holds the origin) and shares everything else (store, policy, audit buffer). It is dropped after
    the request, never closed: closing is the shared tool's (it flushes the shared audit buffer)."""
    twin = copy.copy(tool)
    twin.guard = copy.copy(tool.guard)
    twin.origin = dataclasses.replace(tool.origin, request=request)
    return twin
