"""Every method of the SDK's memory stores resources, through ``AsyncAnthropic`` (the async client)."""

from __future__ import annotations

import asyncio

import anthropic
import pytest

from .conftest import AsyncClient

pytestmark = pytest.mark.anyio


async def test_every_method_through_the_async_client(aclient: AsyncClient) -> None:
    async with aclient("alice") as api:
        stores, memories, versions = (
            api.beta.memory_stores,
            api.beta.memory_stores.memories,
            api.beta.memory_stores.memory_versions,
        )
        store = await stores.create(name="async", description="d")
        assert (await stores.retrieve(store.id)).name == "async"
        assert (await stores.update(store.id, metadata={"k": "v"})).metadata == {"k": "v"}
        assert [s.id async for s in stores.list()] == [store.id]
        made = await memories.create(store.id, path="/a.md", content="one")
        assert (await memories.retrieve(made.id, memory_store_id=store.id)).content == "one"
        precondition = {"type": "content_sha256", "content_sha256": made.content_sha256}
        updated = await memories.update(made.id, memory_store_id=store.id, content="two", precondition=precondition)  # type: ignore[arg-type]
        with pytest.raises(anthropic.ConflictError):
            await memories.update(made.id, memory_store_id=store.id, content="3", precondition=precondition)  # type: ignore[arg-type]
        await asyncio.gather(*(memories.create(store.id, path=f"/many/{i}.md", content=str(i)) for i in range(30)))
        assert len([m async for m in memories.list(store.id, path_prefix="/many/", limit=7)]) == 30
        found = [v async for v in versions.list(store.id, memory_id=made.id)]
        assert [v.id for v in found] == [updated.memory_version_id, made.memory_version_id]
        assert (await versions.retrieve(made.memory_version_id, memory_store_id=store.id)).content == "one"
        assert (await versions.redact(made.memory_version_id, memory_store_id=store.id)).redacted_at is not None
        assert (await memories.delete(made.id, memory_store_id=store.id)).type == "memory_deleted"
        assert (await stores.archive(store.id)).archived_at is not None
        assert (await stores.delete(store.id)).type == "memory_store_deleted"
        with pytest.raises(anthropic.NotFoundError):
            await stores.retrieve(store.id)
