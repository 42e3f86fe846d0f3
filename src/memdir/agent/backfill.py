"""Memory backfill: what earlier sessions saved, put into the context before the first request, so a
fresh process can answer from memory without the model calling a tool first.

In order, inside one block marked as memory from earlier sessions (not instructions from the user):

1. ``/memories/MEMORY.md`` if it exists and auto memory is on: its first 200 lines or 25 KB, whichever comes
   first (SPEC.md). With auto memory off the index is not loaded at all (nor as one of the files of (4)): off
   means off;
2. the state of long-running work, when there is some (`memdir.agent.longrun`): the progress log, the feature
   checklist and the scripts file, each whole (one over 5,000 tokens only as a reference line);
3. the listing of ``/memories``, exactly as the memory tool's ``view`` shows it;
4. the most recently modified other files, newest first, each whole, while they fit in the token budget
   (``backfill_tokens``, 2,000 by default; a file that does not fit is skipped for a smaller, older one).
   Images and files that are not UTF-8 text are left to the tool.

After a compaction the block is loaded again (`load_backfill` with ``files``): the same parts, but in place of
(4) the memory files this session touched most recently, up to 5, newest first, each whole or, over 5,000
tokens, as a reference line.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..automemory import INDEX, INDEX_MAX_BYTES, INDEX_MAX_LINES, cut_index
from ..errors import MemdirError, PathError
from ..paths import MemoryPath, parse
from . import prompts
from ._quoting import quoted
from .context import estimate_text
from .longrun import PINNED
from .transcript import Block, text_block

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..store import Entry
    from ..tool import MemoryTool

__all__ = ["INDEX_MAX_BYTES", "INDEX_MAX_LINES", "REREAD_FILES", "REREAD_TOKENS", "Backfill", "load_backfill"]

MAX_FILES_READ = 64  # bounds the work on a store with thousands of small files
REREAD_FILES = 5  # after a compaction: the most recently touched files read again...
REREAD_TOKENS = 5_000  # ...each whole up to this size, else a reference line (the same bound for pinned files)
_SKIP_SUFFIXES = (".png", ".jpg", ".jpeg")


@dataclass(frozen=True)
class Backfill:
    """The block to put first in the conversation, and what it holds: (name, tokens) per part."""

    text: str
    items: tuple[tuple[str, int], ...]

    @property
    def block(self) -> Block:
        return text_block(self.text)

    @property
    def tokens(self) -> int:
        return estimate_text(self.text)


def load_backfill(
    tool: MemoryTool, budget: int = 2_000, *, files: Sequence[str] | None = None, index: bool = True
) -> Backfill | None:
    """The backfill for the store behind ``tool`` (None when the memory directory is empty). ``files``: the
    memory paths to read again after a compaction, newest first (see the module docstring). ``index``: whether
    auto memory's index (MEMORY.md) is loaded."""
    entries = tool.store.list_files(MemoryPath.root())
    if not entries:
        return None
    sections: list[str] = []
    items: list[tuple[str, int]] = []
    by_path = {e.path: e for e in entries}
    found = by_path.get(INDEX) if index else None
    if found is not None:
        _add(sections, items, "MEMORY.md", _index_section(tool, found))
    for entry in (by_path[p] for p in PINNED if p in by_path):
        _add(sections, items, entry.path.name, _bounded_section(tool, entry))
    _add(sections, items, "the listing of /memories", "## Listing of /memories\n" + tool.listing(entries).text)
    chosen = _reread(tool, by_path, files) if files is not None else _recent_files(tool, entries, budget)
    for name, section in chosen:
        _add(sections, items, name, section)
    opening = prompts.BACKFILL_OPEN if files is None else prompts.BACKFILL_REOPEN
    text = "\n\n".join([opening, *sections, prompts.BACKFILL_CLOSE])
    return Backfill(text, tuple(items))


def _add(sections: list[str], items: list[tuple[str, int]], name: str, section: str | None) -> None:
    if section is not None:
        section = quoted(section)  # a note holding `</memory-backfill>` must not end the block (`_quoting`)
        sections.append(section)
        items.append((name, estimate_text(section)))


def _index_section(tool: MemoryTool, entry: Entry) -> str | None:
    text = _text(tool, entry)
    if text is None:
        return None
    cut = cut_index(text)
    note = "" if cut == text else f" (first {INDEX_MAX_LINES} lines or {INDEX_MAX_BYTES // 1024} KB)"
    return f"## /memories/MEMORY.md{note}\n{cut.rstrip()}"


def _bounded_section(tool: MemoryTool, entry: Entry) -> str | None:
    """A file whole, or over `REREAD_TOKENS` a reference line saying how to read it."""
    if (entry.size + 3) // 4 > REREAD_TOKENS:  # too big whatever its text: do not read it
        return _reference(entry, (entry.size + 3) // 4)
    text = _text(tool, entry)
    if text is None:
        return None
    tokens = estimate_text(text)
    if tokens > REREAD_TOKENS:
        return _reference(entry, tokens)
    return f"## {entry.path.virtual} (saved {_when(entry.modified)})\n{text.rstrip()}"


def _reference(entry: Entry, tokens: int) -> str:
    return (
        f"## {entry.path.virtual} (referenced file: about {tokens:,} tokens, too long to load here; view it with "
        "the memory tool when you need it)"
    )


def _reread(tool: MemoryTool, by_path: dict[MemoryPath, Entry], files: Sequence[str]) -> list[tuple[str, str]]:
    """The touched files that still exist (not the index or the pinned files, already loaded), up to
    `REREAD_FILES`, in the order given."""
    chosen: list[tuple[str, str]] = []
    for raw in files:
        try:
            path = parse(raw)
        except PathError:
            continue
        entry = by_path.get(path)
        if entry is None or path == INDEX or path in PINNED or path.name.lower().endswith(_SKIP_SUFFIXES):
            continue
        section = _bounded_section(tool, entry)
        if section is not None:
            chosen.append(("/".join(path.parts), section))
        if len(chosen) >= REREAD_FILES:
            break
    return chosen


def _recent_files(tool: MemoryTool, entries: list[Entry], budget: int) -> list[tuple[str, str]]:
    chosen: list[tuple[str, str]] = []
    remaining = budget
    candidates = sorted(
        (
            e
            for e in entries
            if e.path != INDEX and e.path not in PINNED and not e.path.name.lower().endswith(_SKIP_SUFFIXES)
        ),
        key=lambda e: (-e.modified, e.path.parts),
    )
    reads = 0
    for entry in candidates:
        if remaining < 16 or reads >= MAX_FILES_READ:
            break
        if (entry.size + 3) // 4 > remaining:  # tokens are at least bytes / 4: too big without reading it
            continue
        reads += 1
        text = _text(tool, entry)
        if text is None:
            continue
        section = f"## {entry.path.virtual} (saved {_when(entry.modified)})\n{text.rstrip()}"
        cost = estimate_text(section)
        if cost <= remaining:
            chosen.append(("/".join(entry.path.parts), section))
            remaining -= cost
    return chosen


def _text(tool: MemoryTool, entry: Entry) -> str | None:
    try:
        return tool.store.read(entry.path).content.decode("utf-8")
    except (UnicodeDecodeError, MemdirError):  # gone since the listing, unreadable, not text: the tool says why
        return None


def _when(timestamp: float) -> str:
    return dt.datetime.fromtimestamp(timestamp, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
