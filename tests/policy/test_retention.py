"""Expiry by TTL glob (last use from the audit log's access times) and history retention: `memdir gc`."""

from __future__ import annotations

import time

import pytest

from memdir import MemoryTool, Store
from memdir.policy.audit import AuditEntry, audit_log
from memdir.policy.config import PolicyConfig, TtlRule
from memdir.policy.retention import apply, plan

DAY = 86_400.0
WEEK = PolicyConfig(ttl=(TtlRule("scratch/**", 7 * DAY),))


def used(store: Store, path: str, when: float) -> None:
    """A read of ``path`` at ``when``, as the tool records it."""
    audit_log(store).record(AuditEntry(when, "tool", "model", None, None, "view", path), flush=True)


def test_files_matching_a_rule_expire_when_unused(store: Store) -> None:
    now = time.time()
    store.write("/memories/scratch/old.md", b"x")
    store.write("/memories/scratch/deep/read.md", b"x")
    store.write("/memories/keep.md", b"x")
    used(store, "/memories/scratch/deep/read.md", now + 5 * DAY)  # read five days after it was written

    planned = plan(store, WEEK, now=now + 10 * DAY)
    assert [e.path.virtual for e in planned.expired] == ["/memories/scratch/old.md"]
    assert planned.expired[0].rule.pattern == "scratch/**"
    assert plan(store, WEEK, now=now + 6 * DAY).expired == []


def test_a_dry_run_changes_nothing_and_apply_deletes_as_gc(store: Store) -> None:
    store.write("/memories/scratch/a.md", b"x")
    planned = plan(store, WEEK, now=time.time() + 8 * DAY)
    assert store.stat("/memories/scratch/a.md") is not None
    done = apply(store, planned)
    assert (done.deleted, done.skipped) == (["/memories/scratch/a.md"], [])
    assert store.stat("/memories/scratch/a.md") is None
    deletion = store.history("/memories/scratch/a.md")[-1]
    assert (deletion.op, deletion.actor, deletion.source) == ("delete", "gc", "expired: not used for 7d (scratch/**)")
    (entry,) = [e for e in audit_log(store).entries() if e.channel == "gc"]
    assert (entry.actor, entry.command, entry.path) == ("gc", "delete", "/memories/scratch/a.md")


def test_a_file_used_or_changed_after_the_plan_is_kept(store: Store) -> None:
    store.write("/memories/scratch/a.md", b"x")
    store.write("/memories/scratch/b.md", b"x")
    planned = plan(store, WEEK, now=time.time() + 8 * DAY)
    store.write("/memories/scratch/a.md", b"changed")
    with MemoryTool(store) as tool:
        tool.execute({"command": "view", "path": "/memories/scratch/b.md"})
    done = apply(store, planned)
    assert (done.deleted, sorted(done.skipped)) == ([], ["/memories/scratch/a.md", "/memories/scratch/b.md"])


def test_retention_prunes_superseded_versions_and_keeps_recent_deletions(store: Store) -> None:
    store.write("/memories/a.md", b"1")
    store.write("/memories/a.md", b"2")
    store.write("/memories/b.md", b"x")
    store.delete("/memories/b.md")
    config = PolicyConfig(keep_versions=DAY)
    assert apply(store, plan(store, config)).versions_pruned == 0  # all of it is recent
    later = plan(store, config, now=time.time() + 2 * DAY)
    assert later.prunable == 3
    assert apply(store, later).versions_pruned == 3
    assert [v.version for v in store.log()] == [2]


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("scratch/**", "/memories/scratch/a.md", True),
        ("scratch/**", "/memories/scratch/x/y/z.md", True),
        ("scratch/**", "/memories/scratchpad.md", False),
        ("/memories/inbox/*.md", "/memories/inbox/a.md", True),
        ("inbox/*.md", "/memories/inbox/sub/a.md", False),
        ("**/*.tmp", "/memories/a/b/c.tmp", True),
        ("**/*.tmp", "/memories/c.tmp", True),
        ("*.md", "/memories/a.md", True),
    ],
)
def test_ttl_globs(pattern: str, path: str, matches: bool) -> None:
    from memdir import parse

    assert TtlRule(pattern, 1).matches(parse(path)) is matches
