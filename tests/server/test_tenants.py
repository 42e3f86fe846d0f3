"""Namespaces' stores are opened once and shared; the least recently used are closed, never under a request."""

from __future__ import annotations

from pathlib import Path

from memdir.server._tenants import Tenants


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


def test_memory_tools_are_kept_per_actor_and_session(tmp_path: Path) -> None:
    tenants = Tenants(f"sqlite://{tmp_path / 'm.db'}")
    with tenants.tool("alice", "model", "s1") as one, tenants.tool("alice", "model", "s1") as same:
        assert one is same
        with tenants.tool("alice", "user", "s1") as other:
            assert other is not one and (other.origin.actor, other.origin.session) == ("user", "s1")
        assert one.execute({"command": "create", "path": "/memories/a.md", "file_text": "x"}).is_error is False
    with tenants.lease("alice") as store:
        assert [(v.actor, v.session) for v in store.history("/memories/a.md")] == [("model", "s1")]
    tenants.close()
