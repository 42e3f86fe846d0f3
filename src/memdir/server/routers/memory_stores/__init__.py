"""The Memory Stores API of Anthropic's Managed Agents (beta ``agent-memory-2026-07-22``), served by memdir.

Point the official SDK at a memdir server and its ``client.beta.memory_stores`` works unchanged: requests and
answers are the SDK's, errors are Anthropic's (`._errors`). A memory store is a namespace
(`memdir.memstores`); a token reaches the memory stores its *tenant* owns and no other, by any id, path or
parameter: a store, memory or version of another tenant is ``404``, as one that does not exist. Writes are
ordinary store calls on that namespace's store, leased like the token's own (`Call.run` with ``namespace``),
recorded as actor ``api``, session ``token-<token id>``.
"""

from __future__ import annotations

from typing import Any

from ..._endpoint import Endpoint
from ..._schemas import json_body, ref
from ..._schemas import json_response as json_doc
from ._errors import ANTHROPIC
from ._memories import (
    create_memory,
    delete_memory,
    list_memories,
    list_versions,
    redact_version,
    retrieve_memory,
    retrieve_version,
    update_memory,
)
from ._stores import archive_store, create_store, delete_store, list_stores, retrieve_store, update_store

__all__ = ["ENDPOINTS", "MEMORY_STORES_PREFIX"]

_TAG = "memory_stores"
_BASE = MEMORY_STORES_PREFIX = "/v1/memory_stores"


def _path(name: str, description: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "description": description, "schema": {"type": "string"}}


def _query(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "description": description, "schema": schema}


_STORE = _path("memory_store_id", "`memstore_...`, of a store the token's tenant owns (any other: 404).")
_MEMORY = _path("memory_id", "`mem_...`")
_VERSION = _path("memory_version_id", "`memver_...`")
_BETA = {"name": "anthropic-beta", "in": "header", "required": False, "schema": {"type": "string"},
         "description": "`agent-memory-2026-07-22`, as the SDK sends it (not required here)."}  # fmt: skip
_LIMIT = _query("limit", {"type": "integer", "minimum": 1, "maximum": 100}, "Per page (default 20; 20 at most "
                "with `view=full`).")  # fmt: skip
_PAGE = _query("page", {"type": "string"}, "The `next_page` of the previous page.")


def _view(default: str) -> dict[str, Any]:
    return _query("view", {"type": "string", "enum": ["basic", "full"]}, f"`full` includes `content` (default "
                  f"`{default}`).")  # fmt: skip


_CREATED = (
    _query("created_at[gte]", {"type": "string", "format": "date-time"}, "Created at or after (RFC 3339)."),
    _query("created_at[lte]", {"type": "string", "format": "date-time"}, "Created at or before (RFC 3339)."),
)
_VERSION_FILTERS = (
    _query("memory_id", {"type": "string"}, "Versions of this memory (deleted ones too)."),
    _query("operation", {"type": "string", "enum": ["created", "modified", "deleted"]}, "This kind of change."),
    _query("session_id", {"type": "string"}, "Written by the model in this memdir session."),
    _query("api_key_id", {"type": "string"}, "Written through this API with the token of this id."),
    _query("service_account_id", {"type": "string"}, "memdir has no service accounts: matches nothing."),
    *_CREATED,
)
_MEMORY_ERRORS = ("memory_path_conflict_error", "memory_precondition_failed_error", "not_found_error")


def _endpoint(method: str, path: str, handler: Any, operation: str, summary: str, **more: Any) -> Endpoint:
    parameters = (*more.pop("parameters", ()), _BETA)
    return Endpoint(
        method, _BASE + path, handler, operation, summary, _TAG, parameters=parameters, errors_as=ANTHROPIC, **more
    )


