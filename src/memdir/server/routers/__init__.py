"""The HTTP API by area: each module lists its `Endpoint`s in ``ENDPOINTS``; `ROUTERS` is the app's table.

A new area is one more module here with its ``ENDPOINTS``, added to
`ROUTERS`: the app mounts it and the OpenAPI document describes it.
"""

from __future__ import annotations

from . import archive, audit, browse, claude_code, files, history, memory_stores, meta, review, search, tool, web

__all__ = ["ROUTERS"]

ROUTERS = (meta, tool, files, history, archive, browse, search, review, audit, claude_code, web, memory_stores)
