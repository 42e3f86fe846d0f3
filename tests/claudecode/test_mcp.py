"""The MCP line `memdir claude-code install` prints: Claude Code starts it in the project, over that project's
auto memory (made when missing), and what Claude writes through it is a version like everything else."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import TextContent

from memdir import open_store

from .helpers import FakeHome, key

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_the_mcp_server_over_a_new_projects_memory(fake: FakeHome, _isolated_home: Path) -> None:
    project = fake.repo("fresh")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memdir", "mcp", "--store", "claude-code:?create=1"],
        env={"HOME": str(fake.home), "MEMDIR_HOME": str(_isolated_home), "PATH": os.environ["PATH"]},
        cwd=project,  # Claude Code starts an MCP server in the session's directory
    )
    async with Client(stdio_client(params), mode="legacy") as client:
        result = await client.call_tool(
            "memory_create", {"path": "/memories/user_role.md", "file_text": "Platform engineer.\n"}
        )
        assert not result.is_error
        assert isinstance(result.content[0], TextContent)
    memory = fake.claude / "projects" / key(project) / "memory"
    assert (memory / "user_role.md").read_text() == "Platform engineer.\n"
    with open_store(f"claude-code:{project}") as store:
        (version,) = store.history("/memories/user_role.md")
    assert (version.op, version.actor) == ("create", "model")
