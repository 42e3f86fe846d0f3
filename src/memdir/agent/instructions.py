"""The project's instructions file: ``MEMDIR.md`` at the project root, and ``AGENTS.md`` / ``CLAUDE.md`` when
present (the files other agents read, so one project needs to write its rules once).

Each file is loaded whole at the start of a session, and read again from disk after every compaction (a summary
may lose what a rule said; the file does not). A ``## Compact Instructions`` section (any heading level 1-3,
any case) steers compaction: its text is added to the client-side summary request and sent as the
``instructions`` of the API's ``compact_20260112`` edit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import prompts
from ._quoting import fill
from .context import estimate_text
from .transcript import Block, text_block

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["INSTRUCTION_FILES", "Instructions", "compact_section", "load_instructions"]

INSTRUCTION_FILES = ("MEMDIR.md", "AGENTS.md", "CLAUDE.md")
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t#]*$")


@dataclass(frozen=True)
class Instructions:
    """The instruction files found at the project root: (name, path, text) each, in `INSTRUCTION_FILES` order."""

    files: tuple[tuple[str, Path, str], ...]

    @property
    def blocks(self) -> list[Block]:
        return [
            text_block(fill(prompts.INSTRUCTIONS_BLOCK, name=name, path=str(path), text=text.rstrip()))
            for name, path, text in self.files
        ]

    @property
    def items(self) -> list[tuple[str, int]]:
        """(name, tokens) per file, for progress lines."""
        return [(name, estimate_text(text)) for name, _path, text in self.files]

    @property
    def compact_instructions(self) -> str | None:
        found = [section for _name, _path, text in self.files if (section := compact_section(text))]
        return "\n\n".join(found) or None


def load_instructions(root: Path) -> Instructions | None:
    """The instruction files at ``root`` (None when there are none). A file that cannot be read as UTF-8
    text is skipped: it is the project's file, and a session must still start."""
    files = []
    for name in INSTRUCTION_FILES:
        path = root / name
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if text.strip():
            files.append((name, path, text))
    return Instructions(tuple(files)) if files else None


def compact_section(text: str) -> str | None:
    """The body of the ``Compact Instructions`` section of ``text``: up to the next heading of the same level
    or above (None when there is none, or it is empty)."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        match = _HEADING.match(line)
        if match and len(match.group(1)) <= 3 and match.group(2).strip().lower() == "compact instructions":
            level = len(match.group(1))
            body = []
            for rest in lines[i + 1 :]:
                heading = _HEADING.match(rest)
                if heading and len(heading.group(1)) <= level:
                    break
                body.append(rest)
            return "\n".join(body).strip() or None
    return None
