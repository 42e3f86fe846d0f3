"""``memdir claude-code snapshot`` and ``status``, the whole commands, over 50 projects x 40 files.

A fake home is built in a temporary directory: 50 projects (listed in ``~/.claude.json``, each with
``.claude/settings.json``, so the snapshot's quick check has every file a real machine gives it to look at), each
with a memory directory of 40 files (``MEMORY.md`` and 39 notes of ~1 KB), and 3 sub-agent memories. A first
snapshot records everything. Then each command runs as a hook runs it: a new process (``memdir claude-code
snapshot`` with the hook's JSON on stdin), timed from start to exit, with its CPU time (user + system) from
``getrusage``. Targets: snapshot with nothing changed under 100 ms, status under 500 ms.

    python benchmarks/bench_claude_code.py            # 30 snapshots, 10 statuses
    python benchmarks/bench_claude_code.py --quick    # 5 and 3

Results go to stdout; docs/benchmarks.md holds the figures of record.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECTS = 50
FILES = 40
NOTE = (
    "---\nname: Note {i}\ndescription: What note {i} of {p} says\ntype: project\n---\n\n" + "Some detail. " * 70 + "\n"
)


def build(root: Path) -> dict[str, str]:
    home = root / "home"
    claude = home / ".claude"
    state: dict[str, dict[str, object]] = {}
    for p in range(PROJECTS):
        project = home / "code" / f"project-{p:02}"
        (project / ".claude").mkdir(parents=True)
        (project / ".claude" / "settings.json").write_text('{"permissions": {"allow": []}}\n')
        memory = claude / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(project)) / "memory"
        memory.mkdir(parents=True)
        index = "# Memory\n" + "".join(f"- [note {i}](note_{i}.md) — note {i}\n" for i in range(1, FILES))
        (memory / "MEMORY.md").write_text(index)
        for i in range(1, FILES):
            (memory / f"note_{i}.md").write_text(NOTE.format(i=i, p=p))
        state[str(project)] = {"hasTrustDialogAccepted": True}
    for agent in ("reviewer", "planner", "tester"):
        (claude / "agent-memory" / agent).mkdir(parents=True)
        (claude / "agent-memory" / agent / "MEMORY.md").write_text(f"# {agent}\n")
    (home / ".claude.json").write_text(json.dumps({"projects": state}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE_", "MEMDIR_"))}
    return {**env, "HOME": str(home), "MEMDIR_HOME": str(root / "memdir")}


def timed(command: list[str], env: dict[str, str], stdin: str = "") -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``command`` in a new process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, env=env, input=stdin, text=True, stdout=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def series(name: str, command: list[str], env: dict[str, str], runs: int, stdin: str = "") -> None:
    results = [timed(command, env, stdin) for _ in range(runs)]
    walls = sorted(w * 1000 for w, _ in results)
    cpus = sorted(c * 1000 for _, c in results)
    p90 = walls[min(len(walls) - 1, int(len(walls) * 0.9))]
    print(
        f"| {name} | {runs} | {statistics.median(walls):.1f} | {p90:.1f} | {walls[-1]:.1f} | "
        f"{statistics.median(cpus):.1f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="a few runs only")
    args = parser.parse_args()
    runs, status_runs = (5, 3) if args.quick else (30, 10)
    memdir = str(Path(sys.executable).parent / "memdir")
    payload = json.dumps({"session_id": "bench", "hook_event_name": "SessionStart", "source": "startup"})
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        env = build(root)
        hook = json.dumps({**json.loads(payload), "cwd": str(root / "home" / "code" / "project-07")})
        first = timed([memdir, "claude-code", "snapshot"], env, hook)
        print(f"# {platform.python_version()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
        print(f"# {PROJECTS} projects x {FILES} files, 3 agents; first snapshot {first[0]:.2f} s")
        print("| command | runs | wall p50 ms | p90 | max | CPU p50 ms |")
        print("|---|---|---|---|---|---|")
        series("`python -c pass` (the floor)", [sys.executable, "-c", "pass"], env, runs)
        series(
            "`claude-code snapshot`, nothing changed (hook JSON on stdin)",
            [memdir, "claude-code", "snapshot"],
            env,
            runs,
            hook,
        )
        series("`claude-code snapshot`, nothing changed (no stdin)", [memdir, "claude-code", "snapshot"], env, runs)
        note = next((root / "home" / ".claude" / "projects").glob("*project-07/memory")) / "note_3.md"
        changed = []
        for i in range(max(3, runs // 5)):
            note.write_text(NOTE.format(i=3, p=f"edit {i}"))
            changed.append(timed([memdir, "claude-code", "snapshot"], env, hook))
        walls = sorted(w * 1000 for w, _ in changed)
        cpu = statistics.median(c * 1000 for _, c in changed)
        name = "`claude-code snapshot`, one file changed"
        print(f"| {name} | {len(changed)} | {statistics.median(walls):.1f} | | {walls[-1]:.1f} | {cpu:.1f} |")
        series("`claude-code status`", [memdir, "claude-code", "status"], env, status_runs)
        series("`claude-code status --json`", [memdir, "claude-code", "status", "--json"], env, status_runs)


if __name__ == "__main__":
    main()
