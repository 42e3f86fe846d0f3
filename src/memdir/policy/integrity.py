"""``memdir verify``: recompute the SHA-256 of every current file and compare it with the file's latest version.

The history says what each file should hold; `verify` reads what it does hold. A difference means something
changed the content without going through memdir: an editor in a directory store (memdir records such edits as
versions by ``external`` the next time it looks, so `verify` looks *first*, through a read-only view that records
nothing), or someone editing a SQLite store's tables directly. Reported:

- ``changed``: the content is not what the latest version recorded;
- ``unrecorded``: a file no version mentions (made outside memdir, not yet seen);
- ``missing``: the history says the file exists, but it is not there;
- ``damaged``: the content stored for the latest version no longer has that version's hash.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ..errors import HistoryUnavailableError, NotFoundError
from ..paths import MemoryPath
from ..store._base import sha256_hex
from ..store.directory import DirectoryStore

if TYPE_CHECKING:
    from collections.abc import Iterator

    from ..store._base import Store, Version

__all__ = ["Discrepancy", "verify"]

Problem = Literal["changed", "unrecorded", "missing", "damaged"]


@dataclass(frozen=True, slots=True)
class Discrepancy:
    path: str
    problem: Problem
    detail: str
    recorded: str | None = None  # SHA-256 of the latest version
    actual: str | None = None  # SHA-256 of the content found

    def to_json(self) -> dict[str, str | None]:
        return {"path": self.path, "problem": self.problem, "detail": self.detail, "recorded": self.recorded,
                "actual": self.actual}  # fmt: skip


def verify(store: Store) -> list[Discrepancy]:
    """Every file whose content does not match its history, in path order (empty: all is well). A gate's store
    is checked below the gate: the check reads every file, and is one audit entry of the command that asked."""
    store = store.backend
    with _untouched_view(store) as view:
        recorded = _replay(view.log())
        found: list[Discrepancy] = []
        seen: set[MemoryPath] = set()
        for entry in view.list_files(MemoryPath.root()):
            seen.add(entry.path)
            actual = sha256_hex(view.read(entry.path).content)
            found.extend(_compare(view, entry.path, recorded.get(entry.path), actual))
        for path, version in recorded.items():
            if path not in seen:
                found.append(Discrepancy(path.virtual, "missing", "the history says it exists, but it is not there",
                                         version.sha256))  # fmt: skip
    return sorted(found, key=lambda d: d.path)


def _compare(view: Store, path: MemoryPath, latest: Version | None, actual: str) -> list[Discrepancy]:
    if latest is None:
        return [Discrepancy(path.virtual, "unrecorded", "no version records this file", None, actual)]
    if latest.sha256 != actual:
        detail = f"content differs from version {latest.version} ({latest.actor}); changed outside memdir"
        return [Discrepancy(path.virtual, "changed", detail, latest.sha256, actual)]
    with contextlib.suppress(NotFoundError):
        if latest.sha256 and sha256_hex(view.read_blob(latest.sha256)) != latest.sha256:
            detail = f"the stored content of version {latest.version} no longer matches its hash"
            return [Discrepancy(path.virtual, "damaged", detail, latest.sha256, actual)]
    return []


def _replay(log: Iterator[Version]) -> dict[MemoryPath, Version]:
    """The latest version of every file the history says exists."""
    current: dict[MemoryPath, Version] = {}
    for item in log:
        if item.op == "rename" and item.old_path is not None:
            current.pop(item.old_path, None)
        if item.sha256 is None:
            current.pop(item.path, None)
        else:
            current[item.path] = item
    return current


@contextlib.contextmanager
def _untouched_view(store: Store) -> Iterator[Store]:
    """``store``, or for a directory store a read-only twin: a normal one would record outside edits as versions
    while we look, and then report that all is well."""
    if not isinstance(store, DirectoryStore):
        yield store
        return
    if store.index_path is None:
        raise HistoryUnavailableError("this directory store keeps no history: there is nothing to verify against")
    twin = DirectoryStore(store.base, namespace=store.namespace, history=store.index_path, read_only=True)
    try:
        yield twin
    finally:
        twin.close()
