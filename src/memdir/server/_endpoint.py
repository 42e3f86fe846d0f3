"""Endpoints: a handler plus what the OpenAPI document says about it, declared together in a router module.

A router module (``memdir.server.routers.*``) lists its `Endpoint`s in ``ENDPOINTS``; the app mounts them and
the OpenAPI document is generated from the same list, so the two cannot drift apart. Each handler gets a `Call`:
the request, its authenticated `Principal`, and helpers that apply the API's rules (bounded bodies, checked
paths, origin headers, store access in a worker thread). A handler never opens a store by itself: `Call.run`
hands it the principal's namespace (the only one the request can reach) behind the gate, for the request's
`Caller` (who the token and the ``X-Memdir-*`` headers say is asking): the write policy, limits, provenance and
audit apply to whatever the handler does with it, and the handler writes no policy code.
"""

from __future__ import annotations

import json
import logging
import re
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import anyio.to_thread
from starlette.requests import ClientDisconnect
from starlette.routing import Route

from .._wire import HEADER_ACTOR, HEADER_IDEMPOTENCY, HEADER_SESSION, HEADER_SOURCE, decode_header, parse_json
from ..errors import PathError
from ..gate import Caller
from ..memstores._json import TOKEN_SESSION
from ..paths import parse
from ..store._records import Origin
from ._errors import ApiError, exception_response
from ._guard import request_info
from ._idempotency import KEY_PATTERN, run_tool_once

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from ..gate import GatedStore
    from ..paths import MemoryPath
    from ..tool import ToolResult
    from ._auth import Principal
    from ._services import Services

__all__ = ["Call", "Endpoint", "ErrorStyle", "Handler"]

log = logging.getLogger("memdir.server")

T = TypeVar("T")
Handler = Callable[["Call"], Awaitable["Response"]]

_LABEL = re.compile(r"[^\x00-\x1f\x7f]{1,256}")
_JSON_TYPES = ("application/json",)
# A number past what the databases' integers hold cannot name a version or a position: the store would fail on
# it (an internal error) rather than find nothing.
_MAX_INT = 2**63 - 1


class ErrorStyle(Protocol):
    """Errors worded for another API's clients (the Memory Stores API answers as Anthropic's API does)."""

    def response(self, exc: BaseException) -> Response: ...

    def answered(self, response: Response) -> Response:
        """A successful answer as that API's clients expect it (Anthropic's carry a ``request-id``)."""
        ...

    def openapi(self, codes: tuple[str, ...]) -> dict[str, Any]:
        """The OpenAPI responses for these error codes."""
        ...


@dataclass(frozen=True)
class Endpoint:
    """One route: method, Starlette path template, handler, and its OpenAPI description."""

    method: str
    path: str
    handler: Handler
    operation_id: str
    summary: str
    tag: str
    public: bool = False  # served without a token (health, the OpenAPI document)
    description: str = ""
    parameters: tuple[dict[str, Any], ...] = ()
    request_body: dict[str, Any] | None = None
    responses: dict[str, dict[str, Any]] = field(default_factory=dict)
    errors: tuple[str, ...] = ()  # error codes particular to this endpoint (the common ones are added)
    errors_as: ErrorStyle | None = None  # how its errors are worded (default: memdir's, `memdir.server._errors`)

    @property
    def openapi_path(self) -> str:
        return re.sub(r"\{(\w+):\w+\}", r"{\1}", self.path)

    def route(self, services: Services) -> Route:
        async def endpoint(request: Request) -> Response:
            request_info(request.scope)["route"] = self.openapi_path
            try:
                principal = None if self.public else await services.gate.admit(request.scope)
                answer = await self.handler(Call(request, principal, services))
                return answer if self.errors_as is None else self.errors_as.answered(answer)
            except Exception as exc:
                return exception_response(exc) if self.errors_as is None else self.errors_as.response(exc)

        return Route(self.path, endpoint, methods=[self.method], name=self.operation_id)


