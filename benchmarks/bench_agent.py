"""The agent's own cost: per-turn overhead, memory backfill, and ``memdir --help``, against the fake Messages API.

- **Per-turn overhead**: everything a turn costs except waiting for the model — running the tools, writing the
  transcript (two records per turn, one fsync), context management, building the next request. The fake
  server runs in a child process, so its work and memory stay off the agent's process. A wrapper around
  the provider times each ``send`` (and each token count); a turn's overhead is the time from one ``send``
  starting to the next one starting, minus the time spent inside the first. The store holds 1,000 files; the
  model (the fake server, answering at once) cycles through view file / create / str_replace / view directory.
  The time inside ``send`` (the SDK, loopback HTTP and the fake server) is reported beside it.
- **Backfill**: `load_backfill` over the same 1,000-file store (MEMORY.md, the listing, recent files within the
  2,000-token budget).
- **``memdir --help``**: wall time of the command in a fresh process.

    python benchmarks/bench_agent.py            # full run (about a minute)
    python benchmarks/bench_agent.py --quick    # smoke run
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anthropic

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import memdir  # noqa: E402
from memdir.agent import Agent  # noqa: E402
from memdir.agent.backfill import load_backfill  # noqa: E402
from memdir.agent.providers.anthropic import AnthropicProvider  # noqa: E402
from support.anthropic_server import FakeAnthropicServer, RecordedRequest, text_reply, tool_use_reply  # noqa: E402

if TYPE_CHECKING:
    from collections.abc import Iterator

    from memdir.agent.events import TextDelta
    from memdir.agent.providers import Provider, Reply, Request

NOTE = "- the customer prefers email follow-ups on Tuesdays; invoices go to accounts@example.com\n" * 3


class TimedProvider:
    """Wraps a provider and records when each ``send`` started and how long it (and token counts) took."""

    def __init__(self, inner: Provider) -> None:
        self.inner = inner
        self.name = inner.name
        self.native_memory = inner.native_memory
        self.starts: list[float] = []
        self.spent: list[float] = []

    def send(self, request: Request, *, stream: bool) -> Iterator[TextDelta | Reply]:
        start = time.perf_counter()
        items = list(self.inner.send(request, stream=stream))
        self.starts.append(start)
        self.spent.append(time.perf_counter() - start)
        yield from items

    def count_tokens(self, request: Request) -> int | None:
        start = time.perf_counter()
        try:
            return self.inner.count_tokens(request)
        finally:
            self.spent[-1] += time.perf_counter() - start  # waiting for the API, not overhead

    def close(self) -> None:
        self.inner.close()


def populate(url: str) -> memdir.Store:
    store = memdir.open_store(url)
    tool = memdir.MemoryTool(store, actor="user")
    tool.execute(
        {"command": "create", "path": "/memories/MEMORY.md", "file_text": "# Index\n- customers/: one file each\n"}
    )
    for n in range(999):
        tool.execute({"command": "create", "path": f"/memories/d{n // 100}/f{n}.md", "file_text": f"# {n}\n{NOTE}"})
    return store


def model(turns: int) -> Any:
    """The fake model: ``turns`` tool calls cycling through four memory commands, then an answer. A request
    holding a single message starts a new run."""
    counter = {"n": 0}

    def reply(request: RecordedRequest) -> dict[str, Any]:
        counter["n"] = 1 if len(request.messages) == 1 else counter["n"] + 1
        n = counter["n"]
        if n > turns:
            return text_reply("Done.")
        commands = [
            {"command": "view", "path": f"/memories/d{n % 10}/f{n % 999}.md"},
            {"command": "create", "path": f"/memories/new/n{n}.md", "file_text": NOTE},
            {
                "command": "str_replace",
                "path": f"/memories/new/n{n - 1}.md",
                "old_str": "Tuesdays",
                "new_str": "Fridays",
            },
            {"command": "view", "path": f"/memories/d{n % 10}"},
        ]
        return tool_use_reply([("memory", commands[n % 4])])

    return reply


def serve(turns: int) -> None:
    """Run the fake model in this process until stdin closes (the benchmark starts it as a child, so the
    server's work and memory never land on the agent's process)."""
    with FakeAnthropicServer() as server:
        server.script(*[model(turns)] * 100_000)
        print(server.url, flush=True)
        sys.stdin.read()


def overhead(store: memdir.Store, url: str, turns: int, context: str) -> tuple[list[float], list[float]]:
    client = anthropic.Anthropic(api_key="bench", base_url=url, max_retries=0)
    timed = TimedProvider(AnthropicProvider(client=client))
    agent = Agent(store, provider=timed, context=context, max_turns=turns + 5)  # type: ignore[arg-type]
    try:
        for _event in agent.stream("Work through the customer files.", live=False):
            pass
    finally:
        agent.close()
        client.close()
    walls = [b - a for a, b in zip(timed.starts, timed.starts[1:], strict=False)]
    return [w - s for w, s in zip(walls, timed.spent, strict=False)], timed.spent


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def ms(value: float) -> str:
    return f"{value * 1000:.2f}"


def bench_turns(url: str, turns: int) -> list[str]:
    rows = []
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(turns)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        address = server.stdout.readline().strip()
        for context in ("native", "client"):
            store = populate(url.replace(".db", f"-{context}.db") if url.startswith("sqlite") else f"{url}-{context}")
            over, sent = overhead(store, address, turns, context)
            store.close()
            kind = "sqlite" if url.startswith("sqlite") else "directory"
            spread = " | ".join(ms(pct(over, q)) for q in (0.5, 0.9, 0.99))
            rows.append(f"| {kind} | {context} | {len(over)} | {spread} | {ms(pct(sent, 0.5))} |")
    finally:
        server.communicate("")
    return rows


def bench_backfill(url: str, repeat: int) -> str:
    store = populate(url)
    tool = memdir.MemoryTool(store)
    start = time.perf_counter()
    first = load_backfill(tool)
    cold = time.perf_counter() - start
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        load_backfill(tool)
        times.append(time.perf_counter() - start)
    store.close()
    assert first is not None
    kind = url.split(":")[0] if url.startswith("sqlite") else "directory"
    return (f"| {kind} | {ms(cold)} | {ms(statistics.median(times))} | {ms(pct(times, 0.99))} | {len(first.items)} | "
            f"{first.tokens:,} |")  # fmt: skip


def bench_help(repeat: int) -> str:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "memdir", "--help"], check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return f"| `memdir --help` | {ms(statistics.median(times))} | {ms(max(times))} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run")
    parser.add_argument("--serve", type=int, metavar="TURNS", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve is not None:
        serve(args.serve)
        return
    turns, repeat = (40, 10) if args.quick else (400, 100)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["MEMDIR_HOME"] = str(Path(tmp) / "home")  # transcripts go here (a real disk: fsync is real)
        urls = [str(Path(tmp) / "dir-store"), f"sqlite://{Path(tmp) / 'store.db'}"]
        print(f"{platform.platform()}, Python {platform.python_version()}, {turns} turns per run, 1,000-file store\n")
        print("| store | context | turns | overhead p50 ms | p90 | p99 | inside send p50 ms |")
        print("|---|---|---|---|---|---|---|")
        for url in urls:
            print("\n".join(bench_turns(url, turns)))
        print("\n| store | backfill first ms | backfill p50 ms | p99 | parts | tokens |")
        print("|---|---|---|---|---|---|")
        for url in urls:
            print(
                bench_backfill(
                    url + "-backfill" if not url.startswith("sqlite") else url.replace(".db", "-b.db"), repeat
                )
            )
        print("\n| command | p50 ms | max ms |\n|---|---|---|")
        print(bench_help(max(repeat // 5, 5)))


if __name__ == "__main__":
    main()
