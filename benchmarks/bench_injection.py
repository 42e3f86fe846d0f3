"""Injection screening on ../shared/bench/injection_dev.jsonl: detection rate and false-positive rate, together.

    python benchmarks/bench_injection.py [--data PATH] [--limit N] [--show-misses] [--show-false-positives]

The rows are split in two halves by a hash of their id. The detector's rules were written looking only at the
*design* half; the *held-out* half is reported separately so the figure is not one the rules were tuned to
(see docs/benchmarks.md). Also prints the detector's speed per row.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from memdir.policy.injection import find_injections

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


def evaluate(rows: list[Row]) -> dict[str, Tally]:
    """Tallies for "all", each half, and each source."""
    tallies: dict[str, Tally] = {}
    for row in rows:
        flagged = bool(find_injections(row.text))
        for key in ("all", row.half, row.source):
            tallies.setdefault(key, Tally()).add(row.label, flagged)
    return tallies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--show-misses", action="store_true", help="print missed injections (design half only)")
    parser.add_argument("--show-false-positives", action="store_true", help="print flagged benign rows (design half)")
    args = parser.parse_args()
    rows = load(args.data, args.limit)
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


if __name__ == "__main__":
    main()
