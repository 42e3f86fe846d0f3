"""Browsing and editing, for a person (the web page): the tree, a file as JSON, an edit, a diff of two versions.

The store API (`files`) moves bytes for programs; these answer what a page needs in one request each, and each is one
entry in the audit log (channel ``web``: what a person read or wrote through the page). An edit always says which
version it started from (``expected_version``; null for a new file), so a person never silently overwrites a change they
have not seen: a stale edit is ``412 conflict`` with the file's ``current`` version, and nothing is written.
"""

from __future__ import annotations

import functools
import mimetypes
from typing import TYPE_CHECKING, Any

from ..._format import is_text
from ..._wire import iso_time
from ...errors import NotAFileError, NotFoundError
from ...store._records import MISSING, Expect
from .._diffs import diff, text_of
from .._endpoint import Call, Endpoint
from .._errors import ApiError, json_response
from .._idempotency import REPLAYED, once, written
from .._schemas import IDEMPOTENCY_HEADER, ORIGIN_HEADERS, PATH_PARAMETER, json_body, ref
from .._schemas import json_response as json_doc
from .files import screened_to_json

if TYPE_CHECKING:
    from starlette.responses import Response

    from ...gate import GatedStore
    from ...paths import MemoryPath
    from ...store import Store, Version
    from ...store._records import Entry

__all__ = ["ENDPOINTS"]

MAX_TREE_FILES = 100_000
_DEFAULT_TREE_FILES = 10_000


# -- the tree ---------------------------------------------------------------------------------------------------


async def tree(call: Call) -> Response:
    path = call.memory_path()
    limit = call.query_int("limit", _DEFAULT_TREE_FILES, minimum=1, maximum=MAX_TREE_FILES)
    entries = await call.run(lambda store: store.list_files(path), caller=call.caller(channel="web"))
    return json_response(tree_to_json(path, entries, limit))


def tree_to_json(root: MemoryPath, entries: list[Entry], limit: int) -> dict[str, Any]:
    dirs: dict[str, list[int]] = {}  # directory -> [files, bytes], every level below the root
    depth = len(root.parts)
    for entry in entries:
        for directory in entry.path.ancestors()[depth:]:
            totals = dirs.setdefault(directory.virtual, [0, 0])
            totals[0] += 1
            totals[1] += entry.size
    files = [
        {"path": e.path.virtual, "size": e.size, "version": e.version, "modified": iso_time(e.modified)}
        for e in entries[:limit]
    ]
    return {
        "path": root.virtual,
        "files": files,
        "dirs": [{"path": p, "files": n, "size": b} for p, (n, b) in sorted(dirs.items())],
        "total": {"files": len(entries), "bytes": sum(e.size for e in entries)},
        "truncated": len(entries) > limit,
    }


# -- one file ---------------------------------------------------------------------------------------------------


async def view(call: Call) -> Response:
    path = call.memory_path()
    number = call.query_int("version", 0, minimum=1) if "version" in call.request.query_params else None

    def read(store: GatedStore) -> dict[str, Any]:
        with store.call("view" if number is None else "show", path.virtual) as receipt:
            shown = _current(store, path) if number is None else _at_version(store, path, number)
            content = shown.pop("_content")
            receipt.read(content, shown["version"])  # what the person saw, whatever else was read to show it
            return shown

    return json_response(await call.run(read, caller=call.caller(channel="web")))


def _current(store: Store, path: MemoryPath) -> dict[str, Any]:
    data = store.read(path)
    return _file_json(path, data.content, data.version, data.sha256, data.modified, current=True)


def _at_version(store: Store, path: MemoryPath, number: int) -> dict[str, Any]:
    found = _version(store, path, number)
    content = store.read_version(path, number)
    stat = store.stat(path)
    current = stat is not None and stat.version == number
    return _file_json(path, content, number, found.sha256 or "", found.timestamp, current=current)


