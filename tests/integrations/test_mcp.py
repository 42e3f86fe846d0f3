"""``memdir mcp`` as a real MCP server: spawned over stdio and driven by the `mcp` package's own client.

One server process per backend serves the whole module (each test works in its own directory); the store
is opened in this process too, to check what the server wrote and the history it recorded.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import CallToolResult, ImageContent, TextContent

from memdir import MISSING, MemoryTool, Origin, Store, open_store, parse
from memdir.gate import audit_entries
from memdir.integrations.mcp import INSTRUCTIONS, build_server
from support.terminal import ctrl_c_on_a_terminal

pytestmark = pytest.mark.anyio

LISTING = "Here're the files and directories up to 2 levels deep in {}, excluding hidden items and node_modules:"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(range(40))
TOOLS = [
    "memory_view",
    "memory_create",
    "memory_str_replace",
    "memory_insert",
    "memory_delete",
    "memory_rename",
    "memory_search",
]


def memdir_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "memdir", *args]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module", params=["directory", "sqlite"])
def store_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    base = tmp_path_factory.mktemp(str(request.param))
    return f"sqlite://{base / 'memory.db'}" if request.param == "sqlite" else str(base / "store")


@pytest.fixture(scope="module")
def server_log(store_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The server's stderr: it must never hold a traceback, whatever the tests sent."""
    path = tmp_path_factory.mktemp("server-log") / "stderr.txt"
    yield path
    assert "Traceback" not in path.read_text(encoding="utf-8", errors="replace")


@pytest.fixture(scope="module")
async def client(store_url: str, server_log: Path, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=sys.executable,
        args=memdir_command("--store", store_url, "mcp")[1:],
        env={"MEMDIR_HOME": str(tmp_path_factory.mktemp("home"))},
    )
    # mode="legacy": the initialize handshake, as Claude Code and Claude Desktop speak it today.
    with server_log.open("w", encoding="utf-8") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode="legacy") as connected:
            yield connected


@pytest.fixture(scope="module")
def store(store_url: str) -> Iterator[Store]:
    with open_store(store_url) as opened:
        yield opened


@pytest.fixture
def base(request: pytest.FixtureRequest) -> str:
    """A directory of this test's own, so tests sharing one server never meet."""
    name: str = request.function.__name__
    return "/memories/" + name.removeprefix("test_")


async def call(client: Client, tool: str, **arguments: Any) -> CallToolResult:
    return await client.call_tool(tool, arguments)


def text_of(result: CallToolResult) -> str:
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


async def ok(client: Client, tool: str, **arguments: Any) -> str:
    result = await call(client, tool, **arguments)
    assert not result.is_error, text_of(result)
    return text_of(result)


async def err(client: Client, tool: str, **arguments: Any) -> str:
    result = await call(client, tool, **arguments)
    assert result.is_error, text_of(result)
    return text_of(result)


async def create(client: Client, path: str, text: str) -> None:
    assert await ok(client, "memory_create", path=path, file_text=text) == f"File created successfully at: {path}"


# -- the server as a client sees it ----------------------------------------------------------------------------


async def test_initialize_names_the_server_and_gives_the_memory_protocol(client: Client) -> None:
    assert client.server_info is not None
    assert (client.server_info.name, client.server_info.version) == ("memdir", "0.1.0")
    assert client.instructions == INSTRUCTIONS
    assert "IMPORTANT: ALWAYS VIEW YOUR MEMORY DIRECTORY BEFORE DOING ANYTHING ELSE." in INSTRUCTIONS
    assert "`memory_view` tool with path `/memories`" in INSTRUCTIONS
    assert "ASSUME INTERRUPTION" in INSTRUCTIONS


