"""Typed topic files: the YAML frontmatter of a note, read to check it and edited to keep ``modified:``.

A note is Markdown that opens with a frontmatter block::

    ---
    name: Testing preferences
    description: How the user wants tests run
    type: feedback
    modified: 2026-11-29T14:38:01Z
    ---

``type`` is one of `NOTE_TYPES`. The block is parsed with a YAML parser only to check it; it is never
re-serialised: ``modified:`` is kept up to date by editing that one line, so every other byte (key order,
quoting, comments, line endings) stays as the model wrote it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

__all__ = ["NOTE_TYPES", "Frontmatter", "read_frontmatter", "stamp_modified"]

NOTE_TYPES = ("user", "feedback", "project", "reference")
# libyaml's parser when PyYAML has it (its wheels do): the same safe YAML, ~9x faster on a frontmatter block, which
# `memdir claude-code status` reads for every note of every Claude Code memory directory.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_FENCES = ("---", "...")  # YAML ends a document with either
_MODIFIED = re.compile(r"modified[ \t]*:")


@dataclass(frozen=True)
class Frontmatter:
    """A note's frontmatter block: its fields (None when they could not be read, with ``error`` saying why),
    what is missing or wrong in them, and where the block ends (the index of the closing fence line)."""

    fields: dict[str, Any] | None
    error: str | None = None
    problems: tuple[str, ...] = ()
    closing_line: int = 0
    _lines: list[str] = field(default_factory=list, repr=False)

    def text(self, key: str) -> str | None:
        value = (self.fields or {}).get(key)
        return " ".join(value.split()) if isinstance(value, str) and value.strip() else None


def read_frontmatter(text: str) -> Frontmatter | None:
    """The frontmatter of ``text``, or None when it has none (it does not open with a ``---`` line)."""
    if not text.startswith("---"):
        return None  # most files: no need to split them into lines to see that
    lines = text.split("\n")
    if lines[0].rstrip() != "---":
        return None
    closing = next((i for i in range(1, len(lines)) if lines[i].rstrip() in _FENCES), None)
    if closing is None:
        return Frontmatter(None, "it opens with `---` on line 1 but no closing `---` line follows", _lines=lines)
    try:
        fields = yaml.load("\n".join(line.rstrip("\r") for line in lines[1:closing]), Loader=_LOADER)
    except yaml.YAMLError as exc:
        return Frontmatter(None, _yaml_error(exc), closing_line=closing, _lines=lines)
    if fields is None:
        fields = {}
    if not isinstance(fields, dict):
        return Frontmatter(None, "it is not a list of `key: value` lines", closing_line=closing, _lines=lines)
    return Frontmatter(fields, None, _problems(fields), closing, lines)


def _yaml_error(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or "not valid YAML"
    # The block starts on the file's line 2 (line 1 is the opening fence); YAML counts from 0.
    return f"line {mark.line + 2}: {problem}" if mark is not None else str(problem)


def _problems(fields: dict[str, Any]) -> tuple[str, ...]:
    found = [f"`{key}` is missing" for key in ("name", "description") if not _is_text(fields.get(key))]
    kind = fields.get("type")
    if kind is None:
        found.append(f"`type` is missing (one of {', '.join(NOTE_TYPES)})")
    elif kind not in NOTE_TYPES:
        found.append(f"`type` is {kind!r}, not one of {', '.join(NOTE_TYPES)}")
    return tuple(found)


def _is_text(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def stamp_modified(front: Frontmatter, when: str) -> tuple[str, tuple[int, int], int]:
    """The text with ``modified: {when}`` in the frontmatter (replacing the line, and any indented
    continuation of it, or added just before the closing fence), the span of the old text that changed,
    and the length of what replaced it."""
    lines = front._lines
    start, end = _modified_lines(lines, front.closing_line)
    # Keep the block's line endings: a file written with CRLF gets a CRLF line.
    ending = "\r" if lines[start if end > start else front.closing_line].endswith("\r") else ""
    new_line = f"modified: {when}{ending}"
    offset = sum(len(line) + 1 for line in lines[:start])
    old_length = sum(len(line) + 1 for line in lines[start:end])
    text = "\n".join([*lines[:start], new_line, *lines[end:]])
    return text, (offset, offset + old_length), len(new_line) + 1


def _modified_lines(lines: list[str], closing: int) -> tuple[int, int]:
    """The lines [start, end) holding the ``modified:`` key; an empty range before the fence when absent."""
    for i in range(1, closing):
        if _MODIFIED.match(lines[i]):
            end = i + 1
            while end < closing and lines[end][:1] in (" ", "\t"):
                end += 1
            return i, end
    return closing, closing
