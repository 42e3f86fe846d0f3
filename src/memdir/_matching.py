"""Line matching that stays fast on text an attacker shaped.

`difflib.SequenceMatcher` with ``autojunk=False`` finds the smallest diff, but its time grows with the product of
the two line counts when lines repeat: two 20,000-line files of ``a`` took 32 s, under a write lock another
tenant's writes waited on. Up to `EXACT_BUDGET` line pairs it is used as is (~20 ms at worst); beyond, with
difflib's junk heuristic (lines in more than 1% of a long text are not matched on), fast on any text.
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["EXACT_BUDGET", "Opcode", "line_opcodes"]

Opcode = tuple[Literal["replace", "delete", "insert", "equal"], int, int, int, int]

EXACT_BUDGET = 250_000  # line pairs: 500 x 500 identical lines match in ~20 ms


def line_opcodes(old: Sequence[str], new: Sequence[str]) -> list[Opcode]:
    """`difflib.SequenceMatcher.get_opcodes` of two lists of lines, in bounded time."""
    exact = len(old) * len(new) <= EXACT_BUDGET
    return difflib.SequenceMatcher(None, old, new, autojunk=not exact).get_opcodes()
