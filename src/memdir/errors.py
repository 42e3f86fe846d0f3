"""Every error memdir raises, under one root.

```
MemdirError
├── PathError              a virtual path the rules refuse (see memdir.paths)
├── NotFoundError          no file or directory at that path / no such version
│   └── RedactedError      content removed by redaction (the version's record stays, its bytes are gone)
├── AlreadyExistsError     the destination is taken (create, rename, write with expect=MISSING)
├── NotAFileError          a file operation met a directory
├── NotADirectoryError_    a path goes *through* a file (``/memories/a.md/b.md``)
├── ConflictError          a version precondition failed (someone else wrote first)
├── LimitError             a size or count limit would be exceeded; nothing was written
│   ├── FileTooLargeError  a write would make one file larger than the per-file limit
│   ├── QuotaError         a write would take the namespace over its file or byte quota
│   └── RateLimitError     a memdir server asks the client to slow down (``retry_after`` seconds)
├── EncodingError          bytes that are not UTF-8 where text is required
├── HistoryUnavailableError  the store keeps no history (a plain directory store)
├── ConfigError            a store URL, namespace or setting that cannot be used
│   └── StoreNotFoundError a store URL that names no store yet (opened with ``create=False``)
├── AuthenticationError    a memdir server refused the token (missing, unknown or revoked)
├── ArchiveError           an archive that cannot be used (damaged, hostile, another format), or a refused import
├── TransferError          a store-to-store copy refused (the destination holds other content) or failing to verify
├── PolicyError            a write the policy refused, or a review that cannot be carried out
│   ├── BlockedError       the write policy refused a write (a secret with `block`, a secret in a file name)
│   └── HeldError          the write policy held a write for review (quarantine item ``item``); not written yet
├── StorageError           the backend failed (disk full, read-only, I/O error)
│   ├── CorruptStoreError  the backend's files are damaged; `memdir doctor` can help
│   ├── StorageFullError   the disk (or quota) holding the store is full; nothing was written
│   └── StorageUnavailableError  the database cannot be reached right now (down, restarting); retry later
└── AgentError             the agent (`memdir run` / `memdir chat`) cannot go on
    ├── MissingCredentialsError  no API key for the provider; the message names what to set
    ├── ProviderError            the model's API failed or refused the request (after the SDK's retries)
    ├── MaxTurnsError            the tool loop reached --max-turns without a final answer
    ├── ContextOverflowError     compaction could not bring the context under the limit
    └── SessionError             a session to resume is unknown or unreadable
```

Two places present these errors: the memory tool turns them into ``is_error`` results in SPEC.md's words,
and the CLI turns them into one line on stderr. Backends translate ``OSError`` / ``sqlite3.Error`` /
``psycopg.Error`` into ``StorageError`` at their boundary (``raise StorageError(...) from exc``), with a message
that never contains a host path or a password.
"""

from __future__ import annotations

import errno
from typing import Literal

__all__ = [
    "AgentError",
    "AlreadyExistsError",
    "ArchiveError",
    "AuthenticationError",
    "BlockedError",
    "ConfigError",
    "ConflictError",
    "ContextOverflowError",
    "CorruptStoreError",
    "EncodingError",
    "FileTooLargeError",
    "HeldError",
    "HistoryUnavailableError",
    "LimitError",
    "MaxTurnsError",
    "MemdirError",
    "MissingCredentialsError",
    "NotADirectoryError_",
    "NotAFileError",
    "NotFoundError",
    "PathError",
    "PolicyError",
    "ProviderError",
    "QuotaError",
    "RateLimitError",
    "RedactedError",
    "SessionError",
    "StorageError",
    "StorageFullError",
    "StorageUnavailableError",
    "StoreNotFoundError",
    "TransferError",
    "storage_error_from_os",
]


_MAX_ECHO = 1100


class MemdirError(Exception):
    """The root of every error memdir raises on purpose."""

    @property
    def reason(self) -> str:
        """The message without the ``Error: `` a path error starts with (SPEC.md's wording for the model), to be
        quoted inside another message."""
        return str(self).removeprefix("Error: ")