def _file_json(
    path: MemoryPath, content: bytes, version: int, sha256: str, modified: float | None, *, current: bool
) -> dict[str, Any]:
    text = text_of(content)
    return {
        "path": path.virtual,
        "version": version,
        "current": current,
        "size": len(content),
        "sha256": sha256,
        "modified": None if modified is None else iso_time(modified),
        "media_type": _media_type(path, text is not None),
        "text": text,
        "_content": content,  # for the audit record; removed before the answer
    }


# Raster images only: the page shows them from a blob: URL, which a person may open as a page of its own, in this
# origin. An SVG opened that way is a document that can run script, so SVG is shown as the text it is.
_IMAGES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


def _media_type(path: MemoryPath, is_text: bool) -> str:
    guessed = mimetypes.guess_type(path.name)[0]
    if guessed in _IMAGES:
        return guessed
    if is_text:
        return "text/plain; charset=utf-8"
    return "application/octet-stream"


def _version(store: Store, path: MemoryPath, number: int) -> Version:
    for version in store.history(path):
        if version.version == number:
            return version
    raise NotFoundError(f"{path.virtual} has no version {number}")


# -- an edit ----------------------------------------------------------------------------------------------------


async def edit(call: Call) -> Response:
    path = call.memory_path()
    body = await call.json_object()
    content, expect = _edit_body(body)
    caller = call.caller(channel="web")
    data = content.encode("utf-8")

    def write(store: GatedStore) -> tuple[dict[str, Any], bool]:
        with store.call("edit", path.virtual) as receipt:
            change = functools.partial(store.write, path, data, expect=expect)
            version, replayed = once(store, caller.request, change, written(path))
            return screened_to_json(version, receipt), replayed

    answer, replayed = await call.run(write, writes=True, caller=caller)
    headers = {"ETag": f'"{answer["version"]}"', **(REPLAYED if replayed else {})}
    return json_response(answer, headers=headers)


def _edit_body(body: dict[str, Any]) -> tuple[str, Expect]:
    content = body.get("content")
    if not isinstance(content, str):
        raise ApiError("invalid_request", "'content' must be the file's new text (a string)")
    if not is_text(content):
        raise ApiError("invalid_request", "'content' is not valid UTF-8 text (it contains an unpaired surrogate)")
    if "expected_version" not in body:
        raise ApiError(
            "invalid_request",
            "'expected_version' is required: the version the edit started from, or null for a new file",
        )
    expected = body["expected_version"]
    if expected is None:
        return content, MISSING
    if not isinstance(expected, int) or isinstance(expected, bool) or expected < 1:
        raise ApiError("invalid_request", "'expected_version' must be a version number (from 1) or null")
    return content, expected


# -- a diff -----------------------------------------------------------------------------------------------------


async def diff_versions(call: Call) -> Response:
    path = call.memory_path()
    params = call.request.query_params
    first = call.query_int("from", 0, minimum=1) if "from" in params else None
    second = call.query_int("to", 0, minimum=1) if "to" in params else None

    def compare(store: GatedStore) -> dict[str, Any]:
        with store.call("diff", path.virtual):
            new_side = _side(store, path, second)
            old_side = _side(store, path, first) if first is not None else _previous(store, path, new_side["version"])
            old_content, new_content = old_side.pop("_content"), new_side.pop("_content")
            found = diff(old_content, new_content, old_side["label"], new_side["label"])
            return {"path": path.virtual, "from": old_side, "to": new_side, **found.to_json()}

    return json_response(await call.run(compare, caller=call.caller(channel="web")))


def _side(store: Store, path: MemoryPath, number: int | None) -> dict[str, Any]:
    """One side of a diff: a version, or the current content (empty when the file is gone) for None."""
    if number is None:
        try:
            data = store.read(path)
        except (NotFoundError, NotAFileError):
            store.history(path)  # a path that never held a file is a 404, not an empty diff
            return {"version": None, "label": f"{path.virtual} (deleted)", "deleted": True, "_content": b""}
        return {"version": data.version, "label": f"{path.virtual} (current, version {data.version})",
                "deleted": False, "_content": data.content}  # fmt: skip
    found = _version(store, path, number)
    if found.deleted:
        return {"version": number, "label": f"{path.virtual}@{number} (deleted)", "deleted": True, "_content": b""}
    content = store.read_version(path, number)
    return {"version": number, "label": f"{path.virtual}@{number}", "deleted": False, "_content": content}


