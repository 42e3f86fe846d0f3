"""memdir's Anthropic SDK adapters, driven by the real SDK over HTTP against the fake Messages API.

Nothing in the SDK is mocked: the tool runner sends real requests to `support.anthropic_server`, runs the
scripted tool calls through memdir, and the ``tool_result`` blocks it sends back are asserted on as the
server recorded them.
"""

from __future__ import annotations

import base64
import hashlib
import inspect
import os
import re
import stat
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import anthropic
import anyio
import pytest
from anthropic.lib.tools import BetaAbstractMemoryTool, BetaAsyncAbstractMemoryTool, ToolError
from anthropic.tools.memory import BetaAsyncLocalFilesystemMemoryTool, BetaLocalFilesystemMemoryTool
from anthropic.types.beta import (
    BetaMemoryTool20250818CreateCommand,
    BetaMemoryTool20250818DeleteCommand,
    BetaMemoryTool20250818InsertCommand,
    BetaMemoryTool20250818RenameCommand,
    BetaMemoryTool20250818StrReplaceCommand,
    BetaMemoryTool20250818ViewCommand,
)

import memdir
import memdir.anthropic
from memdir.anthropic import (
    AsyncLocalFilesystemMemoryTool,
    AsyncMemoryTool,
    LocalFilesystemMemoryTool,
    MemoryTool,
    history_path,
)
from support.anthropic_server import FakeAnthropicServer, error_reply, text_reply, tool_use_reply

MODEL = "claude-fake-model"  # a name the SDK has no deprecation warning for
BETAS = ["context-management-2025-06-27"]
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00fake-image-bytes"
LISTING = "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:"
NOT_FOUND = "The path /memories/notes.md does not exist. Please provide a valid path."
COMMAND_CHOICES = "view, create, str_replace, insert, delete, rename"

# The model's turns: each call, the exact text SPEC.md says comes back, and whether it is an error.
TURNS: list[list[tuple[dict[str, Any], str, bool]]] = [
    [
        (
            {"command": "create", "path": "/memories/notes.md", "file_text": "- likes coffee\n"},
            "File created successfully at: /memories/notes.md",
            False,
        ),
        (
            {"command": "create", "path": "/memories/notes.md", "file_text": "again\n"},
            "Error: File /memories/notes.md already exists",
            True,
        ),
        (
            {"command": "view", "path": "/memories/notes.md"},
            "Here's the content of /memories/notes.md with line numbers:\n     1\t- likes coffee",
            False,
        ),
    ],
    [
        (
            {"command": "str_replace", "path": "/memories/notes.md", "old_str": "coffee", "new_str": "tea"},
            "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
            "     1\t- likes tea",
            False,
        ),
        (
            {"command": "str_replace", "path": "/memories/notes.md", "old_str": "milk", "new_str": "x"},
            "No replacement was performed, old_str `milk` did not appear verbatim in /memories/notes.md.",
            True,
        ),
        (
            {"command": "insert", "path": "/memories/notes.md", "insert_line": 1, "insert_text": "- early riser\n"},
            "The file /memories/notes.md has been edited.",
            False,
        ),
        (
            {"command": "insert", "path": "/memories/notes.md", "insert_line": 9, "insert_text": "x"},
            "Error: Invalid `insert_line` parameter: 9. It should be within the range of lines of the file: [0, 2]",
            True,
        ),
        ({"command": "view", "path": "/memories"}, f"{LISTING}\n26B\t/memories\n26B\t/memories/notes.md", False),
    ],
    [
        (
            {"command": "view", "path": "/memoriesX/a.md"},
            "Error: Path must start with /memories, got: /memoriesX/a.md",
            True,
        ),
        (
            {"command": "view", "path": "/memories/../secrets"},
            "Error: Path /memories/../secrets would escape /memories directory",
            True,
        ),
        ({"command": "delete", "path": "/memories"}, "Error: Cannot delete the /memories directory itself", True),
        (
            {"command": "rename", "old_path": "/memories", "new_path": "/memories/x"},
            "Error: Cannot rename the /memories directory itself",
            True,
        ),
    ],
    [
        (
            {"command": "rename", "old_path": "/memories/notes.md", "new_path": "/memories/prefs/notes.md"},
            "Successfully renamed /memories/notes.md to /memories/prefs/notes.md",
            False,
        ),
        ({"command": "view", "path": "/memories/notes.md"}, NOT_FOUND, True),
        (
            {"command": "delete", "path": "/memories/prefs/notes.md"},
            "Successfully deleted /memories/prefs/notes.md",
            False,
        ),
        (
            {"command": "delete", "path": "/memories/prefs/notes.md"},
            "Error: The path /memories/prefs/notes.md does not exist",
            True,
        ),
    ],
    [
        # Malformed calls reach memdir's own checks untouched (the SDK's command model would not say what is wrong).
        (
            {"command": "insert", "path": "/memories/a.md", "insert_line": "one", "insert_text": "x"},
            "Error: Parameter `insert_line` of command `insert` must be an integer, got a string.",
            True,
        ),
        (
            {"path": "/memories"},
            f"Error: Missing required parameter `command`. Use one of: {COMMAND_CHOICES}.",
            True,
        ),
        ({"command": "bogus"}, f"Error: Unknown command `bogus`. Use one of: {COMMAND_CHOICES}.", True),
        (
            {"command": "create", "path": "/memories/a.md"},
            "Error: Missing required parameter `file_text` for command `create`.",
            True,
        ),
    ],
]


