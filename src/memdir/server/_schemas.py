"""The JSON Schemas of the API's bodies (OpenAPI ``components``), and helpers routers use to describe endpoints."""

from __future__ import annotations

from typing import Any

from .._wire import ERRORS, HEADER_ACTOR, HEADER_IDEMPOTENCY, HEADER_SESSION, HEADER_SOURCE
from ._schemas_memstores import MEMSTORE_SCHEMAS
from ._schemas_web import WEB_SCHEMAS

__all__ = [
    "BYTES",
    "IDEMPOTENCY_HEADER",
    "ORIGIN_HEADERS",
    "PATH_PARAMETER",
    "SCHEMAS",
    "TOOL_HEADERS",
    "binary",
    "json_body",
    "json_response",
    "ref",
]


def ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def json_body(schema: dict[str, Any], description: str = "") -> dict[str, Any]:
    return {"required": True, "description": description, "content": {"application/json": {"schema": schema}}}


def json_response(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def binary(media_type: str, description: str, headers: dict[str, Any] | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "description": description,
        "content": {media_type: {"schema": {"type": "string", "format": "binary"}}},
    }
    if headers:
        doc["headers"] = headers
    return doc


BYTES = {"type": "string", "format": "binary"}

PATH_PARAMETER: dict[str, Any] = {
    "name": "path",
    "in": "path",
    "required": True,
    "description": "The memory path without its leading slash (`memories/notes/todo.md`; the root is `memories`), "
    "each segment percent-encoded (`%25` for a `%` in a name). An encoded `/` inside a segment is refused.",
    "schema": {"type": "string"},
}


def _header(name: str, description: str) -> dict[str, Any]:
    return {"name": name, "in": "header", "required": False, "description": description, "schema": {"type": "string"}}


_SESSION_DOC = "Session recorded on the versions this request writes (1-256 characters, percent-encoded UTF-8)."
ORIGIN_HEADERS: tuple[dict[str, Any], ...] = (
    _header(HEADER_ACTOR, "Actor recorded on the versions this request writes (default `user`)."),
    _header(HEADER_SESSION, _SESSION_DOC + " Default: none."),
    _header(HEADER_SOURCE, "Where the content came from, recorded on the versions (default: none)."),
)
IDEMPOTENCY_HEADER = _header(
    HEADER_IDEMPOTENCY,
    "A key of your choosing (1-255 visible ASCII characters; a fresh UUID per change): sent again with the same "
    "key, the change is made at most once and the first attempt's answer comes back. Recorded by the SQLite and "
    "PostgreSQL stores (`idempotent_writes` in /v1/whoami).",
)
TOOL_HEADERS: tuple[dict[str, Any], ...] = (
    _header(HEADER_ACTOR, "`model` (default) or `user`: who the memory tool acts for."),
    _header(HEADER_SESSION, _SESSION_DOC + " Default: `token-<token id>`."),
    IDEMPOTENCY_HEADER,
    {
        "name": "create_overwrites",
        "in": "query",
        "required": False,
        "schema": {"type": "string", "enum": ["false", "true"]},
        "description": "`true`: `create` may replace an existing file (history keeps the old content).",
    },
)

_VERSION: dict[str, Any] = {
    "type": "object",
    "required": ["version", "path", "op", "actor", "session", "source", "timestamp", "sha256", "size", "old_path"],
    "properties": {
        "version": {"type": "integer", "minimum": 1, "description": "Numbered 1, 2, 3... per namespace."},
        "path": {"type": "string", "example": "/memories/notes.md"},
        "op": {
            "type": "string",
            "enum": ["create", "write", "str_replace", "insert", "delete", "rename", "restore", "external", "import"],
        },
        "actor": {"type": "string"},
        "session": {"type": ["string", "null"]},
        "source": {"type": ["string", "null"]},
        "timestamp": {
            "type": ["string", "number"],
            "format": "date-time",
            "description": "ISO 8601, UTC (2026-11-29T14:38:01.5Z), with every digit the time has. Accepted on "
            "input as seconds since the epoch too (archives and servers before memdir 0.2).",
        },
        "sha256": {"type": ["string", "null"], "description": "Of the new content; null for a deletion."},
        "size": {"type": "integer"},
        "old_path": {"type": ["string", "null"], "description": "Where a rename came from."},
    },
}

_COMMAND_ARGS: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    "view": (("path",), {"path": {"type": "string"}, "view_range": {"type": "array", "items": {"type": "integer"}}}),
    "create": (("path", "file_text"), {"path": {"type": "string"}, "file_text": {"type": "string"}}),
    "str_replace": (
        ("path", "old_str"),
        {"path": {"type": "string"}, "old_str": {"type": "string"}, "new_str": {"type": "string"}},
    ),
    "insert": (
        ("path", "insert_line", "insert_text"),
        {"path": {"type": "string"}, "insert_line": {"type": "integer"}, "insert_text": {"type": "string"}},
    ),
    "delete": (("path",), {"path": {"type": "string"}}),
    "rename": (("old_path", "new_path"), {"old_path": {"type": "string"}, "new_path": {"type": "string"}}),
}


