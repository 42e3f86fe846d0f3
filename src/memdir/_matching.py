"""Line matching that stays fast on text an attacker shaped.

`difflib.SequenceMatcher` with ``autojunk=False`` finds the smallest diff, but its time grows with the product of
the two line counts when lines repeat: two 20,000-line files of ``a`` took 32 s, under a write lock another
tenant's writes waited on (and its junk heuristic does not help when a hundred distinct lines repeat: 1.4-2.9 s).
So the lines the two texts share at their start and end are set aside first (an edit changes a few lines of a
long note), the middle is matched exactly when it is at most `EXACT_BUDGET` line pairs (~80 ms at worst), and a
larger middle is one replaced block: coarser, never slow.
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["EXACT_BUDGET", "Opcode", "line_opcodes"]

Opcode = tuple[Literal["replace", "delete", "insert", "equal"], int, int, int, int]

EXACT_BUDGET = 1_000_000  # line pairs of the middle: 1,000 x 1,000 identical lines match in ~80 ms


def line_opcodes(old: Sequence[str], new: Sequence[str]) -> list[Opcode]:
    """`difflib.SequenceMatcher.get_opcodes` of two lists of lines, in bounded time."""
    head = 0
    while head < len(old) and head < len(new) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < len(old) - head and tail < len(new) - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    old_end, new_end = len(old) - tail, len(new) - tail
    opcodes: list[Opcode] = [("equal", 0, head, 0, head)] if head else []
    opcodes += _middle(old[head:old_end], new[head:new_end], head)
    if tail:
        opcodes.append(("equal", old_end, len(old), new_end, len(new)))
    return opcodes


def _middle(old: Sequence[str], new: Sequence[str], at: int) -> list[Opcode]:
    if not old and not new:
        return []
    if len(old) * len(new) > EXACT_BUDGET:
        tag: Literal["replace", "delete", "insert"] = "replace" if old and new else "delete" if old else "insert"
        return [(tag, at, at + len(old), at, at + len(new))]
    matched = difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
    return [(tag, i1 + at, i2 + at, j1 + at, j2 + at) for tag, i1, i2, j1, j2 in matched]
