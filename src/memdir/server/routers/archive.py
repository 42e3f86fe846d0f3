"""The namespace as one archive (`memdir.archive`): export it, or import one into an empty namespace.

Archives travel through a private temporary directory (``0700``, the archive ``0600``: it holds every memory
ever written), removed once the response is sent or the import is done. The import's body has its own, larger
bound (``max_archive_bytes``); the archive is then checked in full before anything is written.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from starlette.background import BackgroundTask
from starlette.responses import FileResponse

from ...archive import export_namespace, import_namespace
from .._endpoint import Call, Endpoint
from .._errors import ApiError, json_response
from .._schemas import BYTES, binary, ref
from .._schemas import json_response as json_doc

if TYPE_CHECKING:
    from collections.abc import Iterator

    from starlette.responses import Response

    from ...archive import ArchiveSummary
    from ...gate import GatedStore

__all__ = ["ENDPOINTS"]

_ARCHIVE_TYPES = ("application/zip", "application/octet-stream")


async def export(call: Call) -> Response:
    workdir = Path(tempfile.mkdtemp(prefix="memdir-export-"))
    target = workdir / "archive.zip"
    try:
        await call.run(lambda store: _export(store, target))
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    name = f"memdir-{call.principal.namespace}.zip"
    cleanup = BackgroundTask(shutil.rmtree, workdir, ignore_errors=True)
    return FileResponse(target, media_type="application/zip", filename=name, background=cleanup)


def _export(store: GatedStore, target: Path) -> None:
    with store.call("export"):  # one audit entry for the whole archive: every version's content is in it
        export_namespace(store, target)


async def import_(call: Call) -> Response:
    call.require_type(_ARCHIVE_TYPES)
    with _workdir("memdir-import-") as workdir:
        archive = workdir / "archive.zip"
        await _receive(call, archive, call.services.config.max_archive_bytes)

        def replay(store: GatedStore) -> ArchiveSummary:
            # Each version through the gate: screened, audited, and recorded as the caller's, now (only an admin
            # caller's import keeps the actors and times the archive carries).
            summary = import_namespace(store, archive, rehearsal=store.rehearsal())
            # The namespace it went into (the token's), not the one it was exported from: said back as the CLI says.
            return dataclasses.replace(summary, namespace=store.namespace)

        summary = await call.run(replay, writes=True)
    return json_response(asdict(summary))


async def _receive(call: Call, target: Path, limit: int) -> None:
    """Stream the body to ``target`` (created 0600), refusing it once it passes ``limit`` bytes."""
    declared = call.request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    fd = os.open(target, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_CLOEXEC, 0o600)
    size = 0
    async with await anyio.open_file(fd, "wb") as fh:
        async for chunk in call.request.stream():
            size += len(chunk)
            if size > limit:
                raise _too_large(limit)
            await fh.write(chunk)


def _too_large(limit: int) -> ApiError:
    return ApiError("payload_too_large", f"the archive is over the server's bound of {limit:,} bytes")


@contextlib.contextmanager
def _workdir(prefix: str) -> Iterator[Path]:
    workdir = Path(tempfile.mkdtemp(prefix=prefix))  # mkdtemp makes it 0700
    try:
        yield workdir
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


ENDPOINTS = (
    Endpoint(
        "GET",
        "/v1/export",
        export,
        "exportNamespace",
        "The namespace and its whole history as a zip archive (`memdir export`)",
        "archive",
        responses={"200": binary("application/zip", "The archive.")},
    ),
    Endpoint(
        "POST",
        "/v1/import",
        import_,
        "importNamespace",
        "Load an archive made by `memdir export` into this (empty) namespace",
        "archive",
        description="The archive is checked in full before anything is written; the namespace must be empty.",
        request_body={"required": True, "content": {t: {"schema": BYTES} for t in _ARCHIVE_TYPES}},
        responses={"200": json_doc(ref("ArchiveSummary"), "What was imported.")},
        errors=("archive_error", "payload_too_large", "unsupported_media_type"),
    ),
)
