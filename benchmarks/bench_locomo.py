"""Retrieval quality on the LoCoMo development split (set-up and metrics: ../shared/bench/README.md).

One memory file per session, ``/memories/locomo/<conversation>/session_<N>.md``: first line the session's date,
then one line per turn ``[D7:3] Caroline: text [shares image: caption]``; one fresh store per conversation;
every question with evidence (categories 1-4) is a query. A hit covers the dia_ids written in its passage.

- turn recall@k: mean over questions of |gold dia_ids in the top-k hits| / |gold|
- session recall@k: the same over the sessions (files) of the top-k hits

Hybrid search's weights (the BM25 share, the neighbour weight) were chosen on conversations 1-2 and are
measured on conversations 3-5 as well as on all five; ``--tune`` reruns that choice.

    python benchmarks/bench_locomo.py                 # every variant
    python benchmarks/bench_locomo.py --variant fts   # one
    python benchmarks/bench_locomo.py --conversations 1 --questions 40   # a slice
    python benchmarks/bench_locomo.py --held-out      # variants on conversations 3-5 only
    python benchmarks/bench_locomo.py --tune          # choose the hybrid weights on conversations 1-2
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memdir import MemoryStore
from memdir.search import Searcher

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "bench" / "locomo_dev.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_DIA = re.compile(r"\[(D\d+:\d+)\]")


@dataclass(frozen=True)
class Variant:
    """One configuration to measure: search mode and the index's passage size, fusion weight, provider."""

    name: str
    mode: str = "fts"
    passage_lines: int = 4
    fts_weight: float | None = None
    neighbour_weight: float | None = None  # None: the default (0.8 / passage lines)
    provider: str | None = None  # None: the default local model


VARIANTS = [
    Variant("bm25-baseline", mode="baseline"),  # the README's baseline, recomputed (for subsets of questions)
    Variant("fts-1line", passage_lines=1),
    Variant("fts-2lines", passage_lines=2),
    Variant("fts", passage_lines=4),
    Variant("hybrid-1line-no-neighbours", mode="hybrid", passage_lines=1, neighbour_weight=0.0),
    Variant("hybrid-1line", mode="hybrid", passage_lines=1),
    Variant("hybrid-no-neighbours", mode="hybrid", passage_lines=4, neighbour_weight=0.0),
    Variant("hybrid", mode="hybrid", passage_lines=4),
]
TUNE = slice(0, 2)  # conversations the hybrid weights are chosen on
HELD_OUT = slice(2, None)  # ...and the ones they never saw
FTS_WEIGHTS = (0.3, 0.4, 0.5, 0.6, 0.7)
NEIGHBOUR_WEIGHTS = (0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8)


@dataclass
class Question:
    text: str
    category: int
    gold: set[str]


@dataclass
class Scores:
    turn5: list[float] = field(default_factory=list)
    turn10: list[float] = field(default_factory=list)
    session5: list[float] = field(default_factory=list)


def load(path: Path = DATA) -> list[dict[str, Any]]:
    if not path.is_file():
        raise SystemExit(f"LoCoMo data not found at {path} (expected ../shared/bench/locomo_dev.json)")
    data: list[dict[str, Any]] = json.loads(path.read_text("utf-8"))
    return data


def sessions(conversation: dict[str, Any]) -> dict[int, list[dict[str, Any]]]:
    found = {}
    for key, value in conversation.items():
        match = re.fullmatch(r"session_(\d+)", key)
        if match and isinstance(value, list):
            found[int(match.group(1))] = value
    return dict(sorted(found.items()))


def session_file(conversation: dict[str, Any], number: int, turns: list[dict[str, Any]]) -> str:
    lines = [str(conversation.get(f"session_{number}_date_time", ""))]
    for turn in turns:
        line = f"[{turn['dia_id']}] {turn['speaker']}: {turn['text']}"
        if turn.get("blip_caption"):
            line += f" [shares image: {turn['blip_caption']}]"
        lines.append(line)
    return "\n".join(lines) + "\n"


def normalise_evidence(raw: list[str], known: set[str]) -> set[str]:
    """Split on ';', repair "D:11:26" and "D30:05" forms, drop ids that name no turn."""
    gold = set()
    for item in raw:
        for part in str(item).split(";"):
            match = re.fullmatch(r"D:?(\d+):(\d+)", part.strip())
            if match:
                dia = f"D{int(match.group(1))}:{int(match.group(2))}"
                if dia in known:
                    gold.add(dia)
    return gold


