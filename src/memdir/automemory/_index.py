"""``/memories/MEMORY.md``, the index of the memory directory: its load limit, and the lines that point at
topic files.

Only the first 200 lines or 25 KB of the index (whichever comes first) is loaded when a session starts
(SPEC.md, "Limits"); `size_report` says when a write brings it near that limit or past it.

Index upkeep edits single lines and nothing else: a line *points at* a file when it names the file's path
relative to ``/memories`` (``user_role.md``, ``notes/x.md``; also written ``/memories/notes/x.md`` or
``./x.md``), inside a Markdown link or bare. `add_entry` appends one line for a new topic file, `move_pointers`
rewrites the paths in lines that point at a renamed file (the rest of each line stays as written), and
`remove_entries` drops the lines that point only at deleted files. Every other line is the model's own and is
kept byte for byte.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._format import human_size, split_lines
from ..paths import MemoryPath

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "INDEX",
    "INDEX_MAX_BYTES",
    "INDEX_MAX_LINES",
    "NEAR_BYTES",
    "NEAR_LINES",
    "SizeReport",
    "add_entry",
    "cut_index",
    "entry_line",
    "move_pointers",
    "points_at",
    "remove_entries",
    "size_report",
]

INDEX = MemoryPath(("MEMORY.md",))
INDEX_MAX_LINES = 200
INDEX_MAX_BYTES = 25 * 1024
NEAR_LINES = 180  # past these the model is told to tighten the index while it still loads whole
NEAR_BYTES = 22 * 1024
MAX_DESCRIPTION = 150  # characters of a note's description copied into its index line

# A path to a Markdown file relative to /memories, as a whole token: not part of a longer name or path.
_POINTER = re.compile(r"(?<![\w./-])(?:/memories/|\./)?((?:\w[\w.-]*/)*\w[\w.-]*\.md)(?![\w/-]|\.\w)")


def cut_index(text: str) -> str:
    """The part of ``text`` a session loads: the first 200 lines or 25 KB, whichever is shorter, ending on a
    whole line (or a whole character, for one overlong line). Lines end at LF only, as Claude Code and
    `split_lines` count them: str.splitlines also breaks at CR, U+2028, form feeds..., and so cut a short index
    short."""
    pieces = text.split("\n")
    lines = [piece + "\n" for piece in pieces[:-1]] + ([pieces[-1]] if pieces[-1] else [])
    kept: list[str] = []
    size = 0
    for line in lines[:INDEX_MAX_LINES]:
        size += len(line.encode("utf-8"))
        if size > INDEX_MAX_BYTES:
            if not kept:
                kept.append(line.encode("utf-8")[:INDEX_MAX_BYTES].decode("utf-8", "ignore"))
            break
        kept.append(line)
    return "".join(kept)


@dataclass(frozen=True)
class SizeReport:
    """What the model is told about the index's size after a write: a note, or an error past the limit."""

    text: str
    over: bool


def size_report(text: str) -> SizeReport | None:
    """None while the index is comfortably within the load limit."""
    lines, size = len(split_lines(text)), len(text.encode("utf-8"))
    shown = f"{lines:,} lines and {human_size(size)}"
    if lines > INDEX_MAX_LINES or size > INDEX_MAX_BYTES:
        kept = len(split_lines(cut_index(text)))
        return SizeReport(
            f"Error: /memories/MEMORY.md is now {shown}, over the limit of {INDEX_MAX_LINES} lines or "
            f"{INDEX_MAX_BYTES // 1024} KB that a new session loads. The write was saved, but everything after "
            f"line {kept:,} will be dropped at the next load. Rewrite the index now: one short line per topic "
            "file, details moved into the topic files.",
            over=True,
        )
    if lines > NEAR_LINES or size > NEAR_BYTES:
        return SizeReport(
            f"Note: /memories/MEMORY.md is now {shown}, near the limit of {INDEX_MAX_LINES} lines or "
            f"{INDEX_MAX_BYTES // 1024} KB that a new session loads (the rest is dropped). Tighten it: one short "
            "line per topic file, details in the topic files, stale lines removed.",
            over=False,
        )
    return None


def entry_line(path: MemoryPath, name: str, description: str | None) -> str:
    """``- [name](rel/path.md) — description``: the line a new topic file gets."""
    hook = description or ""
    if len(hook) > MAX_DESCRIPTION:
        hook = hook[: MAX_DESCRIPTION - 1].rstrip() + "…"
    title = name.replace("[", "(").replace("]", ")")
    return f"- [{title}]({_relative(path)})" + (f" — {hook}" if hook else "")


def points_at(text: str, path: MemoryPath) -> bool:
    """Whether any line of the index names ``path``."""
    target = _relative(path)
    return any(match.group(1) == target for match in _POINTER.finditer(text))


def add_entry(text: str, line: str) -> str:
    """``text`` with ``line`` appended as its last line."""
    if text and not text.endswith("\n"):
        text += "\n"
    return f"{text}{line}\n"


def move_pointers(text: str, old: MemoryPath, new: MemoryPath) -> str | None:
    """``text`` with every pointer at ``old`` (or below it, for a directory) now pointing at ``new``;
    None when no line pointed there."""
    rename = _under(old)
    changed = False

    def replace(match: re.Match[str]) -> str:
        nonlocal changed
        rest = rename(match.group(1))
        if rest is None:
            return match.group(0)
        changed = True
        moved = _relative(new) + rest
        return match.group(0)[: match.start(1) - match.start(0)] + moved

    result = _POINTER.sub(replace, text)
    return result if changed else None


def remove_entries(text: str, gone: MemoryPath) -> str | None:
    """``text`` without the lines that point only at ``gone`` (or at files below it); None when there are
    none. A line that also points elsewhere is the model's own summary and stays."""
    inside = _under(gone)
    kept = [
        line
        for line in text.split("\n")
        if not (pointers := [m.group(1) for m in _POINTER.finditer(line)])
        or not all(inside(p) is not None for p in pointers)
    ]
    result = "\n".join(kept)
    return result if result != text else None


def _relative(path: MemoryPath) -> str:
    return "/".join(path.parts)


def _under(root: MemoryPath) -> Callable[[str], str | None]:
    """For a pointer: what follows ``root`` in it ("" for ``root`` itself), or None when it lies elsewhere."""
    prefix = _relative(root)

    def rest(pointer: str) -> str | None:
        if pointer == prefix:
            return ""
        return pointer[len(prefix) :] if pointer.startswith(prefix + "/") else None

    return rest
