"""Auto memory: the memory directory kept the way Claude Code keeps its own (seed 003), by the memory tool.

- **The index.** ``/memories/MEMORY.md`` holds one short line per note. A session loads only its first 200
  lines or 25 KB; a write that brings it past 180 lines or 22 KB gets a note to tighten it, and one past the
  limit is saved but answered with an error saying the tail will be dropped at the next load.
- **Typed topic files.** A note is Markdown with YAML frontmatter (``name``, ``description``, ``type``: one of
  `NOTE_TYPES`). Every write through the tool sets ``modified:`` to the write time (ISO 8601, UTC), editing that
  one line; a frontmatter that cannot be read is reported to the model, never rewritten. A ``.md`` file without
  frontmatter is a plain file and is left alone.
- **Index upkeep.** Creating a note adds its line to MEMORY.md; renaming or deleting a file moves or removes
  the lines that point at it. Every other line is kept as the model wrote it.

This is memory-tool behaviour, so it applies wherever the tool runs (the agent, MCP, HTTP): `memdir.MemoryTool`
takes ``auto_memory=`` (a bool or an `AutoMemoryConfig`; by default `load_auto_memory` reads the ``[memory]``
settings and ``MEMDIR_DISABLE_AUTO_MEMORY``).
"""

from __future__ import annotations

from ._core import INDEX_SOURCE, AutoMemory
from ._frontmatter import NOTE_TYPES, Frontmatter, read_frontmatter
from ._index import INDEX, INDEX_MAX_BYTES, INDEX_MAX_LINES, NEAR_BYTES, NEAR_LINES, cut_index, size_report
from ._switch import ENV, AutoMemoryConfig, env_switch, load_auto_memory

__all__ = [
    "ENV",
    "INDEX",
    "INDEX_MAX_BYTES",
    "INDEX_MAX_LINES",
    "INDEX_SOURCE",
    "NEAR_BYTES",
    "NEAR_LINES",
    "NOTE_TYPES",
    "AutoMemory",
    "AutoMemoryConfig",
    "Frontmatter",
    "cut_index",
    "env_switch",
    "load_auto_memory",
    "read_frontmatter",
    "size_report",
]