ENDPOINTS = (
    _endpoint("POST", "", create_store, "createMemoryStore", "Create a memory store (a namespace of its own)",
              request_body=json_body(ref("CreateMemoryStore")),
              responses={"200": json_doc(ref("MemoryStore"), "The new store.")}),
    _endpoint("GET", "", list_stores, "listMemoryStores", "The tenant's memory stores, newest first",
              parameters=(_query("include_archived", {"type": "boolean"}, "Include archived stores."), *_CREATED,
                          _LIMIT, _PAGE),
              responses={"200": json_doc(ref("MemoryStoreList"), "One page.")}),
    _endpoint("GET", "/{memory_store_id}", retrieve_store, "retrieveMemoryStore", "Retrieve a memory store",
              parameters=(_STORE,), responses={"200": json_doc(ref("MemoryStore"), "The store.")},
              errors=("not_found_error",)),
    _endpoint("POST", "/{memory_store_id}", update_store, "updateMemoryStore",
              "Change a memory store's name, description or metadata (not once archived: 400)",
              parameters=(_STORE,), request_body=json_body(ref("UpdateMemoryStore")),
              responses={"200": json_doc(ref("MemoryStore"), "The store.")}, errors=("not_found_error",)),
    _endpoint("DELETE", "/{memory_store_id}", delete_store, "deleteMemoryStore",
              "Delete a memory store: every memory, and every version's content", parameters=(_STORE,),
              responses={"200": json_doc(ref("DeletedMemoryStore"), "Gone.")}, errors=("not_found_error",)),
    _endpoint("POST", "/{memory_store_id}/archive", archive_store, "archiveMemoryStore",
              "Archive a memory store: its memories can then be read and deleted, not written",
              parameters=(_STORE,), responses={"200": json_doc(ref("MemoryStore"), "The store.")},
              errors=("not_found_error",)),
    _endpoint("POST", "/{memory_store_id}/memories", create_memory, "createMemory", "Create a memory at a path",
              parameters=(_STORE, _view("basic")), request_body=json_body(ref("CreateMemory")),
              responses={"200": json_doc(ref("Memory"), "The memory as stored.")}, errors=_MEMORY_ERRORS),
    _endpoint("GET", "/{memory_store_id}/memories", list_memories, "listMemories",
              "The memories below a path prefix, in path order (with `depth`, deeper ones as prefixes)",
              parameters=(_STORE, _query("path_prefix", {"type": "string"}, "Ends with `/`; whole segments."),
                          _query("depth", {"type": "integer", "minimum": 0}, "0: every level; 1: direct children."),
                          _view("basic"), _LIMIT, _PAGE),
              responses={"200": json_doc(ref("MemoryList"), "One page.")}, errors=("not_found_error",)),
    _endpoint("GET", "/{memory_store_id}/memories/{memory_id}", retrieve_memory, "retrieveMemory",
              "Retrieve a memory", parameters=(_STORE, _MEMORY, _view("full")),
              responses={"200": json_doc(ref("Memory"), "The memory.")}, errors=("not_found_error",)),
    _endpoint("POST", "/{memory_store_id}/memories/{memory_id}", update_memory, "updateMemory",
              "Change a memory's content and/or path, optionally only if its content still has a SHA-256",
              parameters=(_STORE, _MEMORY, _view("basic")), request_body=json_body(ref("UpdateMemory")),
              responses={"200": json_doc(ref("Memory"), "The memory as stored.")}, errors=_MEMORY_ERRORS),
    _endpoint("DELETE", "/{memory_store_id}/memories/{memory_id}", delete_memory, "deleteMemory",
              "Delete a memory (its versions stay), optionally only if its content still has a SHA-256",
              parameters=(_STORE, _MEMORY, _query("expected_content_sha256", {"type": "string"}, "64 hex digits.")),
              responses={"200": json_doc(ref("DeletedMemory"), "Gone.")}, errors=_MEMORY_ERRORS),
    _endpoint("GET", "/{memory_store_id}/memory_versions", list_versions, "listMemoryVersions",
              "The store's memory versions, newest first", parameters=(_STORE, *_VERSION_FILTERS, _view("basic"),
                                                                         _LIMIT, _PAGE),
              responses={"200": json_doc(ref("MemoryVersionList"), "One page.")}, errors=("not_found_error",)),
    _endpoint("GET", "/{memory_store_id}/memory_versions/{memory_version_id}", retrieve_version,
              "retrieveMemoryVersion", "Retrieve a memory version", parameters=(_STORE, _VERSION, _view("full")),
              responses={"200": json_doc(ref("MemoryVersion"), "The version.")}, errors=("not_found_error",)),
    _endpoint("POST", "/{memory_store_id}/memory_versions/{memory_version_id}/redact", redact_version,
              "redactMemoryVersion",
              "Redact a version: its content leaves the database, its path, hash and size are nulled",
              parameters=(_STORE, _VERSION), responses={"200": json_doc(ref("MemoryVersion"), "The version.")},
              errors=("not_found_error", "conflict_error")),
)  # fmt: skip