async def test_the_tools_with_titles_and_annotations(client: Client) -> None:
    listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert sorted(listed) == sorted(TOOLS)
    hints = {
        name: (
            tool.title,
            tool.annotations and tool.annotations.read_only_hint,
            tool.annotations and tool.annotations.destructive_hint,
            tool.annotations and tool.annotations.idempotent_hint,
            tool.annotations and tool.annotations.open_world_hint,
        )
        for name, tool in listed.items()
    }
    assert hints == {
        "memory_view": ("View memory", True, False, True, False),
        "memory_create": ("Create memory file", False, False, True, False),
        "memory_str_replace": ("Edit memory file", False, True, False, False),
        "memory_insert": ("Insert into memory file", False, True, False, False),
        "memory_delete": ("Delete memory", False, True, True, False),
        "memory_rename": ("Rename memory", False, False, True, False),
        "memory_search": ("Search memory", True, False, True, False),
    }
    assert all(tool.description for tool in listed.values())


async def test_docs_mcp_md_describes_every_tool_the_server_lists(client: Client) -> None:
    listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    docs = (Path(__file__).resolve().parents[2] / "docs" / "mcp.md").read_text(encoding="utf-8")
    tools_table, annotations = docs.split("\n## The tools\n", 1)[1].split("### Annotations", 1)
    assert sorted(re.findall(r"^\| `(memory_\w+)` \|", tools_table, flags=re.M)) == sorted(listed)
    for name, tool in listed.items():
        assert f"| `{name}` | {tool.title} | {'yes' if tool.annotations.read_only_hint else 'no'} |" in annotations  # type: ignore[union-attr]
    count = {6: "six", 7: "seven", 8: "eight"}[len(listed)]
    assert f"The client gets {count} tools" in docs


async def test_input_schemas_say_types_and_what_is_required(client: Client) -> None:
    schemas = {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}
    shapes = {
        name: ({arg: prop.get("type") for arg, prop in schema["properties"].items()}, schema["required"])
        for name, schema in schemas.items()
    }
    assert shapes == {
        "memory_view": ({"path": "string", "view_range": "array"}, ["path"]),
        "memory_create": ({"path": "string", "file_text": "string"}, ["path", "file_text"]),
        "memory_str_replace": ({"path": "string", "old_str": "string", "new_str": "string"}, ["path", "old_str"]),
        "memory_insert": (
            {"path": "string", "insert_line": "integer", "insert_text": "string"},
            ["path", "insert_line", "insert_text"],
        ),
        "memory_delete": ({"path": "string"}, ["path"]),
        "memory_rename": ({"old_path": "string", "new_path": "string"}, ["old_path", "new_path"]),
        "memory_search": (
            {"query": "string", "limit": "integer", "max_tokens": "integer", "path_prefix": "string"},
            ["query"],
        ),
    }
    view_range = schemas["memory_view"]["properties"]["view_range"]
    assert (view_range["items"], view_range["minItems"], view_range["maxItems"]) == ({"type": "integer"}, 2, 2)
    assert schemas["memory_insert"]["properties"]["insert_line"]["minimum"] == 0
    for schema in schemas.values():
        assert all(prop["description"] for prop in schema["properties"].values())
    assert "/memories" in schemas["memory_view"]["properties"]["path"]["description"]
    assert "[start, -1]" in view_range["description"]
    assert "0 inserts at the top" in schemas["memory_insert"]["properties"]["insert_line"]["description"]


# -- every command, success and failure, in SPEC.md's words ----------------------------------------------------


async def test_create_then_view_a_file(client: Client, base: str) -> None:
    await create(client, f"{base}/notes.md", "one\ntwo\nthree\n")
    assert await ok(client, "memory_view", path=f"{base}/notes.md") == (
        f"Here's the content of {base}/notes.md with line numbers:\n     1\tone\n     2\ttwo\n     3\tthree"
    )
    assert await ok(client, "memory_view", path=f"{base}/notes.md", view_range=[2, -1]) == (
        f"Here's the content of {base}/notes.md with line numbers:\n     2\ttwo\n     3\tthree"
    )
    assert await err(client, "memory_create", path=f"{base}/notes.md", file_text="x") == (
        f"Error: File {base}/notes.md already exists"
    )