class PathError(MemdirError):
    """A virtual path refused by the rules in `memdir.paths`.

    ``kind`` is ``"outside"`` (does not start with /memories), ``"escape"`` (traversal in any form)
    or ``"not_allowed"`` (any other refusal; ``why`` says which).
    """

    def __init__(self, raw: str, kind: str, why: str = "") -> None:
        self.raw = raw
        self.kind = kind
        self.why = why
        super().__init__(self.tool_text())

    def tool_text(self) -> str:
        """The SPEC.md wording the model reads."""
        shown = self.shown
        if self.kind == "outside":
            return f"Error: Path must start with /memories, got: {shown}"
        if self.kind == "escape":
            return f"Error: Path {shown} would escape /memories directory"
        return f"Error: Path {shown} is not allowed: {self.why}"

    @property
    def shown(self) -> str:
        """The path as sent, but bounded: echoing a hostile megabyte-long path back would flood the context."""
        # Unpaired surrogates cannot be encoded as UTF-8 anywhere downstream (JSON, stdout): show U+FFFD.
        raw = self.raw.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
        if len(raw) <= _MAX_ECHO:
            return raw
        return f"{raw[:_MAX_ECHO]}… ({len(raw):,} characters)"


class NotFoundError(MemdirError):
    """Nothing at that path (or no such version)."""


class RedactedError(NotFoundError):
    """The content asked for was redacted (`Store.redact_content`): the versions that had it keep their record,
    but the bytes are gone for good. A `NotFoundError`, so code that treats missing content alike still does."""


class AlreadyExistsError(MemdirError):
    """The destination already holds a file or a directory."""


class NotAFileError(MemdirError):
    """A file operation was asked of a directory."""


class NotADirectoryError_(MemdirError):
    """A path runs through a file, as if it were a directory."""


class ConflictError(MemdirError):
    """A write's version precondition failed: the file changed since it was read."""

    def __init__(self, message: str, *, current: int | None = None) -> None:
        super().__init__(message)
        self.current = current


class LimitError(MemdirError):
    """A configured limit would be exceeded. Nothing was written."""


class FileTooLargeError(LimitError):
    """A write would make one file larger than the per-file limit; nothing was written. ``size`` is what the file
    would have been (bytes, after screening), ``maximum`` the limit, ``image`` whether the image limit applied."""

    def __init__(self, message: str, *, size: int, maximum: int, image: bool = False) -> None:
        super().__init__(message)
        self.size, self.maximum, self.image = size, maximum, image


class QuotaError(LimitError):
    """A write would take the namespace over its quota (`memdir.store.Quota`); nothing was written.

    ``limit`` is the limit it would go over ("files" or "bytes") and ``maximum`` its value; ``held_files`` and
    ``held_bytes`` are what the namespace held when the write was refused, ``added_files`` and ``added_bytes``
    what the write would have added."""

    def __init__(
        self,
        message: str,
        *,
        limit: Literal["files", "bytes"],
        maximum: int,
        held_files: int,
        held_bytes: int,
        added_files: int,
        added_bytes: int,
    ) -> None:
        super().__init__(message)
        self.limit, self.maximum = limit, maximum
        self.held_files, self.held_bytes = held_files, held_bytes
        self.added_files, self.added_bytes = added_files, added_bytes


