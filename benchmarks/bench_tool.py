"""memdir's memory tool vs the Anthropic SDK's BetaLocalFilesystemMemoryTool, paired in one run.

The same mixed command sequence (create, view, str_replace, insert, view dir, rename, delete) runs through
three implementations, interleaved iteration by iteration (rotating who goes first) so machine noise and the
file system's shared journal hit all of them alike:

- ``sdk``        the SDK's ``BetaLocalFilesystemMemoryTool`` (no history, no limits)
- ``directory``  memdir's directory store, with version history and every check on
- ``sqlite``     memdir's SQLite store, with version history and every check on

Then ``view /memories`` over 10,000 files (100 directories x 100 files), created through each tool.

    python benchmarks/bench_tool.py                # full run (about a minute)
    python benchmarks/bench_tool.py --quick        # smoke run
    python benchmarks/bench_tool.py --kept-dir     # the sequence's directory keeps another file
    python benchmarks/bench_tool.py --runs 5       # the mixed sequence 5 times: each run's ratios and the median

Each iteration creates the only file of ``/memories/bench`` and deletes it again. memdir removes a directory its
last file leaves (so every backend lists the same tree); the SDK leaves it, so memdir alone pays an ``mkdir`` and
an ``rmdir`` per iteration. ``--kept-dir`` puts a standing file there, the more usual case of notes written into a
topic directory that holds others.

Results go to stdout; docs/benchmarks.md holds the figures of record.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from anthropic.tools import BetaLocalFilesystemMemoryTool

import memdir
from memdir.policy import Limits, WritePolicy

if TYPE_CHECKING:
    from anthropic.lib.tools import BetaAbstractMemoryTool

Runner = Callable[[dict[str, Any]], object]
COMMANDS = ["create", "view", "str_replace", "insert", "view_dir", "rename", "delete"]
BODY = "".join(f"- note {i}: the customer prefers email follow-ups on Tuesdays\n" for i in range(16))


def sdk_runner(base: Path) -> Runner:
    tool: BetaAbstractMemoryTool = BetaLocalFilesystemMemoryTool(base_path=str(base))

    def run(command: dict[str, Any]) -> object:
        try:
            return tool.call(command)
        except Exception as exc:  # the SDK raises ToolError for error results
            return exc

    return run


def memdir_runner(url: str, closers: list[Callable[[], None]], *, core: bool = False) -> Runner:
    """``core``: the store and the six commands alone, as issue 2 measured them — no write-policy screening, no
    audit record, no auto-memory upkeep: what those layers cost is the difference."""
    # No listing cut: the SDK returns whole listings, so compare like with like.
    store = memdir.open_store(url)
    extra: dict[str, Any] = {"audit": False, "auto_memory": False, "policy": WritePolicy.allow_all()} if core else {}
    tool = memdir.MemoryTool(store, limits=Limits(max_view_chars=10**9), **extra)
    closers += [tool.close, store.close]  # before the temporary directory goes: the audit flushes on close

    def run(command: dict[str, Any]) -> object:
        result = tool.execute(command)
        if result.is_error:
            raise RuntimeError(result.text)
        return result

    return run


def sequence(i: int) -> list[tuple[str, dict[str, Any]]]:
    path = f"/memories/bench/note-{i}.md"
    return [
        ("create", {"command": "create", "path": path, "file_text": BODY}),
        ("view", {"command": "view", "path": path}),
        ("str_replace", {"command": "str_replace", "path": path, "old_str": "note 7:", "new_str": "note seven:"}),
        ("insert", {"command": "insert", "path": path, "insert_line": 3, "insert_text": "- inserted line\n"}),
        ("view_dir", {"command": "view", "path": "/memories"}),
        ("rename", {"command": "rename", "old_path": path, "new_path": path + ".old"}),
        ("delete", {"command": "delete", "path": path + ".old"}),
    ]


def seed(run: Runner, files: int, *, kept_dir: bool = False) -> None:
    """A few standing files so the directory views list something (and one in the sequence's directory)."""
    for i in range(files):
        run({"command": "create", "path": f"/memories/standing/s{i}.md", "file_text": BODY})
    if kept_dir:
        run({"command": "create", "path": "/memories/bench/standing.md", "file_text": BODY})


def mixed(runners: dict[str, Runner], iterations: int) -> dict[str, dict[str, list[float]]]:
    times: dict[str, dict[str, list[float]]] = {name: {c: [] for c in COMMANDS} for name in runners}
    order = list(runners.items())
    for i in range(iterations):
        # Rotate who goes first: an fsync also flushes the file-system journal of whatever ran just before it,
        # so a fixed order would bill one implementation for another's metadata changes.
        for name, run in order[i % len(order) :] + order[: i % len(order)]:
            for label, command in sequence(i):
                start = time.perf_counter()
                run(command)
                times[name][label].append(time.perf_counter() - start)
    return times


def listing(run: Runner, repeats: int) -> tuple[float, float]:
    """Seconds for `view /memories` over the tree: first (cold) and median of the warm repeats."""
    samples = []
    for _ in range(repeats + 1):
        start = time.perf_counter()
        run({"command": "view", "path": "/memories"})
        samples.append(time.perf_counter() - start)
    return samples[0], statistics.median(samples[1:])


def populate(run: Runner, dirs: int, per_dir: int) -> float:
    start = time.perf_counter()
    for d in range(dirs):
        for f in range(per_dir):
            run({"command": "create", "path": f"/memories/d{d:03d}/f{f:03d}.md", "file_text": f"file {d}/{f}\n"})
    return time.perf_counter() - start


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def totals(times: dict[str, dict[str, list[float]]]) -> dict[str, float]:
    return {n: sum(sum(v) for v in per_command.values()) for n, per_command in times.items()}


def report_runs(runs: list[dict[str, float]]) -> None:
    """Each run's "vs sdk" ratios and their median: one run moves by several percent on a shared disk."""
    names = [n for n in runs[0] if n != "sdk"]
    print(f"\n## vs sdk over {len(runs)} runs (higher = memdir faster)\n")
    print("| run | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    ratios = {n: [run["sdk"] / run[n] for run in runs] for n in names}
    for i in range(len(runs)):
        print(f"| {i + 1} | " + " | ".join(f"{ratios[n][i]:.2f}x" for n in names) + " |")
    print("| median | " + " | ".join(f"{statistics.median(ratios[n]):.2f}x" for n in names) + " |")


def report_mixed(times: dict[str, dict[str, list[float]]]) -> None:
    print("\n## Mixed sequence: p50 / p99 per command (microseconds)\n")
    names = list(times)
    print("| command | " + " | ".join(f"{n} p50 | {n} p99" for n in names) + " |")
    print("|---|" + "---|---|" * len(names))
    for command in COMMANDS:
        cells = [f"{pct(times[n][command], 0.5) * 1e6:.0f} | {pct(times[n][command], 0.99) * 1e6:.0f}" for n in names]
        print(f"| {command} | " + " | ".join(cells) + " |")
    total = totals(times)
    print("\n| implementation | total seconds | vs sdk (higher = memdir faster) |")
    print("|---|---|---|")
    for n in names:
        print(f"| {n} | {total[n]:.3f} | {total['sdk'] / total[n]:.2f}x |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--kept-dir", action="store_true", help="a standing file in the sequence's directory")
    parser.add_argument("--runs", type=int, default=1, help="run the mixed sequence this many times (default 1)")
    args = parser.parse_args()
    iterations, dirs, per_dir, repeats = (50, 10, 20, 3) if args.quick else (1000, 100, 100, 5)
    print(
        f"# memdir tool benchmark\n\n{platform.platform()}, Python {platform.python_version()}, "
        f"{iterations} iterations of the mixed sequence{' (kept directory)' if args.kept_dir else ''}; "
        f"listing over {dirs * per_dir:,} files"
    )
    closers: list[Callable[[], None]] = []
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        runners = {
            "sdk": sdk_runner(base / "sdk"),
            "directory": memdir_runner(str(base / "dir"), closers),
            "sqlite": memdir_runner(f"sqlite://{base / 'mem.db'}", closers),
            "directory-core": memdir_runner(str(base / "dir-core"), closers, core=True),
            "sqlite-core": memdir_runner(f"sqlite://{base / 'core.db'}", closers, core=True),
        }
        for run in runners.values():
            seed(run, 10, kept_dir=args.kept_dir)
        first = mixed(runners, iterations)
        report_mixed(first)
        if args.runs > 1:
            report_runs([totals(first)] + [totals(mixed(runners, iterations)) for _ in range(args.runs - 1)])
        print(f"\n## view /memories over {dirs * per_dir:,} files (seconds)\n")
        print("| implementation | populate | first view | warm view (median) | warm vs sdk |")
        print("|---|---|---|---|---|")
        results = {}
        for name, run in runners.items():
            run({"command": "delete", "path": "/memories/standing"})
            if args.kept_dir:  # the listing's tree is 10,000 files, the namespace's limit: nothing else may stay
                run({"command": "delete", "path": "/memories/bench"})
            created = populate(run, dirs, per_dir)
            results[name] = (created, *listing(run, repeats))
        for name, (created, cold, warm) in results.items():
            print(f"| {name} | {created:.2f} | {cold:.4f} | {warm:.4f} | {results['sdk'][2] / warm:.1f}x |")
        for close in closers:
            close()


if __name__ == "__main__":
    main()
