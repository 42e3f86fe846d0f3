"""`Version` records as JSON: the one codec of the archive format (``versions.jsonl``) and the HTTP API.

`version_from_json` checks strictly: its input comes from an untrusted file or a client.

Times are ISO 8601 in UTC (`iso_time`): ``2026-11-29T14:38:01.5Z``, with as many fractional digits as the
float needs to come back exactly (`parse_time`), so a version copied through an archive or a server keeps its
time to the bit. Archives and servers before memdir 0.2 wrote seconds since the epoch; `parse_time` reads those too.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
from typing import Any

from ..paths import parse
from ._records import Version

__all__ = ["iso_time", "parse_time", "version_from_json", "version_to_json"]

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
# 9999-12-31T23:59:59Z: `iso_time` (and every date type) ends there. A later time taken in from an archive or a
# client was stored, and then every history, log and export of its namespace failed.
LAST_TIME = 253_402_300_799.0
_ISO = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,30}))?(Z|[+-]\d\d:\d\d)")


def iso_time(timestamp: float) -> str:
    """Seconds since the epoch as ISO 8601 in UTC, exact: the float's shortest decimal form, so
    ``parse_time(iso_time(t)) == t`` for every time from 1970 on."""
    if not math.isfinite(timestamp) or timestamp < 0:
        raise ValueError("a time must be a finite number of seconds from 1970 on")
    exact = decimal.Decimal(repr(timestamp))
    whole = int(exact)  # truncates: the same as the floor for a time >= 0
    digits = format(exact - whole, "f").partition(".")[2].rstrip("0")
    stamp = (_EPOCH + dt.timedelta(seconds=whole)).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{stamp}.{digits}Z" if digits else f"{stamp}Z"


def parse_time(value: object) -> float:
    """Seconds since the epoch from a time as `iso_time` writes it (any zone offset), or from a number, as
    archives and servers before memdir 0.2 wrote it. `ValueError` for anything else."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str):
        seconds = _iso_seconds(value)
    else:
        raise ValueError("a time must be an ISO 8601 string")
    if not math.isfinite(seconds) or not 0 <= seconds <= LAST_TIME:
        raise ValueError("a time must be from 1970 to the end of 9999")
    return seconds


def _iso_seconds(text: str) -> float:
    found = _ISO.fullmatch(text)
    if found is None:
        raise ValueError(f"not an ISO 8601 time with a zone (such as 2026-11-29T14:38:01Z): {text[:40]!r}")
    stamp, digits, zone = found.groups()
    when = dt.datetime.fromisoformat(stamp + ("+00:00" if zone == "Z" else zone))
    whole = int((when - _EPOCH).total_seconds())
    if not digits:
        return float(whole)
    # The decimal text parsed at once is the float iso_time started from; adding a fraction would round twice.
    return float(f"{whole}.{digits}") if whole >= 0 else whole + float(f"0.{digits}")


_OPS = frozenset({"create", "write", "str_replace", "insert", "delete", "rename", "restore", "external", "import"})


def version_to_json(version: Version) -> dict[str, Any]:
    return {
        "version": version.version,
        "path": version.path.virtual,
        "op": version.op,
        "actor": version.actor,
        "session": version.session,
        "source": version.source,
        "timestamp": iso_time(version.timestamp),
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
        timestamp=_time(data),
        sha256=None if sha is None else _field(data, "sha256", str),
        size=_field(data, "size", int),
        old_path=None if old is None else parse(_field(data, "old_path", str)),
    )
    if version.op not in _OPS:
        raise ValueError(f"unknown op {version.op[:40]!r}")
    if version.version < 1 or version.size < 0 or not version.actor:
        raise ValueError("version, size or actor out of range")
    if not math.isfinite(version.timestamp) or not 0 <= version.timestamp <= LAST_TIME:
        raise ValueError("timestamp out of range (1970 to the end of 9999)")
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


def _time(data: dict[str, Any]) -> float:
    value = data.get("timestamp")
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError("'timestamp' is missing or has the wrong type")
    return parse_time(value)


def _optional(data: dict[str, Any], name: str) -> str | None:
    value: str | None = None if data.get(name) is None else _field(data, name, str)
    return value
