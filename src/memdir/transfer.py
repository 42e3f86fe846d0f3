"""Copy namespaces, with their whole history, from one store to another (``memdir migrate-store``).

Only the storage contract is used, so any two backends work, those added later included: `Store.log` lists the
source's versions, `Store.read_blob` gives each one's content, `Store.import_version` replays it on the
destination with its op, actor, session, source and time (the destination numbers it: 1, 2, 3...).

**Resuming.** The destination's own history is the progress marker. `import_version` applies one version
atomically on every backend, so after an interruption (Ctrl-C, ``kill -9``, a lost connection) the destination
holds an exact prefix of the source's history. A run compares the two logs version by version (path, op, actor,
session, source, time, SHA-256, size, where a rename came from), skips the prefix and copies the rest. A marker
of our own (a state table in the destination's auxiliary database) would be written in another transaction
than the version it counts, so a crash between the two would leave it off by one, which is exactly the case it
exists for; and whether a remote import whose answer was lost was applied, only the destination's log knows.
Re-running after a complete copy copies the versions the source gained since, so the command also catches a
destination up before a cut-over. (The directory store commits a version before it renames the file into place;
a copy killed in between leaves a pending row that the destination's next opener finishes, so the version is on
disk, as its history says, when the next run compares the logs.)

**Refusals.** A destination whose history is not a prefix of the source's holds other content, and is refused
before anything is written. There is no ``--force``: the copy promises the same history, which cannot hold on
top of other versions (the numbers and the state at every moment would differ), and making it hold would mean
erasing the destination's history, which no memdir command does. Copy into an empty namespace or store.

**Through the gate.** The destination is written through the gate (`memdir.gate`) as an admin import: each
version keeps its op, actor, session, source and time, and its content is screened as every write is, so a
secret the source still holds raw (written before its policy redacted secrets) is redacted in the copy. A copied
version that differs from the source's only by such redactions counts as the same version when a run resumes
or verifies (`memdir.gate.is_redaction_of`). The source's reads are one audit entry of the copy.

**Redacted content.** A source version whose content was redacted (`Store.redact_content`) is copied with a
stand-in text (`memdir.store._base.redaction_stand_in`), redacted in the destination once the history is copied:
the copy's version is redacted too (content, hash and size the stand-in's; the original's are gone). A run that
resumes or verifies counts the stand-in as the source's version.

**Verification.** After copying, the destination's history must equal the source's (count and every version),
its current files (paths and SHA-256) must be those the history ends with, and so must the source's: a source
written to during the copy is reported (run again to copy what it gained).

Two runs into one destination at once are not supported: both would copy the same versions (the contract has
no conditional import); verification then fails and says so.
"""

from __future__ import annotations

import contextlib
import os
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import ConfigError, MemdirError, RedactedError, TransferError
from .gate import Caller, GatedStore, is_redaction_of
from .store import DEFAULT_NAMESPACE, open_store, url_scheme
from .store._records import redaction_stand_in, sha256_hex, stand_in_sha256

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from .store import Store, Version

__all__ = ["TransferError", "TransferReport", "copy_namespace", "migrate_store"]

# Backends keep a version's time as a float of seconds (SQLite REAL, JSON) or, in PostgreSQL, possibly as a
# timestamp with microseconds: equal within a millisecond is the same moment.
_TIME_SLACK = 0.001
_LOCAL = (None, "file", "sqlite")  # schemes whose URL names a path on this machine


@dataclass(frozen=True, slots=True)
class TransferReport:
    """What one namespace's copy did. ``versions`` counts the source's history; ``present`` the versions the
    destination held already (from an earlier, interrupted run), ``copied`` those this run added;
    ``files``/``bytes`` the state the history ends with. ``destination`` is the namespace written to: the
    source's, except on a memdir server, whose token chooses."""

    namespace: str
    destination: str
    versions: int
    present: int
    copied: int
    files: int
    bytes: int
    seconds: float
    dry_run: bool = False

    @property
    def remaining(self) -> int:
        """Versions a dry run would copy (0 after a real run)."""
        return self.versions - self.present - self.copied


# -- one namespace, two open stores ------------------------------------------------------------------------


