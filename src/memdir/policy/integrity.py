"""``memdir verify``: does the store hold what its history says, and are the history and the audit log as recorded?

Three checks, one `IntegrityReport`:

- **files**: the SHA-256 of every current file against the file's latest version, and of the content kept for
  every older version against the hash that version records. A difference means something changed the content
  without going through memdir: an editor in a directory store (memdir records such edits as versions by
  ``external`` the next time it looks, so `verify` looks *first*, through a read-only view that records nothing),
  or someone editing a store's tables directly. Reported as `Discrepancy`: ``changed`` (the content is not what the
  latest version recorded), ``unrecorded`` (a file no version mentions), ``missing`` (the history says the file
  exists, but it is not there), ``damaged`` (the content stored for a version no longer has that version's hash,
  or is gone);
- **history**: the versions' hash chain (`Store.verify_chain`, `memdir.store._chain`): a version deleted, edited,
  inserted or moved with direct access to the database, or the newest ones cut off;
- **audit**: the audit log's hash chain (`memdir.policy.audit.AuditLog.verify_chain`), the same way.

A store on a memdir server is checked by the server (``GET /v1/verify``), where the data is.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..errors import HistoryUnavailableError, NotFoundError
from ..paths import MemoryPath
from ..store._chain import ChainBreak, ChainReport
from ..store._records import sha256_hex
from ..store.directory import DirectoryStore, namespace_root
from ..store.remote import RemoteStore
from .audit import audit_log

if TYPE_CHECKING:
    from collections.abc import Iterator

    from ..store._base import Store
    from ..store._records import Version

__all__ = ["Discrepancy", "IntegrityReport", "verify"]

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


@dataclass(frozen=True, slots=True)
class IntegrityReport:
    """What `verify` found: ``files`` checked and their ``discrepancies`` (in path order), and the ``history`` and
    ``audit`` chains (None where the store keeps no such chain)."""

    files: int
    discrepancies: tuple[Discrepancy, ...]
    history: ChainReport | None
    audit: ChainReport | None

    @property
    def ok(self) -> bool:
        return not self.discrepancies and all(c is None or c.ok for c in (self.history, self.audit))

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "files": self.files, "discrepancies": [d.to_json() for d in self.discrepancies],
                "history": None if self.history is None else self.history.to_json(),
                "audit": None if self.audit is None else self.audit.to_json()}  # fmt: skip

    def lines(self) -> list[str]:
        """The report as `memdir verify` prints it: a line per problem, then a summary line per check."""
        found = [f"{d.problem:<10} {d.path}: {d.detail}" for d in self.discrepancies]
        for chain in (self.history, self.audit):
            if chain is not None:
                found += [f"{b.kind:<10} {_TITLE[chain.log].lower()}: {b.detail}" for b in chain.breaks]
        files = f"{self.files:,} file{'' if self.files == 1 else 's'} checked: "
        if self.discrepancies:
            count = len(self.discrepancies)
            found.append(files + f"{count:,} {'differs' if count == 1 else 'differ'} from the history.")
        else:
            found.append(files + "all match their history.")
        return found + [_summary(c) for c in (self.history, self.audit) if c is not None]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> IntegrityReport:
        """A report as ``GET /v1/verify`` sends it."""
        history, audit = (None if data.get(k) is None else ChainReport.from_json(data[k]) for k in ("history", "audit"))
        return cls(int(data["files"]), tuple(Discrepancy(**d) for d in data["discrepancies"]), history, audit)


def verify(store: Store) -> IntegrityReport:
    """Check the files against their history, and the history's and the audit log's chains. A gate's store is
    checked below the gate (its backend: the check reads every file, and is one audit entry of the command that
    asked); a memdir server's store by its server."""
    store = store.backend
    if isinstance(store, RemoteStore):
        return IntegrityReport.from_json(store.integrity())
    found: IntegrityReport | None = None
    for _ in range(_ATTEMPTS):
        report = _checked(store)
        found = report if found is None else _in_both(found, report)
        if found.ok:
            break
    assert found is not None
    return found


# The checks of a store memdir's own writers change meanwhile: the listing, each file, the history and the audit
# log are read one after another, so a write landing between two reads looks like an outside change (a tester saw
# 17 false reports in 20 checks beside three busy writers). What is found every time is reported; a tampered
# file or a broken chain is found every time.
_ATTEMPTS = 3


def _checked(store: Store) -> IntegrityReport:
    log = audit_log(store)
    audited = log.highest_version()  # before the history: a version committed in between is not "lost"
    paused = store.writers_paused() if isinstance(store, DirectoryStore) else contextlib.nullcontext()
    with paused, _untouched_view(store) as view:  # on a directory store, its files and index as one state
        discrepancies, files = _check_files(view)
        history = _chain_or_none(view)
    return IntegrityReport(files, discrepancies, _against_audit(history, audited), log.verify_chain())


