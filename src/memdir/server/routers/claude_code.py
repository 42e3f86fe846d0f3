"""``memdir serve --claude-code``: every Claude Code memory directory on this machine as a namespace of its own.

Signing in. `prepare` (called by the CLI before the server starts) finds the directories (`memdir.claudecode`),
serves each as the namespace named by its `store_id`, revokes the tokens earlier runs made and prints one
**sign-in token** for the namespace ``claude-code``. That token opens no memory: it opens the two endpoints here.
``POST /v1/claude-code/sign-in`` answers with the directories and a fresh token for each (label
``claude-code web session``), which the web page keeps in the tab and uses for everything else, so every other
request still reaches exactly the one namespace its token names (`memdir.server._auth`). ``GET
/v1/claude-code/status`` is `memdir claude-code status` as JSON, for the served directories. Tokens of this kind
last until the server is started again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio.to_thread

from ...store import open_store
from .._config import ServerConfig
from .._endpoint import Call, Endpoint
from .._errors import ApiError, json_response
from .._schemas import json_response as json_doc
from ..tokens import TokenRegistry

if TYPE_CHECKING:
    from starlette.responses import Response

    from ...claudecode import Location

__all__ = ["ENDPOINTS", "HUB", "prepare"]

HUB = "claude-code"  # the namespace of the sign-in token: no directory has it (theirs end in a hash)
SIGN_IN_LABEL = "claude-code sign-in"
SESSION_LABEL = "claude-code web session"


def prepare(**options: Any) -> tuple[ServerConfig, str, int]:
    """The configuration of a ``--claude-code`` server (``options``: host, port, rate...), its sign-in token
    (shown once), and how many directories it serves."""
    from ...claudecode import Claude, discover, store_id
    from ...claudecode._stores import home

    locations = discover(Claude.here())
    namespaces = {store_id(loc.directory): f"claude-code:dir:{loc.directory}" for loc in locations}
    admin = f"sqlite://{home() / 'server.db'}"
    home().mkdir(parents=True, exist_ok=True, mode=0o700)
    with open_store(admin) as store:
        tokens = TokenRegistry(store.aux)
        for old in tokens.list():
            if old.label in (SIGN_IN_LABEL, SESSION_LABEL):  # a restart signs everyone out
                tokens.revoke(old.id)
        secret, _ = tokens.create(HUB, SIGN_IN_LABEL)
    config = ServerConfig(store_url=admin, namespaces=namespaces, claude_code=True, **options)
    return config, secret, len(namespaces)


def _hub(call: Call) -> None:
    if not call.services.config.claude_code or call.principal.namespace != HUB:
        raise ApiError("not_found", "this token does not open the Claude Code overview")


def _served(call: Call) -> list[tuple[str, Location]]:
    from ...claudecode import Claude, discover, store_id

    served = call.services.config.namespaces
    found = [(store_id(loc.directory), loc) for loc in discover(Claude.here())]
    return [(namespace, loc) for namespace, loc in found if namespace in served]


async def sign_in(call: Call) -> Response:
    _hub(call)
    tokens = call.services.tokens

    def mint() -> list[dict[str, Any]]:
        served = _served(call)
        return [{"namespace": ns, **loc.to_json(), "token": tokens.create(ns, SESSION_LABEL)[0]} for ns, loc in served]

    return json_response({"namespaces": await anyio.to_thread.run_sync(mint)})


async def status(call: Call) -> Response:
    _hub(call)
    from ...claudecode import Claude
    from ...claudecode._status import status as report

    def look() -> dict[str, Any]:
        data = report(Claude.here()).to_json()
        served = call.services.config.namespaces
        data["directories"] = [d for d in data["directories"] if d["namespace"] in served]
        return data

    return json_response(await anyio.to_thread.run_sync(look))


_OBJECT = {"type": "object"}

ENDPOINTS = (
    Endpoint(
        "POST",
        "/v1/claude-code/sign-in",
        sign_in,
        "claudeCodeSignIn",
        "The served Claude Code memory directories, each with a token of its own",
        "claude-code",
        description="Only with the sign-in token `memdir serve --claude-code` prints. Each directory's token opens "
        "its namespace for this server's lifetime.",
        responses={
            "200": json_doc(_OBJECT, "`namespaces`: directory, kind, label, name, project, agent, scope, token.")
        },
    ),
    Endpoint(
        "GET",
        "/v1/claude-code/status",
        status,
        "claudeCodeStatus",
        "Files, sizes, MEMORY.md load, secrets and malformed notes of every served directory",
        "claude-code",
        description="`memdir claude-code status --json`. Only with the sign-in token.",
        responses={"200": json_doc(_OBJECT, "The report: `directories` and `notes`.")},
    ),
)
