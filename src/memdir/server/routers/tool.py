"""The memory tool over HTTP: the six commands, answered in SPEC.md's exact words.

``POST /v1/tool`` takes the command object the model sent (``{"command": "view", "path": "/memories"}``);
``POST /v1/tool/{command}`` takes the arguments alone. Both answer 200 with ``{text, is_error, content}`` when
the command ran, whatever its outcome: a refused command is a result for the model (``is_error: true``), not an
HTTP error. Writes are recorded with actor ``model`` (``X-Memdir-Actor: user`` says a person acts) and the
``X-Memdir-Session`` header, or ``token-<token id>`` when none is sent.

``?create_overwrites=true`` lets ``create`` replace an existing file (as `MemoryTool(create_overwrites=True)`:
the client's choice of command, e.g. an agent's ``write_memory``). Everything else is the server's: its write
policy, limits and review queue for the namespace, whatever the client's own settings say.

Two answers are not results: a database that cannot be reached right now is ``503 unavailable`` with
``Retry-After`` (the model did nothing wrong, and the same command will likely work in a moment), and a change sent
again with the same ``Idempotency-Key`` answers the first attempt's result without changing anything again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...tool import COMMANDS
from .._endpoint import Call, Endpoint
from .._errors import ApiError, json_response, unavailable
from .._idempotency import REPLAYED
from .._schemas import TOOL_HEADERS, json_body, ref
from .._schemas import json_response as json_doc

if TYPE_CHECKING:
    from starlette.responses import Response

    from ...tool import ToolResult

__all__ = ["ENDPOINTS"]

_ACTORS = frozenset({"model", "user"})


async def run_command(call: Call) -> Response:
    return await _execute(call, await call.json())


async def run_named_command(call: Call) -> Response:
    name = call.request.path_params["command"]
    if name not in COMMANDS:
        raise ApiError("route_not_found", f"no memory command {name[:40]!r}; use one of: {', '.join(COMMANDS)}")
    arguments = await call.json_object()
    return await _execute(call, {**arguments, "command": name})


async def _execute(call: Call, command: object) -> Response:
    caller = call.caller(actor="model", actors=_ACTORS, channel="tool")
    overwrite = call.query_choice("create_overwrites", ("false", "true")) == "true"
    result, replayed = await call.run_tool(caller, command, overwrite=overwrite)
    if result.temporary:
        raise unavailable(result.text.removeprefix("Error: "))
    return json_response(result_to_json(result), headers=REPLAYED if replayed else None)


def result_to_json(result: ToolResult) -> dict[str, Any]:
    return {"text": result.text, "is_error": result.is_error, "content": result.blocks}


_RESULT = {"200": json_doc(ref("ToolResult"), "The command ran; `is_error` says whether the model sees an error.")}

ENDPOINTS = (
    Endpoint(
        "POST",
        "/v1/tool",
        run_command,
        "runTool",
        "Run one memory tool command",
        "memory tool",
        description="The body is the command exactly as the model sent it. Any JSON value is accepted: a "
        "malformed command comes back as an error result in the tool's own words.",
        parameters=TOOL_HEADERS,
        request_body=json_body(ref("ToolCommand")),
        responses=_RESULT,
        errors=("unavailable", "idempotency_key_reused"),
    ),
    Endpoint(
        "POST",
        "/v1/tool/{command}",
        run_named_command,
        "runNamedTool",
        "Run one memory tool command named in the URL",
        "memory tool",
        description="`command` is view, create, str_replace, insert, delete or rename; the body holds its "
        "arguments (a `command` field in it is ignored).",
        parameters=(
            {
                "name": "command",
                "in": "path",
                "required": True,
                "schema": {"type": "string", "enum": list(COMMANDS)},
            },
            *TOOL_HEADERS,
        ),
        request_body=json_body(ref("ToolArguments")),
        responses=_RESULT,
        errors=("route_not_found", "unavailable", "idempotency_key_reused"),
    ),
)
