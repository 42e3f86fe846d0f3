"""The JSON Schemas of the Memory Stores API (OpenAPI ``components``): the shapes of Anthropic's API, as the
official SDK's ``anthropic.types.beta`` models parse them."""

from __future__ import annotations

from typing import Any

__all__ = ["MEMSTORE_SCHEMAS"]


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


_TIME = {"type": "string", "format": "date-time", "description": "RFC 3339, UTC."}
_NULLABLE_TIME = {"type": ["string", "null"], "format": "date-time"}
_SHA = {"type": "string", "pattern": "^[0-9a-f]{64}$", "description": "SHA-256 of the UTF-8 content, lowercase hex."}
_PATH = {
    "type": "string",
    "description": "Starts with `/`, 1 to 20 segments, NFC, no control or format characters, at most 1,024 bytes; "
    "memdir also refuses hidden segments (a leading `.`), backslashes and encoded traversal. `/food.md` is the "
    "namespace's `/memories/food.md`.",
}


def _object(required: list[str], properties: dict[str, Any], description: str = "") -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "required": required, "properties": properties}
    if description:
        schema["description"] = description
    return schema


def _page(item: dict[str, Any]) -> dict[str, Any]:
    return _object(["data", "next_page"], {
        "data": {"type": "array", "items": item},
        "next_page": {"type": ["string", "null"], "description": "Pass as `page` for the next page; null at the end."},
    })  # fmt: skip


_ACTOR = {
    "oneOf": [
        _object(["type", "api_key_id"], {"type": {"const": "api_actor"}, "api_key_id": {"type": "string",
                "description": "The memdir token's public id (as `memdir token list` shows it), never the token."}}),
        _object(["type", "session_id"], {"type": {"const": "session_actor"}, "session_id": {"type": "string"}}),
        _object(["type", "user_id"], {"type": {"const": "user_actor"}, "user_id": {"type": "string",
                "description": "memdir's actor name (`user`, `external`, `gc`...)."}}),
    ],
    "description": "Who made a change: this API's writes are `api_actor`, the model's (memory tool, MCP) "
    "`session_actor`, anyone else's `user_actor`.",
}  # fmt: skip

MEMSTORE_SCHEMAS: dict[str, dict[str, Any]] = {
    "MemoryStore": _object(
        ["type", "id", "name", "description", "metadata", "created_at", "updated_at", "archived_at"],
        {
            "type": {"const": "memory_store"},
            "id": {"type": "string", "description": "`memstore_...`: also the namespace holding its memories."},
            "name": {"type": "string", "minLength": 1, "maxLength": 255},
            "description": {"type": "string", "maxLength": 1024},
            "metadata": {"type": "object", "additionalProperties": {"type": "string"}, "maxProperties": 16},
            "created_at": _TIME,
            "updated_at": _TIME,
            "archived_at": _NULLABLE_TIME,
        },
    ),
    "MemoryStoreList": _page(_ref("MemoryStore")),
    "DeletedMemoryStore": _object(
        ["type", "id"], {"type": {"const": "memory_store_deleted"}, "id": {"type": "string"}}
    ),
    "CreateMemoryStore": _object(["name"], {
        "name": {"type": "string", "minLength": 1, "maxLength": 255},
        "description": {"type": "string", "maxLength": 1024},
        "metadata": {"type": "object", "additionalProperties": {"type": "string"}, "maxProperties": 16},
    }),
    "UpdateMemoryStore": _object([], {
        "name": {"type": ["string", "null"]},
        "description": {"type": ["string", "null"]},
        "metadata": {"type": ["object", "null"], "additionalProperties": {"type": ["string", "null"]},
                     "description": "Keys to set; a key set to null is removed."},
    }),
    "Memory": _object(
        ["type", "id", "memory_store_id", "path", "content", "content_sha256", "content_size_bytes",
         "memory_version_id", "created_at", "updated_at"],
        {
            "type": {"const": "memory"},
            "id": {"type": "string", "description": "`mem_...`: stays the same through renames."},
            "memory_store_id": {"type": "string"},
            "path": _PATH,
            "content": {"type": ["string", "null"], "description": "Null with `view=basic`."},
            "content_sha256": _SHA,
            "content_size_bytes": {"type": "integer"},
            "memory_version_id": {"type": "string", "description": "The `memver_...` holding the current content."},
            "created_at": _TIME,
            "updated_at": _TIME,
        },
    ),
    "MemoryPrefix": _object(["type", "path"], {"type": {"const": "memory_prefix"}, "path": {"type": "string"}}),
    "MemoryList": _page({"oneOf": [_ref("Memory"), _ref("MemoryPrefix")]}),
    "DeletedMemory": _object(["type", "id"], {"type": {"const": "memory_deleted"}, "id": {"type": "string"}}),
    "CreateMemory": _object(["path", "content"], {
        "path": _PATH, "content": {"type": ["string", "null"], "description": "At most 102,400 bytes of UTF-8."},
    }),
    "UpdateMemory": _object([], {
        "path": {"type": ["string", "null"], "description": "Renames the memory (its id stays)."},
        "content": {"type": ["string", "null"]},
        "precondition": _object(["type"], {"type": {"const": "content_sha256"}, "content_sha256": _SHA}),
    }),
    "Actor": _ACTOR,
    "MemoryVersion": _object(
        ["type", "id", "memory_id", "memory_store_id", "operation", "created_at"],
        {
            "type": {"const": "memory_version"},
            "id": {"type": "string", "description": "`memver_...`"},
            "memory_id": {"type": "string"},
            "memory_store_id": {"type": "string"},
            "operation": {"type": "string", "enum": ["created", "modified", "deleted"]},
            "path": {"type": ["string", "null"], "description": "Null once redacted."},
            "content": {"type": ["string", "null"]},
            "content_sha256": {"type": ["string", "null"]},
            "content_size_bytes": {"type": ["integer", "null"]},
            "created_at": _TIME,
            "created_by": {"oneOf": [_ref("Actor"), {"type": "null"}]},
            "redacted_at": _NULLABLE_TIME,
            "redacted_by": {"oneOf": [_ref("Actor"), {"type": "null"}]},
        },
    ),
    "MemoryVersionList": _page(_ref("MemoryVersion")),
    "AnthropicError": _object(["type", "error"], {
        "type": {"const": "error"},
        "error": _object(["type", "message"], {
            "type": {"type": "string", "enum": [
                "invalid_request_error", "authentication_error", "not_found_error", "conflict_error",
                "memory_precondition_failed_error", "memory_path_conflict_error", "request_too_large",
                "rate_limit_error", "api_error",
            ]},
            "message": {"type": "string"},
            "conflicting_path": {"type": "string", "description": "`memory_path_conflict_error`"},
            "conflicting_memory_id": {"type": "string", "description": "`memory_path_conflict_error`"},
        }),
        "request_id": {"type": "string"},
    }, "Anthropic's error shape (the Memory Stores API's errors)."),
}  # fmt: skip
