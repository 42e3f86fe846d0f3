"""The in-memory store (``memory:``): for tests, and for embedding memdir where nothing should touch disk.

``memory:`` opens a fresh, private store; ``memory:NAME`` opens a store shared by every `open_store` call
with that name in this process (one per namespace), which is handy when a test hands a URL to code that
opens the store itself. It is the reference implementation of the contract in a few lines each.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import (
    AlreadyExistsError,
    ConflictError,
    NotADirectoryError_,
    NotAFileError,
    NotFoundError,
    PathError,
    RedactedError,
)
from ..paths import MemoryPath
from ._base import Store, check_expect, check_move, key_path, prunable_versions
from ._chain import ChainHead, ChainReport, ChainWalk, PrunedRun, genesis, link, merge_pruned, version_fields
from ._db import SqlDatabase
from ._records import (
    ANY,
    DEFAULT_NAMESPACE,
    Entry,
    Expect,
    FileData,
    Op,
    Origin,
    PathLike,
    Quota,
    Stat,
    Usage,
    Version,
    as_path,
    check_namespace,
    is_redacted,
    sha256_hex,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = ["MemoryStore"]


@dataclass(slots=True)
class _File:
    version: int
    sha256: str
    size: int
    modified: float


@dataclass
class _State:
    lock: threading.RLock = field(default_factory=threading.RLock)
    files: dict[str, _File] = field(default_factory=dict)
    dirs: Counter[str] = field(default_factory=Counter)  # directory key -> files below it
    versions: list[Version] = field(default_factory=list)
    chains: dict[int, bytes] = field(default_factory=dict)  # version -> its chain value (`memdir.store._chain`)
    head: bytes | None = None  # the chain value of version `last_version`
    pruned: list[PrunedRun] = field(default_factory=list)
    blobs: dict[str, bytes] = field(default_factory=dict)
    bytes: int = 0
    last_version: int = 0  # kept apart from `versions`: pruning must never make a number come back
    aux: SqlDatabase = field(default_factory=lambda: SqlDatabase(None))  # shared by every opener of a named store


_SHARED: dict[tuple[str, str], _State] = {}
_SHARED_LOCK = threading.Lock()


class MemoryStore(Store):
    checks_quota = True  # under the state's lock, with the write

    def __init__(self, *, namespace: str = DEFAULT_NAMESPACE, name: str | None = None) -> None:
        self.namespace = check_namespace(namespace)
        self._name = name
        if name is None:
            self._s = _State()
        else:
            with _SHARED_LOCK:
                self._s = _SHARED.setdefault((name, self.namespace), _State())

    def __repr__(self) -> str:
        return f"MemoryStore(namespace={self.namespace!r})"

    @property
    def aux(self) -> SqlDatabase:
        return self._s.aux

    def close(self) -> None:
        """Nothing to release: the state lives as long as the store object (or, named, the process)."""

    # -- reading ------------------------------------------------------------------------------------------

    def stat(self, path: PathLike) -> Stat | None:
        target = as_path(path)
        with self._s.lock:
            if target.is_root:
                return Stat(target, "dir", self._s.bytes)
            row = self._s.files.get(target.key)
            if row is not None:
                return Stat(target, "file", row.size, row.version, row.sha256, row.modified)
            if self._s.dirs[target.key]:
                return Stat(target, "dir", sum(e.size for e in self._below(target)))
        return None

    def read(self, path: PathLike) -> FileData:
        target = as_path(path)
        with self._s.lock:
            row = self._file(target)
            return FileData(target, self._s.blobs[row.sha256], row.version, row.sha256, row.modified)

    def list_files(self, path: PathLike = MemoryPath(())) -> list[Entry]:
        target = as_path(path)
        with self._s.lock:
            if not target.is_root:
                if target.key in self._s.files:
                    raise NotADirectoryError_(f"{target.virtual} is a file")
                if not self._s.dirs[target.key]:
                    raise NotFoundError(f"{target.virtual} does not exist")
            return self._below(target)

    def usage(self) -> Usage:
        with self._s.lock:
            return Usage(len(self._s.files), self._s.bytes)

    # -- writing ------------------------------------------------------------------------------------------

    def write(
        self,
        path: PathLike,
        content: bytes,
        *,
        expect: Expect = ANY,
        origin: Origin = Origin(),
        op: Op = "write",
        quota: Quota | None = None,
    ) -> Version:
        target = as_path(path)
        with self._s.lock:
            row = self._writable(target)
            check_expect(target, None if row is None else row.version, expect)
            return self._put(target, content, origin, op, quota=quota)

    def update(
        self,
        path: PathLike,
        change: Callable[[FileData], bytes],
        *,
        origin: Origin = Origin(),
        op: Op = "write",
        quota: Quota | None = None,
    ) -> Version:
        target = as_path(path)
        with self._s.lock:
            return self._put(target, change(self.read(target)), origin, op, quota=quota)

    def delete(self, path: PathLike, *, origin: Origin = Origin()) -> list[Version]:
        target = as_path(path)
        if target.is_root:
            raise PathError(target.virtual, "not_allowed", "the root cannot be deleted")
        with self._s.lock:
            keys = self._keys_at(target)
            return [self._remove(key, origin) for key in keys]

    def move(self, src: PathLike, dst: PathLike, *, origin: Origin = Origin()) -> list[Version]:
        source, dest = as_path(src), as_path(dst)
        check_move(source, dest)
        with self._s.lock:
            keys = self._keys_at(source)
            if dest.is_root or dest.key in self._s.files or self._s.dirs[dest.key]:
                raise AlreadyExistsError(f"{dest.virtual} already exists")
            self._check_parents(dest)
            return [self._move_one(key, key_path(key).rebase(source, dest), origin) for key in keys]

    def import_version(self, version: Version, content: bytes | None, *, quota: Quota | None = None) -> Version:
        origin = Origin(version.actor, version.session, version.source)
        with self._s.lock:
            if version.sha256 is None:
                self._file(version.path)
                return self._remove(version.path.key, origin, op=version.op, ts=version.timestamp)
            if version.op == "rename" and version.old_path is not None:
                self._file(version.old_path)
                if self._writable(version.path) is not None:
                    raise AlreadyExistsError(f"{version.path.virtual} already exists")
                return self._move_one(version.old_path.key, version.path, origin, ts=version.timestamp)
            if content is None:
                raise NotFoundError(f"no content for version {version.version} of {version.path.virtual}")
            self._writable(version.path)
            return self._put(version.path, content, origin, version.op, ts=version.timestamp, quota=quota)

    def namespaces(self) -> list[str]:
        if self._name is None:  # a private store has no neighbours
            return [self.namespace] if self._s.last_version else []
        with _SHARED_LOCK:
            shared = [(ns, state) for (name, ns), state in _SHARED.items() if name == self._name]
        return sorted(ns for ns, state in shared if state.last_version)

    # -- history ------------------------------------------------------------------------------------------

    def log(self, since: int = 0, *, rescan: bool = True) -> Iterator[Version]:
        del rescan  # every change is recorded as it is made
        with self._s.lock:
            snapshot = [v for v in self._s.versions if v.version > since]
        return iter(snapshot)

    def _versions_touching(self, path: MemoryPath, before: int | None) -> list[Version]:
        with self._s.lock:
            return [
                v
                for v in self._s.versions
                if (v.path == path or v.old_path == path) and (before is None or v.version < before)
            ]

    def prune_history(self, before: float) -> int:
        with self._s.lock:
            gone = prunable_versions(self._s.versions, before)
            self._s.pruned = merge_pruned(self._s.pruned, gone, {n: self._s.chains.pop(n, None) for n in gone})
            self._s.versions = [v for v in self._s.versions if v.version not in gone]
            needed = {v.sha256 for v in self._s.versions} | {f.sha256 for f in self._s.files.values()}
            self._s.blobs = {sha: blob for sha, blob in self._s.blobs.items() if sha in needed}
        return len(gone)

    def verify_chain(self) -> ChainReport:
        with self._s.lock:
            head = ChainHead(1, self._s.last_version, self._s.head)
            rows = [(v.version, self._s.chains.get(v.version), version_fields(v)) for v in self._s.versions]
            runs = list(self._s.pruned)
        return ChainWalk("history", self.namespace, head).run(rows, runs)

    def redact_content(self, sha256: str) -> bool:
        with self._s.lock:
            if any(f.sha256 == sha256 for f in self._s.files.values()):
                raise ConflictError("a current file holds this content: change or delete the file first")
            if not self._s.blobs.get(sha256):
                return False
            self._s.blobs[sha256] = b""  # the row stays, without its bytes (`is_redacted`)
            return True

    def read_blob(self, sha256: str) -> bytes:
        with self._s.lock:
            content = self._s.blobs.get(sha256)
        if content is None:
            raise NotFoundError("no version of this namespace has that content")
        if is_redacted(sha256, content):
            raise RedactedError("that content was redacted: it is no longer stored")
        return content

    # -- internals (callers hold the lock) ----------------------------------------------------------------

    def _file(self, target: MemoryPath) -> _File:
        row = self._s.files.get(target.key) if not target.is_root else None
        if row is not None:
            return row
        if target.is_root or self._s.dirs[target.key]:
            raise NotAFileError(f"{target.virtual} is a directory")
        raise NotFoundError(f"{target.virtual} does not exist")

    def _below(self, target: MemoryPath) -> list[Entry]:
        prefix = target.key + "/" if target.key else ""
        return [
            Entry(key_path(k), f.size, f.modified, f.version, f.sha256)
            for k, f in sorted(self._s.files.items(), key=lambda item: item[0].split("/"))
            if k.startswith(prefix)
        ]

    def _keys_at(self, target: MemoryPath) -> list[str]:
        if target.key in self._s.files:
            return [target.key]
        keys = [e.path.key for e in self._below(target)] if self._s.dirs[target.key] else []
        if not keys:
            raise NotFoundError(f"{target.virtual} does not exist")
        return keys

    def _check_parents(self, target: MemoryPath) -> None:
        for ancestor in target.ancestors():
            if ancestor.key in self._s.files:
                raise NotADirectoryError_(f"{ancestor.virtual} is a file")

    def _writable(self, target: MemoryPath) -> _File | None:
        if target.is_root or self._s.dirs[target.key]:
            raise NotAFileError(f"{target.virtual} is a directory")
        self._check_parents(target)
        return self._s.files.get(target.key)

    def _next(self) -> int:
        return self._s.last_version + 1

    def _record(self, version: Version) -> Version:
        previous = self._s.head if self._s.head is not None else genesis("history", self.namespace)
        self._s.head = self._s.chains[version.version] = link(previous, version_fields(version))
        self._s.versions.append(version)
        self._s.last_version = version.version
        return version

    def _count(self, key: str, delta: int) -> None:
        parts = key.split("/")
        for i in range(1, len(parts)):
            directory = "/".join(parts[:i])
            self._s.dirs[directory] += delta
            if not self._s.dirs[directory]:
                del self._s.dirs[directory]

    def _put(
        self,
        target: MemoryPath,
        content: bytes,
        origin: Origin,
        op: str,
        ts: float | None = None,
        *,
        quota: Quota | None = None,
    ) -> Version:
        now = time.time() if ts is None else ts
        sha = sha256_hex(content)
        before = self._s.files.get(target.key)
        added = len(content) - (before.size if before else 0)
        if quota is not None:
            quota.check(Usage(len(self._s.files), self._s.bytes), 0 if before else 1, added)
        if not self._s.blobs.get(sha):  # new, or left empty by a redaction
            self._s.blobs[sha] = content
        if before is None:
            self._count(target.key, +1)
        self._s.bytes += added
        version = self._next()
        self._s.files[target.key] = _File(version, sha, len(content), now)
        return self._record(
            Version(version, target, op, origin.actor, origin.session, origin.source, now, sha, len(content))
        )

    def _remove(self, key: str, origin: Origin, op: str = "delete", ts: float | None = None) -> Version:
        row = self._s.files.pop(key)
        self._count(key, -1)
        self._s.bytes -= row.size
        now = time.time() if ts is None else ts
        return self._record(
            Version(self._next(), key_path(key), op, origin.actor, origin.session, origin.source, now, None, 0)
        )

    def _move_one(self, key: str, new: MemoryPath, origin: Origin, ts: float | None = None) -> Version:
        row = self._s.files.pop(key)
        self._count(key, -1)
        self._count(new.key, +1)
        now = time.time() if ts is None else ts
        version = self._next()
        self._s.files[new.key] = _File(version, row.sha256, row.size, now)
        return self._record(
            Version(
                version,
                new,
                "rename",
                origin.actor,
                origin.session,
                origin.source,
                now,
                row.sha256,
                row.size,
                key_path(key),
            )
        )
