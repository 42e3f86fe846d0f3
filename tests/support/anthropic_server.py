"""A fake Anthropic Messages API on a real local HTTP server, for driving the real SDK in tests.

The server listens on ``127.0.0.1`` on a free port (stdlib ``http.server``, one thread per connection)
and answers from a **script**: a queue of replies consumed one per ``POST /v1/messages``. Point the real
SDK at it; nothing in the SDK is mocked::

    from support.anthropic_server import FakeAnthropicServer, text_reply, tool_use_reply

    with FakeAnthropicServer() as server:
        server.script(
            tool_use_reply([("memory", {"command": "view", "path": "/memories"})]),
            text_reply("Done."),
        )
        client = anthropic.Anthropic(api_key="test-key", base_url=server.url)
        runner = client.beta.messages.tool_runner(..., tools=[tool], thread=False)
        runner.until_done()
        [result] = server.requests[1].tool_results()      # what the runner sent back
        assert result["is_error"] is True

In tests, use the ``anthropic_server`` fixture (``support.fixtures``) instead of the ``with`` block.

**Script items** (`Reply`), consumed in order:

- a message dict: the assistant reply. Only ``content`` matters; the server fills in ``id``, ``type``,
  ``role``, ``model`` (the request's), ``stop_reason`` (``tool_use`` when the content has a ``tool_use``
  block, else ``end_turn``), ``stop_sequence``, the ``id`` of any ``tool_use`` block without one, and any
  ``usage`` field left out (a crude count: JSON characters / 4). Extra keys (``context_management``,
  ``container``...) are sent as given. `text_reply` and `tool_use_reply` build the common ones.
- an error spec ``{"status": 429, "headers": {...}, "body": {...}}`` (see `error_reply`): that HTTP
  error instead of a reply, e.g. to exercise the SDK's retries. ``body`` defaults to the API's error shape.
- a callable taking the `RecordedRequest` and returning either of the above, for replies that depend on
  what was asked.

When the script runs out, the server answers ``400`` with ``x-should-retry: false`` and a message
saying so, so a test that expected fewer turns fails loudly instead of hanging.

**Streaming**: a request with ``"stream": true`` gets the same reply as server-sent events, the way the
API sends them: ``message_start``, ``ping``, then per block ``content_block_start`` / deltas
(``text_delta``, ``input_json_delta`` for tool inputs, ``thinking_delta`` + ``signature_delta``) /
``content_block_stop``, then ``message_delta`` (stop reason, usage, ``context_management``) and
``message_stop``. Text and tool-input JSON are cut into small pieces so the SDK's accumulation is
exercised. Other block types arrive whole in their ``content_block_start``.

**Recording**: every request is kept in ``server.requests`` as a `RecordedRequest` (method, path, lower-cased
headers, parsed JSON body) in arrival order, retries included. The body is recorded exactly as sent, so
fields the server does not interpret (``context_management``, ``betas``...) can be asserted on.
``RecordedRequest.messages`` is the whole conversation: for a request that continues a server-side thread
(``thread: {"type": "continue", ...}``, the SDK runner's default mode) the server prepends the history it
kept for that thread, so assertions read the same whichever mode the runner used. An unknown
``previous_message_id`` gets the API's ``thread_not_found`` error.

``POST /v1/messages/count_tokens`` answers ``{"input_tokens": n}`` with the same crude count; it is recorded
but consumes no script item.
"""

from __future__ import annotations

import json
import sys
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self, cast

__all__ = [
    "FakeAnthropicServer",
    "RecordedRequest",
    "Reply",
    "error_reply",
    "text_reply",
    "tool_use_reply",
]

Json = dict[str, Any]
Reply = Mapping[str, Any] | Callable[["RecordedRequest"], Mapping[str, Any]]
"""A script item: a message dict, an error spec (has ``status``), or a callable returning either."""

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
_TOOL_INPUT_BLOCKS = ("tool_use", "server_tool_use", "mcp_tool_use")


# -- building replies ---------------------------------------------------------------------------------------


