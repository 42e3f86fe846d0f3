"""Changes made at most once: the ``Idempotency-Key`` header.

A client that sent a change and lost the answer (the server was killed, the connection broke, the database
restarted during the commit) cannot tell whether the change was made. It sends the same request again with the
same ``Idempotency-Key``; the server answers what the first attempt did, and the change is made at most once.

How. The key travels as ``Origin.request`` into the store, which records it with the change's versions in the
change's own transaction (`Store.records_requests`: the SQLite and PostgreSQL stores). Before changing anything
the server looks the key up (`Store.requested`): when versions carry it, the first attempt was applied, and the
answer is rebuilt from them (the memory tool's result text too: SPEC.md's success lines follow from the command's
paths and the recorded versions, the ``str_replace`` snippet from the new version and the one before it). A retry
that races its own original (both looked and found nothing) is stopped by the store's unique index on (namespace,
key, path): the loser fails, finds the winner's versions, and answers from them.

Not replayed: a change that was refused (nothing was recorded; sent again it is judged again), a write the policy
held for review (held again), and the notes the write policy or auto memory add after SPEC.md's line (the line
itself comes back). Stores that do not record keys (memory, directory) make the change every time it is sent;
``/v1/whoami`` says which kind a server has (``idempotent_writes``), and `RemoteStore` retries a change whose
answer it lost only on a server that records keys. Keys live as long as their versions (``memdir gc`` prunes
both).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from .._format import number_lines, split_lines
from .._wire import HEADER_REPLAYED
from ..errors import MemdirError, PathError
from ..paths import MemoryPath, parse
from ..tool import ToolResult
from ..tool._render import replaced_region
from ._errors import ApiError

if TYPE_CHECKING:
    from ..store import Store
    from ..store._records import Version
    from ..tool import MemoryTool

__all__ = ["KEY_PATTERN", "REPLAYED", "moved", "once", "removed", "run_tool_once", "written"]

T = TypeVar("T")

KEY_PATTERN = re.compile(r"[\x21-\x7e]{1,255}")  # visible ASCII: a UUID, a ULID, base64...
_CHANGES = frozenset({"create", "str_replace", "insert", "delete", "rename"})
REPLAYED = {HEADER_REPLAYED: "true"}  # on an answer rebuilt from an earlier attempt (as Stripe's API marks them)


def once(
    store: Store, key: str | None, change: Callable[[], T], recorded: Callable[[list[Version]], T | None]
) -> tuple[T, bool]:
    """(``change()``, False), unless a request with the idempotency key ``key`` was applied already: then (what it
    recorded, through ``recorded``, True). ``recorded`` answers None when the versions are not this request's:
    the key was used for another change."""
    if key is None or not store.records_requests:
        return change(), False
    found = store.requested(key)
    if not found:
        try:
            return change(), False
        except MemdirError:
            found = _quietly(store, key)  # a twin of this request may have won the race: its answer is this one's
            if not found:
                raise
    answer = recorded(found)
    if answer is None:
        raise _reused()
    return answer, True


def run_tool_once(tool: MemoryTool, command: object) -> tuple[ToolResult, bool]:
    """`MemoryTool.execute`, made at most once per ``tool.origin.request`` (see the module docstring); True when
    the result is the replayed answer of an earlier attempt."""
    key, store = tool.origin.request, tool.store
    changes = isinstance(command, Mapping) and command.get("command") in _CHANGES
    if key is None or not changes or not store.records_requests:
        return tool.execute(command), False
    assert isinstance(command, Mapping)
    found = store.requested(key)
    if not found:
        result = tool.execute(command)
        if not result.is_error:
            return result, False
        found = _quietly(store, key)  # refused because a twin of this request applied it first?
        if not found:
            return result, False
    text = _tool_text(store, command, found)
    if text is None:
        raise _reused()
    return ToolResult(text), True


# -- what the store API answered -------------------------------------------------------------------------------


def written(path: MemoryPath) -> Callable[[list[Version]], Version | None]:
    """The version a write (or a restore) to ``path`` recorded."""
    return lambda found: next((v for v in found if v.path == path and v.sha256 is not None), None)


def removed(path: MemoryPath) -> Callable[[list[Version]], list[Version] | None]:
    """The versions a delete of ``path`` (a file, or a directory) recorded."""
    return lambda found: [v for v in found if v.sha256 is None and v.path.is_within(path)] or None


def moved(dest: MemoryPath) -> Callable[[list[Version]], list[Version] | None]:
    """The versions a rename to ``dest`` recorded."""
    return lambda found: [v for v in found if v.op == "rename" and v.path.is_within(dest)] or None


# -- what the memory tool answered (SPEC.md's success lines; tests/server/test_pg_idempotency.py checks that
#    each is the text `memdir.tool` gives) -------------------------------------------------------------------


def _tool_text(store: Store, command: Mapping[str, Any], found: list[Version]) -> str | None:
    name = command.get("command")
    try:
        if name == "rename":
            old, new = str(command["old_path"]), str(command["new_path"])
            ok = moved(parse(new))(found)
            return f"Successfully renamed {old} to {new}" if ok else None
        path = str(command["path"])
        target = parse(path)
        if name == "delete":
            return f"Successfully deleted {path}" if removed(target)(found) else None
        version = written(target)(found)
        if version is None or version.op != _OPS.get(str(name), version.op):
            return None
        if name == "create":
            return f"File created successfully at: {path}"
        if name == "insert":
            return f"The file {path} has been edited."
        return _replaced(store, command, version)
    except (KeyError, PathError):
        return None


_OPS = {"str_replace": "str_replace", "insert": "insert"}  # create records "create" (or "write" when overwriting)


def _replaced(store: Store, command: Mapping[str, Any], version: Version) -> str:
    """str_replace's answer: the snippet around the change, from the new version and the one before it."""
    assert version.sha256 is not None
    new_text = store.read_blob(version.sha256).decode("utf-8")
    earlier = [v for v in store.history(version.path) if v.version < version.version and v.sha256 is not None]
    old_text = store.read_blob(earlier[-1].sha256).decode("utf-8") if earlier and earlier[-1].sha256 else ""
    start, end = replaced_region(old_text, new_text, str(command.get("old_str", "")), str(command.get("new_str", "")))
    first = new_text.count("\n", 0, start)
    lines = split_lines(new_text)
    # SPEC.md: two lines before the change, the changed lines, two after, in the view format.
    low, high = max(0, first - 2), min(len(lines), first + new_text.count("\n", start, end) + 3)
    return "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n" + "\n".join(
        number_lines(lines[low:high], low + 1)
    )


def _quietly(store: Store, key: str) -> list[Version]:
    """The versions recorded under ``key``, or [] when the store cannot say now (the caller's error stands)."""
    try:
        return store.requested(key)
    except MemdirError:
        return []


def _reused() -> ApiError:
    return ApiError(
        "idempotency_key_reused",
        "this Idempotency-Key was already used for a different change; send a new key for each change",
    )
