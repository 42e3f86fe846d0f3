"""`GatedStore`: a `Store` that guards a `Store`. Every door talks to one; backends never see a door.

Like a caching filesystem over a filesystem (fsspec) or a middleware over an app (Starlette), the gate implements
the interface of what it wraps, so a door cannot tell it is there and cannot go around it. For each operation:

- **names**: a path that holds a secret is refused (`BlockedError`), whatever the policy does with content;
- **content**: what the write changes is screened by the write policy (`memdir.gate._screen`): secrets redacted
  or refused, injected instructions warned about, held for review (`HeldError`, the write waits in the
  quarantine) or refused, as the serving side's ``[policy]`` says for the namespace;
- **limits**: one file (``max_file_bytes``, images ``max_image_bytes``), checked on what would be stored, before
  anything is screened when it is already too big; the namespace (``max_files``, ``max_total_bytes``) in the
  write's own transaction where the backend can (`Store.checks_quota`), else just before;
- **provenance**: actor, session and source come from the `Caller` the door admitted (a pinned caller's cannot
  be changed by an ``origin=`` argument), the time from the clock; only an admin caller may record versions with
  the metadata they carry (`import_version`) or the ``external`` and ``import`` operations; labels are redacted
  (`memdir.gate._provenance`);
- **audit**: every read of content (file, version, blob, log, history, listing, search) and every write is one
  entry of the audit log, or part of the entry of the door's command (`GatedStore.call`).

The review queue (`memdir.gate.Review`, `memdir.gate.review_queue`) applies an approved write through a gate too,
re-screened as it will be committed. The backend below stays policy-free; `memdir.store` never imports this package.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import TYPE_CHECKING, Any

from ..errors import (
    AlreadyExistsError,
    ConflictError,
    HeldError,
    NotFoundError,
    PathError,
    PolicyError,
)
from ..paths import MemoryPath
from ..policy.audit import AuditEntry, audit_log
from ..policy.quarantine import Quarantine
from ..store._base import Store
from ..store._records import ANY, MISSING, Origin, as_path, sha256_hex
from ..store.memory import MemoryStore
from ._bytes import check_image_move, screen_bytes
from ._caller import Caller
from ._limits import as_text, check_size, effective_quota, is_image
from ._provenance import origin_of, provenance_of, request_key
from ._rules import Rules
from ._scope import Scope, shown_as, shown_valid
from ._screen import blocked, changed_spans, describe, held_text, redacted_label, refuse_secret_name, rules, screen

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from ..policy.pipeline import Screened
    from ..search import SearchHit
    from ..store._chain import ChainReport
    from ..store._db import AuxDatabase
    from ..store._records import Entry, Expect, FileData, Op, PathLike, Quota, Stat, Usage, Version
    from ._receipt import Receipt

__all__ = ["GatedStore"]

log = logging.getLogger("memdir.gate")

_WRITES = frozenset({"create", "write", "str_replace", "insert", "delete", "rename", "restore", "import", "edit"})
_ACTED = frozenset({"warn", "redact", "quarantine", "block"})


class _Hold(Exception):
    """(Internal.) A write the policy quarantined, raised out of a locked update so that nothing is written and
    the item is held outside the store's write lock."""

    def __init__(self, screened: Screened, base_sha256: str | None) -> None:
        super().__init__("held")
        self.screened, self.base_sha256 = screened, base_sha256


