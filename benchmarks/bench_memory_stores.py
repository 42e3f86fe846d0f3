"""The Memory Stores API under load: memories created and retrieved per second through the official SDK, next to
the same work through ``POST /v1/tool``.

A real server (``memdir serve``, its own process, SQLite store, one worker, rate limit off). In another process,
20 concurrent clients, each a client object of its own, do the same work one request after another:

- **create**: ``memories.create(store, path="/bench/c<client>/<i>.md", content=<a 20-line note>)`` through the SDK
  (``anthropic.AsyncAnthropic``); ``{"command": "create", "path": "/memories/bench/c<client>/<i>.md", ...}`` to
  ``/v1/tool`` (``httpx.AsyncClient``);
- **retrieve**: ``memories.retrieve(id, memory_store_id=store)`` (``view=full``: the content) through the SDK;
  ``{"command": "view", "path": ...}`` to ``/v1/tool``.

A third row sends the SDK's requests with plain ``httpx`` (the same URLs and bodies), to tell the server's share
from the SDK's own. Each client creates ``--per-client`` memories, then retrieves each once, after a warm-up round
of 10. Figures: memories per second over the phase's wall time, and the CPU time per memory of the server process
and of the clients' process (read from /proc and `time.process_time`): on a shared machine, CPU time is the
steadier figure. Rounds alternate between the paths; medians are reported. Target: the SDK path within 1.5x of
the ``/v1/tool`` path.

    python benchmarks/bench_memory_stores.py                  # 20 clients x 100 memories, 3 rounds
    python benchmarks/bench_memory_stores.py --rounds 5 --per-client 200
    python benchmarks/bench_memory_stores.py --quick

Results go to stdout; docs/benchmarks.md holds the figures of record.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_server import memdir, start_server, stop_server  # the server as the /v1/tool benchmark starts it

NOTE = "".join(f"- note {i}: the customer prefers email follow-ups on Tuesdays\n" for i in range(20))
KINDS = ("tool", "sdk", "httpx")
NAMES = {
    "tool": "`POST /v1/tool` (httpx)",
    "sdk": "Memory Stores API (the SDK)",
    "httpx": "Memory Stores API (plain httpx)",
}


def server_cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Work:
    """One kind of client: how it creates one memory and retrieves it again."""

    def __init__(self, kind: str, url: str, token: str, store: str) -> None:
        self.kind, self.url, self.token, self.store = kind, url, token, store

    def client(self) -> Any:
        import anthropic
        import httpx

        if self.kind == "sdk":
            return anthropic.AsyncAnthropic(base_url=self.url, api_key=self.token, max_retries=0)
        return httpx.AsyncClient(base_url=self.url, headers={"Authorization": f"Bearer {self.token}"})

    async def create(self, client: Any, path: str) -> str:
        if self.kind == "sdk":
            made = await client.beta.memory_stores.memories.create(self.store, path=path, content=NOTE)
            return str(made.id)
        if self.kind == "httpx":
            answer = await client.post(f"/v1/memory_stores/{self.store}/memories", json={"path": path, "content": NOTE})
            assert answer.status_code == 200, answer.text
            return str(answer.json()["id"])
        await self._tool(client, {"command": "create", "path": "/memories" + path, "file_text": NOTE})
        return "/memories" + path

    async def retrieve(self, client: Any, ident: str) -> None:
        if self.kind == "sdk":
            found = await client.beta.memory_stores.memories.retrieve(ident, memory_store_id=self.store)
            assert found.content == NOTE
        elif self.kind == "httpx":
            answer = await client.get(f"/v1/memory_stores/{self.store}/memories/{ident}")
            assert answer.status_code == 200 and answer.json()["content"] == NOTE, answer.text
        else:
            await self._tool(client, {"command": "view", "path": ident})

    @staticmethod
    async def _tool(client: Any, command: dict[str, Any]) -> None:
        answer = await client.post("/v1/tool", json=command)
        assert answer.status_code == 200 and answer.json()["is_error"] is False, answer.text


async def _phases(work: Work, server: int, clients: int, count: int, tag: str) -> dict[str, float]:
    opened = [work.client() for _ in range(clients)]

    async def creates(c: int) -> list[str]:
        return [await work.create(opened[c], f"/{tag}/c{c}/{i}.md") for i in range(count)]

    async def retrieves(c: int, idents: list[str]) -> None:
        for ident in idents:
            await work.retrieve(opened[c], ident)

    try:
        marks = [(time.perf_counter(), time.process_time(), server_cpu(server))]
        made = await asyncio.gather(*(creates(c) for c in range(clients)))
        marks.append((time.perf_counter(), time.process_time(), server_cpu(server)))
        await asyncio.gather(*(retrieves(c, idents) for c, idents in enumerate(made)))
        marks.append((time.perf_counter(), time.process_time(), server_cpu(server)))
    finally:
        for client in opened:
            await (client.aclose() if hasattr(client, "aclose") else client.close())
    total = clients * count
    found: dict[str, float] = {}
    for name, (start, end) in (("create", (marks[0], marks[1])), ("retrieve", (marks[1], marks[2]))):
        found[name] = total / (end[0] - start[0])
        found[name + " client ms"] = 1000 * (end[1] - start[1]) / total
        found[name + " server ms"] = 1000 * (end[2] - start[2]) / total
    return found


def _load(kind: str, url: str, token: str, store: str, server: int, clients: int, count: int, tag: str) -> Any:
    """One measurement, in a process of its own (the clients' CPU is not the server's)."""
    try:
        import uvloop

        run: Any = uvloop.run
    except ImportError:
        run = asyncio.run
    return run(_phases(Work(kind, url, token, store), server, clients, count, tag))


def measure(url: str, token: str, store: str, server: int, args: argparse.Namespace, kind: str, tag: str) -> Any:
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        pool.apply(_load, (kind, url, token, store, server, args.clients, 10, f"{tag}-warm"))
        return pool.apply(_load, (kind, url, token, store, server, args.clients, args.per_client, tag))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=20, help="concurrent clients")
    parser.add_argument("--per-client", type=int, default=100, help="memories each client creates and retrieves")
    parser.add_argument("--rounds", type=int, default=3, help="measurements of each path, alternating")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 1 round of 20 per client")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.per_client = 1, 20
    import anthropic

    rows: dict[str, list[dict[str, float]]] = {kind: [] for kind in KINDS}
    with tempfile.TemporaryDirectory(prefix="memdir-bench-") as tmp:
        server, url, _ = start_server(Path(tmp), 1)
        env = {**os.environ, "MEMDIR_HOME": str(Path(tmp) / "home")}
        try:
            for r in range(args.rounds):  # a namespace (and a memory store) per round: far from any file limit
                token = memdir(
                    "--store", f"sqlite://{Path(tmp) / 'bench-1.db'}", "token", "create", "-n", f"r{r}", env=env
                )
                with anthropic.Anthropic(base_url=url, api_key=token) as api:
                    store = api.beta.memory_stores.create(name=f"bench {r}").id
                for kind in KINDS:  # alternating, so a busy minute of the shared machine hits every path
                    rows[kind].append(measure(url, token, store, server.pid, args, kind, kind))
        finally:
            stop_server(server)
    report(rows, args)


def report(rows: dict[str, list[dict[str, float]]], args: argparse.Namespace) -> None:
    print(f"{platform.platform()}, Python {platform.python_version()}, {os.cpu_count()} CPUs")
    print(f"{args.clients} clients x {args.per_client} memories, {args.rounds} rounds (medians), SQLite, 1 worker\n")
    print("| path | create /s | retrieve /s | create: server / client ms | retrieve: server / client ms |")
    print("|---|---|---|---|---|")
    med = {kind: {key: statistics.median(r[key] for r in found) for key in found[0]} for kind, found in rows.items()}
    for kind in KINDS:
        m = med[kind]
        print(
            f"| {NAMES[kind]} | {m['create']:,.0f} | {m['retrieve']:,.0f} | {m['create server ms']:.2f} / "
            f"{m['create client ms']:.2f} | {m['retrieve server ms']:.2f} / {m['retrieve client ms']:.2f} |"
        )
    for kind in ("sdk", "httpx"):
        create, retrieve = (med["tool"][k] / med[kind][k] for k in ("create", "retrieve"))
        print(f"\n/v1/tool ÷ {NAMES[kind]}: create {create:.2f}x, retrieve {retrieve:.2f}x (target: at most 1.5x)")
    print(f"\nevery round: {rows}")


if __name__ == "__main__":
    main()
