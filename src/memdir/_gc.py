"""Pausing the cyclic garbage collector around bulk work that creates many short-lived, acyclic objects."""

from __future__ import annotations

import contextlib
import gc
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["paused"]


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """Hold off cyclic collections for the duration of one bulk step (listing thousands of files).

    Every few hundred container allocations CPython runs a collection, and the older generations' cost grows
    with the whole heap of the embedding program, not with our work: a 10,000-file listing in a process that has
    loaded the Anthropic SDK spent half its time collecting. The objects made here (paths, stats, rows) hold no
    cycles, so nothing is lost by collecting once afterwards instead. A program that disabled the collector
    itself keeps it disabled.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
