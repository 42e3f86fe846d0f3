"""One object per database file in this process: made on first use, forgotten in a forked child.

The SQLite writer locks (`memdir.store._db`) and the background checkpoints (`memdir.store._checkpoint`) are kept
per file, by its real path, whichever `SqlDatabase` objects are open on it (a store's index and its auxiliary
database share one file). A fork copies none of the parent's threads, so a lock one of them held, or a checkpoint
one of them ran, would never be let go in the child: the child starts with none.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["PerFile"]

T = TypeVar("T")


class PerFile(Generic[T]):
    """``make(path)``'s object for each database file (its real path), one per process."""

    def __init__(self, make: Callable[[str], T]) -> None:
        self._make = make
        self._items: dict[str, T] = {}
        self._lock = threading.Lock()
        if hasattr(os, "register_at_fork"):  # POSIX
            os.register_at_fork(after_in_child=self._forget)

    def __getitem__(self, path: str) -> T:
        item = self._items.get(path)
        if item is None:
            with self._lock:
                item = self._items.setdefault(path, self._make(path))
        return item

    def get(self, path: str) -> T | None:
        """The file's object if one was made (nothing is made here)."""
        return self._items.get(path)

    def _forget(self) -> None:
        self._lock = threading.Lock()  # the parent's thread may have held it at the fork
        self._items = {}
