"""Real processes on one store: no lost update under contention, and no torn file after a SIGKILL.

Each worker is a separate Python process running a small script (``subprocess``), so locks, transactions and
file renames are exercised exactly as two agents on one machine would exercise them.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memdir import MemoryTool, Store, open_store
from memdir.policy.audit import audit_log
from support.processes import Spawn

WORKERS = 8
ROUNDS = 100  # each round is one insert and one str_replace: 200 commands per worker

WORKER = r"""
import json, os, sys, time
from memdir import MemoryTool, open_store

url, wid, rounds, go = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
store = open_store(url)
tool = MemoryTool(store, actor=f"worker-{wid}", session=f"session-{wid}")
while not os.path.exists(go):
    time.sleep(0.001)
failures = []
for i in range(rounds):
    inserted = tool.execute(
        {"command": "insert", "path": "/memories/shared/log.md", "insert_line": 1, "insert_text": f"w{wid}-{i}"}
    )
    if inserted.is_error:
        failures.append(inserted.text)
    # Each worker owns one counter line of a shared file: a lost update would show as a counter going back,
    # and then as this worker's next str_replace not finding its line.
    counted = tool.execute(
        {
            "command": "str_replace",
            "path": "/memories/shared/counters.md",
            "old_str": f"\nw{wid}: {i}\n",
            "new_str": f"\nw{wid}: {i + 1}\n",
        }
    )
    if counted.is_error:
        failures.append(counted.text)
store.close()
print(json.dumps(failures))
"""

WRITER = r"""
import sys
from memdir import MemoryTool, open_store

url = sys.argv[1]
store = open_store(url)
tool = MemoryTool(store)
i = 0
while True:
    i += 1
    letter = b"AB"[i % 2 : i % 2 + 1]
    store.write("/memories/big.md", letter * (1_000_000 + (i % 7) * 100_000))
    old, new = f"count {i - 1}\n", f"count {i}\n"
    done = tool.execute({"command": "str_replace", "path": "/memories/counter.md", "old_str": old, "new_str": new})
    assert not done.is_error, done.text
    if i == 1:
        print("ready", flush=True)
