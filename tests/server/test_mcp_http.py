"""MCP over streamable HTTP at /mcp, driven by the official `mcp` client: the tools of ``memdir mcp``, the same
bearer tokens, and each token reaching only its namespace."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import CallToolResult, TextContent

from backends import LiveServer
from memdir import MemoryStore, open_store
from memdir.integrations.mcp import INSTRUCTIONS, build_server

from .helpers import error_of

pytestmark = pytest.mark.anyio


async def memdir_mcp_tools() -> list[str]:
    """The tools ``memdir mcp`` offers (the same server is built for every token)."""
    return sorted(tool.name for tool in await build_server(MemoryStore()).list_tools())


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def connect(server: LiveServer, token: str, mode: str = "legacy") -> AsyncIterator[Client]:
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
        transport = streamable_http_client(f"{server.url}/mcp", http_client=http)
        async with Client(transport, mode=mode) as client:  # type: ignore[arg-type]
            yield client


def text_of(result: CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, TextContent)
    return block.text


async def call(client: Client, name: str, **arguments: Any) -> CallToolResult:
    return await client.call_tool(name, arguments)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_tools_of_memdir_mcp_with_a_token(server: LiveServer, mode: str) -> None:
    token = server.token("alice")
    async with connect(server, token, mode) as client:
        tools = sorted(t.name for t in (await client.list_tools()).tools)
        assert tools == await memdir_mcp_tools() and "memory_view" in tools
        if mode == "legacy":
            assert client.instructions == INSTRUCTIONS
        created = await call(client, "memory_create", path="/memories/a.md", file_text="one\n")
        assert (text_of(created), created.is_error) == ("File created successfully at: /memories/a.md", False)
        viewed = await call(client, "memory_view", path="/memories/a.md")
        assert text_of(viewed) == "Here's the content of /memories/a.md with line numbers:\n     1\tone"
        refused = await call(client, "memory_view", path="/memories/../x")
        assert (text_of(refused), refused.is_error) == (
            "Error: Path /memories/../x would escape /memories directory",
            True,
        )


async def test_writes_are_recorded_as_the_model_in_the_tokens_mcp_session(server: LiveServer) -> None:
    token = server.token("alice")
    async with connect(server, token) as client:
        await call(client, "memory_create", path="/memories/a.md", file_text="x")
    token_id = server.services.tokens.verify(token).id
    with open_store(server.services.config.store_url, namespace="alice") as store:
        (version,) = store.history("/memories/a.md")
    assert (version.actor, version.session) == ("model", f"mcp-{token_id}")


async def test_namespaces_are_isolated(server: LiveServer) -> None:
    async with connect(server, server.token("alice")) as alice:
        await call(alice, "memory_create", path="/memories/secret.md", file_text="alice's")
    async with connect(server, server.token("bob")) as bob:
        missing = await call(bob, "memory_view", path="/memories/secret.md")
        assert text_of(missing) == "The path /memories/secret.md does not exist. Please provide a valid path."
        listing = await call(bob, "memory_view", path="/memories")
        assert text_of(listing).endswith("\n0B\t/memories")
        await call(bob, "memory_create", path="/memories/secret.md", file_text="bob's")
    with open_store(server.services.config.store_url, namespace="alice") as store:
        assert store.read("/memories/secret.md").content == b"alice's"


async def test_a_wrong_token_is_refused(server: LiveServer) -> None:
    with pytest.raises(Exception):  # noqa: B017 - the client reports the 401 as a failed connection
        async with connect(server, "mdt_" + "x" * 43) as client:
            await client.list_tools()
    with httpx.Client(base_url=server.url) as http:
        refused = http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert error_of(refused) == (401, "unauthorized")


async def test_a_revoked_token_is_refused_on_its_next_call(server: LiveServer) -> None:
    token = server.token("alice")
    async with connect(server, token) as client:
        await call(client, "memory_create", path="/memories/a.md", file_text="x")
        server.services.tokens.revoke(server.services.tokens.verify(token).id)
        with pytest.raises(Exception):  # noqa: B017
            await call(client, "memory_view", path="/memories")


async def test_the_endpoint_is_stateless_so_any_worker_can_answer(server: LiveServer) -> None:
    headers = {
        "Authorization": f"Bearer {server.token('alice')}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    initialize = {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }  # fmt: skip
    async with httpx2.AsyncClient(base_url=server.url, headers=headers) as http:
        response = await http.post("/mcp", json=initialize)
        assert response.status_code == 200
        assert "mcp-session-id" not in response.headers  # no session to pin a client to one process
        listed = await http.post("/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert sorted(t["name"] for t in listed.json()["result"]["tools"]) == await memdir_mcp_tools()
