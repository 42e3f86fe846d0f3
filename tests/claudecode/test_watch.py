"""``memdir claude-code watch``: a change is recorded when it happens, not at the next hook."""

from __future__ import annotations

import queue
import threading

from memdir import open_store
from memdir.claudecode import Snapshot, watch

from .helpers import Layout

WAIT = 30  # seconds: an upper bound for a slow machine; the test moves on as soon as the change is recorded


def test_changes_are_recorded_as_they_happen(layout: Layout) -> None:
    found: queue.Queue[Snapshot] = queue.Queue()
    stop = threading.Event()
    watcher = threading.Thread(target=watch, kwargs={"report": found.put, "stopped": stop.is_set, "debounce_ms": 50})
    watcher.start()
    try:
        first = found.get(timeout=WAIT)  # the snapshot it starts with
        assert first.directories == 7
        (layout.reviewer / "MEMORY.md").write_text("# Reviewer\n- flag missing tests\n- and flaky ones\n")
        recorded = found.get(timeout=WAIT)
        (change,) = [v for r in recorded.recorded for v in r.versions]
        assert (change.path.virtual, change.op, change.actor, change.source) == (
            "/memories/MEMORY.md", "write", "claude-code", "watch"
        )  # fmt: skip
        (layout.fake.claude / "projects" / "-new-project" / "memory").mkdir(parents=True)  # a new directory
        (layout.fake.claude / "projects" / "-new-project" / "memory" / "MEMORY.md").write_text("# New\n")
        recorded = found.get(timeout=WAIT)
        assert [r.location.key for r in recorded.recorded if r.versions] == ["-new-project"]
    finally:
        stop.set()
        watcher.join(WAIT)
    assert not watcher.is_alive()
    with open_store("claude-code:agent/reviewer") as store:
        assert [v.op for v in store.history("/memories/MEMORY.md")] == ["create", "write"]
