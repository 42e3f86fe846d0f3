"""Versions: a file's history, restoring an old version, the namespace's log, content by hash, replaying a
version exported elsewhere."""

from __future__ import annotations

import base64
import binascii
import functools
import itertools
import re
from typing import TYPE_CHECKING, Any

from starlette.responses import Response

from ..._wire import version_from_json, version_to_json, versions_to_json
from ...errors import NotFoundError
from .._endpoint import Call, Endpoint
from .._errors import ApiError, json_response
from .._idempotency import REPLAYED, once, written
from .._schemas import IDEMPOTENCY_HEADER, ORIGIN_HEADERS, PATH_PARAMETER, binary, json_body, ref
from .._schemas import json_response as json_doc

if TYPE_CHECKING:
    from ...gate import GatedStore
    from ...store import Store, Version

__all__ = ["ENDPOINTS"]

_SHA256 = re.compile(r"[0-9a-f]{64}")
_MAX_PAGE = 5000


async def history(call: Call) -> Response:
    path = call.memory_path()
    return json_response(versions_to_json(await call.run(lambda store: store.history(path))))


async def restore(call: Call) -> Response:
    path = call.memory_path()
    body = await call.json_object()
    number = _number(body, "version")
    expected = None if body.get("expected_version") is None else _number(body, "expected_version")
    caller = call.caller()

    def restore_in(store: GatedStore) -> Version:
        if expected is None:
            return store.restore(path, number)
        # Store.restore overwrites whatever is there; a person restoring from the page has looked at one version
        # of the file, so the write is conditional on it (the same content and op as `restore`).
        return store.write(path, store.read_version(path, number), expect=expected, op="restore")

    def once_in(store: GatedStore) -> tuple[Version, bool]:
        with store.call("restore", path.virtual):
            return once(store, caller.request, functools.partial(restore_in, store), written(path))

    version, replayed = await call.run(once_in, writes=True, caller=caller)
    return json_response(version_to_json(version), headers=REPLAYED if replayed else None)


def _number(body: dict[str, Any], name: str) -> int:
    value = body.get(name)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ApiError("invalid_request", f'the body must be {{"version": N, "expected_version": M}} with N (and M, '
                       f"when given) a version number from 1; {name!r} is not")  # fmt: skip
    return value


async def log(call: Call) -> Response:
    since = call.query_int("since", 0)
    limit = call.query_int("limit", 1000, minimum=1, maximum=_MAX_PAGE)

    def page(store: Store) -> list[Version]:
        return list(itertools.islice(store.log(since), limit))

    versions = await call.run(page)
    following = versions[-1].version if len(versions) == limit else None
    return json_response({**versions_to_json(versions), "next": following})


async def blob(call: Call) -> Response:
    sha = call.request.path_params["sha256"]
    if not _SHA256.fullmatch(sha):
        # As the backends answer for a hash no version had: there is no such content.
        raise NotFoundError("no version of this namespace has that content (hashes are 64 lowercase hex digits)")
    content = await call.run(lambda store: store.read_blob(sha))
    return Response(content, media_type="application/octet-stream")


async def import_version(call: Call) -> Response:
    limit = call.services.config.max_upload_bytes * 4 // 3 + 64 * 1024  # base64 of the bound, and the metadata
    body = await call.json_object(limit)
    try:
        version = version_from_json(body.get("version"))
    except (ValueError, KeyError, TypeError) as exc:
        raise ApiError("invalid_request", f"'version' is not a version record: {exc}") from exc
    content = _content(body.get("content"))
    # Through the gate: the content is screened, and the version is recorded as the caller's, now (only an admin
    # caller's import keeps the actor, session and time it carries).
    recorded = await call.run(lambda store: store.import_version(version, content), writes=True)
    return json_response(version_to_json(recorded))


def _content(value: object) -> bytes | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ApiError("invalid_request", "'content' must be base64 text or null")
    try:
        return base64.b64decode(value, validate=True)
    except binascii.Error as exc:
        raise ApiError("invalid_request", "'content' is not valid base64") from exc


_PAGE_PARAMETERS = (
    {"name": "since", "in": "query", "required": False, "schema": {"type": "integer", "minimum": 0},
     "description": "Versions after this number (default 0: from the start)."},
    {"name": "limit", "in": "query", "required": False, "schema": {"type": "integer", "minimum": 1,
     "maximum": _MAX_PAGE}, "description": "At most this many (default 1000)."},
)  # fmt: skip

ENDPOINTS = (
    Endpoint(
        "GET",
        "/v1/history/{path:path}",
        history,
        "history",
        "A file's versions, oldest first, through renames and past its deletion",
        "history",
        parameters=(PATH_PARAMETER,),
        responses={"200": json_doc(ref("VersionList"), "The versions.")},
        errors=("path_error", "not_found"),
    ),
    Endpoint(
        "POST",
        "/v1/restore/{path:path}",
        restore,
        "restore",
        "Make an old version's content current again (recorded as a new version)",
        "history",
        description="With `expected_version`, only if the file is still at that version (else `412 conflict`). "
        "Recorded in the audit log (channel `http`, command `restore`).",
        parameters=(PATH_PARAMETER, *ORIGIN_HEADERS, IDEMPOTENCY_HEADER),
        request_body=json_body(ref("Restore")),
        responses={"200": json_doc(ref("Version"), "The new version.")},
        errors=("path_error", "not_found", "conflict", "not_a_file", "not_a_directory"),
    ),
    Endpoint(
        "GET",
        "/v1/log",
        log,
        "log",
        "Every version of the namespace after a number, oldest first, a page at a time",
        "history",
        parameters=_PAGE_PARAMETERS,
        responses={"200": json_doc(ref("LogPage"), "One page of the log.")},
    ),
    Endpoint(
        "GET",
        "/v1/blobs/{sha256}",
        blob,
        "readBlob",
        "Content by its SHA-256, from any version of this namespace",
        "history",
        parameters=({"name": "sha256", "in": "path", "required": True, "schema": {"type": "string"}},),
        responses={"200": binary("application/octet-stream", "The content.")},
        errors=("not_found", "redacted"),
    ),
    Endpoint(
        "POST",
        "/v1/versions",
        import_version,
        "importVersion",
        "Replay one version exported from another store (its op, actor, session, source and time are kept)",
        "history",
        request_body=json_body(ref("ImportVersion")),
        responses={"200": json_doc(ref("Version"), "The version as recorded here (numbered anew).")},
        errors=("path_error", "not_found", "already_exists", "not_a_directory", "payload_too_large"),
    ),
)