def script_turns(server: FakeAnthropicServer) -> None:
    for turn in TURNS:
        server.script(tool_use_reply([("memory", call) for call, _, _ in turn]))
    server.script(text_reply("Saved."))


def run_tools(server: FakeAnthropicServer, tool: object, *, mode: str, **params: Any) -> Any:
    """Run the SDK's tool runner (sync or async, streaming or not) to the end, keeping history client-side."""
    stream = mode.endswith("-stream")
    if mode.startswith("async"):
        return anyio.run(_run_async, server, tool, stream, params)
    with anthropic.Anthropic(api_key="test-key", base_url=server.url) as client:
        runner = client.beta.messages.tool_runner(
            **_runner_params(tool, params),
            stream=stream,
        )
        return runner.until_done()


async def _run_async(server: FakeAnthropicServer, tool: object, stream: bool, params: dict[str, Any]) -> Any:
    async with anthropic.AsyncAnthropic(api_key="test-key", base_url=server.url) as client:
        runner = client.beta.messages.tool_runner(**_runner_params(tool, params), stream=stream)
        return await runner.until_done()


def _runner_params(tool: object, params: dict[str, Any]) -> dict[str, Any]:
    # thread=False: the runner sends the whole history each turn, as a client-side agent loop does.
    defaults = {
        "model": MODEL,
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": "Remember that I like coffee."}],
        "tools": [tool],
        "betas": BETAS,
        "thread": False,
    }
    return {**defaults, **params}


def sent_results(server: FakeAnthropicServer) -> list[list[tuple[object, bool]]]:
    """Per turn, the tool results the runner sent back: (content, is_error)."""
    return [
        [(block["content"], block.get("is_error", False)) for block in request.tool_results()]
        for request in server.message_requests[1:]
    ]


def adapter(mode: str, store: memdir.Store, **options: Any) -> MemoryTool | AsyncMemoryTool:
    return AsyncMemoryTool(store, **options) if mode.startswith("async") else MemoryTool(store, **options)


MODES = ["sync", "sync-stream", "async", "async-stream"]


# -- through the SDK's tool runner --------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_runner_sends_back_specs_exact_strings_and_error_flags(
    anthropic_server: FakeAnthropicServer, mode: str
) -> None:
    script_turns(anthropic_server)
    final = run_tools(anthropic_server, adapter(mode, memdir.open_store("memory:")), mode=mode)

    assert final.content[0].text == "Saved."
    assert sent_results(anthropic_server) == [[(text, error) for _, text, error in turn] for turn in TURNS]
    assert anthropic_server.pending == 0


@pytest.mark.parametrize("mode", MODES)
def test_runner_pairs_each_result_with_its_tool_use_and_sends_full_history(
    anthropic_server: FakeAnthropicServer, mode: str
) -> None:
    script_turns(anthropic_server)
    run_tools(anthropic_server, adapter(mode, memdir.open_store("memory:")), mode=mode)

    requests = anthropic_server.message_requests
    for reply, request in zip(anthropic_server.replies, requests[1:], strict=False):
        asked = [block["id"] for block in reply["content"] if block["type"] == "tool_use"]
        assert [block["tool_use_id"] for block in request.tool_results()] == asked
    # Client-side history: every request carries the whole conversation, as sent.
    assert [len(r.body["messages"]) for r in requests] == [1, 3, 5, 7, 9, 11]
    assert all("thread" not in r.body for r in requests)
    assert all(r.stream is mode.endswith("-stream") for r in requests)


