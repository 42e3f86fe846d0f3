"""Injection screening on ../shared/bench/injection_dev.jsonl: detection rate and false-positive rate, together.

    python benchmarks/bench_injection.py [--data PATH] [--limit N] [--show-misses] [--show-false-positives]
    python benchmarks/bench_injection.py --disguised     # every row written in look-alike letters, as an attacker would

``--disguised`` rewrites each row with about a third of its letters swapped for a character that looks the same
(full-width, mathematical, Cyrillic, Greek: `memdir.policy._chartable`), seeded by the row's id, and compares the
detector alone with the write policy, which reads text through its disguises (`memdir.policy._disguise`).

The rows are split in two halves by a hash of their id. The detector's rules were written looking only at the
*design* half; the *held-out* half is reported separately so the figure is not one the rules were tuned to
(see docs/benchmarks.md). Also prints the detector's speed per row.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from memdir import scan
from memdir.policy._corpus import disguise
from memdir.policy.injection import find_injections

if TYPE_CHECKING:
    from collections.abc import Callable

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "bench" / "injection_dev.jsonl"


@dataclass(frozen=True)
class Row:
    id: str
    text: str
    label: int
    source: str

    @property
    def half(self) -> str:
        return "design" if int(hashlib.sha256(self.id.encode()).hexdigest(), 16) % 2 == 0 else "held-out"


@dataclass
class Tally:
    tp: int = 0
    fn: int = 0
    fp: int = 0
    tn: int = 0

    def add(self, label: int, flagged: bool) -> None:
        if label:
            self.tp, self.fn = self.tp + flagged, self.fn + (not flagged)
        else:
            self.fp, self.tn = self.fp + flagged, self.tn + (not flagged)

    @property
    def detection(self) -> float:
        return self.tp / max(1, self.tp + self.fn)

    @property
    def false_positives(self) -> float:
        return self.fp / max(1, self.fp + self.tn)

    def line(self, name: str) -> str:
        return (
            f"{name:<10} detection {100 * self.detection:5.1f}% ({self.tp}/{self.tp + self.fn})   "
            f"false positives {100 * self.false_positives:5.1f}% ({self.fp}/{self.fp + self.tn})"
        )


def load(path: Path, limit: int | None = None) -> list[Row]:
    rows = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            data = json.loads(line)
            rows.append(Row(data["id"], data["text"], int(data["label"]), data["source"]))
    return rows[:limit] if limit else rows


def disguised(row: Row, share: float = 1 / 3) -> Row:
    """``row`` with about ``share`` of its letters swapped for look-alikes, the same ones on every run."""
    rng = random.Random(row.id)
    swapped = (disguise(c, "look-alike", rng) if c.isalpha() and rng.random() < share else c for c in row.text)
    text = "".join(swapped)
    return Row(row.id, text, row.label, row.source)


def by_policy(text: str) -> bool:
    return any(f.kind == "injection" for f in scan(text))


def by_detector(text: str) -> bool:
    return bool(find_injections(text))


def evaluate(rows: list[Row], flags: Callable[[str], bool] = by_detector) -> dict[str, Tally]:
    """Tallies for "all", each half, and each source."""
    tallies: dict[str, Tally] = {}
    for row in rows:
        flagged = flags(row.text)
        for key in ("all", row.half, row.source):
            tallies.setdefault(key, Tally()).add(row.label, flagged)
    return tallies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--show-misses", action="store_true", help="print missed injections (design half only)")
    parser.add_argument("--show-false-positives", action="store_true", help="print flagged benign rows (design half)")
    parser.add_argument("--disguised", action="store_true", help="rows in look-alike letters: detector vs policy")
    args = parser.parse_args()
    rows = load(args.data, args.limit)
    if args.disguised:
        report_disguised(rows)
        return
    started = time.perf_counter()
    tallies = evaluate(rows)
    elapsed = time.perf_counter() - started
    for name in ("all", "design", "held-out"):
        print(tallies.get(name, Tally()).line(name))
    print()
    for name in sorted(Counter(r.source for r in rows)):
        print(tallies[name].line(name[:10]), f" [{name}]")
    print(f"\n{len(rows)} rows, {1e3 * elapsed / max(1, len(rows)):.2f} ms per row")
    for row in rows:
        if row.half != "design":
            continue
        flagged = find_injections(row.text)
        if (args.show_misses and row.label and not flagged) or (
            args.show_false_positives and not row.label and flagged
        ):
            rules = sorted({m.rule for m in flagged})
            print(f"\n--- {row.id} {rules}\n{row.text[:600]}")


def report_disguised(rows: list[Row]) -> None:
    shown = [disguised(row) for row in rows]
    print(f"{len(rows)} rows, about a third of their letters swapped for look-alikes\n")
    for name, flags in (("detector", by_detector), ("policy", by_policy)):
        started = time.perf_counter()
        tallies = evaluate(shown, flags)
        elapsed = time.perf_counter() - started
        plain = evaluate(rows, flags)["all"]
        print(f"{name}: as written   {plain.line('all')}")
        for half in ("all", "design", "held-out"):
            print(f"{name}: disguised  {tallies[half].line(half)}")
        print(f"{name}: {1e3 * elapsed / max(1, len(rows)):.2f} ms per disguised row\n")


if __name__ == "__main__":
    main()