def _previous(store: Store, path: MemoryPath, number: int | None) -> dict[str, Any]:
    """The side before version ``number`` (before the latest version when None: the current content, or the
    deletion that ended it), or nothing before the first version."""
    versions = [v.version for v in store.history(path)]
    upto = versions[-1] if number is None else number
    before = [v for v in versions if v < upto]
    if not before:
        return {"version": None, "label": "(nothing)", "deleted": True, "_content": b""}
    return _side(store, path, before[-1])


# -- the table --------------------------------------------------------------------------------------------------

_VERSION_QUERY = {
    "name": "version",
    "in": "query",
    "required": False,
    "schema": {"type": "integer", "minimum": 1},
    "description": "The content at this version (from the file's history) instead of the current.",
}
_LIMIT_QUERY = {
    "name": "limit",
    "in": "query",
    "required": False,
    "schema": {"type": "integer", "minimum": 1, "maximum": MAX_TREE_FILES},
    "description": f"At most this many files (default {_DEFAULT_TREE_FILES:,}).",
}
_DIFF_QUERY = (
    {"name": "from", "in": "query", "required": False, "schema": {"type": "integer", "minimum": 1},
     "description": "The old side's version (default: the version before `to`)."},
    {"name": "to", "in": "query", "required": False, "schema": {"type": "integer", "minimum": 1},
     "description": "The new side's version (default: the current content)."},
)  # fmt: skip
_FILE_ERRORS = ("path_error", "not_found", "not_a_file", "not_a_directory")

ENDPOINTS = (
    Endpoint(
        "GET",
        "/v1/tree/{path:path}",
        tree,
        "tree",
        "Every file below a directory with its size and version, and every directory with its totals",
        "browse",
        parameters=(PATH_PARAMETER, _LIMIT_QUERY),
        responses={"200": json_doc(ref("Tree"), "The files in tree order, and the directories.")},
        errors=("path_error", "not_found", "not_a_directory"),
    ),
    Endpoint(
        "GET",
        "/v1/view/{path:path}",
        view,
        "viewFile",
        "A file (current, or at a version) as JSON: its text, version, size, hash and media type",
        "browse",
        description="Recorded in the audit log (channel `http`, command `view` or `show`).",
        parameters=(PATH_PARAMETER, _VERSION_QUERY, *ORIGIN_HEADERS),
        responses={"200": json_doc(ref("FileView"), "The file.")},
        errors=_FILE_ERRORS,
    ),
    Endpoint(
        "PUT",
        "/v1/edit/{path:path}",
        edit,
        "editFile",
        "Replace a file's text, only if it is still at the version the edit started from",
        "browse",
        description="`expected_version` is required: a version number, or null to create a file that must not "
        "exist yet. Recorded as op `write` by actor `user` (or `X-Memdir-Actor`), and in the audit log (command "
        "`edit`; a refused edit too, with its error code).",
        parameters=(PATH_PARAMETER, *ORIGIN_HEADERS, IDEMPOTENCY_HEADER),
        request_body=json_body(ref("Edit")),
        responses={"200": json_doc(ref("Version"), "The version written.")},
        errors=(*_FILE_ERRORS, "conflict", "already_exists"),
    ),
    Endpoint(
        "GET",
        "/v1/diff/{path:path}",
        diff_versions,
        "diffVersions",
        "Two versions of a file, side by side (and as a unified diff)",
        "browse",
        description="A deleted side counts as empty; content that is not UTF-8 is compared whole (`binary`).",
        parameters=(PATH_PARAMETER, *_DIFF_QUERY),
        responses={"200": json_doc(ref("Diff"), "The rows, and the same change as a unified diff.")},
        errors=_FILE_ERRORS,
    ),
)
