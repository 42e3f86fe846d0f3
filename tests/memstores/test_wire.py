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
