"""The served store's namespaces, opened once and shared by every request (never one open per request).

A namespace's `Store` is opened on first use and kept; at most ``limit`` stay open (each holds database
connections, one per worker thread). The least recently used is closed when its last request has finished:
requests hold a lease, so a store is never closed under one.

Writes queue on an async lock per database before they take a worker thread: the database admits one writer at
a time anyway, and a writer that finds it busy otherwise sleeps in SQLite's busy handler (1, 2, 5... up to 100 ms
at a time), which under load left some writes waiting a second or more. Waiting on the lock costs no thread, so
reads go on in the meantime. Across worker processes, the one writer each then takes an ``flock`` on a file beside
the SQLite database (``<db>-memdir-writes``): the kernel hands it over the moment it is released.

Each namespace also keeps its gate's rules (`memdir.gate.Rules`: the ``[policy]`` settings of *this* process for
the namespace, and the server's limits), read once when the namespace is opened: every request reaches its store
through a `GatedStore` for its own caller under those rules (`gated`), and the memory tool runs over that gate
(`tool`). Nothing a client sends can choose the rules. The audit records the gates buffer are flushed when the
namespace is closed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from ..automemory import load_auto_memory
from ..errors import NotFoundError
from ..gate import GatedStore, Rules
from ..policy.audit import audit_log
from ..policy.limits import Limits
from ..store import open_store
from ..tool import MemoryTool

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    from ..automemory import AutoMemoryConfig
    from ..gate import Caller
    from ..store import Store

__all__ = ["Tenants"]


_LIMITS = frozenset(field.name for field in dataclasses.fields(Limits))


@dataclass(slots=True)
class _Slot:
    store: Store
    rules: Rules
    auto_memory: AutoMemoryConfig
    leases: int = 0
    retired: bool = False

    def close(self) -> None:
        # What the namespace's gates recorded waits in the store's shared audit buffer: flush it before the
        # store's database goes.
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
        options = tool_options or {}
        # Limits given here win over the settings' [limits], one by one (checked now: a typo must not pass).
        self.limit_options = {k: v for k, v in options.items() if k in _LIMITS}
        Limits.from_options(self.limit_options)
        self.create_overwrites = bool(options.get("create_overwrites", False))
        unknown = sorted(set(options) - _LIMITS - {"create_overwrites"})
        if unknown:
            raise TypeError(f"unknown memory tool option(s): {', '.join(unknown)}")
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
        """The store of ``namespace`` itself, below the gate, kept open while the ``with`` block runs (for what
        is the server's own business: a namespace's MCP server holds its store open this way)."""
        with self._slot(namespace) as slot:
            yield slot.store

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
    def gated(self, namespace: str, caller: Caller) -> Iterator[GatedStore]:
        """The store of ``namespace`` behind its gate, for ``caller``, kept open while the block runs."""
        with self._slot(namespace) as slot:
            yield GatedStore(slot.store, caller, slot.rules)

    @contextlib.contextmanager
    def tool(self, namespace: str, caller: Caller, *, overwrite: bool = False) -> Iterator[MemoryTool]:
        """The memory tool of ``namespace`` over its gate, acting as ``caller``, kept open while the block runs;
        ``overwrite`` lets its ``create`` replace a file (the client's choice of command, as for the SDK's
        ``write_memory``: no safety setting)."""
        with self._slot(namespace) as slot:
            gate = GatedStore(slot.store, caller, slot.rules)
            overwrites = overwrite or self.create_overwrites
            yield MemoryTool(gate, create_overwrites=overwrites, auto_memory=slot.auto_memory, channel=caller.channel)

    @contextlib.contextmanager
    def _slot(self, namespace: str) -> Iterator[_Slot]:
        slot = self._acquire(namespace)
        try:
            yield slot
        finally:
            self._release(slot)

    def _acquire(self, namespace: str) -> _Slot:
        with self._lock:
            if self._closed:
                raise RuntimeError("the server is shutting down")
            slot = self._open.get(namespace)
            if slot is None:
                # Opening under the lock: a first request per namespace pays once, and two never open it twice.
                slot = self._open_slot(namespace)
                self._open[namespace] = slot
                self._evict()
            self._open.move_to_end(namespace)
            slot.leases += 1
            return slot

    def _open_slot(self, namespace: str) -> _Slot:
        store = self._open_store(namespace)
        try:
            rules = Rules.for_namespace(namespace)  # this process's settings, never a client's
            if self.limit_options:
                rules = dataclasses.replace(rules, limits=dataclasses.replace(rules.limits, **self.limit_options))
            return _Slot(store, rules, load_auto_memory())
        except BaseException:
            store.close()
            raise

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
