"""A fake OpenAI chat-completions API on a real local HTTP server, for driving the real ``openai`` SDK.

Like `support.anthropic_server`: a script of replies consumed one per ``POST /v1/chat/completions``, every
request recorded (``server.requests``), nothing in the SDK mocked::

    with FakeOpenAIServer() as server:
        server.script(chat_tool_calls([("memory", {"command": "view", "path": "/memories"})]), chat_text("Done."))
        client = openai.OpenAI(api_key="test", base_url=server.url + "/v1")

**Script items**: a reply dict (``chat_text`` / ``chat_tool_calls`` build them: ``content``, ``tool_calls``,
``finish_reason``), an error ``{"status": 500, "body": {...}}``, or a callable taking the `RecordedRequest`.
A request with ``"stream": true`` gets the reply as server-sent ``chat.completion.chunk`` events (text and
tool arguments cut into small pieces, usage in a last chunk when ``stream_options.include_usage`` is set),
ending with ``data: [DONE]``. When the script runs out the server answers 400.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self, cast

from .anthropic_server import RecordedRequest, crude_tokens

__all__ = ["FakeOpenAIServer", "chat_text", "chat_tool_calls"]

Json = dict[str, Any]
ChatReply = Mapping[str, Any] | Callable[[RecordedRequest], Mapping[str, Any]]


def chat_text(text: str, *, finish_reason: str = "stop") -> Json:
    return {"content": text, "tool_calls": [], "finish_reason": finish_reason}


def chat_tool_calls(
    calls: Iterable[tuple[str, Mapping[str, Any]] | tuple[str, str]], *, text: str | None = None
) -> Json:
    """Tool calls, each ``(name, arguments)``; arguments given as a string are sent as they are (bad JSON too)."""
    made = [
        {
            "id": f"call_{uuid.uuid4().hex[:12]}",
            "type": "function",
            "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)},
        }
        for name, args in calls
    ]
    return {"content": text, "tool_calls": made, "finish_reason": "tool_calls"}


class FakeOpenAIServer:
    def __init__(self, replies: Iterable[ChatReply] = (), *, chunk_size: int = 5) -> None:
        self.requests: list[RecordedRequest] = []
        self.chunk_size = chunk_size
        self._script: deque[ChatReply] = deque(replies)
        self._lock = threading.Lock()
        self._http: _Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> Self:
        http = _Server(("127.0.0.1", 0), _Handler)
        http.fake = self
        self._http = http
        self._thread = threading.Thread(target=http.serve_forever, args=(0.02,), daemon=True, name="fake-openai")
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            self._http = None
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._http is not None
        host, port = self._http.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def script(self, *replies: ChatReply) -> None:
        with self._lock:
            self._script.extend(replies)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def _answer(self, path: str, headers: dict[str, str], body: Json) -> tuple[int, Json, list[Json] | None]:
        with self._lock:
            request = RecordedRequest("POST", path, headers, body, list(body.get("messages", [])))
            self.requests.append(request)
            item = self._script.popleft() if self._script else None
            number = len(self.requests)
        if not path.endswith("/chat/completions"):
            return 404, {"error": {"message": f"no route for {path}", "type": "invalid_request_error"}}, None
        if item is None:
            return 400, {"error": {"message": f"no scripted reply left for request #{number}", "type": "invalid"}}, None
        spec = dict(item(request) if callable(item) else item)
        if "status" in spec:
            return int(spec["status"]), spec.get("body") or {"error": {"message": "scripted error"}}, None
        completion = _completion(spec, body, number)
        if body.get("stream"):
            return 200, completion, list(_chunks(completion, self.chunk_size, body))
        return 200, completion, None


def _completion(spec: Json, body: Json, number: int) -> Json:
    message: Json = {"role": "assistant", "content": spec.get("content")}
    if spec.get("tool_calls"):
        message["tool_calls"] = spec["tool_calls"]
    prompt = crude_tokens({"messages": body.get("messages"), "tools": body.get("tools")})
    completion_tokens = crude_tokens(message)
    return {
        "id": f"chatcmpl-fake{number:04d}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": body.get("model", "fake-model"),
        "choices": [{"index": 0, "message": message, "finish_reason": spec.get("finish_reason", "stop")}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion_tokens,
                  "total_tokens": prompt + completion_tokens},
    }  # fmt: skip


def _chunks(completion: Json, size: int, body: Json) -> Iterator[Json]:
    base = {k: completion[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    message = completion["choices"][0]["message"]

    def chunk(delta: Json, finish: str | None = None) -> Json:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    text = message.get("content") or ""
    for i in range(0, len(text), size):
        yield chunk({"content": text[i : i + size]})
    for index, call in enumerate(message.get("tool_calls") or []):
        head = {
            "index": index,
            "id": call["id"],
            "type": "function",
            "function": {"name": call["function"]["name"], "arguments": ""},
        }
        yield chunk({"tool_calls": [head]})
        arguments = call["function"]["arguments"]
        for i in range(0, len(arguments), size):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments[i : i + size]}}]})
    yield chunk({}, completion["choices"][0]["finish_reason"])
    if (body.get("stream_options") or {}).get("include_usage"):
        yield {**base, "choices": [], "usage": completion["usage"]}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeOpenAIServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        body = json.loads(raw) if raw else {}
        headers = {k.lower(): v for k, v in self.headers.items()}
        status, payload, events = cast(_Server, self.server).fake._answer(self.path.split("?")[0], headers, body)
        if events is None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for event in [*(f"data: {json.dumps(e)}\n\n" for e in events), "data: [DONE]\n\n"]:
            payload_bytes = event.encode()
            self.wfile.write(f"{len(payload_bytes):x}\r\n".encode() + payload_bytes + b"\r\n")
        self.wfile.write(b"0\r\n\r\n")

    def log_message(self, format: str, *args: Any) -> None:
        return
