"""Files: the store contract's reading and writing (what `memdir.RemoteStore` speaks).

Paths are in the URL (``/v1/files/memories/notes.md``). A write's precondition travels as HTTP's conditional
headers: ``If-None-Match: *`` (the path must hold nothing), ``If-Match: "N"`` (the file must be at version N);
without either the write creates or overwrites. A failed precondition is ``412 conflict`` (with the current
version) or ``409 already_exists``. Writes, deletes and moves take an ``Idempotency-Key`` (made at most once:
`memdir.server._idempotency`).
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any

from starlette.responses import Response

from ..._wire import entry_to_json, iso_time, stat_to_json, usage_to_json, version_to_json, versions_to_json
from ...paths import parse
from ...store._records import ANY, MISSING, Expect, Op
from .._endpoint import Call, Endpoint
from .._errors import ApiError, json_response
from .._idempotency import REPLAYED, moved, once, removed, written
from .._schemas import BYTES, IDEMPOTENCY_HEADER, ORIGIN_HEADERS, PATH_PARAMETER, binary, json_body, ref
from .._schemas import json_response as json_doc

if TYPE_CHECKING:
    from ...gate import GatedStore, Receipt
    from ...store._records import FileData, Version

__all__ = ["ENDPOINTS"]

# `external` (an outside edit memdir found) and `import` (a replayed version) are recorded by memdir itself: a
# client that could write them could pass its own change off as someone else's.
_OPS: frozenset[str] = frozenset({"create", "write", "str_replace", "insert", "restore"})
_ETAG = re.compile(r'(?:W/)?"?([0-9]{1,18})"?')


async def read_file(call: Call) -> Response:
    path = call.memory_path()
    version = call.query_int("version", 0, minimum=1) if "version" in call.request.query_params else None
    if version is not None:
        content = await call.run(lambda store: store.read_version(path, version))
        return Response(content, media_type="application/octet-stream", headers={"X-Memdir-Version": str(version)})
    data = await call.run(lambda store: store.read(path))
    return Response(data.content, media_type="application/octet-stream", headers=_file_headers(data))


def _file_headers(data: FileData) -> dict[str, str]:
    return {
        "ETag": f'"{data.version}"',
        "X-Memdir-Version": str(data.version),
        "X-Memdir-Sha256": data.sha256,
        "X-Memdir-Modified": iso_time(data.modified),
    }


async def write_file(call: Call) -> Response:
    path = call.memory_path()
    expect = _expect(call)
    op = call.request.query_params.get("op", "write")
    if op not in _OPS:
        raise ApiError("invalid_request", f"query parameter 'op' must be one of: {', '.join(sorted(_OPS))}")
    caller = call.caller()
    content = await call.body(call.services.config.max_upload_bytes)
    written_op: Op = op  # type: ignore[assignment]  # checked against _OPS above

    def write(store: GatedStore) -> tuple[dict[str, Any], bool]:
        with store.call(op, path.virtual) as receipt:
            change = functools.partial(store.write, path, content, expect=expect, op=written_op)
            version, replayed = once(store, caller.request, change, written(path))
            return screened_to_json(version, receipt), replayed

    answer, replayed = await call.run(write, writes=True, caller=caller)
    headers = {"ETag": f'"{answer["version"]}"', **(REPLAYED if replayed else {})}
    return json_response(answer, headers=headers)


def screened_to_json(version: Version, receipt: Receipt) -> dict[str, Any]:
    """A write's version, and what the write policy did to it (``outcome``: ``ok``, ``warn``, ``redact``; the
    findings name rules and lines, never the text): what was stored may differ from what was sent."""
    findings = [f.to_json() for f in receipt.findings if f.action != "allow"]
    return {**version_to_json(version), "outcome": receipt.outcome or "ok", "findings": findings}


def _expect(call: Call) -> Expect:
    match, none_match = call.header("if-match"), call.header("if-none-match")
    if match is not None and none_match is not None:
        raise ApiError("invalid_request", "send If-Match or If-None-Match, not both")
    if none_match is not None:
        if none_match.strip() != "*":
            raise ApiError("invalid_request", "If-None-Match takes only * (the path must hold nothing)")
        return MISSING
    if match is not None:
        found = _ETAG.fullmatch(match.strip())
        if found is None:
            raise ApiError("invalid_request", 'If-Match takes one version number, e.g. If-Match: "3"')
        return int(found.group(1))
    return ANY


async def delete_file(call: Call) -> Response:
    path = call.memory_path()
    caller = call.caller()
    versions, replayed = await call.run(
        lambda store: once(store, caller.request, lambda: store.delete(path), removed(path)), writes=True, caller=caller
    )
    return json_response(versions_to_json(versions), headers=REPLAYED if replayed else None)


async def stat_path(call: Call) -> Response:
    path = call.memory_path()
    stat = await call.run(lambda store: store.stat(path))
    if stat is None:
        raise ApiError("not_found", f"nothing at {path.virtual}")
    return json_response(stat_to_json(stat))


async def list_files(call: Call) -> Response:
    path = call.memory_path()
    entries = await call.run(lambda store: store.list_files(path))
    return json_response({"entries": [entry_to_json(e) for e in entries]})


async def move(call: Call) -> Response:
    body = await call.json_object()
    source, dest = body.get("from"), body.get("to")
    if not isinstance(source, str) or not isinstance(dest, str):
        raise ApiError("invalid_request", 'the body must be {"from": "/memories/...", "to": "/memories/..."}')
    src, dst = parse(source), parse(dest)
    caller = call.caller()
    versions, replayed = await call.run(
        lambda store: once(store, caller.request, lambda: store.move(src, dst), moved(dst)), writes=True, caller=caller
    )
    return json_response(versions_to_json(versions), headers=REPLAYED if replayed else None)


async def usage(call: Call) -> Response:
    return json_response(usage_to_json(await call.run(lambda store: store.usage())))


_FILE_HEADERS: dict[str, Any] = {
    "ETag": {"schema": {"type": "string"}, "description": 'The version, quoted: `"3"`.'},
    "X-Memdir-Version": {"schema": {"type": "integer"}},
    "X-Memdir-Sha256": {"schema": {"type": "string"}},
    "X-Memdir-Modified": {"schema": {"type": "string"}, "description": "When the file last changed: ISO 8601, UTC."},
}
_VERSION_QUERY = {
    "name": "version",
    "in": "query",
    "required": False,
    "description": "Read the content the file had at this version (from its history) instead of the current one.",
    "schema": {"type": "integer", "minimum": 1},
}
_PRECONDITIONS = (
    {"name": "If-Match", "in": "header", "required": False, "schema": {"type": "string"}, "description": 'Write only '
     'if the file is at this version: `"3"`.'},
    {"name": "If-None-Match", "in": "header", "required": False, "schema": {"const": "*"}, "description": "Write "
     "only if nothing is at the path."},
    {"name": "op", "in": "query", "required": False, "schema": {"type": "string", "enum": sorted(_OPS)},
     "description": "The operation recorded on the version (default `write`)."},
)  # fmt: skip
_VERSIONS = json_doc(ref("VersionList"), "The versions recorded, one per file touched.")

ENDPOINTS = (
    Endpoint(
        "GET",
        "/v1/files/{path:path}",
        read_file,
        "readFile",
        "Read a file's content (current, or at a version)",
        "files",
        parameters=(PATH_PARAMETER, _VERSION_QUERY),
        responses={"200": binary("application/octet-stream", "The file's bytes.", _FILE_HEADERS)},
        errors=("path_error", "not_found", "not_a_file", "not_a_directory"),
    ),
    Endpoint(
        "PUT",
        "/v1/files/{path:path}",
        write_file,
        "writeFile",
        "Write a file (parents are created), optionally only at an expected version",
        "files",
        description="The body is the file's new content, byte for byte, whatever its Content-Type.",
        parameters=(PATH_PARAMETER, *_PRECONDITIONS, *ORIGIN_HEADERS, IDEMPOTENCY_HEADER),
        request_body={"required": True, "content": {"application/octet-stream": {"schema": BYTES}}},
        responses={"200": json_doc(ref("Version"), "The version recorded.")},
        errors=(
            "path_error",
            "conflict",
            "already_exists",
            "not_a_file",
            "not_a_directory",
            "payload_too_large",
            "limit_exceeded",
            "policy_refused",
            "held_for_review",
            "idempotency_key_reused",
        ),
    ),
    Endpoint(
        "DELETE",
        "/v1/files/{path:path}",
        delete_file,
        "deleteFile",
        "Delete a file, or a directory and everything below it",
        "files",
        parameters=(PATH_PARAMETER, *ORIGIN_HEADERS, IDEMPOTENCY_HEADER),
        responses={"200": _VERSIONS},
        errors=("path_error", "not_found", "idempotency_key_reused"),
    ),
    Endpoint(
        "GET",
        "/v1/stat/{path:path}",
        stat_path,
        "statPath",
        "What is at a path: a file, a directory, or nothing (404)",
        "files",
        parameters=(PATH_PARAMETER,),
        responses={"200": json_doc(ref("Stat"), "A file or a directory.")},
        errors=("path_error", "not_found"),
    ),
    Endpoint(
        "GET",
        "/v1/list/{path:path}",
        list_files,
        "listFiles",
        "Every file below a directory, at any depth, in tree order",
        "files",
        parameters=(PATH_PARAMETER,),
        responses={"200": json_doc(ref("EntryList"), "The files.")},
        errors=("path_error", "not_found", "not_a_directory"),
    ),
    Endpoint(
        "POST",
        "/v1/move",
        move,
        "moveFile",
        "Rename or move a file or directory (never over an existing one)",
        "files",
        parameters=(*ORIGIN_HEADERS, IDEMPOTENCY_HEADER),
        request_body=json_body(ref("Move")),
        responses={"200": _VERSIONS},
        errors=("path_error", "not_found", "already_exists", "not_a_directory", "idempotency_key_reused"),
    ),
    Endpoint(
        "GET",
        "/v1/usage",
        usage,
        "usage",
        "How many files and bytes the namespace holds",
        "files",
        responses={"200": json_doc(ref("Usage"), "The namespace's usage.")},
    ),
)
