"""The web page: ``/`` and its few static files, shipped in the package (``memdir/server/static``).

Plain HTML, CSS and JavaScript: nothing to build, nothing fetched from elsewhere. The files are read once, when
the app is made, into a table by name; a request names a file of that table or gets a 404, so no request path
ever reaches the file system. The page itself holds no data: it signs in with a token kept in the tab's
``sessionStorage`` and calls the API with it, like any client.
"""

from __future__ import annotations

import functools
import importlib.resources
from typing import TYPE_CHECKING

from starlette.responses import Response

from .._endpoint import Call, Endpoint
from .._errors import ApiError
from .._headers import PAGE_CSP

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["ENDPOINTS", "static_files"]

_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
    ".webmanifest": "application/manifest+json",
}
_PAGE_HEADERS = {
    "Content-Security-Policy": PAGE_CSP,
    "Cross-Origin-Opener-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=(), payment=(), usb=()",
    # The page is the same for everyone and holds no data: it may be kept, but checked before each use.
    "Cache-Control": "no-cache",
}


@functools.cache
def static_files() -> Mapping[str, tuple[bytes, str]]:
    """Every shipped file by name: (content, media type)."""
    folder = importlib.resources.files("memdir.server") / "static"
    found: dict[str, tuple[bytes, str]] = {}
    for item in folder.iterdir():
        suffix = "." + item.name.rsplit(".", 1)[-1]
        if item.is_file() and suffix in _TYPES:
            found[item.name] = (item.read_bytes(), _TYPES[suffix])
    return found


def _file(name: str) -> Response:
    found = static_files().get(name)
    if found is None or name == "index.html":
        raise ApiError("not_found", "no such file of the web page")
    content, media_type = found
    return Response(content, media_type=media_type, headers=_PAGE_HEADERS)


async def page(_call: Call) -> Response:
    content, media_type = static_files()["index.html"]
    return Response(content, media_type=media_type, headers=_PAGE_HEADERS)


async def asset(call: Call) -> Response:
    return _file(call.request.path_params["name"])


ENDPOINTS = (
    Endpoint(
        "GET",
        "/",
        page,
        "webPage",
        "The web page: browse, edit, diff and restore memory, search, review held writes, read the audit log",
        "web page",
        public=True,
        description="Served without a token (it holds no data); it asks for one and keeps it in the tab's "
        "sessionStorage, sending it as a bearer header. Strict Content-Security-Policy, no inline script.",
        responses={"200": {"description": "The page.", "content": {"text/html": {}}}},
    ),
    Endpoint(
        "GET",
        "/static/{name}",
        asset,
        "webAsset",
        "The page's scripts, styles and icon",
        "web page",
        public=True,
        parameters=({"name": "name", "in": "path", "required": True, "schema": {"type": "string"}},),
        responses={"200": {"description": "The file.", "content": {"text/javascript": {}, "text/css": {}}}},
        errors=("not_found",),
    ),
)
