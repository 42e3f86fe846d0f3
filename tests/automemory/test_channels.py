"""Auto memory is the memory tool's: the same upkeep over MCP and over HTTP as in the agent."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from mcp.client import Client

from backends import LiveServer
from memdir import open_store
from memdir.integrations.mcp import build_server
from memdir.server import ServerConfig

NOTE = "---\nname: Tea\ndescription: Green tea, no sugar\ntype: user\n---\nBody\n"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_over_mcp() -> None:
    store = open_store("memory:")
    async with Client(build_server(store)) as connected:
        created = await connected.call_tool("memory_create", {"path": "/memories/tea.md", "file_text": NOTE})
        assert not created.is_error
    assert b"\nmodified: " in store.read("/memories/tea.md").content
    assert store.read("/memories/MEMORY.md").content == b"- [Tea](tea.md) \xe2\x80\x94 Green tea, no sugar\n"


def test_over_http(tmp_path: Path) -> None:
    with LiveServer(ServerConfig(store_url=f"sqlite://{tmp_path / 'm.db'}", rate=0)) as server:
        headers = {"Authorization": f"Bearer {server.token('alice')}"}
        with httpx.Client(base_url=server.url, headers=headers, timeout=30) as http:
            http.post("/v1/tool", json={"command": "create", "path": "/memories/tea.md", "file_text": NOTE})
            lines = "".join(f"- {n}\n" for n in range(210))
            over = http.post("/v1/tool", json={"command": "create", "path": "/memories/big/MEMORY.md",
                                               "file_text": lines})  # fmt: skip
            index = http.post("/v1/tool", json={"command": "view", "path": "/memories/MEMORY.md"}).json()
    assert over.json()["is_error"] is False  # only /memories/MEMORY.md is the index
    assert index["text"].endswith("     1\t- [Tea](tea.md) — Green tea, no sugar")
