"""The OpenAPI document describes every route the app serves, and nothing else; docs/http.md lists every error code."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
from starlette.routing import Route

from backends import LiveServer
from memdir._wire import ERRORS

DOCS = Path(__file__).resolve().parents[2] / "docs" / "http.md"


def served_operations(server: LiveServer) -> set[tuple[str, str]]:
    found = set()
    for route in server.app.routes:
        assert isinstance(route, Route)
        path = re.sub(r"\{(\w+):\w+\}", r"{\1}", route.path)
        # Starlette answers HEAD wherever it answers GET; /mcp is an ASGI app taking any method.
        methods = (route.methods or {"POST", "GET", "DELETE"}) - {"HEAD"}
        found.update((path, method.lower()) for method in methods)
    return found


def documented_operations(document: dict[str, Any]) -> set[tuple[str, str]]:
    return {(path, method) for path, item in document["paths"].items() for method in item}


def test_every_route_is_documented_and_every_documented_route_is_served(server: LiveServer) -> None:
    with httpx.Client(base_url=server.url) as anonymous:
        document = anonymous.get("/openapi.json").json()
    assert document["openapi"] == "3.1.0"
    assert served_operations(server) == documented_operations(document)


def test_operations_have_unique_ids_and_their_error_codes_are_the_stable_set(server: LiveServer) -> None:
    document = server.services.openapi
    operations = [op for item in document["paths"].values() for op in item.values()]
    ids = [op["operationId"] for op in operations]
    assert len(ids) == len(set(ids))
    anthropic_types = document["components"]["schemas"]["AnthropicError"]["properties"]["error"]["properties"]
    for op in operations:
        assert "200" in op["responses"], op["operationId"]
        for status, response in op["responses"].items():
            if status.startswith(("4", "5")):
                codes = re.findall(r"`(\w+)`", response["description"])
                if op["tags"] == ["memory_stores"]:  # Anthropic's error types, as its API answers them
                    assert codes and set(codes) <= set(anthropic_types["type"]["enum"]), (op["operationId"], status)
                    continue
                assert codes and all(ERRORS[code].status == int(status) for code in codes), (op["operationId"], status)
    schema_codes = document["components"]["schemas"]["Error"]["properties"]["error"]["properties"]["code"]["enum"]
    assert sorted(schema_codes) == sorted(ERRORS)


def test_every_reference_resolves(server: LiveServer) -> None:
    document = server.services.openapi
    text = json.dumps(document)
    for name in re.findall(r'"#/components/schemas/(\w+)"', text):
        assert name in document["components"]["schemas"], name
    for item in document["paths"].values():
        for op in item.values():
            for parameter in op.get("parameters", []):
                assert {"name", "in", "schema"} <= set(parameter), parameter


def test_protected_operations_need_the_bearer_token(server: LiveServer) -> None:
    document = server.services.openapi
    assert document["security"] == [{"bearer": []}, {"apiKey": []}]  # Authorization: Bearer, or X-Api-Key
    public = {path for path, item in document["paths"].items() for op in item.values() if op.get("security") == []}
    assert public == {"/healthz", "/openapi.json", "/", "/static/{name}"}  # the web page holds no data


def test_docs_http_md_lists_every_error_code_with_its_status() -> None:
    text = DOCS.read_text(encoding="utf-8")
    for error in ERRORS.values():
        assert re.search(rf"\|\s*`{error.code}`\s*\|\s*{error.status}\s*\|", text), error.code


def test_docs_http_md_mentions_every_route(server: LiveServer) -> None:
    text = DOCS.read_text(encoding="utf-8")
    for path, method in served_operations(server):
        assert f"{method.upper()} {path}" in text, (method, path)
