"""The storage contract every backend fulfils (the record types it speaks in: `memdir.store._records`).

A store holds one namespace's ``/memories`` tree: files with bytes, directories implied by the files below
them (a directory exists while it holds a file; the root always exists). Every change is a `Version`: an
entry in an append-only log numbered 1, 2, 3... per namespace, with who made it, when, and the SHA-256 and
size of the new content. Content of every version stays readable, so nothing is ever silently lost.

Backends implement the abstract methods; the command semantics (what ``str_replace`` means, which words
the model reads) live in `memdir.tool`, never here.
"""

from __future__ import annotations

import importlib
import math
import random
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Self

from ..errors import (
    AlreadyExistsError,
    ConfigError,
    ConflictError,
    HistoryUnavailableError,
    NotFoundError,
    PathError,
)
from ..paths import MemoryPath
from ._db import SqlDatabase
from ._records import (
    ANY,
    DEFAULT_NAMESPACE,
    MISSING,
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
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator
    from pathlib import Path
    from types import TracebackType

    from ..search._hit import SearchHit
    from ._chain import ChainReport
    from ._db import AuxDatabase

__all__ = ["Store", "check_expect", "check_move", "key_path", "prunable_versions", "register_search"]


@dataclass(slots=True)
class _Retry:
    """Backoff for optimistic read-modify-write loops under contention."""

    attempts: int = 200
    delay: float = 0.0005
    max_delay: float = 0.05
    _tries: int = field(default=0, init=False)

    def wait(self) -> bool:
        self._tries += 1
        if self._tries >= self.attempts:
            return False
        time.sleep(random.uniform(0, min(self.max_delay, self.delay * 2**self._tries)))
        return True


class Store(ABC):
    """One namespace of memory. Open one with `memdir.open_store`.

    Paths are `MemoryPath` objects or ``/memories/...`` strings (checked on the way in). Errors are
    `memdir.errors.MemdirError` subclasses; backend failures arrive as `StorageError`.
    """

    namespace: str = DEFAULT_NAMESPACE
    runs_commands: ClassVar[bool] = False
    """True for a store on a memdir server (`memdir.RemoteStore`): the memory tool sends each command to the
    server's own tool (`run_command`), which runs it behind the server's gate, instead of running it here."""
    checks_quota: bool = False
    """Whether `write` and `update` check their ``quota`` in the change's own transaction, against the usage
    that transaction sees (exact however many writers race). Otherwise ``quota`` is checked against `usage`
    read just before, which a concurrent writer can overtake: a caller may as well check it itself."""

    # -- reading ------------------------------------------------------------------------------------------

    @abstractmethod
    def stat(self, path: PathLike) -> Stat | None:
        """What is at ``path``: a file, a directory, or nothing (None)."""

    @abstractmethod
    def read(self, path: PathLike) -> FileData:
        """A file's content and version. `NotFoundError`, or `NotAFileError` for a directory."""

    @abstractmethod
    def list_files(self, path: PathLike = MemoryPath(())) -> list[Entry]:
        """Every file below the directory ``path``, at any depth, in tree order (sorted by segments).

        `NotFoundError` when nothing is there, `NotADirectoryError_` when a file is.
        """

    @abstractmethod
    def usage(self) -> Usage:
        """How many files and bytes the namespace holds now."""

    # -- writing ------------------------------------------------------------------------------------------

    @abstractmethod
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
        """Store ``content`` at ``path``, creating parent directories, if the precondition holds.

        ``expect=MISSING`` fails with `AlreadyExistsError` when anything is there; an ``int`` fails with
        `ConflictError` unless the file is at that version. A path under a file fails with
        `NotADirectoryError_`; a directory at ``path`` with `NotAFileError`. With ``quota``, a write that would
        take the namespace over it fails with `QuotaError` (see `checks_quota`).
        """

    @abstractmethod
    def delete(self, path: PathLike, *, origin: Origin = Origin()) -> list[Version]:
        """Delete a file, or a directory and everything below it. The root cannot be deleted."""

    @abstractmethod
    def move(self, src: PathLike, dst: PathLike, *, origin: Origin = Origin()) -> list[Version]:
        """Rename a file or directory; ``dst`` must not exist (`AlreadyExistsError`) and must not lie
        inside ``src``. Parents of ``dst`` are created."""

    def update(
        self,
        path: PathLike,
        change: Callable[[FileData], bytes],
        *,
        origin: Origin = Origin(),
        op: Op = "write",
        quota: Quota | None = None,
    ) -> Version:
        """Read-modify-write as one atomic step: ``change`` maps the current file to its new content.

        No update is lost when several writers race: this default re-reads and re-applies ``change`` when
        another writer got in first. Backends with a lock override it to apply ``change`` under the lock.
        Exceptions from ``change`` propagate and nothing is written. ``quota`` as for `write`.
        """
        target = as_path(path)
        retry = _Retry()
        while True:
            current = self.read(target)
            try:
                return self.write(target, change(current), expect=current.version, origin=origin, op=op, quota=quota)
            except ConflictError:
                if not retry.wait():
                    raise

    # -- history ------------------------------------------------------------------------------------------

    @abstractmethod
    def log(self, since: int = 0, *, rescan: bool = True) -> Iterator[Version]:
        """Every version of the namespace after version number ``since``, oldest first.

        ``rescan``: a store that notices edits made outside memdir only when it looks at its files (the
        directory store) first looks for them when True, so they are in the log; False reads the log as
        recorded (what a caller on a hot path wants, when it looks for outside edits on its own schedule).
        Every other store records each change as it is made and ignores it.
        """

    @abstractmethod
    def _versions_touching(self, path: MemoryPath, before: int | None) -> list[Version]:
        """Versions whose ``path`` or ``old_path`` is ``path`` (below ``before`` when given), oldest first."""

    @abstractmethod
    def read_blob(self, sha256: str) -> bytes:
        """The content with this SHA-256, from any version of this namespace (every version's content is
        kept). `NotFoundError` when no version of this namespace had it."""

    def redact_content(self, sha256: str) -> bool:  # noqa: ARG002 - the signature backends implement
        """Remove the content with this SHA-256 from the store's storage for good (redaction): the versions that
        had it keep their record (path, hash, size), but reading their content fails with `NotFoundError` from
        then on; the content's row stays, with no bytes (`is_redacted`), and a later write of the same content
        stores it again. `ConflictError` while a current file holds that content (change or delete the file
        first). True when content was removed, False when the namespace held none with that hash (or no more).

        Stores that can forget content override this; the default refuses, rather than pretend."""
        raise HistoryUnavailableError(f"{type(self).__name__} cannot redact content")

    def history(self, path: PathLike) -> list[Version]:
        """The versions of the file at ``path``, oldest first, following it back through renames and past
        deletes. `NotFoundError` when the path never held a file."""
        target = as_path(path)
        found = _lineage(self, target)
        if not found:
            raise NotFoundError(f"no history for {target.virtual}")
        return sorted(found.values(), key=lambda v: v.version)

    def read_version(self, path: PathLike, version: int) -> bytes:
        """The content ``path`` had at ``version`` (a version from `history`)."""
        target = as_path(path)
        for item in self.history(target):
            if item.version == version:
                if item.sha256 is None:
                    raise NotFoundError(f"version {version} of {target.virtual} is a deletion; it has no content")
                return self.read_blob(item.sha256)
        raise NotFoundError(f"{target.virtual} has no version {version}")

    def restore(self, path: PathLike, version: int, *, origin: Origin = Origin()) -> Version:
        """Make ``version``'s content the current content of ``path`` (recorded as a new version)."""
        target = as_path(path)
        return self.write(target, self.read_version(target, version), expect=ANY, origin=origin, op="restore")

    @abstractmethod
    def import_version(self, version: Version, content: bytes | None, *, quota: Quota | None = None) -> Version:
        """Apply a version exported from another store: its change and its metadata (op, actor, session,
        source, time) are kept; it gets the next version number here. Used by `memdir import`.

        A version without content hash is a deletion of ``path`` (a file); a ``rename`` with ``old_path``
        moves that file to ``path`` (``content`` is not needed), with `move`'s checks; any other version
        writes ``content`` to ``path``, held to ``quota`` as `write` is (a deletion or a move takes nothing).
        """

    def prune_history(self, before: float) -> int:  # noqa: ARG002 - the signature backends implement
        """Forget the versions that stopped being current before ``before`` (seconds since the epoch), and the
        content no remaining version needs; returns how many versions went. Used by `memdir gc`.

        A version stops being current when the next change to its path (a write, a delete, a rename away)
        replaces it; a deletion stops being current at once. So every file's current version stays, a deleted
        file keeps its history until its deletion is older than ``before``, and the state of the namespace at any
        moment since ``before`` can still be rebuilt. The source of every kept rename is kept too, so the
        remaining log still replays (`memdir export` / `import`). Version numbers are never reused.

        Backends that keep history implement this with `prunable_versions`; the default refuses.
        """
        raise HistoryUnavailableError(f"{type(self).__name__} cannot prune its history")

    def verify_chain(self) -> ChainReport:
        """Check the history's hash chain (`memdir.store._chain`): every version in number order, each one's chain
        value following from the one before, pruned runs accounting for their numbers, the head matching the
        newest. Read in one snapshot. What `memdir verify` reports for the history.

        Backends that keep history implement this (a remote store asks its server: ``GET /v1/verify``); the default
        refuses, for a store without history. A store that wraps another forwards it."""
        raise HistoryUnavailableError(f"{type(self).__name__} keeps no hash chain of its history to verify")

    # -- idempotency --------------------------------------------------------------------------------------

    records_requests: ClassVar[bool] = False
    """True when writes, deletes and renames store ``origin.request`` with their versions atomically, and refuse a
    second change under the same key to the same path (the SQLite and PostgreSQL stores). Other stores ignore the
    key: a client cannot safely retry a change to them whose answer it lost."""

    def requested(self, key: str) -> list[Version]:  # noqa: ARG002 - the signature backends implement
        """The versions recorded by changes made with ``Origin(request=key)``, oldest first; [] when none was
        (or the store does not record keys)."""
        return []

    def namespaces(self) -> list[str]:
        """The namespaces at this store's location that hold any history, sorted (this store's own among them
        once it has a version). Used by ``memdir migrate-store --all-namespaces``.

        Backends that can see their neighbours override this; the default refuses rather than answer with
        this namespace alone, which would make a copy of "every namespace" silently incomplete.
        """
        raise ConfigError(f"{type(self).__name__} cannot list its namespaces: name the namespace to use")

    def run_command(self, command: object, *, origin: Origin, overwrite: bool = False) -> dict[str, Any]:
        """Run a memory tool command where the store lives (stores with `runs_commands` only): the result as the
        server's tool answered it, ``{"text", "is_error", "content"}``; ``overwrite``: ``create`` may replace a
        file."""
        raise NotImplementedError(f"{type(self).__name__} runs no commands itself")

    @property
    def backend(self) -> Store:
        """The store that holds the data: this one; a wrapper (the gate) answers the store it wraps. What is
        derived from the data (the search index) belongs to the backend."""
        return self

    # -- search -------------------------------------------------------------------------------------------

    def search(self, query: str, *, limit: int = 10, path_prefix: PathLike | None = None) -> list[SearchHit]:
        """The passages that best match ``query``, best first: full-text (BM25), or hybrid with embeddings when
        the ``[semantic]`` extra is installed. ``path_prefix`` limits it to a file or the files below a directory.
        The index follows this store's change log (`memdir.search`); backends need not override this."""
        return _search_engine()(self, query, limit, path_prefix)

    # -- the auxiliary database ---------------------------------------------------------------------------

    @property
    def aux(self) -> AuxDatabase:
        """The store's auxiliary database: where features keep what is derived from the store or kept about it
        (the search index, the audit log, the quarantine, access times), each in its own tables made by its own
        migration set (``AuxDatabase.ensure``). Rows carry the namespace: one database may serve several.

        Where it lives is the backend's choice: a SQLite database at `_aux_location` (in the SQLite store's own
        file, in the directory store's sidecar, in memory for the in-memory store), or the PostgreSQL store's own
        database, shared by every server using it.
        """
        aux: AuxDatabase | None = self.__dict__.get("_aux_db")
        if aux is None:
            location, read_only = self._aux_location()
            aux = self.__dict__.setdefault("_aux_db", SqlDatabase(location, read_only=read_only))
        return aux

    def _aux_location(self) -> tuple[str | Path | None, bool]:
        """(database file or None for memory, read-only?) of the auxiliary database."""
        return None, False

    # -- lifecycle ----------------------------------------------------------------------------------------

    def close(self) -> None:
        """Release what the store holds open (subclasses extend this)."""
        aux: AuxDatabase | None = self.__dict__.pop("_aux_db", None)
        if aux is not None:
            aux.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


_SEARCH: Callable[[Store, str, int, PathLike | None], list[SearchHit]] | None = None


def _search_engine() -> Callable[[Store, str, int, PathLike | None], list[SearchHit]]:
    """The engine `register_search` plugged in, imported on first use: ``import memdir`` loads its parts lazily,
    so nothing may have imported memdir.search yet. It is named by string, not imported: the store contract does
    not depend on the engine built over it (memdir.search imports the store, never the other way round)."""
    if _SEARCH is None:
        try:
            importlib.import_module("memdir.search")  # registers itself
        except ImportError as exc:
            raise ConfigError("search is not available: memdir.search could not be imported") from exc
    if _SEARCH is None:
        raise ConfigError("search is not available: memdir.search did not register its engine")
    return _SEARCH


def register_search(search: Callable[[Store, str, int, PathLike | None], list[SearchHit]]) -> None:
    """Plug the search engine into `Store.search` (called by `memdir.search` when it is imported): the engine is
    built over the store contract, so the store does not import it."""
    global _SEARCH
    _SEARCH = search


def check_expect(target: MemoryPath, current: int | None, expect: Expect) -> None:
    """Enforce a write precondition against the version now at ``target`` (None: nothing there)."""
    if expect is MISSING and current is not None:
        raise AlreadyExistsError(f"{target.virtual} already exists")
    if isinstance(expect, int) and current != expect:
        raise ConflictError(f"{target.virtual} changed: expected version {expect}, found {current}", current=current)


def check_move(source: MemoryPath, dest: MemoryPath) -> None:
    """Refuse moves no backend can make: the root, or a directory into itself. A path onto itself is left to the
    backend: its destination exists (`AlreadyExistsError`), unless nothing is there (`NotFoundError`)."""
    if source.is_root:
        raise PathError(source.virtual, "not_allowed", "the root cannot be renamed")
    if dest.is_within(source) and dest != source:
        raise PathError(dest.virtual, "not_allowed", f"it lies inside {source.virtual}")


def prunable_versions(versions: Iterable[Version], before: float) -> set[int]:
    """The numbers of the versions `Store.prune_history` removes, from the whole log oldest first."""
    current: dict[MemoryPath, Version] = {}  # what each path holds, replaying the log
    ended: dict[int, float] = {}  # version -> when it stopped being current
    source: dict[int, int] = {}  # rename -> the version it moved
    for item in versions:
        if item.op == "rename" and item.old_path is not None and item.old_path in current:
            moved = current.pop(item.old_path)
            ended[moved.version], source[item.version] = item.timestamp, moved.version
        if item.path in current:
            ended[current[item.path].version] = item.timestamp
        if item.sha256 is None:
            ended[item.version] = item.timestamp
            current.pop(item.path, None)
        else:
            current[item.path] = item
    gone = {number for number, when in ended.items() if when < before}
    for rename in sorted(source, reverse=True):  # newest first, so a chain of kept renames keeps all its sources
        if rename not in gone:
            gone.discard(source[rename])
    return gone


def key_path(key: str) -> MemoryPath:
    """The path of a key a backend stored (keys were checked on the way in)."""
    return MemoryPath(tuple(key.split("/")) if key else ())


def _lineage(store: Store, path: MemoryPath) -> dict[int, Version]:
    """The versions at ``path``, plus, for each rename *into* it, the versions its source had before, and so on
    back through at most 64 renames in a row (plenty; the bound the walk has always had).

    Walked breadth first, one rename back per round. A name asked about below a bound it was already asked about
    below, in this round or an earlier one, adds nothing: what it had below the smaller bound is in the larger's
    answer, reached no more renames back. Skipping those keeps the walk linear: a file renamed back and forth
    would otherwise have each rename walk its name's whole past again (exponential in the number of renames).
    """
    found: dict[int, Version] = {}
    asked: dict[MemoryPath, float] = {}  # name -> the largest bound it was asked below (inf: none)
    wanted: list[tuple[MemoryPath, int | None]] = [(path, None)]
    for _ in range(65):  # this round and 64 renames back
        if not wanted:
            break
        wanted = [ask for name, before in _by_bound(wanted) for ask in _step(store, name, before, asked, found)]
    return found


def _by_bound(wanted: list[tuple[MemoryPath, int | None]]) -> list[tuple[MemoryPath, int | None]]:
    """Largest bound first (no bound largest of all), so a name's smaller bounds after it are skipped."""
    return sorted(wanted, key=lambda ask: -_bound(ask[1]))


def _bound(before: int | None) -> float:
    return math.inf if before is None else before


def _step(
    store: Store, name: MemoryPath, before: int | None, asked: dict[MemoryPath, float], found: dict[int, Version]
) -> list[tuple[MemoryPath, int | None]]:
    """Add the versions touching ``name`` below ``before`` to ``found``; return the renames into it not yet followed
    (those below a bound already asked about were followed then)."""
    done = asked.get(name, 0)
    if _bound(before) <= done:
        return []
    asked[name] = _bound(before)
    renames: list[tuple[MemoryPath, int | None]] = []
    for item in store._versions_touching(name, before):
        found[item.version] = item
        if item.op == "rename" and item.path == name and item.old_path is not None and item.version >= done:
            renames.append((item.old_path, item.version))
    return renames