class RateLimitError(LimitError):
    """A memdir server refused a request because its token sent too many; nothing was done.

    ``retry_after`` is how many seconds the server asked the client to wait."""

    def __init__(self, message: str, *, retry_after: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class EncodingError(MemdirError):
    """Content that should be UTF-8 text is not."""


class HistoryUnavailableError(MemdirError):
    """The store was opened without version history."""


class ConfigError(MemdirError):
    """A store URL, namespace or setting that cannot be used."""


class StoreNotFoundError(ConfigError):
    """``open_store(url, create=False)`` found no store there: nothing was created. ``url`` is the URL as it may
    be shown (a password replaced)."""

    def __init__(self, url: str, hint: str = "") -> None:
        super().__init__(f"no store at {url}{hint}")
        self.url = url


class AuthenticationError(MemdirError):
    """A memdir server refused the bearer token: none was given, it is unknown, or it was revoked."""


class ArchiveError(MemdirError):
    """An archive that cannot be used (damaged, hostile, or for another format), or an import refused."""


class TransferError(MemdirError):
    """``memdir migrate-store`` cannot copy a namespace: the destination holds other content, the copy stopped
    (running it again resumes), or the copy does not match the source."""


class PolicyError(MemdirError):
    """A write the write policy refused, or a quarantined write that cannot be approved or rejected."""


class BlockedError(PolicyError):
    """The write policy refused a write; nothing was written. ``reasons`` says why in words fit for the model and
    a person (``it contains a secret (line 2: an AWS access key id)``), never quoting the secret; ``rules`` names
    the rules that matched (``secret:aws-access-key``)."""

    def __init__(self, message: str, *, reasons: str, rules: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.reasons, self.rules = reasons, rules


class HeldError(PolicyError):
    """The write policy held a write for a person to review (quarantine item ``item`` of the namespace): it is not
    in memory, and is applied only if approved. ``reasons`` and ``rules`` as for `BlockedError`."""

    def __init__(self, message: str, *, item: int, reasons: str, rules: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.item, self.reasons, self.rules = item, reasons, rules


class StorageError(MemdirError):
    """The backend could not complete the operation. The message is safe to show: no host paths."""


class CorruptStoreError(StorageError):
    """The backend's files are damaged. Nothing was changed; `memdir doctor` reports and repairs."""


class StorageFullError(StorageError):
    """The disk (or the quota) holding the store or its database is full. Nothing was written by the failed
    operation; reads still work, and writes work again once space is freed."""


class StorageUnavailableError(StorageError):
    """The database server cannot be reached now (down, restarting, refusing connections), or kept failing a
    transaction under contention. Temporary: retry later. The failed operation wrote nothing, unless the connection
    broke during its very commit, when it may have been made (a server's ``Idempotency-Key`` covers that case)."""


class AgentError(MemdirError):
    """The agent cannot go on. The message is one line, fit to show on stderr."""


class MissingCredentialsError(AgentError):
    """The provider needs an API key that is not set; the message names the variable to set."""


class ProviderError(AgentError):
    """The model's API failed or refused a request, after the SDK's own retries."""


class MaxTurnsError(AgentError):
    """The tool loop used its turns (``max_turns``) without the model giving a final answer."""

    def __init__(self, message: str, *, turns: int) -> None:
        super().__init__(message)
        self.turns = turns


class ContextOverflowError(AgentError):
    """Compaction could not bring the context under its limit (one message is too large on its own)."""


class SessionError(AgentError):
    """A session transcript that cannot be found or read."""


_ERRNO_TEXT = {
    errno.ENOSPC: "no space left on the device holding the store",
    errno.EDQUOT: "disk quota exceeded on the device holding the store",
    errno.EROFS: "the store is on a read-only file system",
    errno.EACCES: "permission denied by the operating system",
    errno.EPERM: "operation not permitted by the operating system",
    errno.EIO: "input/output error on the device holding the store",
    errno.ELOOP: "a symbolic link was found where memdir refuses to follow one",
    errno.ENAMETOOLONG: "the name is too long for the file system",
    errno.EMFILE: "too many open files",
}


def storage_error_from_os(exc: OSError, doing: str) -> StorageError:
    """Translate an OSError into a StorageError whose text carries no host path.

    ``str(OSError)`` includes the file name, which would leak the host layout into a tool result.
    """
    reason = _ERRNO_TEXT.get(exc.errno or 0) or (exc.strerror or "operating system error").lower()
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return StorageFullError(f"could not {doing}: {reason}")
    return StorageError(f"could not {doing}: {reason}")