def text_reply(
    text: str, *, stop_reason: str = "end_turn", usage: Mapping[str, Any] | None = None, **extra: Any
) -> Json:
    """An assistant reply with one text block."""
    return _message([{"type": "text", "text": text}], stop_reason, usage, extra)


def tool_use_reply(
    calls: Iterable[tuple[str, Mapping[str, Any]] | tuple[str, Mapping[str, Any], str]],
    *,
    text: str | None = None,
    usage: Mapping[str, Any] | None = None,
    **extra: Any,
) -> Json:
    """An assistant reply asking for tool calls: ``(name, input)`` or ``(name, input, id)`` each, in order,
    after an optional text block. Calls without an id get a fresh ``toolu_...`` one."""
    content: list[Json] = [{"type": "text", "text": text}] if text is not None else []
    for call in calls:
        name, tool_input = call[0], call[1]
        tool_id = call[2] if len(call) == 3 else _new_id("toolu")
        content.append({"type": "tool_use", "id": tool_id, "name": name, "input": dict(tool_input)})
    return _message(content, "tool_use", usage, extra)


def error_reply(
    status: int,
    message: str = "scripted error",
    *,
    error_type: str | None = None,
    headers: Mapping[str, str] | None = None,
    details: Mapping[str, Any] | None = None,
) -> Json:
    """An HTTP error in the API's shape. A 429 or 5xx is retried by the SDK: the default ``retry-after-ms: 1``
    keeps that fast (``retry-after: 0`` would fall back to the SDK's half-second backoff)."""
    error: Json = {"type": error_type or _ERROR_TYPES.get(status, "api_error"), "message": message}
    if details is not None:
        error["details"] = dict(details)
    return {
        "status": status,
        "headers": {"retry-after-ms": "1", **(headers or {})},
        "body": {"type": "error", "error": error},
    }


def _message(content: list[Json], stop_reason: str, usage: Mapping[str, Any] | None, extra: Mapping[str, Any]) -> Json:
    reply: Json = {"content": content, "stop_reason": stop_reason, **extra}
    if usage is not None:
        reply["usage"] = dict(usage)
    return reply


def _new_id(prefix: str) -> str:
    return f"{prefix}_fake{uuid.uuid4().hex[:20]}"