def _command(name: str) -> dict[str, Any]:
    required, properties = _COMMAND_ARGS[name]
    return {
        "type": "object",
        "required": ["command", *required],
        "properties": {"command": {"const": name}, **properties},
    }


SCHEMAS: dict[str, dict[str, Any]] = {
    "Error": {
        "type": "object",
        "required": ["error"],
        "properties": {
            "error": {
                "type": "object",
                "required": ["code", "message"],
                "properties": {
                    "code": {"type": "string", "enum": sorted(ERRORS)},
                    "message": {"type": "string"},
                    "current": {"type": ["integer", "null"], "description": "`conflict`: the file's version now."},
                    "path": {"type": "string", "description": "`path_error`: the path as sent."},
                    "kind": {"type": "string", "enum": ["outside", "escape", "not_allowed"]},
                    "why": {"type": "string"},
                    "retry_after": {"type": "number", "description": "`rate_limited`: seconds to wait."},
                },
            }
        },
    },
    "ToolCommand": {
        "description": "A memory tool command exactly as the model sends it (`memory_20250818`).",
        "oneOf": [_command(name) for name in _COMMAND_ARGS],
    },
    "ToolArguments": {"type": "object", "description": "The command's arguments, without `command`."},
    "ToolResult": {
        "type": "object",
        "required": ["text", "is_error", "content"],
        "properties": {
            "text": {"type": "string", "description": "What the model reads, in SPEC.md's exact words."},
            "is_error": {"type": "boolean"},
            "content": {
                "type": "array",
                "description": "Messages API content blocks: a text block, or a text and an image block.",
                "items": {"type": "object"},
            },
        },
    },
    "Version": _VERSION,
    "VersionList": {"type": "object", "properties": {"versions": {"type": "array", "items": ref("Version")}}},
    "LogPage": {
        "type": "object",
        "properties": {
            "versions": {"type": "array", "items": ref("Version")},
            "next": {"type": ["integer", "null"], "description": "Pass as `since` for the next page; null at the end."},
        },
    },
    "Stat": {
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "kind": {"type": "string", "enum": ["file", "dir"]},
            "size": {"type": "integer"},
            "version": {"type": ["integer", "null"]},
            "sha256": {"type": ["string", "null"]},
            "modified": {"type": ["string", "null"], "format": "date-time"},
        },
    },
    "EntryList": {
        "type": "object",
        "properties": {
            "entries": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "path": {"type": "string"},
                        "size": {"type": "integer"},
                        "modified": {"type": "string", "format": "date-time"},
                        "version": {"type": "integer"},
                        "sha256": {"type": ["string", "null"]},
                    },
                },
            }
        },
    },
    "Usage": {"type": "object", "properties": {"files": {"type": "integer"}, "bytes": {"type": "integer"}}},
    "Move": {
        "type": "object",
        "required": ["from", "to"],
        "properties": {"from": {"type": "string"}, "to": {"type": "string"}},
    },
    "Restore": {
        "type": "object",
        "required": ["version"],
        "properties": {
            "version": {"type": "integer", "minimum": 1, "description": "The version whose content comes back."},
            "expected_version": {
                "type": "integer",
                "minimum": 1,
                "description": "Restore only if the file is still at this version (else `412 conflict`).",
            },
        },
    },
    "ImportVersion": {
        "type": "object",
        "required": ["version"],
        "properties": {
            "version": ref("Version"),
            "content": {"type": ["string", "null"], "description": "The content, base64; null for a delete or rename."},
        },
    },
    "ArchiveSummary": {
        "type": "object",
        "properties": {
            "namespace": {"type": "string", "description": "The namespace the archive was exported from."},
            "versions": {"type": "integer"},
            "blobs": {"type": "integer"},
            "files": {"type": "integer"},
            "bytes": {"type": "integer"},
        },
    },
    "Whoami": {
        "type": "object",
        "properties": {
            "namespace": {"type": "string"},
            "token_id": {"type": "string"},
            "idempotent_writes": {
                "type": "boolean",
                "description": "Whether this server's store records Idempotency-Key (so a change may be resent).",
            },
            "admin": {
                "type": "boolean",
                "description": "An admin token (`memdir token create --admin`): its imports keep the provenance "
                "they carry; any other token's are recorded as its own, now.",
            },
        },
    },
    **WEB_SCHEMAS,
    **MEMSTORE_SCHEMAS,
    "Health": {"type": "object", "properties": {"status": {"const": "ok"}, "version": {"type": "string"}}},
}
