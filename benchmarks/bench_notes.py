"""Search over a memory directory of short Markdown notes: the common case, kept beside the LoCoMo figures so a
change that helps transcripts is seen not to cost notes (issue 16).

The notes are LoCoMo's own observations (../shared/bench/locomo_dev.json: short facts about each speaker written
after each session, each citing the turn it comes from), laid out the way an agent keeps notes: one note per
session, ``/memories/notes/<yyyy-mm-dd>.md``, a title with the date, a section per person, one bullet per fact::

    # Notes from 8 May, 2023

    ## Caroline
    - Caroline attended an LGBTQ support group recently and found the transgender stories inspiring.
    ...

Beside them, in every store, the unrelated documents people also keep: the clean e-mails and code snippets of
../shared/bench/injection_dev.jsonl (``/memories/inbox/``, ``/memories/snippets/``). One store per conversation.
Queries are the conversation's questions (categories 1-4) whose evidence some fact cites; the gold lines are the
facts citing it. The measure is the LoCoMo one with lines for turns: hits flattened into distinct lines in rank
order (a passage's lines in order; headings and blank lines are not facts and take no budget), **R@B lines** for
B = 5, 10, 25, and **note Hit@1** (the first returned fact lies in a note holding a gold fact); latency p50/p95.

    python benchmarks/bench_notes.py
    python benchmarks/bench_notes.py --mode fts
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memdir import MemoryStore

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_locomo as locomo

BUDGETS = (5, 10, 25)
LIMIT = 50
_DATE = re.compile(r"(\d{1,2}) (\w+),? (\d{4})")
_MONTHS = str.split("january february march april may june july august september october november december")


@dataclass
class Fact:
    path: str
    line: int
    cites: set[str]


def note_date(raw: str) -> str:
    """``"1:56 pm on 8 May, 2023"`` -> ``"2023-05-08"`` (the note's file name)."""
    match = _DATE.search(raw)
    if not match:
        raise ValueError(f"no date in {raw!r}")
    day, month, year = match.groups()
    return f"{year}-{_MONTHS.index(month.lower()) + 1:02d}-{int(day):02d}"


def notes_of(sample: dict[str, Any]) -> tuple[dict[str, str], list[Fact]]:
    """The notes (path -> text) of one conversation, and where each fact is."""
    conversation = sample["conversation"]
    notes: dict[str, str] = {}
    facts: list[Fact] = []
    for number in locomo.sessions(conversation):
        raw = str(conversation.get(f"session_{number}_date_time", ""))
        day = note_date(raw)
        path = f"/memories/notes/{day}.md"
        if path in notes:  # a second session that day
            path = f"/memories/notes/{day}-{number}.md"
        date = _DATE.search(raw)
        lines = [f"# Notes from {date.group(0) if date else raw}"]
        for person, items in (sample["observation"].get(f"session_{number}_observation") or {}).items():
            lines += ["", f"## {person}"]
            for text, cites in items:
                lines.append(f"- {text}")
                facts.append(Fact(path, len(lines), set(cites if isinstance(cites, list) else [cites])))
        notes[path] = "\n".join(lines) + "\n"
    return notes, facts


def documents(path: Path | None = None) -> dict[str, str]:
    """The clean e-mails and code snippets of the injection dev set, as notes."""
    source = path or locomo.DATA.parent / "injection_dev.jsonl"
    found: dict[str, str] = {}
    for line in source.read_text("utf-8").splitlines():
        row = json.loads(line)
        if row["source"] == "bipia_email_clean":
            found[f"/memories/inbox/{row['id']}.md"] = row["text"]
        elif row["source"] == "bipia_code_clean":
            found[f"/memories/snippets/{row['id']}.md"] = row["text"]
    return found


@dataclass
class Query:
    text: str
    category: int
    gold: set[tuple[str, int]]  # (path, line) of the facts citing the evidence


def build(sample: dict[str, Any], others: dict[str, str]) -> tuple[MemoryStore, list[Query]]:
    notes, facts = notes_of(sample)
    store = MemoryStore()
    for path, text in {**notes, **others}.items():
        store.write(path, text.encode())
    queries = []
    for question in locomo.questions_of(sample):
        gold = {(f.path, f.line) for f in facts if f.cites & question.gold}
        if gold:
            queries.append(Query(question.text, question.category, gold))
    return store, queries


def is_fact(line: str) -> bool:
    return bool(line.strip()) and not line.lstrip().startswith("#")


def run(data: list[dict[str, Any]], mode: str) -> tuple[list[locomo.Result], list[float]]:
    others = documents()
    results: list[locomo.Result] = []
    took: list[float] = []
    for sample in data:
        store, queries = build(sample, others)
        searcher = locomo.searcher_for(store)
        searcher.search(queries[0].text, limit=LIMIT, mode=mode)  # type: ignore[arg-type]  # warm
        for query in queries:
            started = time.perf_counter()
            hits = searcher.search(query.text, limit=LIMIT, mode=mode).hits  # type: ignore[arg-type]
            took.append((time.perf_counter() - started) * 1000)
            lines = [
                (hit.path.virtual, int(number))
                for hit in hits
                for number, text in (row.split("\t", 1) for row in hit.passage.split("\n"))
                if is_fact(text)
            ]
            results.append(score(query, lines))
        store.close()
    return results, took


def score(query: Query, lines: list[tuple[str, int]]) -> locomo.Result:
    distinct = list(dict.fromkeys(lines))
    recall = {b: len(query.gold & set(distinct[:b])) / len(query.gold) for b in BUDGETS}
    hit1 = float(bool(distinct) and distinct[0][0] in {path for path, _ in query.gold})
    return locomo.Result(query.category, recall, hit1)


def cells(results: list[locomo.Result]) -> str:
    recall = " | ".join(f"{locomo.mean([r.recall[b] for r in results]):.1f}" for b in BUDGETS)
    return f"{recall} | {locomo.mean([r.hit1 for r in results]):.1f}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", choices=["auto", "fts", "hybrid"], default="auto")
    parser.add_argument("--conversations", type=int, default=None)
    args = parser.parse_args(argv)
    data = locomo.load()[: args.conversations]
    results, took = run(data, args.mode)
    print("| category | queries | R@5 lines | R@10 lines | R@25 lines | note Hit@1 |\n|---|---|---|---|---|---|")
    for category, label in locomo.CATEGORIES.items():
        mine = [r for r in results if r.category == category]
        print(f"| {label} | {len(mine)} | {cells(mine)} |")
    print(f"| **overall** | {len(results)} | {cells(results)} |")
    ordered = sorted(took)
    print(f"\nlatency p50 {statistics.median(ordered):.1f} ms, p95 {ordered[int(0.95 * len(ordered))]:.1f} ms")


if __name__ == "__main__":
    main()