class Call:
    """One request as a handler sees it."""

    def __init__(self, request: Request, principal: Principal | None, services: Services) -> None:
        self.request = request
        self._principal = principal
        self.services = services

    @property
    def principal(self) -> Principal:
        if self._principal is None:
            raise RuntimeError("a public endpoint has no principal")
        return self._principal

    async def run(
        self,
        work: Callable[[GatedStore], T],
        *,
        writes: bool = False,
        caller: Caller | None = None,
        namespace: str | None = None,
    ) -> T:
        """Run ``work`` on the principal's store, behind the gate for ``caller`` (default: `Call.caller`), in a
        worker thread (store calls block on disk); ``writes`` queues it behind the other writes to the same
        database first (see `memdir.server._tenants`).

        ``namespace``: another namespace than the token's, which the caller has checked the principal may reach
        (a memory store its tenant owns: `memdir.server.routers.memory_stores`). Nothing else may pass one."""
        tenants, leased_namespace = self.services.tenants, namespace or self.principal.namespace
        who = caller or self.caller()

        def leased() -> T:
            with tenants.gated(leased_namespace, who) as store:
                return work(store)

        return await self._in_thread(leased, writes, leased_namespace)

    async def run_tool(self, caller: Caller, command: object, *, overwrite: bool = False) -> tuple[ToolResult, bool]:
        """Run a memory tool command as ``caller`` on the principal's namespace, in a worker thread (a change at
        most once per idempotency key: `memdir.server._idempotency`); True when the result was replayed.
        ``overwrite``: ``create`` may replace an existing file."""
        tenants, namespace = self.services.tenants, self.principal.namespace

        def execute() -> tuple[ToolResult, bool]:
            with tenants.tool(namespace, caller, overwrite=overwrite) as tool:
                return run_tool_once(tool, command)

        reads_only = isinstance(command, Mapping) and command.get("command") == "view"
        return await self._in_thread(execute, not reads_only)

    def caller(
        self,
        *,
        actor: str = "user",
        session: str | None = None,
        actors: frozenset[str] = frozenset({"model", "user"}),
        channel: str = "http",
    ) -> Caller:
        """Who is asking: the token's principal, the actor the ``X-Memdir-Actor`` header names (one of ``actors``:
        a client cannot record itself as ``gc`` or ``external``), the session (``X-Memdir-Session``, else
        ``token-<id>``), the source, the request's ``Idempotency-Key``. Pinned: nothing below can change it."""
        origin = self.origin(actor=actor, session=session or f"{TOKEN_SESSION}{self.principal.token_id}", actors=actors)
        return Caller(
            origin.actor, origin.session, origin.source, channel, self.principal.token_id,
            admin=self.principal.admin, pinned=True, request=origin.request,
        )  # fmt: skip

    async def _in_thread(self, work: Callable[[], T], writes: bool, namespace: str | None = None) -> T:
        if not writes:
            return await anyio.to_thread.run_sync(work)
        tenants = self.services.tenants

        def exclusive() -> T:
            with tenants.between_processes():
                return work()

        async with tenants.write_lock(namespace or self.principal.namespace):
            return await anyio.to_thread.run_sync(exclusive)

    # -- the request's parts ------------------------------------------------------------------------------

    def memory_path(self) -> MemoryPath:
        """The memory path in the URL after the endpoint's prefix: ``/v1/files/memories/notes.md``."""
        return parse(self.raw_memory_path())

    def raw_memory_path(self) -> str:
        """The path as sent, percent-decoded one segment at a time.

        Decoded from the raw URL, not from the router's already-decoded path: a segment holding an encoded
        separator (``a%2Fb.md``) must stay one segment, which the path rules then refuse, rather than silently
        become two (``a/b.md``).
        """
        raw: bytes = self.request.scope.get("raw_path") or self.request.scope["path"].encode()
        parts = raw.split(b"/")
        if b"%" in b"/".join(parts[:3]):  # "/v1/files": the router decoded it; the endpoint is named plainly
            raise ApiError("invalid_request", "the endpoint part of the URL must not be percent-encoded")
        whole = raw.decode("utf-8", "replace")
        return "/" + "/".join(_decode_segment(s, whole) for s in parts[3:])

    def query_int(self, name: str, default: int, *, minimum: int = 0, maximum: int = _MAX_INT) -> int:
        """An integer query parameter, sent at most once (``?limit=1&limit=100`` is no answer to guess at)."""
        raw = self.query_text(name, max_chars=4300)
        if raw is None:
            return default
        bound = f" and at most {maximum}" if maximum < _MAX_INT else ""
        wrong = ApiError("invalid_request", f"query parameter {name!r} must be an integer of at least {minimum}{bound}")
        if not (raw.isascii() and raw.isdigit()):
            raise wrong
        # Digits counted before converting: Python refuses more than 4,300 of them, with a ValueError. A number
        # too large for any version or position is told as that, not as "no integer".
        digits = raw.lstrip("0") or "0"
        if len(digits) > 19 or int(digits) > maximum:
            raise ApiError("invalid_request", f"query parameter {name!r} is too large: at most {maximum}")
        if int(digits) < minimum:
            raise wrong
        return int(digits)

    def query_text(self, name: str, *, default: str | None = None, max_chars: int = 1000) -> str | None:
        """A text query parameter, sent at most once and at most ``max_chars`` long."""
        values = self.request.query_params.getlist(name)
        if len(values) > 1:
            raise ApiError("invalid_request", f"send the query parameter {name!r} at most once")
        if not values:
            return default
        if len(values[0]) > max_chars:
            raise ApiError(
                "invalid_request", f"query parameter {name!r} must be text of at most {max_chars} characters"
            )
        if "\x00" in values[0]:  # no store, index or database column takes one
            raise ApiError("invalid_request", f"query parameter {name!r} must not contain a NUL byte")
        return values[0]

    def query_choice(self, name: str, choices: tuple[str, ...]) -> str:
        """One of ``choices`` (the first is the default)."""
        value = self.query_text(name, default=choices[0], max_chars=40)
        if value is None or value not in choices:
            raise ApiError("invalid_request", f"query parameter {name!r} must be one of: {', '.join(choices)}")
        return value

    def query_path(self, name: str) -> MemoryPath | None:
        """A memory path in a query parameter (``/memories/...``), checked by the path rules."""
        raw = self.query_text(name, max_chars=4096)
        return None if raw is None else parse(raw)

    def header(self, name: str) -> str | None:
        values = self.request.headers.getlist(name)
        if len(values) > 1:
            raise ApiError("invalid_request", f"send the {name} header at most once")
        return values[0] if values else None

    def origin(self, *, actor: str, session: str | None, actors: frozenset[str] | None = None) -> Origin:
        """Who makes this change: the ``X-Memdir-Actor/-Session/-Source`` headers over the given defaults, and
        the request's ``Idempotency-Key``."""
        chosen = self._label(HEADER_ACTOR) or actor
        if actors is not None and chosen not in actors:
            raise ApiError("invalid_request", f"{HEADER_ACTOR} must be one of: {', '.join(sorted(actors))}")
        return Origin(chosen, self._session() or session, self._label(HEADER_SOURCE), self._key())

    def _session(self) -> str | None:
        """The ``X-Memdir-Session`` header. ``token-<id>`` is the session the server records a token's writes
        under (the memory stores API names their writer by it): a client may send its own, never another's."""
        session = self._label(HEADER_SESSION)
        own = f"{TOKEN_SESSION}{self.principal.token_id}"
        if session is not None and session.startswith(TOKEN_SESSION) and session != own:
            raise ApiError("invalid_request", f"{HEADER_SESSION} {TOKEN_SESSION}... names another token's writes")
        return session

    def _key(self) -> str | None:
        key = self.header(HEADER_IDEMPOTENCY)
        if key is not None and not KEY_PATTERN.fullmatch(key):
            raise ApiError("invalid_request", f"{HEADER_IDEMPOTENCY} must be 1-255 visible ASCII characters")
        return key

    def _label(self, name: str) -> str | None:
        raw = self.header(name)
        if raw is None:
            return None
        try:
            value = decode_header(raw)
        except UnicodeDecodeError:
            value = ""
        if not _LABEL.fullmatch(value):
            raise ApiError("invalid_request", f"{name} must be 1-256 characters of text (percent-encoded UTF-8)")
        return value

    async def body(self, limit: int) -> bytes:
        """The request body, refused once it passes ``limit`` bytes (before it is all read when declared)."""
        declared = self.request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise _too_large(limit)
        chunks: list[bytes] = []
        size = 0
        try:
            async for chunk in self.request.stream():
                size += len(chunk)
                if size > limit:
                    raise _too_large(limit)
                chunks.append(chunk)
        except ClientDisconnect:
            # The client hung up (or its body timed out, `_protocols`): nobody reads the answer. Not an error of
            # ours: logged as one, with its traceback, a client hanging up 95 times a second rotated memdir.log
            # (and everything else in it) away within a minute.
            log.info("the client closed the connection before its request body arrived")
            gone = "the request body did not arrive: the client closed the connection"
            raise ApiError("request_timeout", gone) from None
        return b"".join(chunks)

    async def json(self, limit: int | None = None) -> Any:
        """The JSON body (``application/json``, at most ``limit`` bytes: by default the server's JSON bound)."""
        self.require_type(_JSON_TYPES)
        data = await self.body(limit or self.services.config.max_body_bytes)
        try:
            return parse_json(data.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise ApiError("invalid_request", "the body is not UTF-8") from exc
        except ValueError as exc:
            raise ApiError("invalid_request", f"the body is not valid JSON: {_json_reason(exc)}") from exc

    async def json_object(self, limit: int | None = None) -> dict[str, Any]:
        data = await self.json(limit)
        if not isinstance(data, dict):
            raise ApiError("invalid_request", "the body must be a JSON object")
        return data

    def require_type(self, accepted: tuple[str, ...]) -> None:
        given = self.request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if given not in accepted:
            raise ApiError(
                "unsupported_media_type",
                f"send the body as {' or '.join(accepted)} (got {given[:80] or 'no Content-Type'})",
            )


def _decode_segment(segment: bytes, whole: str) -> str:
    try:
        decoded = urllib.parse.unquote_to_bytes(segment).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PathError(whole, "not_allowed", "it is not UTF-8 once percent-decoded") from exc
    # An encoded separator stays encoded, so the path rules see (and refuse) it as sent.
    return segment.decode("ascii", "replace") if "/" in decoded else decoded


def _too_large(limit: int) -> ApiError:
    return ApiError("payload_too_large", f"the request body is over this endpoint's bound of {limit:,} bytes")


def _json_reason(exc: ValueError) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at position {exc.pos}"
    return str(exc)