class GatedStore(Store):
    """``inner`` as ``caller`` may use it, under ``rules`` (default: the settings' for the namespace)."""

    checks_quota = True  # the gate enforces the namespace limits itself (in the write's transaction when it can)

    def __init__(self, inner: Store, caller: Caller | None = None, rules: Rules | None = None) -> None:
        if isinstance(inner, GatedStore):
            raise TypeError("a GatedStore wraps a backend, not another gate: use gate.with_caller(...)")
        self.inner = inner
        self.namespace = inner.namespace
        self.caller = caller or Caller()
        self.rules = rules if rules is not None else Rules.for_namespace(inner.namespace)
        self._audit = audit_log(inner) if self.rules.audit else None

    def __repr__(self) -> str:
        return f"GatedStore({self.inner!r}, actor={self.caller.actor!r}, channel={self.caller.channel!r})"

    # -- variants -------------------------------------------------------------------------------------------------

    def with_caller(self, **changes: Any) -> GatedStore:
        """This gate for another caller (``actor=``, ``session=``, ``source=``, ``channel=``...), sharing the store,
        the rules and the audit buffer. A pinned caller keeps its actor, session, principal and admin flag."""
        caller = self.caller
        if caller.pinned:
            for name in ("actor", "session", "principal", "admin", "pinned"):
                changes.pop(name, None)
        if all(getattr(caller, name) == value for name, value in changes.items()):
            return self  # the same caller (a server's tool for the gate it made): nothing to copy
        return self._twin(dataclasses.replace(caller, **changes))

    def rehearsal(self) -> GatedStore:
        """This gate's caller and rules over an empty store in memory, auditing nothing: where a replay is tried
        first, so that one the gate would stop half-way writes nothing at all (`memdir.archive.import_namespace`)."""
        return GatedStore(
            MemoryStore(namespace=self.namespace), self.caller, dataclasses.replace(self.rules, audit=False)
        )

    def with_rules(self, rules: Rules) -> GatedStore:
        twin = self._twin(self.caller)  # (also forgets the labels worked out under the old policy)
        twin.rules = rules
        twin._audit = audit_log(self.inner) if rules.audit else None
        return twin

    def _twin(self, caller: Caller) -> GatedStore:
        twin = GatedStore.__new__(GatedStore)
        twin.__dict__.update(self.__dict__)
        twin.__dict__.pop("_labels_cache", None)
        twin.caller = caller
        return twin

    # -- a door's command -----------------------------------------------------------------------------------------

    def call(self, command: str, path: PathLike | None = None, new_path: PathLike | None = None) -> Scope:
        """One door command: the store operations made in the ``with`` block are recorded as one audit entry
        (``command``, the paths as sent). The door reads the outcome from the receipt it yields, and sets
        ``receipt.failed`` when the command failed without an exception."""
        return Scope(self, command, path, new_path, nested=False)

    def _op(self, command: str, path: PathLike | None = None, new_path: PathLike | None = None) -> Scope:
        """An operation: part of the door's command when one is open, else recorded on its own."""
        return Scope(self, command, path, new_path, nested=True)

    @property
    def _owner(self) -> object:
        """Whose commands an operation joins (`Scope`): every gate over one backend store, twins included."""
        return self.inner.backend

    def _shown(self, path: PathLike | None) -> str | None:
        """A path as the audit log keeps it: its normal form when it parses, else as sent (bounded), and in either
        case with any secret in it redacted (one screening per distinct name: `secrets_in_name` is cached)."""
        if path is None:
            return None
        if isinstance(path, MemoryPath):  # parsed already: its normal form is the virtual path
            return shown_valid(self.rules.policy, path.virtual)
        return shown_as(self.rules.policy, path)

    def shown(self, path: PathLike) -> str:
        """``path`` as the gate records and shows it: its normal form, any secret in it redacted (what a door says
        back about a path it refused for holding one)."""
        return self._shown(path) or ""

    def redacted(self, text: str) -> str:
        """Free text a door keeps beside the content (a memory store's name, description, metadata), with any
        secret in it redacted as in a label: such text is stored and answered as it is, never screened as a write."""
        return redacted_label(self.rules.policy, text) or text

    def _labels(self) -> tuple[str, str | None, str | None]:
        """The caller's actor, session and source as recorded (secrets redacted), worked out once per gate."""
        labels: tuple[str, str | None, str | None] | None = self.__dict__.get("_labels_cache")
        if labels is None:
            caller, policy = self.caller, self.rules.policy
            labels = (
                redacted_label(policy, caller.actor) or "?",
                redacted_label(policy, caller.session),
                redacted_label(policy, caller.source),
            )
            self.__dict__["_labels_cache"] = labels
        return labels

    def _record(self, receipt: Receipt) -> None:
        if self._audit is None or receipt.discarded:
            return
        actor, session, source = self._labels()
        outcome = receipt.outcome or ("error" if receipt.failed else "ok")
        detail = ",".join(rules(receipt.findings)) if receipt.findings else receipt.detail
        entry = AuditEntry(
            time.time(), self.caller.channel, actor, session, source, receipt.command, receipt.path,
            receipt.new_path, outcome, receipt.sha256, receipt.size, receipt.version, detail or receipt.detail,
        )  # fmt: skip
        try:
            # A write the policy acted on is flushed at once: its findings are recorded nowhere else. Reads, failed
            # commands and clean writes (whose versions say who wrote what) wait in the buffer.
            self._audit.record(entry, flush=receipt.command in _WRITES and outcome in _ACTED)
        except Exception:  # the audit log must never break the command it records
            log.exception("gate: could not record %r in the audit log", receipt.command)

    # -- reading --------------------------------------------------------------------------------------------------

    def stat(self, path: PathLike) -> Stat | None:
        return self.inner.stat(path)  # metadata only: no content is read

    def read(self, path: PathLike) -> FileData:
        with self._op("read", path) as receipt:
            data = self.inner.read(path)
            receipt.read(data.content, data.version, data.path.virtual)
            return data

    def list_files(self, path: PathLike = MemoryPath(())) -> list[Entry]:
        with self._op("list", path):
            return self.inner.list_files(path)

    def usage(self) -> Usage:
        return self.inner.usage()

    def log(self, since: int = 0, *, rescan: bool = True) -> Iterator[Version]:
        with self._op("log"):
            pass  # recorded when asked for: the versions are read as the caller iterates
        return self.inner.log(since, rescan=rescan)

    def _versions_touching(self, path: MemoryPath, before: int | None) -> list[Version]:
        return self.inner._versions_touching(path, before)

    def history(self, path: PathLike) -> list[Version]:
        with self._op("history", path):
            return self.inner.history(path)

    def read_version(self, path: PathLike, version: int) -> bytes:
        with self._op("show", path) as receipt:
            content = self.inner.read_version(path, version)
            receipt.read(content, version, as_path(path).virtual)
            return content

    def read_blob(self, sha256: str) -> bytes:
        with self._op("blob") as receipt:
            content = self.inner.read_blob(sha256)
            receipt.read(content, None)
            return content

    def search(self, query: str, *, limit: int = 10, path_prefix: PathLike | None = None) -> list[SearchHit]:
        with self._op("search", path_prefix):
            return self.inner.search(query, limit=limit, path_prefix=path_prefix)

    def namespaces(self) -> list[str]:
        return self.inner.namespaces()

    def verify_chain(self) -> ChainReport:
        return self.inner.verify_chain()  # the backend's own chain: the gate adds no version of its own

    def requested(self, key: str) -> list[Version]:
        return self.inner.requested(request_key(self.rules.policy, key))

    @property
    def records_requests(self) -> bool:  # type: ignore[override]  # the backend's answer, per instance
        return self.inner.records_requests

    @property
    def aux(self) -> AuxDatabase:
        return self.inner.aux

    @property
    def backend(self) -> Store:
        return self.inner.backend

    # -- writing --------------------------------------------------------------------------------------------------

    def write(
        self,
        path: PathLike,
        content: bytes,
        *,
        expect: Expect = ANY,
        origin: Origin | None = None,
        op: Op = "write",
        quota: Quota | None = None,
    ) -> Version:
        """`Store.write`, through the gate. ``quota`` narrows the namespace limits of the rules (never widens)."""
        target = as_path(path)
        with self._op(op, target) as receipt:
            who = origin_of(self.caller, self.rules.policy, origin, op)
            refuse_secret_name(self.rules.policy, target)
            if expect is MISSING:
                return self._create(target, content, who, op, quota, receipt)
            return self._replace(target, content, expect, who, op, quota, receipt)

    def update(
        self,
        path: PathLike,
        change: Callable[[FileData], bytes],
        *,
        origin: Origin | None = None,
        op: Op = "write",
        quota: Quota | None = None,
    ) -> Version:
        """`Store.update`, through the gate: ``change``'s result is screened against the file it changed."""
        target = as_path(path)
        with self._op(op, target) as receipt:
            who = origin_of(self.caller, self.rules.policy, origin, op)
            refuse_secret_name(self.rules.policy, target)
            return self._locked(target, change, who, op, quota, receipt)

    def delete(self, path: PathLike, *, origin: Origin | None = None) -> list[Version]:
        target = as_path(path)
        with self._op("delete", target) as receipt:
            versions = self.inner.delete(target, origin=origin_of(self.caller, self.rules.policy, origin, "delete"))
            receipt.version = versions[-1].version if versions else None
            return versions

    def move(self, src: PathLike, dst: PathLike, *, origin: Origin | None = None) -> list[Version]:
        source, dest = as_path(src), as_path(dst)
        with self._op("rename", source, dest) as receipt:
            who = origin_of(self.caller, self.rules.policy, origin, "rename")
            refuse_secret_name(self.rules.policy, dest)
            check_image_move(self.inner, self.rules.limits, source, dest)
            versions = self.inner.move(source, dest, origin=who)
            receipt.version = versions[-1].version if versions else None
            return versions

    def restore(self, path: PathLike, version: int, *, origin: Origin | None = None) -> Version:
        target = as_path(path)
        with self._op("restore", target):
            return self.write(target, self.inner.read_version(target, version), origin=origin, op="restore")

    def import_version(self, version: Version, content: bytes | None, *, quota: Quota | None = None) -> Version:
        """Replay a version exported elsewhere. An admin caller's keeps the actor, session, source and time it
        carries; anyone else's is recorded as theirs, now. Its content is screened either way; a write the policy
        would hold for review is saved for an admin caller (the owner's own history, the findings recorded) and
        refused (`BlockedError`) for anyone else: a replay cannot wait for a person."""
        with self._op("import", version.path, version.old_path) as receipt:
            version = provenance_of(self.caller, self.rules.policy, version)
            for name in (version.path, version.old_path):
                if name is not None:
                    refuse_secret_name(self.rules.policy, name)
            if version.moved and version.old_path is not None:
                check_image_move(self.inner, self.rules.limits, version.old_path, version.path)
            # Whatever content a backend will write is screened and sized: all but a move (a `rename` with no
            # `old_path` is a write on every backend, and an archive may say so to slip its content past the gate).
            limits = None
            if content is not None and version.sha256 is not None and not version.moved:
                content, before = self._screened_import(version.path, content, receipt)
                # The namespace limits, in the backend's transaction where it can (as for any write).
                added = (1, len(content)) if before is None else (0, len(content) - len(before.content))
                limits = self._quota(quota, *added)
                version = dataclasses.replace(version, sha256=sha256_hex(content), size=len(content))
            recorded = self.inner.import_version(version, content, quota=limits)
            if content is not None and recorded.sha256 is not None:
                receipt.wrote(content, recorded.version, recorded.sha256)  # the entry says what was written
            receipt.version = recorded.version
            return recorded

    def prune_history(self, before: float) -> int:
        with self._op("prune"):
            return self.inner.prune_history(before)

    def redact_content(self, sha256: str) -> bool:
        """Remove content for good (a memory store's version redaction): one audit entry, naming no content."""
        with self._op("redact") as receipt:
            receipt.sha256 = sha256
            return self.inner.redact_content(sha256)

    # -- lifecycle -----------------------------------------------------------------------------------------------

    def flush(self) -> None:
        """Write out the audit entries buffered so far."""
        if self._audit is not None:
            self._audit.flush()

    def unaudited(self) -> str | None:
        """After a `flush`: why entries of this store's audit log are still unwritten, or None when none are."""
        if self._audit is None or not self._audit.unwritten:
            return None
        return self._audit.failure or "the log could not be written"

    def close(self) -> None:
        """Flush the audit log and close the store below."""
        self.flush()
        self.inner.close()

    # -- the write path -------------------------------------------------------------------------------------------

    def _create(
        self, target: MemoryPath, content: bytes, who: Origin, op: Op, quota: Quota | None, receipt: Receipt
    ) -> Version:
        try:
            stored = self._gated(target, None, content, receipt)
        except _Hold as held:
            self._held(target, held, who, receipt)
        limits = self._quota(quota, 1, len(stored))
        version = self.inner.write(target, stored, expect=MISSING, origin=who, op=op, quota=limits)
        receipt.wrote(stored, version.version, version.sha256, target.virtual)
        return version

    def _replace(
        self,
        target: MemoryPath,
        content: bytes,
        expect: Expect,
        who: Origin,
        op: Op,
        quota: Quota | None,
        receipt: Receipt,
    ) -> Version:
        """A write over whatever is there (``ANY``) or over one version: a locked update, so what the write changes
        is screened against the content it replaces."""

        def change(before: FileData) -> bytes:
            if isinstance(expect, int) and before.version != expect:
                raise ConflictError(
                    f"{target.virtual} changed: expected version {expect}, found {before.version}",
                    current=before.version,
                )
            return content

        while True:
            try:
                return self._locked(target, change, who, op, quota, receipt)
            except NotFoundError:
                if isinstance(expect, int):
                    raise ConflictError(
                        f"{target.virtual} changed: expected version {expect}, found none", current=None
                    ) from None
            try:
                return self._create(target, content, who, op, quota, receipt)
            except AlreadyExistsError:
                continue  # another writer created it meanwhile: write over theirs, screened against it

    def _locked(
        self,
        target: MemoryPath,
        change: Callable[[FileData], bytes],
        who: Origin,
        op: Op,
        quota: Quota | None,
        receipt: Receipt,
    ) -> Version:
        stored: list[bytes] = []
        limits = effective_quota(self.rules.quota, quota)
        # A backend that cannot check the limits in the write's transaction: the usage is read first (nothing
        # else is read inside its write lock), and the change checked against it.
        usage = self.inner.usage() if limits is not None and not self.inner.checks_quota else None

        def apply(before: FileData) -> bytes:
            content = self._gated(target, before, change(before), receipt)
            if usage is not None and limits is not None:
                limits.check(usage, 0, len(content) - len(before.content))
            stored[:] = [content]
            return content

        limits = limits if self.inner.checks_quota else None
        try:
            version = self.inner.update(target, apply, origin=who, op=op, quota=limits)
        except _Hold as held:
            self._held(target, held, who, receipt)
        receipt.wrote(stored[0], version.version, version.sha256, target.virtual)
        return version

    def _gated(self, target: MemoryPath, before: FileData | None, content: bytes, receipt: Receipt) -> bytes:
        """What may be stored at ``target`` for ``content``: sized, screened against ``before``, redacted."""
        image = is_image(target, content)
        check_size(self.rules.limits, target, len(content), image)  # an oversize write is refused before it is screened
        if image:
            return screen_bytes(self.rules.policy, self.caller, target, content, receipt, image=True)
        try:
            text = content.decode("utf-8")
        except UnicodeDecodeError:
            return screen_bytes(self.rules.policy, self.caller, target, content, receipt)
        old = as_text(before.content) if before is not None else None
        policy = self.rules.policy
        screened = screen(policy, text, changed_spans(old, text), untrusted=self.caller.untrusted)
        receipt.findings = screened.findings
        if screened.outcome in _ACTED:
            receipt.outcome = screened.outcome
        if screened.outcome == "block":
            raise blocked(target, screened.findings)
        if screened.outcome == "quarantine":
            raise _Hold(screened, before.sha256 if before is not None else None)
        stored = screened.text.encode("utf-8") if screened.text is not text else content
        check_size(self.rules.limits, target, len(stored), image=False)
        receipt.regions = (screened.region,)
        return stored

    def _held(self, target: MemoryPath, held: _Hold, who: Origin, receipt: Receipt) -> Any:
        """Quarantine a write and raise `HeldError`: it is not in memory until a person approves it."""
        content = held_text(held.screened).encode("utf-8")
        command = {"command": receipt.command, "path": target.virtual}
        item = Quarantine(self.inner).hold(
            command, target.virtual, content, base_sha256=held.base_sha256, origin=who, findings=held.screened.findings
        )
        receipt.held, receipt.sha256, receipt.size = item, sha256_hex(content), len(content)
        reasons = describe(held.screened.findings)
        raise HeldError(
            f"the write to {target.virtual} was held for review (quarantine item #{item}): {reasons}",
            item=item,
            reasons=reasons,
            rules=rules(held.screened.findings),
        )

    def _screened_import(self, path: MemoryPath, content: bytes, receipt: Receipt) -> tuple[bytes, FileData | None]:
        """What a replayed write stores, and the file it replaces (None: there is none)."""
        try:
            before: FileData | None = self.inner.read(path)
        except (NotFoundError, PathError, PolicyError):
            before = None
        except Exception:  # a directory or a file in the way: the import itself will say so
            before = None
        try:
            return self._gated(path, before, content, receipt), before
        except _Hold as held:
            if self.caller.admin:
                # The owner's own history (a backup restored, a store migrated): a note a person approved, or
                # written before the policy held such text, must come back; what was found is recorded.
                receipt.outcome = "warn"
                return held_text(held.screened).encode("utf-8"), before
            # Anyone else's replay cannot wait for a person, and saving the text put it in memory past the
            # quarantine (any token, through POST /v1/versions): it is refused, and a rehearsal (`rehearsal`)
            # stops an import before anything is written.
            receipt.outcome = "block"
            raise blocked(path, held.screened.findings, held=True) from None

    # -- the checks -----------------------------------------------------------------------------------------------

    def _quota(self, quota: Quota | None, added_files: int, added_bytes: int) -> Quota | None:
        """The limits to hand the backend for a new file (checked here first when the backend cannot)."""
        limits = effective_quota(self.rules.quota, quota)
        if limits is None:
            return None
        if self.inner.checks_quota:
            return limits
        if limits.can_refuse(added_files, added_bytes):
            limits.check(self.inner.usage(), added_files, added_bytes)
        return None