@pytest.mark.parametrize("mode", MODES)
def test_runner_sends_the_memory_tool_definition_with_cache_control(
    anthropic_server: FakeAnthropicServer, mode: str
) -> None:
    anthropic_server.script(text_reply("Nothing to remember."))
    tool = adapter(mode, memdir.open_store("memory:"), cache_control={"type": "ephemeral"})
    run_tools(anthropic_server, tool, mode=mode)

    [request] = anthropic_server.requests
    assert request.body["tools"] == [
        {"type": "memory_20250818", "name": "memory", "cache_control": {"type": "ephemeral"}}
    ]
    assert "context-management-2025-06-27" in request.betas


@pytest.mark.parametrize("mode", MODES)
def test_image_view_goes_back_as_content_blocks(anthropic_server: FakeAnthropicServer, mode: str) -> None:
    store = memdir.open_store("memory:")
    store.write("/memories/cat.png", PNG)
    anthropic_server.script(
        tool_use_reply([("memory", {"command": "view", "path": "/memories/cat.png"})]), text_reply("A cat.")
    )
    run_tools(anthropic_server, adapter(mode, store), mode=mode)

    [[(content, is_error)]] = sent_results(anthropic_server)
    data = base64.b64encode(PNG).decode()
    assert is_error is False
    assert content == [
        {"type": "text", "text": "Here's the image /memories/cat.png (image/png, 25B):"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}},
    ]


@pytest.mark.parametrize("mode", MODES)
def test_limits_pass_through_to_the_core(anthropic_server: FakeAnthropicServer, mode: str) -> None:
    anthropic_server.script(
        tool_use_reply([("memory", {"command": "create", "path": "/memories/big.md", "file_text": "x" * 11})]),
        text_reply("Too big."),
    )
    store = memdir.open_store("memory:")
    run_tools(anthropic_server, adapter(mode, store, max_file_bytes=10), mode=mode)

    [[(content, is_error)]] = sent_results(anthropic_server)
    assert is_error is True
    assert content == (
        "Error: The file would be 11 bytes, over the limit of 10 bytes (10B) per memory file. Nothing was written."
    )
    assert store.stat("/memories/big.md") is None


@pytest.mark.parametrize("mode", MODES)
def test_context_management_passes_through_both_ways(anthropic_server: FakeAnthropicServer, mode: str) -> None:
    edits = {"edits": [{"type": "clear_tool_uses_20250919", "keep": {"type": "tool_uses", "value": 1}}]}
    applied = {
        "applied_edits": [{"type": "clear_tool_uses_20250919", "cleared_tool_uses": 2, "cleared_input_tokens": 80}]
    }
    anthropic_server.script(
        tool_use_reply([("memory", {"command": "view", "path": "/memories"})]),
        text_reply("Done.", context_management=applied),
    )
    final = run_tools(
        anthropic_server, adapter(mode, memdir.open_store("memory:")), mode=mode, context_management=edits
    )

    assert [r.body["context_management"] for r in anthropic_server.requests] == [edits, edits]
    assert final.context_management.applied_edits[0].cleared_tool_uses == 2


def test_threaded_runner_works_too_and_the_server_rebuilds_the_conversation(
    anthropic_server: FakeAnthropicServer,
) -> None:
    """The runner's default mode keeps history server-side; the fake server follows it."""
    script_turns(anthropic_server)
    run_tools(anthropic_server, MemoryTool(memdir.open_store("memory:")), mode="sync", thread=None)

    requests = anthropic_server.message_requests
    assert requests[0].body["thread"] == {"type": "create"}
    assert requests[1].body["thread"] == {"type": "continue", "previous_message_id": anthropic_server.replies[0]["id"]}
    assert [len(r.body["messages"]) for r in requests[1:]] == [1] * len(TURNS)
    assert [len(r.messages) for r in requests] == [1, 3, 5, 7, 9, 11]
    assert sent_results(anthropic_server)[0] == [(text, error) for _, text, error in TURNS[0]]


# -- the fake server itself -----------------------------------------------------------------------------------


