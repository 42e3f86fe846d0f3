"""Whether auto memory is on: the ``[memory]`` settings, and ``MEMDIR_DISABLE_AUTO_MEMORY`` over them.

Auto memory is on by default. ``auto_memory = false`` in the ``[memory]`` table of either settings file turns it
off (the project's file wins over the user's); ``index_upkeep = false`` keeps the rest but leaves MEMORY.md's
lines to the model. The environment wins over both files, either way: ``MEMDIR_DISABLE_AUTO_MEMORY=1`` turns
auto memory off whatever they say, ``MEMDIR_DISABLE_AUTO_MEMORY=0`` turns it on.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..settings import Settings, load_settings, memory_table

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

__all__ = ["ENV", "AutoMemoryConfig", "env_switch", "load_auto_memory"]

ENV = "MEMDIR_DISABLE_AUTO_MEMORY"
_ON = ("0", "false", "no", "off")


@dataclass(frozen=True)
class AutoMemoryConfig:
    """Auto memory's switches. ``clock`` gives the time written into ``modified:`` (tests pass their own)."""

    enabled: bool = True
    index_upkeep: bool = True
    clock: Callable[[], float] = field(default=time.time, compare=False, repr=False)


def env_switch(environ: Mapping[str, str] | None = None) -> bool | None:
    """What the environment says: False (disabled), True (``=0``/``false``/``no``/``off``: enabled), None (unset)."""
    raw = (os.environ if environ is None else environ).get(ENV, "").strip().lower()
    if not raw:
        return None
    return raw in _ON


def load_auto_memory(settings: Settings | None = None, environ: Mapping[str, str] | None = None) -> AutoMemoryConfig:
    """The switches from the settings files and the environment (see the module docstring)."""
    files = settings if settings is not None else load_settings()
    merged = {**memory_table(files.user, files.user_path), **memory_table(files.project, files.project_path)}
    enabled = bool(merged.get("auto_memory", True))
    forced = env_switch(environ)
    return AutoMemoryConfig(
        enabled=enabled if forced is None else forced,
        index_upkeep=bool(merged.get("index_upkeep", True)),
    )
