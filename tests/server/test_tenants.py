"""Namespaces' stores are opened once and shared; the least recently used are closed, never under a request."""

from __future__ import annotations

from pathlib import Path

from memdir.gate import Caller
from memdir.server._tenants import Tenants
from memdir.store import Origin


def test_a_store_is_shared_and_the_least_recently_used_is_closed_after_its_last_lease(tmp_path: Path) -> None:
    tenants = Tenants(f"sqlite://{tmp_path / 'm.db'}", limit=1)
    with tenants.lease("alice") as first, tenants.lease("alice") as again:
        assert first is again
        with tenants.lease("bob") as bob:  # alice is evicted while leased: it stays usable until released
            bob.write("/memories/b.md", b"b")
            first.write("/memories/a.md", b"a")
    with tenants.lease("alice") as reopened:
        assert reopened is not first
        assert reopened.read("/memories/a.md").content == b"a"
    tenants.close()


def test_a_memory_tool_acts_as_its_caller_behind_the_namespaces_gate(tmp_path: Path) -> None:
    tenants = Tenants(f"sqlite://{tmp_path / 'm.db'}")
    model = Caller("model", "s1", channel="tool", principal="t1", pinned=True)
    with tenants.tool("alice", model) as one:
        assert (one.origin.actor, one.origin.session) == ("model", "s1")
        assert one.execute({"command": "create", "path": "/memories/a.md", "file_text": "x"}).is_error is False
        one.origin = Origin("gc", "other")  # a pinned caller: who is recorded cannot be changed below the door
        assert (one.origin.actor, one.origin.session) == ("model", "s1")
    with tenants.gated("alice", Caller("user", "s2", pinned=True)) as gate:
        gate.write("/memories/b.md", b"y", origin=Origin("gc", "forged"))
        assert [(v.actor, v.session) for v in gate.history("/memories/b.md")] == [("user", "s2")]
    with tenants.lease("alice") as store:
        assert [(v.actor, v.session) for v in store.history("/memories/a.md")] == [("model", "s1")]
    tenants.close()