def crude_tokens(value: object) -> int:
    """A stand-in token count: JSON characters / 4, at least 1."""
    return max(1, len(json.dumps(value, default=str)) // 4)


# -- what was asked -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]
    body: Json
    messages: list[Json] = field(default_factory=list)
    """The whole conversation: ``body["messages"]``, after the kept history of a continued thread."""

    @property
    def stream(self) -> bool:
        return self.body.get("stream") is True

    @property
    def betas(self) -> list[str]:
        """The ``anthropic-beta`` header, split."""
        raw = self.headers.get("anthropic-beta", "")
        return [beta.strip() for beta in raw.split(",") if beta.strip()]

    def tool_results(self) -> list[Json]:
        """The ``tool_result`` blocks of the conversation's last message (what a tool runner sent back)."""
        if not self.messages:
            return []
        content = self.messages[-1].get("content")
        if not isinstance(content, list):
            return []
        return [block for block in content if isinstance(block, dict) and block.get("type") == "tool_result"]


@dataclass(frozen=True)
class _Response:
    status: int
    headers: dict[str, str]
    body: Json
    events: list[tuple[str, Json]] | None = None  # set for a streamed reply


# -- the server ---------------------------------------------------------------------------------------------


class FakeAnthropicServer:
    """A scripted Messages API on ``127.0.0.1``; see the module docstring. Use as a context manager, or
    call `start` and `stop`."""

    def __init__(self, replies: Iterable[Reply] = (), *, chunk_size: int = 7) -> None:
        self.requests: list[RecordedRequest] = []
        self.replies: list[Json] = []
        """The complete messages the server sent, in order."""
        self.chunk_size = chunk_size
        self.errors: list[Exception] = []
        """Exceptions raised by reply callables (each answered with a 500 that the SDK does not retry)."""
        self._script: deque[Reply] = deque(replies)
        self._threads: dict[str, list[Json]] = {}
        self._lock = threading.Lock()
        self._http: _HTTPServer | None = None
        self._serving: threading.Thread | None = None

    # -- lifecycle

    def start(self) -> Self:
        http = _HTTPServer(("127.0.0.1", 0), _Handler)
        http.fake = self
        self._http = http
        # A short poll interval: shutdown() waits up to one interval, and every test stops a server.
        self._serving = threading.Thread(target=http.serve_forever, args=(0.02,), name="fake-anthropic", daemon=True)
        self._serving.start()
        return self

    def stop(self) -> None:
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            self._http = None
        if self._serving is not None:
            self._serving.join()
            self._serving = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def url(self) -> str:
        if self._http is None:
            raise RuntimeError("the fake Anthropic server is not running")
        host, port = self._http.server_address[:2]
        return f"http://{host!s}:{port}"

    # -- script and records

    def script(self, *replies: Reply) -> None:
        """Queue more replies, after those still waiting."""
        with self._lock:
            self._script.extend(replies)

    @property
    def pending(self) -> int:
        """How many scripted replies have not been used."""
        with self._lock:
            return len(self._script)

    @property
    def message_requests(self) -> list[RecordedRequest]:
        """The ``POST /v1/messages`` requests, in order."""
        with self._lock:
            return [r for r in self.requests if r.path == "/v1/messages"]

    # -- answering (called from handler threads)

    def _answer(self, method: str, path: str, headers: dict[str, str], body: Json) -> _Response:
        with self._lock:
            if path == "/v1/messages/count_tokens":
                self.requests.append(RecordedRequest(method, path, headers, body, list(body.get("messages", []))))
                return _Response(200, {}, {"input_tokens": crude_tokens(_prompt(body))})
            if path != "/v1/messages":
                self.requests.append(RecordedRequest(method, path, headers, body))
                return _error_response(error_reply(404, f"fake server: no route for {method} {path}"))
            history = self._history(body)
            request = RecordedRequest(method, path, headers, body, [*(history or []), *body.get("messages", [])])
            self.requests.append(request)
            if history is None:
                return _error_response(_thread_not_found(body))
            item = self._script.popleft() if self._script else None
            number = len(self.requests)
        return self._reply(request, item, number)

    def _reply(self, request: RecordedRequest, item: Reply | None, number: int) -> _Response:
        if item is None:
            return _error_response(_script_exhausted(number))
        spec = item(request) if callable(item) else item
        if "status" in spec:
            return _error_response(spec)
        message = _complete(spec, request, f"msg_fake{number:04d}")
        with self._lock:
            self.replies.append(message)
            if request.body.get("thread") is not None:
                self._threads[message["id"]] = [*request.messages, {"role": "assistant", "content": message["content"]}]
        if request.stream:
            return _Response(200, {}, message, list(_events(message, self.chunk_size)))
        return _Response(200, {}, message)

    def _history(self, body: Json) -> list[Json] | None:
        """The kept history a request continues (empty when it continues none); None for an unknown thread."""
        thread = body.get("thread")
        if not isinstance(thread, dict) or thread.get("type") != "continue":
            return []
        return self._threads.get(str(thread.get("previous_message_id")))


def _prompt(body: Json) -> Json:
    return {key: body.get(key) for key in ("system", "tools", "messages")}


def _complete(spec: Mapping[str, Any], request: RecordedRequest, message_id: str) -> Json:
    """A full message from a scripted one: ids, defaults and usage filled in."""
    content = [_with_id(dict(block)) for block in spec.get("content", [])]
    has_tool_use = any(block.get("type") == "tool_use" for block in content)
    usage = {
        "input_tokens": crude_tokens(_prompt(request.body)),
        "output_tokens": crude_tokens(content),
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        **spec.get("usage", {}),
    }
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": request.body.get("model", "claude-fake"),
        "stop_reason": "tool_use" if has_tool_use else "end_turn",
        "stop_sequence": None,
        **spec,
        "content": content,
        "usage": usage,
    }


def _with_id(block: Json) -> Json:
    if block.get("type") in _TOOL_INPUT_BLOCKS and not block.get("id"):
        block["id"] = _new_id("toolu" if block["type"] == "tool_use" else "srvtoolu")
    return block