def _in_both(first: IntegrityReport, second: IntegrityReport) -> IntegrityReport:
    """``second``, keeping only what ``first`` found too."""
    earlier = {(d.path, d.problem) for d in first.discrepancies}
    return dataclasses.replace(
        second,
        discrepancies=tuple(d for d in second.discrepancies if (d.path, d.problem) in earlier),
        history=_chain_in_both(first.history, second.history),
        audit=_chain_in_both(first.audit, second.audit),
    )


def _chain_in_both(first: ChainReport | None, second: ChainReport | None) -> ChainReport | None:
    return first if first is None or first.ok or second is None else second


def _against_audit(history: ChainReport | None, audited: int | None) -> ChainReport | None:
    """``history``, with a break when the audit log records a version beyond its last: the history was cut off
    or replaced (a directory store's index deleted, or its WAL lost, starts a new one whose own chain is intact)."""
    if history is None or audited is None or audited <= history.last:
        return history
    detail = (
        f"the audit log records version {audited}, but the history ends at {history.last}: versions were lost "
        "(the history index deleted or replaced?)"
    )
    lost = ChainBreak("truncated", history.last + 1, audited, history.last or None, None, detail)
    return dataclasses.replace(history, breaks=(*history.breaks, lost))


def _chain_or_none(view: Store) -> ChainReport | None:
    with contextlib.suppress(HistoryUnavailableError):
        return view.verify_chain()
    return None


def _check_files(view: Store) -> tuple[tuple[Discrepancy, ...], int]:
    """Every file whose content does not match its history, in path order, and how many files were checked."""
    recorded = _replay(view.log())
    found: list[Discrepancy] = []
    seen: set[MemoryPath] = set()
    for entry in view.list_files(MemoryPath.root()):
        seen.add(entry.path)
        try:
            actual = sha256_hex(view.read(entry.path).content)
        except NotFoundError:  # deleted by a writer since the listing (a store no lock pauses): nothing to compare
            continue
        found.extend(_compare(view, entry.path, recorded.get(entry.path), actual))
    for path, version in recorded.items():
        if path not in seen:
            found.append(Discrepancy(path.virtual, "missing", "the history says it exists, but it is not there",
                                     version.sha256))  # fmt: skip
    found.extend(_old_content(view, {v.sha256 for v in recorded.values()}))
    return tuple(sorted(found, key=lambda d: d.path)), len(seen)


def _old_content(view: Store, checked: set[str | None]) -> Iterator[Discrepancy]:
    """The content kept for older versions, each once, against the hash its version records: the chain covers the
    hash, this covers the bytes (an old version's content rewritten in the database). ``checked``: the hashes of
    the latest versions, which `_compare` looked at."""
    seen = set(checked)
    for item in view.log(rescan=False):
        if item.sha256 is None or item.sha256 in seen:
            continue  # a deletion has no content
        seen.add(item.sha256)
        try:
            actual = sha256_hex(view.read_blob(item.sha256))
        except NotFoundError:
            yield Discrepancy(item.path.virtual, "damaged", f"the stored content of version {item.version} is missing",
                              item.sha256)  # fmt: skip
            continue
        if actual != item.sha256:
            detail = f"the stored content of version {item.version} no longer matches its hash"
            yield Discrepancy(item.path.virtual, "damaged", detail, item.sha256, actual)


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
    twin = DirectoryStore(store.base, namespace=store.namespace, history=store.index_path, read_only=True,
                          root=_own_root_of(store))  # fmt: skip
    try:
        yield twin
    finally:
        twin.close()


def _own_root_of(store: DirectoryStore) -> Path | None:
    """The directory a ``root=`` store maps ``/memories`` onto (a Claude Code directory), else None. Without it
    the twin would look for ``<base>/memories``, find nothing (every file "missing") and, worse, create it inside
    a directory another program owns."""
    usual = Path(os.path.realpath(namespace_root(store.base, store.namespace)))
    return None if store.root == usual else store.root


_TITLE = {"history": "History", "audit": "Audit log"}
_NOUNS = {"history": ("version", "versions"), "audit": ("entry", "entries")}


def _summary(chain: ChainReport) -> str:
    """``History: 12 versions, chained from version 1 to 12: intact (head 3f9a...).`` and the like."""
    one, many = _NOUNS[chain.log]
    if chain.last == 0 and not chain.entries:
        return f"{_TITLE[chain.log]}: no {many} yet."
    notes = []
    if chain.unchained:
        notes.append(f"{chain.unchained:,} from before the chain, not checked")
    if chain.pruned:
        notes.append(f"{chain.pruned:,} pruned")
    counted = f"{chain.entries:,} {one if chain.entries == 1 else many}" + (f" ({'; '.join(notes)})" if notes else "")
    if chain.ok:
        state = "intact"
    else:
        first = chain.breaks[0]
        state = f"{len(chain.breaks):,} break{'' if len(chain.breaks) == 1 else 's'}, the first at {one} {first.first}"
    span = f"chained from {one} {chain.start} to {chain.last}" if chain.last >= chain.start else "nothing chained yet"
    return f"{_TITLE[chain.log]}: {counted}, {span}: {state} (head {chain.head or 'none'})."
