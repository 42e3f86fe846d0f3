"""The OpenAPI 3.1 document, generated from the endpoints the app mounts (so every route is in it)."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

from .._version import __version__
from .._wire import ERRORS
from ._schemas import SCHEMAS, ref

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ._endpoint import Endpoint

__all__ = ["MCP_METHODS", "openapi_document"]

MCP_METHODS = ("POST", "GET", "DELETE")

# What any authenticated endpoint may answer, whatever it does.
_COMMON = (
    "invalid_request",
    "unauthorized",
    "rate_limited",
    "uri_too_long",
    "headers_too_large",
    "internal_error",
    "unavailable",  # the token is looked up in the store's database, which may be out of reach
)
_STORE = ("storage_error", "corrupt_store", "insufficient_storage", "refused")
_PUBLIC = ("uri_too_long", "headers_too_large", "internal_error")

_DESCRIPTION = """\
memdir's HTTP API: the memory tool's six commands, the store contract (files, history, archives), search, the
review queue, the audit log, what the web page at `/` uses, and MCP over streamable HTTP at `/mcp`. Every request
but `/healthz`, `/openapi.json` and the web page's own files sends `Authorization: Bearer <token>` or
`X-Api-Key: <token>` (`memdir token create --namespace NS`); the token alone decides the namespace a request
reaches. The Memory Stores API (`/v1/memory_stores`) answers as Anthropic's does, errors included.

Errors are `{"error": {"code": ..., "message": ...}}`. The codes (stable):

""" + "\n".join(f"- `{e.code}` ({e.status}): {e.meaning}" for e in ERRORS.values())


def openapi_document(endpoints: Iterable[Endpoint]) -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = defaultdict(dict)
    for endpoint in endpoints:
        paths[endpoint.openapi_path][endpoint.method.lower()] = _operation(endpoint)
    paths["/mcp"] = {method.lower(): _mcp_operation(method) for method in MCP_METHODS}
    return {
        "openapi": "3.1.0",
        "info": {"title": "memdir", "version": __version__, "description": _DESCRIPTION},
        "paths": dict(paths),
        "components": {
            "schemas": SCHEMAS,
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "mdt_..."},
                "apiKey": {"type": "apiKey", "in": "header", "name": "X-Api-Key"},  # what Anthropic's clients send
            },
        },
        "security": [{"bearer": []}, {"apiKey": []}],
    }


def _operation(endpoint: Endpoint) -> dict[str, Any]:
    operation: dict[str, Any] = {
        "operationId": endpoint.operation_id,
        "summary": endpoint.summary,
        "tags": [endpoint.tag],
        "parameters": list(endpoint.parameters),
        "responses": {**endpoint.responses, **_errors_of(endpoint)},
    }
    if endpoint.description:
        operation["description"] = endpoint.description
    if endpoint.request_body is not None:
        operation["requestBody"] = endpoint.request_body
    if endpoint.public:
        operation["security"] = []
    return operation


def _errors_of(endpoint: Endpoint) -> dict[str, Any]:
    codes = _codes(endpoint)
    return _error_responses(codes) if endpoint.errors_as is None else endpoint.errors_as.openapi(codes)


def _codes(endpoint: Endpoint) -> tuple[str, ...]:
    if endpoint.public:
        return (*_PUBLIC, *endpoint.errors)
    body = ("payload_too_large", "unsupported_media_type") if endpoint.request_body is not None else ()
    return (*_COMMON, *_STORE, *body, *endpoint.errors)


def _error_responses(codes: Iterable[str]) -> dict[str, Any]:
    by_status: dict[int, list[str]] = defaultdict(list)
    for code in dict.fromkeys(codes):
        by_status[ERRORS[code].status].append(code)
    return {
        str(status): {
            "description": "Error: " + ", ".join(f"`{c}`" for c in found),
            "content": {"application/json": {"schema": ref("Error")}},
        }
        for status, found in sorted(by_status.items())
    }


def _mcp_operation(method: str) -> dict[str, Any]:
    return {
        "operationId": f"mcp{method.title()}",
        "summary": "MCP over streamable HTTP (stateless): the six memory tools of `memdir mcp`",
        "tags": ["mcp"],
        "description": "Speak MCP with any MCP client (JSON-RPC bodies, JSON responses). Each request is served on "
        "its own, so any worker process can answer it; the token's namespace is the only one its tools reach.",
        "responses": {
            "200": {"description": "A JSON-RPC response."},
            "202": {"description": "A notification, accepted."},
            **_error_responses((*_COMMON, "payload_too_large")),
        },
    }