async def test_view_a_directory_two_levels_deep(client: Client, base: str) -> None:
    await create(client, f"{base}/b.md", "x" * 1536)
    await create(client, f"{base}/a/one.md", "1" * 100)
    await create(client, f"{base}/a/deep/two.md", "2" * 10)
    assert await ok(client, "memory_view", path=base) == "\n".join(
        [
            LISTING.format(base),
            f"1.6K\t{base}",
            f"110B\t{base}/a/",
            f"10B\t{base}/a/deep/",
            f"100B\t{base}/a/one.md",
            f"1.5K\t{base}/b.md",
        ]
    )


async def test_view_errors(client: Client, base: str) -> None:
    await create(client, f"{base}/a.md", "one\n")
    missing = f"{base}/missing.md"
    assert await err(client, "memory_view", path=missing) == (
        f"The path {missing} does not exist. Please provide a valid path."
    )
    assert await err(client, "memory_view", path=f"{base}/a.md", view_range=[3, 1]) == (
        "Error: Invalid `view_range` parameter: [3, 1]. It should be two integers [start, end] with "
        f"1 <= start <= 1 and start <= end, or [start, -1] to read to the end; {base}/a.md has 1 line."
    )


async def test_paths_outside_memories_are_refused(client: Client) -> None:
    assert await err(client, "memory_view", path="/memories/../x") == (
        "Error: Path /memories/../x would escape /memories directory"
    )
    assert await err(client, "memory_create", path="/memoriesX/a.md", file_text="x") == (
        "Error: Path must start with /memories, got: /memoriesX/a.md"
    )
    assert await err(client, "memory_rename", old_path="/etc/passwd", new_path="/memories/p") == (
        "Error: Path must start with /memories, got: /etc/passwd"
    )


async def test_str_replace(client: Client, base: str) -> None:
    path = f"{base}/a.md"
    await create(client, path, "a\nb\nc\nd\ne\nf\ng\n")
    assert await ok(client, "memory_str_replace", path=path, old_str="d", new_str="D") == (
        "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
        "     2\tb\n     3\tc\n     4\tD\n     5\te\n     6\tf"
    )
    assert await err(client, "memory_str_replace", path=path, old_str="zzz", new_str="y") == (
        f"No replacement was performed, old_str `zzz` did not appear verbatim in {path}."
    )
    await create(client, f"{base}/twice.md", "x\ny\nx\n")
    assert await err(client, "memory_str_replace", path=f"{base}/twice.md", old_str="x", new_str="z") == (
        "No replacement was performed. Multiple occurrences of old_str `x` in lines: 1, 3. Please ensure it is unique"
    )
    assert await err(client, "memory_str_replace", path=f"{base}/nope.md", old_str="x", new_str="y") == (
        f"Error: The path {base}/nope.md does not exist. Please provide a valid path."
    )


async def test_str_replace_without_new_str_deletes(client: Client, store: Store, base: str) -> None:
    path = f"{base}/a.md"
    await create(client, path, "keep\ndrop\n")
    await ok(client, "memory_str_replace", path=path, old_str="drop\n")
    assert store.read(parse(path)).content == b"keep\n"


async def test_insert(client: Client, store: Store, base: str) -> None:
    path = f"{base}/a.md"
    await create(client, path, "one\ntwo\n")
    assert await ok(client, "memory_insert", path=path, insert_line=0, insert_text="zero") == (
        f"The file {path} has been edited."
    )
    await ok(client, "memory_insert", path=path, insert_line=3, insert_text="three\n")
    assert store.read(parse(path)).content == b"zero\none\ntwo\nthree\n"
    assert await err(client, "memory_insert", path=path, insert_line=9, insert_text="x") == (
        "Error: Invalid `insert_line` parameter: 9. It should be within the range of lines of the file: [0, 4]"
    )
    assert await err(client, "memory_insert", path=f"{base}/nope.md", insert_line=0, insert_text="x") == (
        f"Error: The path {base}/nope.md does not exist"
    )