"""

SIZES = {1_000_000 + k * 100_000 for k in range(7)}


def url_for(kind: str, tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'memory.db'}" if kind == "sqlite" else str(tmp_path / "store")


def integrity(kind: str, tmp_path: Path) -> str:
    db = tmp_path / "memory.db" if kind == "sqlite" else tmp_path / "store" / ".memdir" / "index.db"
    conn = sqlite3.connect(db)
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


@pytest.mark.parametrize("kind", ["directory", "sqlite"])
def test_concurrent_inserts_and_replaces_lose_no_update(tmp_path: Path, kind: str, spawn: Spawn) -> None:
    url = url_for(kind, tmp_path)
    store = open_store(url)
    tool = MemoryTool(store)
    counters = "counters\n" + "".join(f"w{w}: 0\n" for w in range(WORKERS))
    for path, text in (("/memories/shared/log.md", "log\n"), ("/memories/shared/counters.md", counters)):
        assert not tool.execute({"command": "create", "path": path, "file_text": text}).is_error
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    go = tmp_path / "go"
    procs = [
        spawn([sys.executable, str(script), url, str(w), str(ROUNDS), str(go)], stdout=subprocess.PIPE)
        for w in range(WORKERS)
    ]
    go.touch()  # all start together, for the most contention
    outputs = [p.communicate(timeout=240)[0] for p in procs]
    assert [p.returncode for p in procs] == [0] * WORKERS
    failures = [text for out in outputs for text in json.loads(out)]
    assert failures == [], failures[:5]

    log = store.read("/memories/shared/log.md").content.decode().split("\n")
    assert log[0] == "log" and log[-1] == ""
    expected = {f"w{w}-{i}" for w in range(WORKERS) for i in range(ROUNDS)}
    assert sorted(log[1:-1]) == sorted(expected), "an insert was lost or applied twice"
    for w in range(WORKERS):  # each worker's own lines keep its order (each went in at the top)
        mine = [line for line in log if line.startswith(f"w{w}-")]
        assert mine == [f"w{w}-{i}" for i in reversed(range(ROUNDS))]
    assert store.read("/memories/shared/counters.md").content.decode() == "counters\n" + "".join(
        f"w{w}: {ROUNDS}\n" for w in range(WORKERS)
    )
    # Exactly one version per command, each by the worker that ran it, none "external".
    for path in ("/memories/shared/log.md", "/memories/shared/counters.md"):
        history = store.history(path)
        assert len(history) == 1 + WORKERS * ROUNDS
        assert [v.op for v in history[1:]] == [history[1].op] * (WORKERS * ROUNDS)
        assert {v.actor for v in history[1:]} == {f"worker-{w}" for w in range(WORKERS)}
    versions = list(store.log())
    assert len(versions) == 2 + 2 * WORKERS * ROUNDS
    assert [v.version for v in versions] == list(range(1, len(versions) + 1))
    assert integrity(kind, tmp_path) == "ok"
    # Every process chained its versions and its audit rows onto what the others had committed: no fork.
    history, audit = store.verify_chain(), audit_log(store).verify_chain()
    assert (history.ok, history.checked) == (True, len(versions))
    assert audit.ok and audit.checked == audit.entries >= 2 * WORKERS * ROUNDS
    store.close()


def assert_whole(store: Store, tool: MemoryTool) -> int:
    """The state after a crash: each file is exactly one of the contents written, never torn or empty, and the
    history's last version is what is there now. Returns the counter's value."""
    big = store.read("/memories/big.md").content
    assert len(big) in SIZES, f"torn: {len(big)} bytes"
    assert big == big[:1] * len(big) and big[:1] in (b"A", b"B"), "torn: mixed content"
    counter = store.read("/memories/counter.md").content.decode()
    assert counter.startswith("count ") and counter.endswith("\n"), repr(counter[:40])
    value = int(counter.removeprefix("count ").strip())
    for path, content in (("/memories/big.md", big), ("/memories/counter.md", counter.encode())):
        assert store.history(path)[-1].sha256 == hashlib.sha256(content).hexdigest()
    listed = tool.execute({"command": "view", "path": "/memories"}).text
    assert ".memdir" not in listed and "tmp" not in listed
    assert [e.path.virtual for e in store.list_files()] == ["/memories/big.md", "/memories/counter.md"]
    return value


@pytest.mark.parametrize("kind", ["directory", "sqlite"])
def test_a_writer_killed_mid_write_never_leaves_a_torn_file(tmp_path: Path, kind: str, spawn: Spawn) -> None:
    url = url_for(kind, tmp_path)
    store = open_store(url)
    store.write("/memories/big.md", b"A" * 1_000_000)
    tool = MemoryTool(store)
    assert not tool.execute({"command": "create", "path": "/memories/counter.md", "file_text": "count 0\n"}).is_error
    store.close()
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    rng = random.Random(20240601)
    last = 0
    for _ in range(12):
        proc = spawn([sys.executable, str(script), url], stdout=subprocess.PIPE)
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.0, 0.25))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        proc.stdout.close()
        # Each run starts from "count 0" only if it never wrote: reset the counter for the next writer.
        store = open_store(url)
        tool = MemoryTool(store)
        value = assert_whole(store, tool)
        assert value >= 0
        last = max(last, value)
        store.write("/memories/counter.md", b"count 0\n")
        store.close()
    assert last >= 1, "the writer never got going; the kills tested nothing"
    assert integrity(kind, tmp_path) == "ok"


CREATOR = r"""
import json, os, sys, time
from memdir import MemoryTool, open_store

url, wid, go = sys.argv[1], int(sys.argv[2]), sys.argv[3]
store = open_store(url)
tool = MemoryTool(store, max_files=20, max_total_bytes=None, actor=f"worker-{wid}")
while not os.path.exists(go):
    time.sleep(0.001)
texts = [
    tool.execute({"command": "create", "path": f"/memories/w{wid}/f{i}.md", "file_text": "x\n"}).text
    for i in range(10)
]
store.close()
print(json.dumps(texts))
"""


@pytest.mark.parametrize("kind", ["directory", "sqlite"])
def test_racing_creators_never_take_the_namespace_over_its_file_limit(tmp_path: Path, kind: str, spawn: Spawn) -> None:
    # The store checks the limit in each write's own transaction: a check made before the write lock would let
    # several creators see 19 files at once and all write a 20th.
    url = url_for(kind, tmp_path)
    script = tmp_path / "creator.py"
    script.write_text(CREATOR)
    go = tmp_path / "go"
    procs = [spawn([sys.executable, str(script), url, str(w), str(go)], stdout=subprocess.PIPE) for w in range(6)]
    go.touch()
    texts = [text for p in procs for text in json.loads(p.communicate(timeout=120)[0])]
    assert [p.returncode for p in procs] == [0] * 6
    created = [t for t in texts if t.startswith("File created successfully at: ")]
    refused = [t for t in texts if t != "" and t not in created]
    assert len(created) == 20
    assert set(refused) == {
        "Error: The memory directory already holds 20 files, the limit is 20 files. Nothing was written; "
        "delete or merge files you no longer need."
    }
    assert len(refused) == 40
    with open_store(url) as store:
        assert store.usage().files == len(store.list_files()) == 20