def test_server_retries_scripted_rate_limit_then_answers(
    anthropic_server: FakeAnthropicServer, anthropic_client: anthropic.Anthropic
) -> None:
    anthropic_server.script(error_reply(429, "slow down"), text_reply("hello"))
    message = anthropic_client.messages.create(model=MODEL, max_tokens=10, messages=[{"role": "user", "content": "hi"}])

    assert message.content[0].type == "text" and message.content[0].text == "hello"
    first, second = anthropic_server.requests
    assert first.body == second.body
    assert (first.headers["x-stainless-retry-count"], second.headers["x-stainless-retry-count"]) == ("0", "1")
    assert message.usage.input_tokens > 0 and message.usage.output_tokens > 0


def test_server_reply_can_depend_on_the_request(
    anthropic_server: FakeAnthropicServer, anthropic_client: anthropic.Anthropic
) -> None:
    anthropic_server.script(lambda request: text_reply(f"you said {request.messages[-1]['content']}"))
    message = anthropic_client.messages.create(
        model=MODEL, max_tokens=10, messages=[{"role": "user", "content": "ping"}]
    )
    assert message.content[0].type == "text" and message.content[0].text == "you said ping"


def test_server_fails_loudly_when_the_script_runs_out(
    anthropic_server: FakeAnthropicServer, anthropic_client: anthropic.Anthropic
) -> None:
    with pytest.raises(anthropic.BadRequestError, match="no scripted reply left for request #1"):
        anthropic_client.messages.create(model=MODEL, max_tokens=10, messages=[{"role": "user", "content": "hi"}])
    assert len(anthropic_server.requests) == 1  # not retried


def test_server_counts_tokens_without_using_the_script(
    anthropic_server: FakeAnthropicServer, anthropic_client: anthropic.Anthropic
) -> None:
    counted = anthropic_client.beta.messages.count_tokens(
        model=MODEL, messages=[{"role": "user", "content": "hello there"}]
    )
    assert counted.input_tokens > 0
    assert anthropic_server.requests[0].path == "/v1/messages/count_tokens"
    assert anthropic_server.message_requests == []