async def test_delete(client: Client, base: str) -> None:
    await create(client, f"{base}/dir/a.md", "x")
    assert await ok(client, "memory_delete", path=f"{base}/dir") == f"Successfully deleted {base}/dir"
    assert await err(client, "memory_delete", path=f"{base}/dir") == f"Error: The path {base}/dir does not exist"
    for root in ("/memories", "/memories/", "/memories//"):
        assert await err(client, "memory_delete", path=root) == "Error: Cannot delete the /memories directory itself"


async def test_rename(client: Client, base: str) -> None:
    await create(client, f"{base}/a.md", "x")
    await create(client, f"{base}/b.md", "y")
    assert await ok(client, "memory_rename", old_path=f"{base}/a.md", new_path=f"{base}/sub/c.md") == (
        f"Successfully renamed {base}/a.md to {base}/sub/c.md"
    )
    assert await err(client, "memory_rename", old_path=f"{base}/a.md", new_path=f"{base}/d.md") == (
        f"Error: The path {base}/a.md does not exist"
    )
    assert await err(client, "memory_rename", old_path=f"{base}/b.md", new_path=f"{base}/sub/c.md") == (
        f"Error: The destination {base}/sub/c.md already exists"
    )
    assert await err(client, "memory_rename", old_path="/memories", new_path=f"{base}/x") == (
        "Error: Cannot rename the /memories directory itself"
    )


async def test_an_image_comes_back_as_image_content(client: Client, store: Store, base: str) -> None:
    path = f"{base}/shot.png"
    store.write(parse(path), PNG, expect=MISSING, origin=Origin(actor="user"))
    result = await call(client, "memory_view", path=path)
    assert not result.is_error
    text, image = result.content
    assert isinstance(text, TextContent)
    assert text.text == f"Here's the image {path} (image/png, {len(PNG)}B):"
    assert isinstance(image, ImageContent)
    assert (image.mime_type, base64.b64decode(image.data)) == ("image/png", PNG)


# -- arguments: the core checks them and answers in its own words ----------------------------------------------


async def test_bad_arguments_get_the_cores_own_errors(client: Client, base: str) -> None:
    """Every case the MCP server answers exactly as `MemoryTool` does: nothing is coerced or refused on
    the way (pydantic would have turned "2" into 2, and quoted the input in its own message)."""
    path = f"{base}/a.md"
    steps: list[tuple[str, dict[str, Any]]] = [
        ("create", {"path": path, "file_text": '["a", {"b": 1}]\n'}),  # JSON text stays text
        ("view", {}),
        ("view", {"path": 5}),
        ("view", {"path": path, "view_range": "abc"}),
        ("view", {"path": path, "view_range": [0, 1]}),
        ("view", {"path": path, "view_range": [1, True]}),
        ("create", {"path": f"{base}/b.md"}),
        ("create", {"path": f"{base}/b.md", "file_text": ["x"]}),
        ("str_replace", {"path": path, "old_str": ""}),
        ("str_replace", {"path": path, "old_str": "a", "new_str": 3}),
        ("insert", {"path": path, "insert_line": "1", "insert_text": "x"}),
        ("insert", {"path": path, "insert_line": True, "insert_text": "x"}),
        ("insert", {"path": path, "insert_line": 1.5, "insert_text": "x"}),
        ("insert", {"path": path, "insert_line": -1, "insert_text": "x"}),
        ("delete", {"path": None}),
        ("rename", {"old_path": path}),
        ("view", {"path": path, "unknown": "ignored"}),
    ]
    reference = MemoryTool(open_store("memory:"))
    for command, arguments in steps:
        expected = reference.execute({"command": command, **arguments})
        result = await call(client, f"memory_{command}", **arguments)
        assert (text_of(result), result.is_error) == (expected.text, expected.is_error), (command, arguments)
    assert "Traceback" not in text_of(await call(client, "memory_view", path={"a": 1}))


