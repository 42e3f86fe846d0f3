"""Diffs for people: two texts as side-by-side rows (what the web page draws) and as a unified diff.

A row pairs a line of the old text with a line of the new one: ``{"op": "equal"|"replace"|"delete"|"insert",
"old": [n, text] | null, "new": [n, text] | null}``; a long run of unchanged lines becomes one
``{"op": "skip", "count": N}`` row. Content that is not UTF-8 is compared whole (``binary``), and very large
texts are not compared line by line at all (``too_large``): difflib's matching grows faster than linearly, and
a diff is something one person reads.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from .._matching import line_opcodes

__all__ = ["MAX_DIFF_BYTES", "Diff", "diff", "text_of"]

MAX_DIFF_BYTES = 2 * 1024 * 1024  # both sides together
CONTEXT = 3  # unchanged lines kept around each change


@dataclass(frozen=True, slots=True)
class Diff:
    identical: bool
    binary: bool = False
    too_large: bool = False
    added: int = 0
    removed: int = 0
    rows: list[dict[str, Any]] = field(default_factory=list)
    unified: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "identical": self.identical,
            "binary": self.binary,
            "too_large": self.too_large,
            "added": self.added,
            "removed": self.removed,
            "rows": self.rows,
            "unified": self.unified,
        }


def text_of(content: bytes) -> str | None:
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        return None


def diff(old: bytes, new: bytes, old_label: str, new_label: str, *, context: int = CONTEXT) -> Diff:
    if old == new:
        return Diff(identical=True)
    old_text, new_text = text_of(old), text_of(new)
    if old_text is None or new_text is None:
        return Diff(identical=False, binary=True)
    if len(old) + len(new) > MAX_DIFF_BYTES:
        return Diff(identical=False, too_large=True)
    a, b = old_text.splitlines(), new_text.splitlines()
    opcodes = line_opcodes(a, b)
    rows = _collapse([row for opcode in opcodes for row in _rows(opcode, a, b)], context)
    added = sum(j2 - j1 for tag, _, _, j1, j2 in opcodes if tag in ("insert", "replace"))
    removed = sum(i2 - i1 for tag, i1, i2, _, _ in opcodes if tag in ("delete", "replace"))
    unified = [line.rstrip("\n") for line in difflib.unified_diff(a, b, old_label, new_label, lineterm="", n=context)]
    return Diff(identical=False, added=added, removed=removed, rows=rows, unified=unified)


def _rows(opcode: tuple[str, int, int, int, int], a: list[str], b: list[str]) -> list[dict[str, Any]]:
    tag, i1, i2, j1, j2 = opcode
    if tag == "equal":
        return [_row("equal", i, a, j, b) for i, j in zip(range(i1, i2), range(j1, j2), strict=True)]
    if tag == "delete":
        return [_row("delete", i, a, None, b) for i in range(i1, i2)]
    if tag == "insert":
        return [_row("insert", None, a, j, b) for j in range(j1, j2)]
    # A replaced block pairs its lines side by side; the longer side's extra lines stand alone.
    paired = min(i2 - i1, j2 - j1)
    rows = [_row("replace", i1 + k, a, j1 + k, b) for k in range(paired)]
    rows += [_row("delete", i, a, None, b) for i in range(i1 + paired, i2)]
    rows += [_row("insert", None, a, j, b) for j in range(j1 + paired, j2)]
    return rows


def _row(op: str, i: int | None, a: list[str], j: int | None, b: list[str]) -> dict[str, Any]:
    return {
        "op": op,
        "old": None if i is None else [i + 1, a[i]],
        "new": None if j is None else [j + 1, b[j]],
    }


def _collapse(rows: list[dict[str, Any]], context: int) -> list[dict[str, Any]]:
    """Replace each run of unchanged lines longer than the context around it by a ``skip`` row."""
    out: list[dict[str, Any]] = []
    start = 0
    while start < len(rows):
        if rows[start]["op"] != "equal":
            out.append(rows[start])
            start += 1
            continue
        end = start
        while end < len(rows) and rows[end]["op"] == "equal":
            end += 1
        keep_before = context if start > 0 else 0  # context after the previous change
        keep_after = context if end < len(rows) else 0  # context before the next change
        if end - start > keep_before + keep_after + 1:
            out.extend(rows[start : start + keep_before])
            out.append({"op": "skip", "count": end - start - keep_before - keep_after})
            out.extend(rows[end - keep_after : end])
        else:
            out.extend(rows[start:end])
        start = end
    return out
