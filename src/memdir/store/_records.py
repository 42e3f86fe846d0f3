"""The record types the storage contract (`memdir.store._base.Store`) speaks in: who made a change (`Origin`), a
change (`Version`), a file's content and metadata (`FileData`, `Stat`, `Entry`), a namespace's usage and limits
(`Usage`, `Quota`), write preconditions (`MISSING`, `ANY`), and the small rules every backend shares about them
(namespace names, content hashes, what redaction leaves)."""

from __future__ import annotations

import enum
import hashlib
import re
from dataclasses import dataclass
from typing import Literal

from ..errors import ConfigError, QuotaError
from ..paths import MemoryPath, parse

__all__ = [
    "ANY",
    "DEFAULT_NAMESPACE",
    "MISSING",
    "Entry",
    "Expect",
    "FileData",
    "Op",
    "Origin",
    "PathLike",
    "Quota",
    "Stat",
    "Usage",
    "Version",
    "as_path",
    "check_namespace",
    "is_redacted",
    "redaction_stand_in",
    "sha256_hex",
    "stand_in_sha256",
]


DEFAULT_NAMESPACE = "default"

Op = Literal["create", "write", "str_replace", "insert", "delete", "rename", "restore", "external", "import"]
PathLike = MemoryPath | str

_NAMESPACE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}")


class _Expect(enum.Enum):
    MISSING = "missing"  # the path must hold nothing (create)
    ANY = "any"  # overwrite whatever is there, or create


MISSING = _Expect.MISSING
ANY = _Expect.ANY
Expect = _Expect | int
"""A write precondition: `MISSING`, `ANY`, or the version number the file must currently have."""


@dataclass(frozen=True, slots=True)
class Origin:
    """Who makes a change: ``actor`` is ``model``, ``user``, ``external``, ``import`` (or another word an
    application chooses); ``session`` groups the changes of one agent session; ``source`` says where the
    content came from when that is known.

    ``request`` is the idempotency key of the call that makes the change (a memdir server's ``Idempotency-Key``).
    Stores that record it (`Store.records_requests`) keep it with the change's versions, in the same transaction,
    so a call retried after a lost answer can find out whether, and how, it was applied (`Store.requested`)."""

    actor: str = "user"
    session: str | None = None
    source: str | None = None
    request: str | None = None


@dataclass(frozen=True, slots=True)
class Version:
    """One entry of a namespace's change log."""

    version: int
    path: MemoryPath
    op: str
    actor: str
    session: str | None
    source: str | None
    timestamp: float  # seconds since the epoch, UTC
    sha256: str | None  # of the new content; None for a delete
    size: int  # bytes of the new content; 0 for a delete
    old_path: MemoryPath | None = None  # where a rename came from

    @property
    def deleted(self) -> bool:
        return self.sha256 is None

    @property
    def moved(self) -> bool:
        """A rename from ``old_path``: the file travels as it is. (Every backend replays a ``rename`` without
        ``old_path`` as a write of its content.)"""
        return self.op == "rename" and self.old_path is not None


@dataclass(frozen=True, slots=True)
class FileData:
    path: MemoryPath
    content: bytes
    version: int
    sha256: str
    modified: float


@dataclass(frozen=True, slots=True)
class Stat:
    path: MemoryPath
    kind: Literal["file", "dir"]
    size: int  # a directory's size is the total of the files below it
    version: int | None = None  # files only
    sha256: str | None = None
    modified: float | None = None


@dataclass(frozen=True, slots=True)
class Entry:
    """A file found by `Store.list_files`."""

    path: MemoryPath
    size: int
    modified: float
    version: int
    sha256: str | None = None  # None where knowing it would mean reading the file (a store without history)


@dataclass(frozen=True, slots=True)
class Usage:
    files: int
    bytes: int


@dataclass(frozen=True, slots=True)
class Quota:
    """How many files and bytes a write may take its namespace to (None: no limit). Only growth is refused: a
    write that adds no file, or no bytes, passes that limit however full the namespace already is."""

    max_files: int | None = None
    max_bytes: int | None = None

    def can_refuse(self, added_files: int, added_bytes: int) -> bool:
        """Whether a write adding this much can go over a limit at all (else there is no usage to read)."""
        return (self.max_files is not None and added_files > 0) or (self.max_bytes is not None and added_bytes > 0)

    def check(self, before: Usage, added_files: int, added_bytes: int) -> None:
        """`QuotaError` when adding ``added_files`` and ``added_bytes`` to ``before`` goes over a limit."""
        limit: Literal["files", "bytes"]
        if self.max_files is not None and added_files > 0 and before.files + added_files > self.max_files:
            limit, maximum, total = "files", self.max_files, before.files + added_files
        elif self.max_bytes is not None and added_bytes > 0 and before.bytes + added_bytes > self.max_bytes:
            limit, maximum, total = "bytes", self.max_bytes, before.bytes + added_bytes
        else:
            return
        raise QuotaError(
            f"the namespace would hold {total:,} {limit}, over the limit of {maximum:,}",
            limit=limit,
            maximum=maximum,
            held_files=before.files,
            held_bytes=before.bytes,
            added_files=added_files,
            added_bytes=added_bytes,
        )


def sha256_hex(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


_EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


def is_redacted(sha256: str, content: bytes) -> bool:
    """Whether stored content is what redaction leaves (`Store.redact_content`): the content's row, with its hash,
    holding no bytes. Unambiguous, since no content but the empty one has the empty content's hash; the row stays
    so that every version still finds its content's record (`memdir doctor` reports versions whose row is gone)."""
    return not content and sha256 != _EMPTY_SHA256


def redaction_stand_in(sha256: str) -> bytes:
    """What a copy of a history (`memdir export`/`import`, `migrate-store`) writes in place of content its source
    no longer holds because it was redacted; the copy then redacts the stand-in, so the copied version is redacted
    too. The original's hash is in the text only to make it unique: the stand-in's bytes go with the redaction."""
    return f"[content removed by redaction in the source store: {sha256}]\n".encode()


def stand_in_sha256(sha256: str) -> str:
    """The SHA-256 of `redaction_stand_in` for ``sha256``: how a copy's redacted version is told from others."""
    return sha256_hex(redaction_stand_in(sha256))


def as_path(path: PathLike) -> MemoryPath:
    """Accept a `MemoryPath`, or check a ``/memories/...`` string with the same rules the tool applies."""
    return path if isinstance(path, MemoryPath) else parse(path)


def check_namespace(namespace: str) -> str:
    """Namespaces name a tenant: letters, digits, ``_.-``, at most 64, not starting with a dot or dash."""
    if not isinstance(namespace, str) or not _NAMESPACE.fullmatch(namespace) or ".." in namespace:
        raise ConfigError(
            f"invalid namespace {namespace!r}: use 1-64 letters, digits, '_', '.' or '-', starting with a "
            "letter or digit"
        )
    return namespace
