"""Byte for byte what the SDK's models define: every answer carries exactly the fields of the SDK's model (no
field missing, none extra), and validates against the OpenAPI document's schema for it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import jsonschema
import pytest
from anthropic.types.beta import BetaManagedAgentsDeletedMemoryStore, BetaManagedAgentsMemoryStore
from anthropic.types.beta.memory_stores import (
    BetaManagedAgentsDeletedMemory,
    BetaManagedAgentsMemory,
    BetaManagedAgentsMemoryPrefix,
    BetaManagedAgentsMemoryVersion,
)
from anthropic.types.shared import ErrorResponse

from backends import LiveServer


@pytest.fixture
def http(server: LiveServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, headers={"X-Api-Key": server.token("alice")}) as client:
        yield client


def check(server: LiveServer, body: dict[str, Any], model: Any, schema: str) -> None:
    assert set(body) == set(model.model_fields), (schema, set(body) ^ set(model.model_fields))
    document = server.services.openapi
    resolver = {"$ref": f"#/components/schemas/{schema}", "components": document["components"]}
    jsonschema.validate(body, resolver)


def test_every_answer_has_the_sdks_fields(server: LiveServer, http: httpx.Client) -> None:
    store = http.post("/v1/memory_stores", json={"name": "wire", "metadata": {"k": "v"}}).json()
    check(server, store, BetaManagedAgentsMemoryStore, "MemoryStore")
    base = f"/v1/memory_stores/{store['id']}"
    memory = http.post(f"{base}/memories", json={"path": "/dir/a.md", "content": "x"}).json()
    check(server, memory, BetaManagedAgentsMemory, "Memory")
    check(server, http.get(f"{base}/memories/{memory['id']}").json(), BetaManagedAgentsMemory, "Memory")
    [prefix] = http.get(f"{base}/memories", params={"depth": 1}).json()["data"]
    check(server, prefix, BetaManagedAgentsMemoryPrefix, "MemoryPrefix")
    listed = http.get(f"{base}/memory_versions").json()
    assert set(listed) == {"data", "next_page"}
    check(server, listed["data"][0], BetaManagedAgentsMemoryVersion, "MemoryVersion")
    check(
        server, http.delete(f"{base}/memories/{memory['id']}").json(), BetaManagedAgentsDeletedMemory, "DeletedMemory"
    )
    missing = http.get(f"{base}/memories/{memory['id']}")
    assert missing.status_code == 404 and missing.headers["request-id"] == missing.json()["request_id"]
    check(server, missing.json(), ErrorResponse, "AnthropicError")
    check(server, http.delete(base).json(), BetaManagedAgentsDeletedMemoryStore, "DeletedMemoryStore")
    unknown = http.get("/v1/memory_stores/x/nothing/here")  # the router's own 404, in the same shape
    assert unknown.status_code == 404 and unknown.json()["error"]["type"] == "not_found_error"


def test_a_result_carries_a_request_id_as_an_error_does(server: LiveServer, http: httpx.Client) -> None:
    """The SDK reads it into ``_request_id`` (``with_raw_response`` too)."""
    created = http.post("/v1/memory_stores", json={"name": "ids"})
    listed = http.get("/v1/memory_stores")
    assert created.headers["request-id"].startswith("req_") and listed.headers["request-id"].startswith("req_")
    assert created.headers["request-id"] != listed.headers["request-id"]


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("PUT", "/v1/memory_stores/memstore_x", "DELETE, GET, HEAD, POST"),
        ("PUT", "/v1/memory_stores", "GET, HEAD, POST"),
        ("PUT", "/v1/memory_stores/memstore_x/memories", "GET, HEAD, POST"),
    ],
)
def test_a_method_not_allowed_names_every_method_the_path_takes(
    http: httpx.Client, method: str, path: str, allowed: str
) -> None:
    answer = http.request(method, path)
    assert answer.status_code == 405 and answer.headers["Allow"] == allowed
    assert f"allowed: {allowed}" in answer.json()["error"]["message"]


def test_a_forged_page_token_is_refused_not_a_server_error(http: httpx.Client) -> None:
    import base64
    import json

    store = http.post("/v1/memory_stores", json={"name": "pages"}).json()["id"]
    for position in (10**23, -1, True, 1.5):
        token = "page_" + base64.urlsafe_b64encode(json.dumps(["versions", position]).encode()).decode()
        answer = http.get(f"/v1/memory_stores/{store}/memory_versions", params={"page": token})
        assert (answer.status_code, answer.json()["error"]["type"]) == (400, "invalid_request_error"), position
    for raw in ('["stores", NaN, "memstore_x"]', '["stores", Infinity, "memstore_x"]', '["stores", 1e400, "x"]'):
        token = "page_" + base64.urlsafe_b64encode(raw.encode()).decode()
        assert http.get("/v1/memory_stores", params={"page": token}).status_code == 400, raw


def test_an_integer_query_sent_twice_is_refused_as_text_is(http: httpx.Client) -> None:
    answer = http.get("/v1/memory_stores", params=[("limit", "1"), ("limit", "100")])
    assert answer.status_code == 400 and "at most once" in answer.json()["error"]["message"]


def test_a_listing_takes_any_depth(http: httpx.Client) -> None:
    store = http.post("/v1/memory_stores", json={"name": "deep"}).json()["id"]
    http.post(f"/v1/memory_stores/{store}/memories", json={"path": "/a/b.md", "content": "x"})
    deep = http.get(f"/v1/memory_stores/{store}/memories", params={"depth": 25})
    assert deep.status_code == 200 and [m["path"] for m in deep.json()["data"]] == ["/a/b.md"]
