"""Line matching in bounded time (`memdir._matching`): what an edit changed, on text shaped to be slow."""

from __future__ import annotations

import random

from memdir import open_store
from memdir._matching import EXACT_BUDGET, line_opcodes
from memdir.gate import Caller, GatedStore
from memdir.gate._screen import changed_spans


def _covers(opcodes: list[tuple[str, int, int, int, int]], old: list[str], new: list[str]) -> bool:
    """Whether the opcodes turn ``old`` into ``new``."""
    rebuilt: list[str] = []
    for tag, i1, i2, j1, j2 in opcodes:
        rebuilt += old[i1:i2] if tag == "equal" else new[j1:j2]
    return rebuilt == new


def test_within_the_budget_the_diff_is_the_smallest() -> None:
    old = ["a\n"] * 400
    new = ["a\n"] * 200 + ["b\n"] + ["a\n"] * 200
    assert len(old) * len(new) <= EXACT_BUDGET
    assert [op[0] for op in line_opcodes(old, new)] == ["equal", "insert", "equal"]


def test_beyond_the_budget_the_diff_is_coarser_and_still_right() -> None:
    # 20,000 identical lines: the exact matching took 32 s here, under the write lock.
    old = ["a\n"] * 20_000
    new = ["a\n"] * 10_000 + ["b\n"] + ["a\n"] * 10_000
    opcodes = line_opcodes(old, new)
    assert _covers(opcodes, old, new) and any(op[0] != "equal" for op in opcodes)


def test_a_middle_beyond_the_budget_is_one_replaced_block() -> None:
    # A hundred distinct lines, shuffled, 3,000 of them: difflib's junk heuristic still took seconds.
    rng = random.Random(7)
    old = [f"line {rng.randrange(100)}\n" for _ in range(3_000)]
    new = [f"line {rng.randrange(100)}\n" for _ in range(3_000)]
    opcodes = line_opcodes(["same\n", *old, "end\n"], ["same\n", *new, "end\n"])
    assert [op[0] for op in opcodes] == ["equal", "replace", "equal"]
    assert _covers(opcodes, ["same\n", *old, "end\n"], ["same\n", *new, "end\n"])


def test_an_edit_of_a_file_of_repeated_lines_is_screened_where_it_changed() -> None:
    old = "z\n" + "a\n" * 20_000
    new = "y\n" + "a\n" * 10_000 + "token ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8" + "\n" + "a\n" * 10_000
    spans = changed_spans(old, new)
    assert any(start <= new.index("ghp_") < end for start, end in spans)
    store = GatedStore(open_store("memory:"), Caller("model"))
    store.write("/memories/a.md", old.encode())
    store.write("/memories/a.md", new.encode())
    assert b"ghp_" not in store.read("/memories/a.md").content
