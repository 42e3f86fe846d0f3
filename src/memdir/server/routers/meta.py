"""The server itself: health, the OpenAPI document, and who a token is."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._version import __version__
from .._endpoint import Call, Endpoint
from .._errors import json_response
from .._schemas import json_response as json_doc
from .._schemas import ref

if TYPE_CHECKING:
    from starlette.responses import Response

__all__ = ["ENDPOINTS"]


async def healthz(_call: Call) -> Response:
    return json_response({"status": "ok", "version": __version__})


async def openapi(call: Call) -> Response:
    return json_response(call.services.openapi)


async def whoami(call: Call) -> Response:
    principal = call.principal
    # Every namespace of a server is in one store of one kind: the admin store's kind answers for all.
    idempotent = call.services.admin.records_requests
    return json_response(
        {
            "namespace": principal.namespace,
            "token_id": principal.token_id,
            "idempotent_writes": idempotent,
            "admin": principal.admin,
        }
    )


ENDPOINTS = (
    Endpoint(
        "GET",
        "/healthz",
        healthz,
        "health",
        "Whether the server is up (no token needed)",
        "server",
        public=True,
        responses={"200": json_doc(ref("Health"), "The server is up.")},
    ),
    Endpoint(
        "GET",
        "/openapi.json",
        openapi,
        "openapi",
        "This document",
        "server",
        public=True,
        responses={"200": {"description": "The OpenAPI 3.1 document.", "content": {"application/json": {}}}},
    ),
    Endpoint(
        "GET",
        "/v1/whoami",
        whoami,
        "whoami",
        "The namespace the token opens, and the token's public id",
        "server",
        responses={"200": json_doc(ref("Whoami"), "The token's namespace.")},
    ),
)