def _error_response(spec: Mapping[str, Any]) -> _Response:
    status = int(spec["status"])
    body = spec.get("body") or error_reply(status)["body"]
    return _Response(status, {str(k): str(v) for k, v in spec.get("headers", {}).items()}, dict(body))


def _script_exhausted(number: int) -> Json:
    spec = error_reply(400, f"fake server: no scripted reply left for request #{number}")
    spec["headers"]["x-should-retry"] = "false"
    return spec


def _thread_not_found(body: Json) -> Json:
    thread = body.get("thread") or {}
    return error_reply(
        404,
        f"fake server: unknown thread {thread.get('previous_message_id')}",
        details={"error_code": "thread_not_found"},
    )


# -- server-sent events -------------------------------------------------------------------------------------


def _events(message: Json, chunk: int) -> Iterator[tuple[str, Json]]:
    """The stream of events the API sends for ``message``."""
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None}
    start["usage"] = {**message["usage"], "output_tokens": 1}
    yield "message_start", {"type": "message_start", "message": start}
    yield "ping", {"type": "ping"}
    for index, block in enumerate(message["content"]):
        yield from _block_events(index, block, chunk)
    delta: Json = {
        "type": "message_delta",
        "delta": {"stop_reason": message["stop_reason"], "stop_sequence": message["stop_sequence"]},
        "usage": message["usage"],
    }
    if message.get("context_management") is not None:
        delta["context_management"] = message["context_management"]
    yield "message_delta", delta
    yield "message_stop", {"type": "message_stop"}


def _block_events(index: int, block: Json, chunk: int) -> Iterator[tuple[str, Json]]:
    kind = block.get("type")
    if kind == "text":
        start, deltas = (
            {**block, "text": ""},
            [{"type": "text_delta", "text": t} for t in _pieces(block["text"], chunk)],
        )
    elif kind in _TOOL_INPUT_BLOCKS:
        raw = json.dumps(block.get("input", {}))
        start = {**block, "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in _pieces(raw, chunk)]
    elif kind == "thinking":
        start = {**block, "thinking": "", "signature": ""}
        deltas = [{"type": "thinking_delta", "thinking": t} for t in _pieces(block["thinking"], chunk)]
        deltas.append({"type": "signature_delta", "signature": block.get("signature", "")})
    else:
        start, deltas = block, []
    yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": start}
    for delta in deltas:
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
    yield "content_block_stop", {"type": "content_block_stop", "index": index}


def _pieces(text: str, size: int) -> Sequence[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


# -- HTTP plumbing ------------------------------------------------------------------------------------------


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeAnthropicServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up mid-stream is normal in tests (a runner closed early); stay quiet about it.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, and chunked bodies for streams

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            self._send_json(_error_response(error_reply(400, "fake server: the body is not JSON")))
            return
        headers = {key.lower(): value for key, value in self.headers.items()}
        path = self.path.split("?", 1)[0]
        fake = cast(_HTTPServer, self.server).fake
        try:
            response = fake._answer("POST", path, headers, body)
        except Exception as exc:
            # A failing reply callable: answer (not hang up, which the SDK would retry) and keep it for the test.
            fake.errors.append(exc)
            spec = error_reply(
                500, f"fake server: the scripted reply raised {exc!r}", headers={"x-should-retry": "false"}
            )
            response = _error_response(spec)
        if response.events is None:
            self._send_json(response)
        else:
            self._send_events(response.events)

    def _send_json(self, response: _Response) -> None:
        data = json.dumps(response.body).encode()
        self.send_response(response.status)
        self._common_headers({"content-type": "application/json", **response.headers})
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_events(self, events: list[tuple[str, Json]]) -> None:
        self.send_response(200)
        self._common_headers({"content-type": "text/event-stream", "cache-control": "no-cache"})
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for name, data in events:
            payload = f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
            self.wfile.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
        self.wfile.write(b"0\r\n\r\n")

    def _common_headers(self, headers: Mapping[str, str]) -> None:
        self.send_header("request-id", _new_id("req"))
        for key, value in headers.items():
            self.send_header(key, value)

    def log_message(self, format: str, *args: Any) -> None:
        return  # keep test output clean