def copy_namespace(
    src: Store,
    dst: Store,
    *,
    dry_run: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> TransferReport:
    """Copy ``src``'s namespace, history included, into ``dst``'s (empty, or holding an earlier interrupted copy
    of the same source), then verify it. ``progress(done, total)`` follows the versions; ``dry_run`` writes
    nothing and reports what would be copied. `TransferError` when the destination holds other content, when a
    version cannot be copied (the destination keeps the ones before it: run again to resume), or when the copy
    does not verify."""
    started = time.monotonic()
    planned = list(src.log())
    same = _Same(src, dst)
    present = _present(dst, planned, same)
    final = _final_files(planned)
    copied = 0
    if not dry_run:
        copied = _copy(src, dst, planned, present, progress)
        _redact_stand_ins(dst, planned)
        _verify(src, dst, planned, final, same)
    return TransferReport(
        namespace=src.namespace,
        destination=dst.namespace,
        versions=len(planned),
        present=present,
        copied=copied,
        files=len(final),
        bytes=sum(size for _, size in final.values()),
        seconds=time.monotonic() - started,
        dry_run=dry_run,
    )


class _Same:
    """Whether a destination version is a source version: the same change, whatever number each store gave it,
    with the same content or that content with secrets redacted by the destination's gate."""

    def __init__(self, src: Store, dst: Store) -> None:
        self.src, self.dst = src, dst

    def __call__(self, have: Version, want: Version) -> bool:
        return (
            have.path == want.path
            and have.op == want.op
            and have.actor == want.actor
            and _same_label(have.session, want.session)
            and _same_label(have.source, want.source)
            and have.old_path == want.old_path
            and abs(have.timestamp - want.timestamp) <= _TIME_SLACK
            and self.content(have, want)
        )

    def content(self, have: Version, want: Version) -> bool:
        if have.sha256 == want.sha256 and have.size == want.size:
            return True
        if have.sha256 is None or want.sha256 is None:
            return False
        if have.sha256 == stand_in_sha256(want.sha256):  # the source's content was redacted (`_content`)
            return True
        return is_redaction_of(self.dst.read_blob(have.sha256), self.src.read_blob(want.sha256))


def _same_label(have: str | None, want: str | None) -> bool:
    """A session or source label as the source has it, or with its secrets redacted by the destination's gate."""
    if have == want:
        return True
    return have is not None and want is not None and is_redaction_of(have.encode(), want.encode())


def _present(dst: Store, planned: list[Version], same: _Same) -> int:
    """How many of the source's versions the destination holds already, as the prefix of its history;
    `TransferError` when it holds anything else."""
    present = 0
    for have in dst.log():
        if present == len(planned) or not same(have, planned[present]):
            raise _unrelated(dst, present, len(planned), have)
        present += 1
    if present == 0 and dst.usage().files:
        raise _unrelated(dst, 0, len(planned), None)
    return present


def _unrelated(dst: Store, present: int, total: int, first: Version | None) -> TransferError:
    where = f"namespace {dst.namespace!r} of the destination"
    advice = "copy into an empty namespace or store (migrate-store never merges two histories or overwrites one)"
    if present == 0:
        return TransferError(f"{where} already holds other content: {advice}")
    if first is not None and first.actor == "external":
        # A directory store records what it finds changed on disk (files edited by hand): say so, not "others".
        return TransferError(
            f"{where} holds the first {present:,} of the source's {total:,} versions and then changes found on "
            f"its disk (actor 'external': edits made by hand); {advice}"
        )
    return TransferError(
        f"{where} holds the first {present:,} of the source's {total:,} versions and then others: it was written "
        f"to after an earlier copy, or the source's history was pruned since; {advice}"
    )


def _copy(
    src: Store, dst: Store, planned: list[Version], present: int, progress: Callable[[int, int], None] | None
) -> int:
    total = len(planned)
    if progress is not None:
        progress(present, total)
    done = present
    for version in planned[present:]:
        try:
            dst.import_version(version, _content(src, version))
        except MemdirError as exc:
            raise TransferError(
                f"the copy stopped at the source's version {version.version} ({done:,} of {total:,} versions "
                f"copied before it): {exc.reason}; run the same command again to resume"
            ) from exc
        done += 1
        if progress is not None:
            progress(done, total)
    return done - present


def _content(src: Store, version: Version) -> bytes | None:
    """What `import_version` needs: nothing for a deletion or a move (the file travels as it is), the content
    for anything else, checked against its hash so damage in the source never spreads."""
    if version.sha256 is None or (version.op == "rename" and version.old_path is not None):
        return None
    try:
        content = src.read_blob(version.sha256)
    except RedactedError:
        return redaction_stand_in(version.sha256)
    if sha256_hex(content) != version.sha256:
        raise TransferError(f"the source's content for version {version.version} does not match its SHA-256")
    return content


def _redact_stand_ins(dst: Store, planned: list[Version]) -> None:
    """Redact the stand-ins `_content` wrote for redacted source content, this run's and an earlier one's."""
    stand_ins = {
        have.sha256
        for have, want in zip(dst.log(), planned, strict=False)
        if have.sha256 is not None and want.sha256 is not None and have.sha256 == stand_in_sha256(want.sha256)
    }
    for sha in sorted(stand_ins):
        try:
            dst.redact_content(sha)
        except MemdirError as exc:
            raise TransferError(
                f"the history was copied, but the versions whose content the source had redacted hold a stand-in "
                f"text that could not be redacted in the destination: {exc.reason}"
            ) from exc


def _final_files(versions: list[Version]) -> dict[str, tuple[str, int]]:
    """Path -> (SHA-256, size) of the files that exist once the history has been replayed."""
    state: dict[str, tuple[str, int]] = {}
    for version in versions:
        if version.op == "rename" and version.old_path is not None:
            state.pop(version.old_path.virtual, None)
        if version.sha256 is None:
            state.pop(version.path.virtual, None)
        else:
            state[version.path.virtual] = (version.sha256, version.size)
    return state


def _current_files(store: Store) -> dict[str, tuple[str, int]]:
    files: dict[str, tuple[str, int]] = {}
    for entry in store.list_files():
        # A store that would have to read a file to know its hash says None: hash it ourselves.
        sha = entry.sha256 or sha256_hex(store.read(entry.path).content)
        files[entry.path.virtual] = (sha, entry.size)
    return files


def _verify(src: Store, dst: Store, planned: list[Version], final: dict[str, tuple[str, int]], same: _Same) -> None:
    copied = list(dst.log())
    if len(copied) != len(planned) or not all(map(same, copied, planned)):
        raise TransferError(
            f"the destination's history ({len(copied):,} versions) does not match the source's ({len(planned):,}) "
            "after the copy: was the destination written to meanwhile?"
        )
    if _current_files(dst) != _final_files(copied):
        raise TransferError("the destination's files do not match the source's history after the copy")
    since = planned[-1].version if planned else 0
    if _current_files(src) != final or next(iter(src.log(since)), None) is not None:
        raise TransferError(
            "the source changed during the copy: the destination holds it as it was; "
            "run the same command again to copy the new versions"
        )


# -- URLs ---------------------------------------------------------------------------------------------------


def migrate_store(
    src_url: str,
    dst_url: str,
    *,
    namespace: str | None = DEFAULT_NAMESPACE,
    dry_run: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
) -> list[TransferReport]:
    """Copy a namespace (``namespace=None``: every namespace with history) of the store at ``src_url`` to the
    store at ``dst_url``, with `copy_namespace`. ``progress(namespace, done, total)`` follows the versions.

    The URLs are checked before anything is opened (a known scheme each, not the same store, a local source
    that exists), and the source before the destination is opened, so bad input writes nothing.
    """
    _check_urls(src_url, dst_url)
    names = [namespace] if namespace is not None else _source_namespaces(src_url)
    reports = []
    for name in names:
        with open_store(src_url, namespace=name) as raw_src:
            src = raw_src if raw_src.runs_commands else GatedStore(raw_src, Caller("user", channel="migrate"))
            if next(iter(src.log()), None) is None:
                if namespace is None:
                    continue  # listed, but without history (yet): nothing to copy
                raise ConfigError(f"namespace {src.namespace!r} of the source has no history: nothing to copy")
            with _destination(dst_url, src.namespace, dry_run, many=len(names) > 1) as dst:
                if _place(src_url) == _place(dst_url) and src.namespace == dst.namespace:
                    raise ConfigError("SRC_URL and DST_URL name the same namespace of the same store")
                step = None if progress is None else _labelled(progress, src.namespace)
                with _read_as_one(src):
                    reports.append(copy_namespace(src, dst, dry_run=dry_run, progress=step))
    return reports


@contextlib.contextmanager
def _read_as_one(src: Store) -> Iterator[None]:
    """The source's reads (every version's content) as one audit entry of the copy."""
    if not isinstance(src, GatedStore):
        yield
        return
    try:
        with src.call("migrate-store"):
            yield
    finally:
        src.flush()


def _labelled(progress: Callable[[str, int, int], None], name: str) -> Callable[[int, int], None]:
    def step(done: int, total: int) -> None:
        progress(name, done, total)

    return step


def _check_urls(src_url: str, dst_url: str) -> None:
    src_scheme = url_scheme(src_url)
    url_scheme(dst_url)  # ConfigError for an unknown scheme, before the source is opened
    src_place = _place(src_url)
    # A memdir server's token chooses the namespace, so two URLs of one server may well name two namespaces:
    # that is checked once both are open.
    if src_place is not None and src_place == _place(dst_url) and src_scheme not in ("http", "https"):
        raise ConfigError("SRC_URL and DST_URL name the same store: nothing to copy")
    if src_scheme in _LOCAL:
        path = _local_path(src_url, src_scheme)
        exists = path.is_file() if src_scheme == "sqlite" else path.is_dir()
        if not exists:
            kind = "SQLite database" if src_scheme == "sqlite" else "directory"
            raise ConfigError(f"the source does not exist: there is no {kind} named {path.name!r} there")


def _place(url: str) -> str | None:
    """What two URLs of one store have in common (None for a private ``memory:`` store, never the same as
    another): the real path of a local store; else the URL without its user part (a token or a password)."""
    scheme = url_scheme(url)
    if scheme in _LOCAL:
        return f"local:{os.path.realpath(_local_path(url, scheme))}"
    if scheme == "memory":
        name = _after_scheme(url)
        return f"memory:{name}" if name else None
    # Without the scheme too: two spellings of one (postgres: and postgresql:) reach the same server.
    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port
    except ValueError:  # not a number: the backend will refuse the URL when it is opened
        port = None
    return f"//{parts.hostname}:{port}{parts.path.rstrip('/')}?{parts.query}"


def _local_path(url: str, scheme: str | None) -> Path:
    return Path(url if scheme is None else _after_scheme(url)).expanduser()


def _after_scheme(url: str) -> str:
    rest = url.split(":", 1)[1]
    return rest[2:] if rest.startswith("//") else rest


def _source_namespaces(src_url: str) -> list[str]:
    with open_store(src_url) as src:
        names = src.namespaces()
    if not names:
        raise ConfigError("the source holds no namespace with history: nothing to copy")
    return names


@contextlib.contextmanager
def _destination(dst_url: str, namespace: str, dry_run: bool, *, many: bool) -> Iterator[Store]:
    """The destination store; for a dry run whose local destination does not exist yet, an empty stand-in, so
    a dry run creates nothing. (An existing one is opened, which, as any use of it would, may record the
    namespace's name there.)"""
    scheme = url_scheme(dst_url)
    if dry_run and scheme in _LOCAL and not _local_path(dst_url, scheme).exists():
        dst_url = "memory:"
    with open_store(dst_url, namespace=namespace) as dst:
        if many and scheme in ("http", "https"):
            raise ConfigError(
                "a memdir server URL reaches only its token's namespace: copy one namespace at a time (--namespace)"
            )
        if dst.runs_commands:  # a memdir server: its own gate screens, records and audits what it is sent
            if not getattr(dst, "admin", False):
                raise TransferError(
                    "the destination's token is not an admin token: the server would record every copied version "
                    "as the token's, now, so the history would not be the source's; create one with "
                    "`memdir token create --admin` where the server runs"
                )
            yield dst
            return
        gate = GatedStore(dst, Caller("user", channel="migrate", admin=True))
        try:
            yield gate
        finally:
            gate.flush()
