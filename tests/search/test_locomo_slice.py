"""benchmarks/bench_locomo.py keeps working: its set-up and metrics, run on a small LoCoMo-shaped conversation
written here. (The LoCoMo dev split lives outside the repository and is not redistributed — CC BY-NC; the full
runs and their figures are in docs/benchmarks.md.)

Each question's evidence is one turn that shares its distinctive words, so every retriever should find it; what
is asserted is that the script builds the store the way the README of the data describes (one file per session,
the date first, ``[D1:3] Speaker: text``), counts turns at an equal budget, and that search finds the turns.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

_SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_locomo.py"
_spec = importlib.util.spec_from_file_location("bench_locomo", _SCRIPT)
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
sys.modules["bench_locomo"] = bench  # dataclasses look their module up by name
_spec.loader.exec_module(bench)

TOPICS = [
    ("Caroline", "I adopted a grey kitten called Pepper from the shelter on Elm street."),
    ("Melanie", "My daughter started violin lessons with a teacher from Vienna."),
    ("Caroline", "We painted the garage door a bright turquoise last weekend."),
    ("Melanie", "The bakery downtown sells a rhubarb tart every Thursday."),
    ("Caroline", "I signed up for a pottery workshop that meets on Tuesday evenings."),
    ("Melanie", "Our camping trip to the glacier lake got cancelled by a snowstorm."),
    ("Caroline", "My brother moved to Lisbon to work on electric ferries."),
    ("Melanie", "I finally finished the thousand piece jigsaw of a lighthouse."),
]
FILLER = ["That sounds lovely!", "How are you feeling about it?", "Tell me more sometime.", "Wow, good for you."]
QUESTIONS = [
    ("What is the name of the kitten Caroline adopted?", 4, 0),
    ("Where is the violin teacher of Melanie's daughter from?", 4, 1),
    ("What colour did Caroline paint the garage door?", 1, 2),
    ("When does the bakery sell rhubarb tart?", 2, 3),
    ("When does the pottery workshop meet?", 2, 4),
    ("Why was the camping trip to the glacier lake cancelled?", 3, 5),
    ("Which city did Caroline's brother move to for the ferries?", 4, 6),
    ("What did the jigsaw Melanie finished show?", 1, 7),
]


def conversation() -> dict[str, Any]:
    """Four sessions of eight turns: each topic turn sits among chatter, two topics per session."""
    convo: dict[str, Any] = {"speaker_a": "Caroline", "speaker_b": "Melanie"}
    where: dict[int, str] = {}
    for session in range(1, 5):
        turns = []
        for turn in range(1, 9):
            dia = f"D{session}:{turn}"
            topic = (session - 1) * 2 + (turn - 3) // 3 if turn in (3, 6) else None
            if topic is not None:
                speaker, text = TOPICS[topic]
                where[topic] = dia
            else:
                speaker, text = ("Melanie", "Caroline")[turn % 2], FILLER[(session + turn) % len(FILLER)]
            turns.append({"speaker": speaker, "dia_id": dia, "text": text})
        convo[f"session_{session}"] = turns
        convo[f"session_{session}_date_time"] = f"1:5{session} pm on {session} May, 2023"
    qa = [{"question": q, "answer": "-", "evidence": [where[t]], "category": c} for q, c, t in QUESTIONS]
    qa.append({"question": "Unanswerable?", "answer": "-", "evidence": ["D1:1"], "category": 5})  # left out
    return {"sample_id": "conv-test", "conversation": convo, "qa": qa}


@pytest.fixture(autouse=True)
def embedding_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The benchmark keeps embeddings on disk: here in the test's own folder."""
    monkeypatch.setenv("MEMDIR_BENCH_CACHE", str(tmp_path / "embeddings.sqlite"))
    monkeypatch.setattr(bench, "_providers", {})


def test_the_store_is_built_as_the_data_readme_says() -> None:
    store, questions = bench.build(conversation())
    text = store.read("/memories/locomo/conv-test/session_2.md").content.decode()
    assert text.splitlines()[0] == "1:52 pm on 2 May, 2023"
    assert text.splitlines()[3] == f"[D2:3] Caroline: {TOPICS[2][1]}"
    assert len(questions) == len(QUESTIONS)  # category 5 left out
    store.close()


def test_turns_are_counted_once_in_rank_order_and_cut_at_the_budget() -> None:
    question = bench.Question("q", 4, {"D2:3", "D3:1"})
    result = bench.score(question, ["D2:3", "D2:3", "D1:1", "D1:2", "D1:4", "D1:5", "D3:1"])
    assert result.recall == {5: 0.5, 10: 1.0, 25: 1.0, 50: 1.0}  # the repeated D2:3 takes one place
    assert result.hit1 == 1.0
    assert bench.score(question, ["D1:1", "D2:3"]).hit1 == 0.0
    assert bench.score(question, []).recall[50] == 0.0


@pytest.mark.parametrize("system", ["bm25", "fts", "default"])
def test_every_system_finds_the_evidence(system: str) -> None:
    run = bench.run_system(system, [conversation()])
    assert len(run.results) == len(QUESTIONS)
    assert bench.mean([r.recall[10] for r in run.results]) == 100.0
    assert bench.mean([r.hit1 for r in run.results]) == 100.0
    assert bench.mean([r.recall[5] for r in run.results]) >= 87.5  # at most one question's turn below the fifth