async def test_a_view_range_sent_as_a_json_string_is_decoded(client: Client, base: str) -> None:
    # Some clients (Claude Desktop) send arrays as JSON strings; the SDK decodes those before the core sees them.
    await create(client, f"{base}/a.md", "one\ntwo\n")
    assert await ok(client, "memory_view", path=f"{base}/a.md", view_range="[2, 2]") == (
        f"Here's the content of {base}/a.md with line numbers:\n     2\ttwo"
    )


async def test_an_unknown_tool_is_a_tool_error(client: Client) -> None:
    assert await err(client, "memory_frobnicate", path="/memories") == "Unknown tool: memory_frobnicate"


# -- what the store holds afterwards ---------------------------------------------------------------------------


async def test_writes_are_in_the_store_with_history_by_the_model(client: Client, store: Store, base: str) -> None:
    await create(client, f"{base}/a.md", "one\n")
    await ok(client, "memory_str_replace", path=f"{base}/a.md", old_str="one", new_str="uno")
    await ok(client, "memory_insert", path=f"{base}/a.md", insert_line=1, insert_text="dos")
    await ok(client, "memory_rename", old_path=f"{base}/a.md", new_path=f"{base}/b.md")
    await create(client, f"{base}/c.md", "c")
    await ok(client, "memory_delete", path=f"{base}/c.md")

    assert store.read(parse(f"{base}/b.md")).content == b"uno\ndos\n"
    versions = store.history(parse(f"{base}/b.md")) + store.history(parse(f"{base}/c.md"))
    assert [v.op for v in versions] == ["create", "str_replace", "insert", "rename", "create", "delete"]
    assert {v.actor for v in versions} == {"model"}
    sessions = {v.session for v in versions}
    assert len(sessions) == 1  # one server process, one session
    (session,) = sessions
    assert session is not None
    assert re.fullmatch(r"[0-9a-f]{32}", session)


async def test_concurrent_calls_lose_no_update(client: Client, store: Store, base: str) -> None:
    path = f"{base}/log.md"
    await create(client, path, "")
    async with anyio.create_task_group() as tg:
        for n in range(20):
            tg.start_soon(
                functools.partial(call, client, "memory_insert", path=path, insert_line=0, insert_text=f"{n}")
            )
    lines = store.read(parse(path)).content.decode().splitlines()
    assert sorted(lines, key=int) == [str(n) for n in range(20)]


# -- the process: protocol only on stdout, clean failures --------------------------------------------------------


def _rpc(id_: int, method: str, params: dict[str, Any]) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params}) + "\n"


def test_stdout_carries_only_protocol(tmp_path: Path) -> None:
    """Raw JSON-RPC against a fresh store named by MEMDIR_STORE: every stdout line is a protocol message."""
    env = {**os.environ, "MEMDIR_STORE": str(tmp_path / "store"), "MEMDIR_HOME": str(tmp_path / "home")}
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}
    view = {"name": "memory_view", "arguments": {"path": "/memories"}}
    with subprocess.Popen(
        memdir_command("mcp"), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(_rpc(1, "initialize", hello))
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        proc.stdin.write(_rpc(2, "tools/list", {}) + _rpc(3, "tools/call", view))
        proc.stdin.flush()
        replies = {reply["id"]: reply for reply in (json.loads(proc.stdout.readline()) for _ in range(3))}
        _, stderr = proc.communicate(timeout=30)  # closes stdin: the server ends on its own
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr
    assert replies[1]["result"]["serverInfo"]["name"] == "memdir"
    assert len(replies[2]["result"]["tools"]) == len(TOOLS)
    assert replies[3]["result"] == {
        "content": [{"type": "text", "text": LISTING.format("/memories") + "\n0B\t/memories"}],
        "isError": False,
    }


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (
            "bogus:x",
            "Error: unknown store URL scheme 'bogus': use a directory path or one of claude-code:, file:, http:, https:, memory:, postgres:, postgresql:, sqlite:",
        ),
        ("{file}", "Error: could not create the store: not a directory"),
        # Opens, but cannot be read: found by the check run_stdio makes before serving.
        ("{broken}", "Error: could not open the store: its root has been replaced by a link or a file"),
    ],
    ids=["unknown-scheme", "directory-is-a-file", "unreadable-store"],
)
def test_a_bad_store_fails_in_one_line_before_serving(tmp_path: Path, url: str, message: str) -> None:
    (tmp_path / "a-file").write_text("x")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "memories").write_text("a file where the directory store keeps its files")
    done = subprocess.run(
        memdir_command("--store", url.format(file=tmp_path / "a-file", broken=tmp_path / "broken"), "mcp"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "MEMDIR_HOME": str(tmp_path / "home")},
    )
    assert (done.returncode, done.stdout, done.stderr) == (1, "", message + "\n")