def build(sample: dict[str, Any]) -> tuple[MemoryStore, list[Question]]:
    store = MemoryStore()
    conversation = sample["conversation"]
    known: set[str] = set()
    for number, turns in sessions(conversation).items():
        known.update(t["dia_id"] for t in turns)
        text = session_file(conversation, number, turns)
        store.write(f"/memories/locomo/{sample['sample_id']}/session_{number}.md", text.encode())
    questions = []
    for qa in sample["qa"]:
        gold = normalise_evidence(qa.get("evidence", []), known)
        if qa.get("category") in CATEGORIES and gold:
            questions.append(Question(str(qa["question"]), int(qa["category"]), gold))
    return store, questions


def session_of(dia: str) -> str:
    return dia.split(":")[0]


def evaluate(searcher: Searcher, questions: list[Question], mode: str) -> dict[int, Scores]:
    scores: dict[int, Scores] = defaultdict(Scores)
    for question in questions:
        hits = searcher.search(question.text, limit=10, mode=mode).hits  # type: ignore[arg-type]
        covered = [set(_DIA.findall(hit.passage)) for hit in hits]
        gold_sessions = {session_of(d) for d in question.gold}
        top5_sessions = {"D" + h.path.name.removeprefix("session_").removesuffix(".md") for h in hits[:5]}
        s = scores[question.category]
        s.turn5.append(len(question.gold & set().union(*covered[:5])) / len(question.gold))
        s.turn10.append(len(question.gold & set().union(*covered[:10])) / len(question.gold))
        s.session5.append(len(gold_sessions & top5_sessions) / len(gold_sessions))
    return scores


_WORD = re.compile(r"[a-z0-9]+")
_BASELINE_STOP = frozenset(
    str.split(
        "a an the and or but of to in on at for with by from as is are was were be been it its this that these those "
        "i you he she we they me him her us them my your his our their what when where who whom which why how did do "
        "does has have had will would can could"
    )
)


def _bm25_top(docs: list[list[str]], query: list[str], k: int) -> list[int]:
    """Plain BM25 (k1 1.2, b 0.75): the README's baseline, to measure it on any subset of the questions."""
    n = len(docs)
    avg = sum(map(len, docs)) / max(n, 1)
    df: dict[str, int] = defaultdict(int)
    for doc in docs:
        for term in set(doc):
            df[term] += 1
    scores = []
    for i, doc in enumerate(docs):
        score = 0.0
        for term in set(query):
            tf = doc.count(term)
            if tf:
                idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len(doc) / avg))
        scores.append((-score, i))
    return [i for score, i in sorted(scores)[:k] if score < 0]


def _tokens(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in _BASELINE_STOP]


def run_baseline(data: list[dict[str, Any]], questions: int | None = None) -> dict[int, Scores]:
    """BM25 over single turns (turn recall) and over whole session files (session recall)."""
    total: dict[int, Scores] = defaultdict(Scores)
    for sample in data:
        conversation = sample["conversation"]
        turns = [(t["dia_id"], t) for _, ts in sessions(conversation).items() for t in ts]
        turn_docs = [_tokens(f"{t['speaker']}: {t['text']} {t.get('blip_caption') or ''}") for _, t in turns]
        files = [(f"D{n}", session_file(conversation, n, ts)) for n, ts in sessions(conversation).items()]
        file_docs = [_tokens(text) for _, text in files]
        for question in build(sample)[1][:questions]:
            words = _tokens(question.text)
            top = [turns[i][0] for i in _bm25_top(turn_docs, words, 10)]
            gold_sessions = {session_of(d) for d in question.gold}
            top_sessions = {files[i][0] for i in _bm25_top(file_docs, words, 5)}
            s = total[question.category]
            s.turn5.append(len(question.gold & set(top[:5])) / len(question.gold))
            s.turn10.append(len(question.gold & set(top)) / len(question.gold))
            s.session5.append(len(gold_sessions & top_sessions) / len(gold_sessions))
    return total


def run_variant(
    variant: Variant, data: list[dict[str, Any]], *, conversations: int | None = None, questions: int | None = None
) -> dict[int, Scores]:
    if variant.mode == "baseline":
        return run_baseline(data[:conversations], questions)
    total: dict[int, Scores] = defaultdict(Scores)
    provider = _provider(variant.provider) if variant.mode == "hybrid" else None
    for sample in data[:conversations]:
        store, asked = build(sample)
        searcher = _searcher(store, variant, provider)
        merge(total, evaluate(searcher, asked[:questions], variant.mode))
        store.close()
    return total


