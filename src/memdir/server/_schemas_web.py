"""JSON Schemas of the endpoints a person's tools use (search, browsing, diffs, review, audit, integrity).

Kept apart from `memdir.server._schemas` (the store contract's) only for length; both end up in the document's
``components``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["WEB_SCHEMAS"]


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def _object(properties: dict[str, Any], required: tuple[str, ...] = (), **extra: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, **extra}
    if required:
        schema["required"] = list(required)
    return schema


_INT = {"type": "integer"}
_STR = {"type": "string"}
_NUM = {"type": "number"}
_TIME = {"type": "string", "format": "date-time", "description": "ISO 8601, UTC."}
_NULLABLE_STR = {"type": ["string", "null"]}
_NULLABLE_INT = {"type": ["integer", "null"]}

_HIT = _object(
    {
        "path": _STR,
        "first_line": _INT,
        "last_line": _INT,
        "rank": {**_INT, "description": "1 for the best hit."},
        "relevance": {**_NUM, "description": "The hit's score over the best hit's: 1.0 for the best, down to 0."},
        "score": {**_NUM, "description": "The fused score (higher is better; comparable within one search only)."},
        "retrievers": {"type": "array", "items": {"enum": ["fts", "semantic"]}},
        "passage": {**_STR, "description": "The lines, numbered as `view` shows them (`{n:>6}\\t{line}`)."},
        "before": {**_STR, "description": "The passage just before, numbered the same way ('' at the file's start)."},
        "after": {**_STR, "description": "The passage just after, numbered the same way ('' at the file's end)."},
    }
)

_ROW = _object(
    {
        "op": {"enum": ["equal", "replace", "delete", "insert", "skip"]},
        "old": {"type": ["array", "null"], "description": "[line number, text] on the old side."},
        "new": {"type": ["array", "null"], "description": "[line number, text] on the new side."},
        "count": {**_INT, "description": "`skip`: how many unchanged lines are left out."},
    },
    ("op",),
)

_DIFF_BODY = {
    "identical": {"type": "boolean"},
    "binary": {"type": "boolean", "description": "A side is not UTF-8: compared whole, no rows."},
    "too_large": {"type": "boolean", "description": "Over 2 MiB together: not compared line by line."},
    "added": _INT,
    "removed": _INT,
    "rows": {"type": "array", "items": _ref("DiffRow")},
    "unified": {"type": "array", "items": _STR, "description": "The same change as a unified diff, line by line."},
}

_SIDE = _object(
    {
        "version": {**_NULLABLE_INT, "description": "null: the current content (or nothing, for `from`)."},
        "label": _STR,
        "deleted": {"type": "boolean"},
    }
)

_FINDING = _object(
    {
        "kind": {"enum": ["secret", "injection"]},
        "rule": _STR,
        "action": _STR,
        "span": {"type": "array", "items": _INT},
        "line": _INT,
        "detail": _STR,
    }
)

_ITEM = _object(
    {
        "id": _INT,
        "time": _TIME,
        "status": {"enum": ["pending", "approved", "rejected"]},
        "path": _STR,
        "command": _STR,
        "actor": _STR,
        "session": _NULLABLE_STR,
        "source": _NULLABLE_STR,
        "findings": {"type": "array", "items": _FINDING},
        "decided_time": {"type": ["string", "null"], "format": "date-time"},
        "decided_by": _NULLABLE_STR,
        "version": {**_NULLABLE_INT, "description": "The version an approval wrote."},
        "reason": _NULLABLE_STR,
        "current_version": {
            **_NULLABLE_INT,
            "description": "The file's version now; null when there is no file at the path (yet, or any more).",
        },
        "base_changed": {
            "type": "boolean",
            "description": "The file changed (or appeared, or went) since the write was held.",
        },
        "diff": {**_object(_DIFF_BODY), "description": "From the file as it is now to what the write would make."},
    }
)

_AUDIT_ENTRY = _object(
    {
        "ts": _TIME,
        "channel": {**_STR, "description": "`tool`, `cli`, `review`, `gc`, `http` (this API's own endpoints)."},
        "actor": _STR,
        "session": _NULLABLE_STR,
        "source": _NULLABLE_STR,
        "command": _STR,
        "path": _NULLABLE_STR,
        "new_path": _NULLABLE_STR,
        "outcome": {**_STR, "description": "`ok`, `error`, `warn`, `redact`, `quarantine` or `block`."},
        "sha256": _NULLABLE_STR,
        "size": _NULLABLE_INT,
        "version": _NULLABLE_INT,
        "detail": {**_NULLABLE_STR, "description": "The findings' rules, or an error's code; never content."},
    }
)

WEB_SCHEMAS: dict[str, dict[str, Any]] = {
    "SearchResult": _object(
        {
            "query": _STR,
            "mode": {"enum": ["fts", "hybrid"]},
            "note": {**_STR, "description": "Which search ran, in a sentence."},
            "hits": {"type": "array", "items": _HIT},
        }
    ),
    "Tree": _object(
        {
            "path": _STR,
            "files": {
                "type": "array",
                "items": _object({"path": _STR, "size": _INT, "version": _INT, "modified": _TIME}),
            },
            "dirs": {
                "type": "array",
                "description": "Every directory holding files (at any depth), with the totals below it.",
                "items": _object({"path": _STR, "files": _INT, "size": _INT}),
            },
            "total": _object({"files": _INT, "bytes": _INT}),
            "truncated": {"type": "boolean", "description": "More files than `limit`: only the first are listed."},
        }
    ),
    "FileView": _object(
        {
            "path": _STR,
            "version": _INT,
            "current": {"type": "boolean", "description": "Whether this is the file's current version."},
            "size": _INT,
            "sha256": _STR,
            "modified": {"type": ["string", "null"], "format": "date-time"},
            "media_type": _STR,
            "text": {**_NULLABLE_STR, "description": "The content when it is UTF-8; null otherwise (read the bytes)."},
        }
    ),
    "Edit": _object(
        {
            "content": {**_STR, "description": "The file's new text (stored as UTF-8)."},
            "expected_version": {
                **_NULLABLE_INT,
                "description": "The version the editor started from; null: the file must not exist yet.",
            },
        },
        ("content", "expected_version"),
    ),
    "DiffRow": _ROW,
    "Diff": _object({"path": _STR, "from": _SIDE, "to": _SIDE, **_DIFF_BODY}),
    "ReviewItem": _ITEM,
    "ReviewList": _object({"items": {"type": "array", "items": _ref("ReviewItem")}, "pending": _INT}),
    "Approved": _object({"version": _INT, "item": _ref("ReviewItem")}),
    "Reject": _object({"reason": {**_STR, "maxLength": 1000}}),
    "AuditPage": _object({"entries": {"type": "array", "items": _AUDIT_ENTRY}}),
    "ChainBreak": _object(
        {
            "kind": {"enum": ["edited", "deleted", "inserted", "reordered", "truncated", "head"]},
            "first": {**_INT, "description": "The first version (or audit entry) number concerned."},
            "last": _INT,
            "before": {**_NULLABLE_INT, "description": "The number before the break that is in order."},
            "after": {**_NULLABLE_INT, "description": "The number after the break that is in order."},
            "detail": _STR,
        }
    ),
    "Chain": {
        "oneOf": [
            {"type": "null", "description": "The store keeps no such chain."},
            _object(
                {
                    "log": {"enum": ["history", "audit"]},
                    "ok": {"type": "boolean"},
                    "entries": {**_INT, "description": "Versions (or audit entries) present."},
                    "checked": {**_INT, "description": "Those linked from `start` on (the others predate the chain)."},
                    "start": {**_INT, "description": "The first number chained."},
                    "last": {**_INT, "description": "The last number given out (the head)."},
                    "pruned": {**_INT, "description": "Numbers accounted for by pruned runs (`memdir gc`)."},
                    "head": {**_NULLABLE_STR, "description": "The head's chain value (hex): keep it to compare later."},
                    "breaks": {"type": "array", "items": _ref("ChainBreak")},
                }
            ),
        ]
    },
    "Integrity": _object(
        {
            "ok": {"type": "boolean"},
            "files": {**_INT, "description": "How many files were checked."},
            "history": _ref("Chain"),
            "audit": _ref("Chain"),
            "discrepancies": {
                "type": "array",
                "items": _object(
                    {
                        "path": _STR,
                        "problem": {"enum": ["changed", "unrecorded", "missing", "damaged"]},
                        "detail": _STR,
                        "recorded": _NULLABLE_STR,
                        "actual": _NULLABLE_STR,
                    }
                ),
            },
        }
    ),
}