async def test_the_modern_protocol_too(tmp_path: Path) -> None:
    """Without mode="legacy" the client negotiates the newest protocol version (no initialize handshake)."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "memdir", "--store", str(tmp_path), "mcp"])
    async with Client(params) as connected:
        assert connected.protocol_version == "2026-07-28"
        assert connected.instructions == INSTRUCTIONS
        result = await connected.call_tool("memory_delete", {"path": "/memories"})
        assert (text_of(result), result.is_error) == ("Error: Cannot delete the /memories directory itself", True)


# -- build_server in-process -----------------------------------------------------------------------------------


async def test_build_server_takes_a_session_and_core_options() -> None:
    store = open_store("memory:")
    server = build_server(store, session="s-1", create_overwrites=True, max_file_bytes=10)
    async with Client(server) as connected:
        listed = {tool.name: tool for tool in (await connected.list_tools()).tools}
        annotations = listed["memory_create"].annotations
        assert annotations is not None
        assert (annotations.destructive_hint, annotations.idempotent_hint) == (True, False)
        assert "replacing the file if it exists" in (listed["memory_create"].description or "")
        await connected.call_tool("memory_create", {"path": "/memories/a.md", "file_text": "x"})
        again = await connected.call_tool("memory_create", {"path": "/memories/a.md", "file_text": "y"})
        assert not again.is_error
        too_big = await connected.call_tool("memory_create", {"path": "/memories/b.md", "file_text": "x" * 11})
        assert too_big.is_error
        assert text_of(too_big).startswith("Error: The file would be 11 bytes, over the limit of 10 bytes")
    assert {(v.actor, v.session) for v in store.history(parse("/memories/a.md"))} == {("model", "s-1")}


# -- memory_search ---------------------------------------------------------------------------------------------


async def test_search_finds_the_passage_in_exact_text(client: Client, base: str) -> None:
    await create(client, f"{base}/acme.md", "# Acme\nprefers email follow-ups\n")
    text = await ok(client, "memory_search", query="email follow-ups", path_prefix=base)
    head, _, rest = text.partition("\n\n")
    assert head.startswith("1 passage matching 'email follow-ups', best first.")
    first, passage = rest.split("\n", 1)
    assert first.startswith(f"{base}/acme.md (line 2, relevance 1.00, ")
    assert passage == "     2\tprefers email follow-ups"


async def test_search_sees_edits_and_deletes(client: Client, base: str) -> None:
    await create(client, f"{base}/a.md", "walnut cake\n")
    await ok(client, "memory_str_replace", path=f"{base}/a.md", old_str="walnut", new_str="carrot")
    assert "carrot cake" in await ok(client, "memory_search", query="carrot", path_prefix=base)
    await ok(client, "memory_delete", path=f"{base}/a.md")
    assert (await ok(client, "memory_search", query="carrot walnut", path_prefix=base)).startswith("No memory matches")


async def test_search_errors_are_tool_errors(client: Client) -> None:
    assert await err(client, "memory_search") == (
        "Error: Missing required parameter `query` (a non-empty string) for memory_search."
    )
    assert await err(client, "memory_search", query="x", limit=0) == (
        "Error: Parameter `limit` of memory_search must be an integer from 1 to 50."
    )
    assert await err(client, "memory_search", query="x", path_prefix="/etc") == (
        "Error: Path must start with /memories, got: /etc"
    )
    assert await err(client, "memory_search", query='" OR NEAR(', limit="3") == (
        "Error: Parameter `limit` of memory_search must be an integer from 1 to 50."
    )


async def test_a_search_result_fits_its_token_budget_even_for_one_long_line(client: Client, base: str) -> None:
    await create(client, f"{base}/big.md", "zebra " + "lorem ipsum " * 8000 + "\n")
    text = await ok(client, "memory_search", query="zebra", path_prefix=base)
    assert len(text) <= 1500 * 4  # the default max_tokens, about four characters each
    assert text.endswith(f"… (cut to fit 1500 tokens: view line 1 of {base}/big.md to read it whole)")
    short = await ok(client, "memory_search", query="zebra", path_prefix=base, max_tokens=100)
    assert len(short) <= 100 * 4 and short.endswith(
        "… (cut to fit 100 tokens: view line 1 of " + base + "/big.md to read it whole)"
    )
    assert await err(client, "memory_search", query="zebra", max_tokens=5) == (
        "Error: Parameter `max_tokens` of memory_search must be an integer from 100 to 20000."
    )


async def test_search_refuses_a_long_query_and_repeats_a_query_bounded(client: Client, base: str) -> None:
    assert await err(client, "memory_search", query="walnut " * 200) == (
        "Error: Parameter `query` of memory_search is 1,400 characters, over the limit of 1,000: search for a few "
        "words or a short question."
    )
    text = await ok(client, "memory_search", query="it's\x1b " + "q" * 500, path_prefix=base)
    # Its first 200 characters (an escape shown as its four), then how long the query was.
    assert text.startswith("No memory matches 'it's\\x1b " + "q" * 194 + "… (506 characters)'. ")


async def test_each_search_is_audited_once_and_a_refused_one_as_an_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "config.toml").write_text('[search]\nmode = "fts"\n')
    monkeypatch.setenv("MEMDIR_CONFIG", str(tmp_path / "config.toml"))
    store = open_store("memory:")
    refused = ({"query": "x", "path_prefix": "/etc/passwd"}, {"query": "x", "limit": "many"}, {"query": ""})
    async with Client(build_server(store, session="s-2")) as connected:
        await connected.call_tool("memory_create", {"path": "/memories/a.md", "file_text": "walnut cake\n"})
        assert not (await connected.call_tool("memory_search", {"query": "walnut"})).is_error
        for arguments in refused:
            assert (await connected.call_tool("memory_search", arguments)).is_error
    searches = [
        (e.channel, e.actor, e.session, e.path, e.outcome) for e in audit_entries(store) if e.command == "search"
    ]
    assert searches == [
        ("mcp", "model", "s-2", None, "ok"),
        ("mcp", "model", "s-2", "/etc/passwd", "error"),
        ("mcp", "model", "s-2", None, "error"),
        ("mcp", "model", "s-2", None, "error"),
    ]


def test_on_a_terminal_it_says_what_it_waits_for_and_one_ctrl_c_ends_it(tmp_path: Path) -> None:
    store = tmp_path / "memory"
    env = {**os.environ, "MEMDIR_HOME": str(tmp_path / "home")}
    argv = [sys.executable, "-m", "memdir", "mcp", "--store", str(store)]
    shown, status = ctrl_c_on_a_terminal(argv, env, until=b"Ctrl-C ends it.")
    assert shown.startswith(
        f"Created a new store at {store}.\nmemdir mcp: serving {store} over stdio, waiting for an MCP client's "
        "JSON-RPC messages on stdin.\n"
    )
    assert "memdir mcp: stopped." in shown and "Aborted!" not in shown
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 130