def _searcher(store: MemoryStore, variant: Variant, provider: Any) -> Searcher:
    return Searcher(
        store,
        settings={"passage_lines": variant.passage_lines},
        provider=provider,
        fts_weight=variant.fts_weight,
        neighbour_weight=variant.neighbour_weight,
    )


def merge(total: dict[int, Scores], more: dict[int, Scores]) -> None:
    for category, scores in more.items():
        total[category].turn5 += scores.turn5
        total[category].turn10 += scores.turn10
        total[category].session5 += scores.session5


def tune(data: list[dict[str, Any]], passage_lines: int) -> Variant:
    """The hybrid weights with the best turn recall@10 on the `TUNE` conversations (each store built once)."""
    provider = _provider(None)
    built = [build(sample) for sample in data[TUNE]]
    results: dict[tuple[float, float], float] = {}
    for fts_weight in FTS_WEIGHTS:
        for neighbour_weight in NEIGHBOUR_WEIGHTS:
            variant = Variant("tuned", "hybrid", passage_lines, fts_weight, neighbour_weight)
            total: dict[int, Scores] = defaultdict(Scores)
            for store, asked in built:
                merge(total, evaluate(_searcher(store, variant, provider), asked, "hybrid"))
            s = overall(total)
            results[fts_weight, neighbour_weight] = mean(s.turn10)
            print(f"  fts_weight {fts_weight} neighbour_weight {neighbour_weight}: {_cells(s)}", flush=True)
    best = max(results, key=lambda key: results[key])
    return Variant(f"tuned-{passage_lines}line", "hybrid", passage_lines, best[0], best[1])


def _provider(name: str | None) -> Any:
    from memdir.search import LocalModel

    return LocalModel() if name is None else LocalModel(Path(name))


def overall(scores: dict[int, Scores]) -> Scores:
    merged = Scores()
    for s in scores.values():
        merged.turn5 += s.turn5
        merged.turn10 += s.turn10
        merged.session5 += s.session5
    return merged


def mean(values: list[float]) -> float:
    return 100 * sum(values) / len(values) if values else 0.0


def _cells(s: Scores) -> str:
    return f"{mean(s.turn5):.1f} | {mean(s.turn10):.1f} | {mean(s.session5):.1f}"


def table(name: str, scores: dict[int, Scores]) -> str:
    rows = [f"### {name}", "", "| category | questions | turn R@5 | turn R@10 | session R@5 |", "|---|---|---|---|---|"]
    for category, label in CATEGORIES.items():
        s = scores.get(category, Scores())
        rows.append(
            f"| {label} | {len(s.turn5)} | {mean(s.turn5):.1f} | {mean(s.turn10):.1f} | {mean(s.session5):.1f} |"
        )
    s = overall(scores)
    rows.append(
        f"| **overall** | {len(s.turn5)} | {mean(s.turn5):.1f} | {mean(s.turn10):.1f} | {mean(s.session5):.1f} |"
    )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variant", action="append", help="variant name (repeatable); default: all")
    parser.add_argument("--conversations", type=int, default=None)
    parser.add_argument("--questions", type=int, default=None, help="per conversation")
    parser.add_argument("--held-out", action="store_true", help="only the conversations the weights never saw")
    parser.add_argument("--tune", action="store_true", help="choose the hybrid weights on conversations 1-2")
    args = parser.parse_args(argv)
    data = load()
    chosen = [v for v in VARIANTS if not args.variant or v.name in args.variant]
    if args.tune:
        print(f"choosing on {', '.join(d['sample_id'] for d in data[TUNE])} (turn R@5 | R@10 | session R@5):")
        chosen = [tune(data, 1)]
        print(f"chosen: {chosen[0]}\n")
        args.held_out = True
    if args.held_out:
        data = data[HELD_OUT]
        print(f"held-out conversations: {', '.join(d['sample_id'] for d in data)}\n")
    summary = ["| variant | turn R@5 | turn R@10 | session R@5 | seconds |", "|---|---|---|---|---|"]
    for variant in chosen:
        started = time.perf_counter()
        scores = run_variant(variant, data, conversations=args.conversations, questions=args.questions)
        took = time.perf_counter() - started
        print(table(f"{variant.name} ({took:.0f} s)", scores) + "\n", flush=True)
        s = overall(scores)
        summary.append(
            f"| {variant.name} | {mean(s.turn5):.1f} | {mean(s.turn10):.1f} | {mean(s.session5):.1f} | {took:.0f} |"
        )
    print("\n".join(summary))


if __name__ == "__main__":
    sys.exit(main())