def test_server_streams_text_and_tool_input_in_pieces(
    anthropic_server: FakeAnthropicServer, anthropic_client: anthropic.Anthropic
) -> None:
    call = {"command": "create", "path": "/memories/a.md", "file_text": "a fairly long line of text\n"}
    anthropic_server.script(tool_use_reply([("memory", call, "toolu_1")], text="Let me note that down."))
    with anthropic_client.beta.messages.stream(
        model=MODEL, max_tokens=100, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        kinds = [event.type for event in stream]
        message = stream.get_final_message()

    assert kinds.count("text") > 1 and kinds.count("input_json") > 1
    assert message.stop_reason == "tool_use"
    assert message.content[1].type == "tool_use"
    assert (message.content[1].id, message.content[1].input) == ("toolu_1", call)


# -- the adapters called directly ----------------------------------------------------------------------------


def test_adapters_are_the_sdks_memory_tools() -> None:
    store = memdir.open_store("memory:")
    sync_tool, async_tool = MemoryTool(store), AsyncMemoryTool(store)
    assert isinstance(sync_tool, BetaAbstractMemoryTool)
    assert isinstance(async_tool, BetaAsyncAbstractMemoryTool)
    assert sync_tool.name == async_tool.name == "memory"
    assert sync_tool.to_dict() == async_tool.to_dict() == {"type": "memory_20250818", "name": "memory"}
    assert sync_tool.store is store


def test_errors_raise_the_sdks_tool_error_with_the_exact_text() -> None:
    tool = MemoryTool(memdir.open_store("memory:"))
    with pytest.raises(ToolError) as caught:
        tool.call({"command": "delete", "path": "/memories/nope.md"})
    assert caught.value.content == "Error: The path /memories/nope.md does not exist"


def command_models() -> list[object]:
    """One SDK command model per command, in an order where each succeeds."""
    return [
        BetaMemoryTool20250818CreateCommand(command="create", path="/memories/a.md", file_text="one\ntwo\n"),
        BetaMemoryTool20250818ViewCommand(command="view", path="/memories/a.md", view_range=[2, -1]),
        BetaMemoryTool20250818StrReplaceCommand(
            command="str_replace", path="/memories/a.md", old_str="two", new_str="2"
        ),
        BetaMemoryTool20250818InsertCommand(command="insert", path="/memories/a.md", insert_line=0, insert_text="zero"),
        BetaMemoryTool20250818RenameCommand(command="rename", old_path="/memories/a.md", new_path="/memories/b.md"),
        BetaMemoryTool20250818DeleteCommand(command="delete", path="/memories/b.md"),
    ]


EXPECTED_MODEL_RESULTS = [
    "File created successfully at: /memories/a.md",
    "Here's the content of /memories/a.md with line numbers:\n     2\ttwo",
    "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
    "     1\tone\n     2\t2",
    "The file /memories/a.md has been edited.",
    "Successfully renamed /memories/a.md to /memories/b.md",
    "Successfully deleted /memories/b.md",
]


def test_sync_abstract_methods_take_the_sdks_command_models() -> None:
    tool = MemoryTool(memdir.open_store("memory:"))
    methods = [tool.create, tool.view, tool.str_replace, tool.insert, tool.rename, tool.delete]
    results = [method(command) for method, command in zip(methods, command_models(), strict=True)]  # type: ignore[operator]
    assert results == EXPECTED_MODEL_RESULTS


def test_async_execute_takes_the_sdks_command_models() -> None:
    async def run() -> list[object]:
        tool = AsyncMemoryTool(memdir.open_store("memory:"))
        return [await tool.execute(command) for command in command_models()]  # type: ignore[arg-type]

    assert anyio.run(run) == EXPECTED_MODEL_RESULTS


# -- sync/async parity -----------------------------------------------------------------------------------------

PARITY_CALLS: list[dict[str, Any]] = [call for turn in TURNS for call, _, _ in turn] + [
    {"command": "view", "path": "/memories/cat.png"},
    {"command": "create", "path": "/memories/deep/er/file.md", "file_text": "x\n"},
    {"command": "view", "path": "/memories"},
]


def outcome(run: Callable[[], object]) -> tuple[object, bool]:
    try:
        return run(), False
    except ToolError as exc:
        return exc.content, True


async def async_outcomes(tool: AsyncMemoryTool, calls: Sequence[dict[str, Any]]) -> list[tuple[object, bool]]:
    results: list[tuple[object, bool]] = []
    for call in calls:
        try:
            results.append((await tool.call(call), False))
        except ToolError as exc:
            results.append((exc.content, True))
    return results


def test_sync_and_async_adapters_give_identical_results() -> None:
    stores = [memdir.open_store("memory:"), memdir.open_store("memory:")]
    for store in stores:
        store.write("/memories/cat.png", PNG)
    sync_tool, async_tool = MemoryTool(stores[0]), AsyncMemoryTool(stores[1])

    sync_results = [outcome(partial(sync_tool.call, call)) for call in PARITY_CALLS]
    async_results = anyio.run(async_outcomes, async_tool, PARITY_CALLS)

    assert sync_results == async_results
    assert [error for _, error in sync_results].count(True) == 13


def test_sync_and_async_local_filesystem_tools_leave_identical_trees(tmp_path: Path) -> None:
    sync_tool = LocalFilesystemMemoryTool(tmp_path / "sync")
    async_tool = AsyncLocalFilesystemMemoryTool(tmp_path / "async")

    sync_results = [outcome(partial(sync_tool.call, call)) for call in PARITY_CALLS[:-3]]
    async_results = anyio.run(async_outcomes, async_tool, PARITY_CALLS[:-3])

    assert sync_results == async_results
    assert tree(tmp_path / "sync") == tree(tmp_path / "async")


# -- drop-in for the SDK's local filesystem tools ---------------------------------------------------------------

# Commands both tools accept; the SDK's answers to them are the same words.
DROP_IN_CALLS: list[dict[str, Any]] = [
    {"command": "create", "path": "/memories/a.md", "file_text": "alpha\nbeta\n"},
    {"command": "create", "path": "/memories/dir/b.md", "file_text": "one\n"},
    {"command": "create", "path": "/memories/dir/c.md", "file_text": "gone soon\n"},
    {"command": "str_replace", "path": "/memories/a.md", "old_str": "beta", "new_str": "gamma"},
    {"command": "insert", "path": "/memories/dir/b.md", "insert_line": 1, "insert_text": "two\n"},
    {"command": "rename", "old_path": "/memories/dir/b.md", "new_path": "/memories/moved/b.md"},
    {"command": "delete", "path": "/memories/dir/c.md"},
    {"command": "create", "path": "/memories/dir/d.md", "file_text": "kept\n"},
]


def tree(base: Path) -> dict[str, bytes | None]:
    """Everything under ``base``: files with their bytes, directories as None."""
    return {
        path.relative_to(base).as_posix(): path.read_bytes() if path.is_file() else None
        for path in sorted(base.rglob("*"))
    }


def files(base: Path) -> dict[str, bytes | None]:
    return {path: data for path, data in tree(base).items() if data is not None}


def test_same_files_and_words_as_the_sdks_local_filesystem_tool(tmp_path: Path) -> None:
    sdk, ours = BetaLocalFilesystemMemoryTool(str(tmp_path / "sdk")), LocalFilesystemMemoryTool(tmp_path / "ours")

    ours_said, sdk_said = [ours.call(call) for call in DROP_IN_CALLS], [sdk.call(call) for call in DROP_IN_CALLS]
    # One deliberate difference: the SDK's snippet shows a phantom empty line after a final newline (SPEC.md: a
    # final newline does not make an extra line).
    assert sdk_said.pop(3) == f"{ours_said.pop(3)}\n     3\t"
    assert ours_said == sdk_said
    assert files(tmp_path / "ours") == files(tmp_path / "sdk")
    assert files(tmp_path / "ours") == {
        "memories/a.md": b"alpha\ngamma\n",
        "memories/dir/d.md": b"kept\n",
        "memories/moved/b.md": b"one\ntwo\n",
    }


def test_writes_nothing_but_the_memory_files_under_base_path(tmp_path: Path) -> None:
    tool = LocalFilesystemMemoryTool(tmp_path)
    for call in DROP_IN_CALLS:
        tool.call(call)
    # Directories exist while they hold files (memdir removes emptied ones; the SDK leaves them behind).
    assert tree(tmp_path) == {
        "memories": None,
        "memories/a.md": b"alpha\ngamma\n",
        "memories/dir": None,
        "memories/dir/d.md": b"kept\n",
        "memories/moved": None,
        "memories/moved/b.md": b"one\ntwo\n",
    }


def test_refuses_memories_prefix_lookalike_that_the_sdk_accepts(tmp_path: Path) -> None:
    call = {"command": "create", "path": "/memoriesX/a.md", "file_text": "x\n"}
    sdk, ours = BetaLocalFilesystemMemoryTool(str(tmp_path / "sdk")), LocalFilesystemMemoryTool(tmp_path / "ours")

    # The SDK's string-prefix check maps /memoriesX/a.md to /memories/X/a.md: the bug SPEC.md fixes.
    assert sdk.call(call) == "File created successfully at: /memoriesX/a.md"
    assert files(tmp_path / "sdk") == {"memories/X/a.md": b"x\n"}

    with pytest.raises(ToolError) as caught:
        ours.call(call)
    assert caught.value.content == "Error: Path must start with /memories, got: /memoriesX/a.md"
    assert tree(tmp_path / "ours") == {"memories": None}


@pytest.mark.parametrize(
    "call",
    [
        {"command": "view", "path": "/memories/link/secret.md"},
        {"command": "create", "path": "/memories/link/new.md", "file_text": "x\n"},
        {"command": "str_replace", "path": "/memories/link/secret.md", "old_str": "secret", "new_str": "mine"},
        {"command": "delete", "path": "/memories/link/secret.md"},
    ],
    ids=lambda call: call["command"],
)
def test_a_symlink_planted_after_start_up_is_not_followed(tmp_path: Path, call: dict[str, Any]) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("secret\n")
    tool = LocalFilesystemMemoryTool(tmp_path / "app")
    (tmp_path / "app" / "memories" / "link").symlink_to(outside)

    with pytest.raises(ToolError) as caught:
        tool.call(call)
    path = call["path"]
    assert caught.value.content == f"Error: Path {path} would escape /memories directory"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.md"]
    assert (outside / "secret.md").read_text() == "secret\n"


def test_constructor_and_attributes_match_the_sdks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    pairs: list[tuple[Any, Any]] = [
        (BetaLocalFilesystemMemoryTool(), LocalFilesystemMemoryTool()),
        (BetaAsyncLocalFilesystemMemoryTool(), AsyncLocalFilesystemMemoryTool()),
        (BetaLocalFilesystemMemoryTool("elsewhere"), LocalFilesystemMemoryTool("elsewhere")),
    ]
    for sdk, ours in pairs:
        assert (type(ours.base_path), type(ours.memory_root)) == (type(sdk.base_path), type(sdk.memory_root))
        assert (str(ours.base_path), str(ours.memory_root)) == (str(sdk.base_path), str(sdk.memory_root))
    assert (tmp_path / "memory" / "memories").is_dir()
    assert isinstance(AsyncLocalFilesystemMemoryTool().base_path, anyio.Path)


def test_clear_all_memory_like_the_sdk(tmp_path: Path) -> None:
    sdk, ours = BetaLocalFilesystemMemoryTool(str(tmp_path / "sdk")), LocalFilesystemMemoryTool(tmp_path / "ours")
    for tool in (sdk, ours):
        tool.call({"command": "create", "path": "/memories/a/b.md", "file_text": "x\n"})
        tool.call({"command": "create", "path": "/memories/c.md", "file_text": "y\n"})

    assert ours.clear_all_memory() == sdk.clear_all_memory() == "All memory cleared"
    assert tree(tmp_path / "ours") == tree(tmp_path / "sdk") == {"memories": None}


def test_async_clear_all_memory(tmp_path: Path) -> None:
    tool = AsyncLocalFilesystemMemoryTool(tmp_path)

    async def run() -> object:
        await tool.call({"command": "create", "path": "/memories/a/b.md", "file_text": "x\n"})
        return await tool.clear_all_memory()

    assert anyio.run(run) == "All memory cleared"
    assert tree(tmp_path) == {"memories": None}


def test_history_is_off_by_default(tmp_path: Path) -> None:
    tool = LocalFilesystemMemoryTool(tmp_path)
    tool.call({"command": "create", "path": "/memories/a.md", "file_text": "x\n"})
    with pytest.raises(memdir.HistoryUnavailableError):
        tool.store.history("/memories/a.md")


def test_history_true_records_versions_outside_base_path(tmp_path: Path, _isolated_home: Path) -> None:
    base = tmp_path / "app"
    tool = LocalFilesystemMemoryTool(base, history=True)
    tool.call({"command": "create", "path": "/memories/a.md", "file_text": "coffee\n"})
    tool.call({"command": "str_replace", "path": "/memories/a.md", "old_str": "coffee", "new_str": "tea"})
    tool.close()

    digest = hashlib.sha256(str(base.resolve()).encode()).hexdigest()[:16]
    assert history_path(base) == _isolated_home / "history" / f"{digest}.db"
    assert history_path(base).is_file()
    assert tree(base) == {"memories": None, "memories/a.md": b"tea\n"}

    # A new tool over the same directory, spelled differently, finds the same history.
    again = LocalFilesystemMemoryTool(tmp_path / "app" / ".." / "app", history=True)
    versions = again.store.history("/memories/a.md")
    assert [(v.op, v.actor) for v in versions] == [("create", "model"), ("str_replace", "model")]
    assert again.store.read_version("/memories/a.md", versions[0].version) == b"coffee\n"
    again.close()


def test_history_path_option_puts_the_database_there(tmp_path: Path) -> None:
    db = tmp_path / "elsewhere" / "memory-history.db"
    tool = LocalFilesystemMemoryTool(tmp_path / "app", history=db)
    tool.call({"command": "create", "path": "/memories/a.md", "file_text": "x\n"})
    tool.close()

    assert db.is_file()
    assert tree(tmp_path / "app") == {"memories": None, "memories/a.md": b"x\n"}


def test_async_local_filesystem_tool_through_the_async_runner(
    anthropic_server: FakeAnthropicServer, tmp_path: Path
) -> None:
    script_turns(anthropic_server)
    tool = AsyncLocalFilesystemMemoryTool(tmp_path, history=True)
    run_tools(anthropic_server, tool, mode="async-stream")
    versions = tool.store.history("/memories/prefs/notes.md")
    anyio.run(tool.aclose)

    assert [v.op for v in versions] == ["create", "str_replace", "insert", "rename", "delete"]

    assert sent_results(anthropic_server) == [[(text, error) for _, text, error in turn] for turn in TURNS]
    assert tree(tmp_path) == {"memories": None}


def test_public_module_exports_a_sorted_complete_all() -> None:
    names = memdir.anthropic.__all__
    assert names == sorted(names)
    assert all(getattr(memdir.anthropic, name) is not None for name in names)
    public = {name for name in vars(memdir.anthropic) if not name.startswith("_") and name != "annotations"}
    assert public == set(names)


# -- one implementation, the SDK's whole surface ------------------------------------------------------------------

SDK_PAIRS = [
    (BetaAbstractMemoryTool, MemoryTool),
    (BetaAsyncAbstractMemoryTool, AsyncMemoryTool),
    (BetaLocalFilesystemMemoryTool, LocalFilesystemMemoryTool),
    (BetaAsyncLocalFilesystemMemoryTool, AsyncLocalFilesystemMemoryTool),
]


def methods(cls: type) -> dict[str, bool]:
    """Every method a class offers (its own and inherited, private helpers too), each with whether it is async."""
    found = {}
    for name in dir(cls):
        if name.startswith("__"):
            continue
        value = inspect.getattr_static(cls, name)
        function = value.__func__ if isinstance(value, staticmethod | classmethod) else value
        if callable(function):
            found[name] = inspect.iscoroutinefunction(function)
    return found


@pytest.mark.parametrize(("sdk", "ours"), SDK_PAIRS, ids=lambda c: c.__name__)
def test_every_method_of_the_sdks_class_is_there_and_as_async_as_the_sdks(sdk: type, ours: type) -> None:
    theirs, mine = methods(sdk), methods(ours)
    missing = sorted(set(theirs) - set(mine))
    assert missing == [], f"{ours.__name__} lacks {missing} (the SDK's {sdk.__name__} has them)"
    assert {name: mine[name] for name in theirs} == theirs  # async where the SDK's is, sync where it is not


def test_the_sync_and_async_classes_offer_the_same_methods() -> None:
    for sync, asynchronous in (
        (MemoryTool, AsyncMemoryTool),
        (LocalFilesystemMemoryTool, AsyncLocalFilesystemMemoryTool),
    ):
        commands = {"call", "execute", "view", "create", "str_replace", "insert", "delete", "rename", "clear_all_memory"}  # fmt: skip
        assert {n for n, is_async in methods(asynchronous).items() if is_async} >= commands
        assert not any(methods(sync)[name] for name in commands)
    helpers = {"_validate_path", "_ensure_memory_root"}
    assert helpers <= set(methods(LocalFilesystemMemoryTool)) and helpers <= set(
        methods(AsyncLocalFilesystemMemoryTool)
    )


# The SDK's own tests (tests/lib/tools/memory_tools/test_filesystem.py) call these helpers directly.


def test_memory_root_is_private_on_every_level_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)  # permissive: directories would be 0777 unless each level is set explicitly
    try:
        sync_base, async_base = tmp_path / "s" / "nested" / "memory", tmp_path / "a" / "nested" / "memory"
        sync_tool = LocalFilesystemMemoryTool(base_path=str(sync_base))
        async_tool = AsyncLocalFilesystemMemoryTool(base_path=str(async_base))
        anyio.run(async_tool._ensure_memory_root)
        sync_tool._ensure_memory_root()
    finally:
        os.umask(old)
    for base, root in ((sync_base, Path(sync_tool.memory_root)), (async_base, Path(str(async_tool.memory_root)))):
        for directory in (base.parent, base, root):
            assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_validate_path_resolves_like_the_sdks_and_refuses_what_memdir_refuses(tmp_path: Path, kind: str) -> None:
    tool: Any = (
        LocalFilesystemMemoryTool(str(tmp_path)) if kind == "sync" else AsyncLocalFilesystemMemoryTool(str(tmp_path))
    )

    def validate(path: str) -> Path:
        if kind == "sync":
            return Path(tool._validate_path(path))
        return Path(str(anyio.run(tool._validate_path, path)))

    memories = tmp_path / "memories"
    (memories / "legit").mkdir()
    (memories / "legit" / "file.txt").write_text("content")
    os.symlink(memories / "legit", memories / "link", target_is_directory=True)
    resolved = validate("/memories/link/file.txt")  # the resolved location, never the swappable link
    assert "link" not in str(resolved) and str((memories / "legit").resolve()) in str(resolved)
    assert validate("/memories") == memories.resolve()
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    os.symlink(outside, memories / "escape", target_is_directory=True)
    for path, words in [
        ("/invalid/path.txt", "Path must start with /memories"),
        ("/memories/../../../etc/passwd", "Path /memories/../../../etc/passwd would escape /memories directory"),
        ("/memories/escape/secret.txt", "Path /memories/escape/secret.txt would escape /memories directory"),
        ("/memoriesX/a.md", "Path must start with /memories, got: /memoriesX/a.md"),  # the SDK lets this one by
        ("/memories/%2e%2e/x", "would escape /memories directory"),
    ]:
        with pytest.raises(ToolError, match=re.escape(words)):
            validate(path)
