"""`Version` records as JSON: the one codec of the archive format (``versions.jsonl``) and the HTTP API.

`version_from_json` checks strictly: its input comes from an untrusted file or a client.
"""

from __future__ import annotations

import math
import re
from typing import Any

from ..paths import parse
from ._base import Version

__all__ = ["version_from_json", "version_to_json"]

_OPS = frozenset({"create", "write", "str_replace", "insert", "delete", "rename", "restore", "external", "import"})


def version_to_json(version: Version) -> dict[str, Any]:
    return {
        "version": version.version,
        "path": version.path.virtual,
        "op": version.op,
        "actor": version.actor,
        "session": version.session,
        "source": version.source,
        "timestamp": version.timestamp,
        "sha256": version.sha256,
        "size": version.size,
        "old_path": None if version.old_path is None else version.old_path.virtual,
    }


def version_from_json(data: object) -> Version:
    """Check one decoded ``versions.jsonl`` object strictly (it comes from an untrusted file)."""
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    sha, old = data.get("sha256"), data.get("old_path")
    version = Version(
        version=_field(data, "version", int),
        path=parse(_field(data, "path", str)),
        op=_field(data, "op", str),
        actor=_field(data, "actor", str),
        session=_optional(data, "session"),
        source=_optional(data, "source"),
        timestamp=float(_field(data, "timestamp", (int, float))),
        sha256=None if sha is None else _field(data, "sha256", str),
        size=_field(data, "size", int),
        old_path=None if old is None else parse(_field(data, "old_path", str)),
    )
    if version.op not in _OPS:
        raise ValueError(f"unknown op {version.op[:40]!r}")
    if version.version < 1 or version.size < 0 or not version.actor:
        raise ValueError("version, size or actor out of range")
    if not math.isfinite(version.timestamp) or version.timestamp < 0:
        raise ValueError("timestamp out of range")
    if version.sha256 is not None and not re.fullmatch(r"[0-9a-f]{64}", version.sha256):
        raise ValueError("sha256 is not 64 lowercase hex digits")
    if version.sha256 is None and version.size != 0:
        raise ValueError("a deletion has no content, so its size must be 0")
    return version


def _field(data: dict[str, Any], name: str, kind: type[Any] | tuple[type[Any], ...]) -> Any:
    value = data.get(name)
    # bool is an int subclass; `true` is never a valid version, size or time.
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ValueError(f"{name!r} is missing or has the wrong type")
    return value


def _optional(data: dict[str, Any], name: str) -> str | None:
    value: str | None = None if data.get(name) is None else _field(data, name, str)
    return value
