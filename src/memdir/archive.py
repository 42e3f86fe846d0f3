"""Portable archives of one namespace, history included (``memdir export`` / ``memdir import``).

An archive is a zip file with three kinds of member, and nothing else:

- ``manifest.json``: ``{"format": "memdir-archive", "format_version": 1, "memdir_version", "namespace",
  "created", "counts": {"versions", "blobs", "files", "bytes"}}`` (``files``/``bytes``: the state at the end
  of the history);
- ``versions.jsonl``: every `Version` of the namespace's log, oldest first, one JSON object a line
  (`version_to_json`);
- ``blobs/<sha256>``: the content of every version, once per distinct content, except content that was
  redacted in the exported store (`memdir.store.Store.redact_content`): the manifest lists those hashes under
  ``redacted``, and import records such a version with a stand-in text (`redaction_stand_in`) that it then redacts,
  so the imported version is redacted too (its content, hash and size are the stand-in's, the original's gone).

Import replays the versions with `Store.import_version` (op, actor, session, source and time kept; numbers
re-assigned by the target) into an *empty* namespace. The archive is untrusted input: before anything is
written, every member name is checked against the three forms above (so ``../x`` or ``/etc/x`` can never
matter: nothing is ever extracted by name), decompressed sizes are bounded while reading (a zip bomb's
headers may lie), every blob's SHA-256 is recomputed, and the whole history is replayed on a throwaway
in-memory store to prove it applies cleanly.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import math
import os
import re
import secrets
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, BinaryIO

from ._version import __version__
from .errors import AlreadyExistsError, ArchiveError, MemdirError, NotADirectoryError_, RedactedError
from .store._json import version_from_json, version_to_json
from .store._records import Version, redaction_stand_in, sha256_hex, stand_in_sha256
from .store.memory import MemoryStore

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

    from .paths import MemoryPath
    from .store._base import Store

__all__ = [
    "FORMAT_VERSION",
    "ArchiveError",
    "ArchiveLimits",
    "ArchiveSummary",
    "check_archive",
    "export_namespace",
    "import_namespace",
    "version_from_json",
    "version_to_json",
]

FORMAT = "memdir-archive"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
VERSIONS = "versions.jsonl"
BLOBS = "blobs/"
_BLOB_NAME = re.compile(r"blobs/([0-9a-f]{64})")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_CHUNK = 1024 * 1024
MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class ArchiveLimits:
    """Bounds on what reading an archive may cost; decompressed sizes are counted as they are read."""

    max_members: int = 1_000_000
    max_blob_bytes: int = 64 * MIB  # the directory store refuses to read a bigger file anyway
    max_versions_bytes: int = 512 * MIB
    max_manifest_bytes: int = 1 * MIB
    max_total_bytes: int = 2048 * MIB


@dataclass(frozen=True, slots=True)
class ArchiveSummary:
    """What an archive holds: ``files``/``bytes`` are the namespace's state at the end of its history."""

    namespace: str
    versions: int
    blobs: int
    files: int
    bytes: int


# -- export -------------------------------------------------------------------------------------------------


def export_namespace(
    store: Store,
    path: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> ArchiveSummary:
    """Write ``store``'s namespace, with its whole history, to a zip archive at ``path`` (created ``0600``:
    it holds every memory ever written). The file appears complete or not at all."""
    target = Path(path)
    if target.exists() and not overwrite:
        raise ArchiveError(f"{target.name} already exists (choose another name, or overwrite it)")
    versions = list(store.log())
    summary = _summarise(store.namespace, versions)
    temp = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
    try:
        with _private_file(temp) as raw, zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED) as zf:
            _write_member(zf, VERSIONS, "".join(json.dumps(version_to_json(v)) + "\n" for v in versions).encode())
            redacted = _write_blobs(store, zf, versions, progress)
            _write_member(zf, MANIFEST, json.dumps(_manifest(summary, redacted), indent=2).encode())
        os.replace(temp, target)
    except OSError as exc:
        raise ArchiveError(f"could not write the archive: {exc.strerror or exc}") from exc
    finally:
        with contextlib.suppress(OSError):
            temp.unlink()
    return summary


def _summarise(namespace: str, versions: list[Version]) -> ArchiveSummary:
    final = _final_state(versions)
    blobs = {v.sha256 for v in versions if v.sha256 is not None}
    return ArchiveSummary(namespace, len(versions), len(blobs), len(final), sum(v.size for v in final.values()))


def _final_state(versions: Iterable[Version]) -> dict[str, Version]:
    """Path -> the version now there, for the files that exist after the last version."""
    state: dict[str, Version] = {}
    for version in versions:
        _apply(state, version)
    return state


def _apply(state: dict[str, Version], version: Version) -> None:
    if version.op == "rename" and version.old_path is not None:
        state.pop(version.old_path.key, None)
    if version.sha256 is None:
        state.pop(version.path.key, None)
    else:
        state[version.path.key] = version


def _manifest(summary: ArchiveSummary, redacted: set[str]) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "memdir_version": __version__,
        "namespace": summary.namespace,
        "created": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "counts": {
            "versions": summary.versions,
            "blobs": summary.blobs,
            "files": summary.files,
            "bytes": summary.bytes,
        },
        "redacted": sorted(redacted),
    }


@contextlib.contextmanager
def _private_file(path: Path) -> Iterator[BinaryIO]:
    # 0600 from the first byte: an archive holds every memory ever written, and a umask of 0 (common in
    # containers) would otherwise make it world-readable.
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_CLOEXEC, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "wb") as fh:
        yield fh
        fh.flush()
        os.fsync(fh.fileno())


def _write_member(zf: zipfile.ZipFile, name: str, data: bytes) -> None:
    info = zipfile.ZipInfo(name, dt.datetime.now(dt.UTC).timetuple()[:6])
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o100600 << 16  # unzipped by hand, the members stay private too
    zf.writestr(info, data)


def _write_blobs(
    store: Store, zf: zipfile.ZipFile, versions: list[Version], progress: Callable[[int, int], None] | None
) -> set[str]:
    """Each distinct content once; returns the hashes of the content found redacted (no member for them)."""
    written: set[str] = set()
    redacted: set[str] = set()
    for done, version in enumerate(versions, start=1):
        if version.sha256 is not None and version.sha256 not in written:
            written.add(version.sha256)
            try:
                content = store.read_blob(version.sha256)
            except RedactedError:
                redacted.add(version.sha256)
            else:
                if sha256_hex(content) != version.sha256:
                    raise ArchiveError(f"version {version.version} of {version.path.virtual} does not match its hash")
                _write_member(zf, BLOBS + version.sha256, content)
        if progress is not None:
            progress(done, len(versions))
    return redacted


# -- import -------------------------------------------------------------------------------------------------


def check_archive(path: str | os.PathLike[str], *, limits: ArchiveLimits = ArchiveLimits()) -> ArchiveSummary:
    """Check an archive in full, as `import_namespace` does first, writing nothing (`ArchiveError` when any part
    is wrong): for a door that must not create a store for an archive it would refuse."""
    with _open_zip(path) as zf:
        summary, _ = _Reader(zf, limits).verify()
    return summary


def import_namespace(
    store: Store,
    path: str | os.PathLike[str],
    *,
    limits: ArchiveLimits = ArchiveLimits(),
    progress: Callable[[int, int], None] | None = None,
    rehearsal: Store | None = None,
) -> ArchiveSummary:
    """Replay an archive's history into ``store``'s namespace, which must be empty.

    The archive is checked in full first (`ArchiveError`, nothing written, when any part is wrong). With a
    ``rehearsal`` (an empty store under the same rules: `memdir.gate.GatedStore.rehearsal`), the whole history is
    replayed there first: a version the rules refuse (over a limit, a secret in a name or in bytes) then stops the
    import before anything is written, rather than half-way, leaving a namespace that is no longer empty.
    """
    with _open_zip(path) as zf:
        _require_empty(store)  # first: a namespace that cannot take the archive costs no reading of it
        reader = _Reader(zf, limits)
        summary, versions = reader.verify()
        _require_empty(store)  # and again, after what may take a while
        if rehearsal is not None:
            _replay(rehearsal, reader, versions, None, rehearsing=True)
        _replay(store, reader, versions, progress, rehearsing=False)
        _redact_stand_ins(store, reader.redacted)
    return summary


_PRUNE_EVERY = 256  # versions: a rehearsal keeps what its files hold now, not a second copy of the whole history


def _replay(
    store: Store,
    reader: _Reader,
    versions: list[Version],
    progress: Callable[[int, int], None] | None,
    *,
    rehearsing: bool,
) -> None:
    for done, version in enumerate(versions, start=1):
        try:
            store.import_version(version, _content_for(reader, version))
        except MemdirError as exc:
            where = f"version {version.version} ({done} of {len(versions)}): {exc.reason}"
            if rehearsing:
                raise ArchiveError(f"the import would stop at {where}; nothing was imported") from exc
            raise ArchiveError(
                f"the import stopped at {where}; the namespace holds the {done - 1} versions before it"
            ) from exc
        if rehearsing and done % _PRUNE_EVERY == 0:
            store.prune_history(math.inf)
        if progress is not None:
            progress(done, len(versions))


def _redact_stand_ins(store: Store, redacted: set[str]) -> None:
    """Redact the stand-ins written for content the archive's store had redacted (`_content_for`)."""
    for sha in sorted(redacted):
        try:
            store.redact_content(stand_in_sha256(sha))
        except MemdirError as exc:
            raise ArchiveError(
                f"the history was imported, but the {len(redacted)} version(s) whose content was redacted in the "
                f"archive's store hold a stand-in text that could not be redacted here: {exc.reason}"
            ) from exc


def _open_zip(path: str | os.PathLike[str]) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except FileNotFoundError as exc:
        raise ArchiveError(f"no archive at {Path(path).name}") from exc
    except (zipfile.BadZipFile, zipfile.LargeZipFile) as exc:
        raise ArchiveError(f"the archive is not a readable zip file ({exc})") from exc
    except OSError as exc:
        raise ArchiveError(f"could not read the archive: {exc.strerror or exc}") from exc


def _require_empty(store: Store) -> None:
    # A history without files counts too: the imported version numbers would interleave with the old ones.
    if store.usage().files or next(iter(store.log()), None) is not None:
        raise ArchiveError(f"namespace {store.namespace!r} is not empty: import into a new one (--namespace NAME)")


def _content_for(reader: _Reader, version: Version) -> bytes | None:
    """What `import_version` needs: nothing for a deletion or a move (the file travels, every backend moves
    it as it is), the blob for anything else."""
    if version.sha256 is None or (version.op == "rename" and version.old_path is not None):
        return None
    if version.sha256 in reader.redacted:
        return redaction_stand_in(version.sha256)
    return reader.blob(version.sha256)


class _Reader:
    """Reads the members of an untrusted archive within `ArchiveLimits`."""

    def __init__(self, zf: zipfile.ZipFile, limits: ArchiveLimits) -> None:
        self.zf = zf
        self.limits = limits
        self._budget = limits.max_total_bytes  # decompressed bytes we are still willing to read
        self.redacted: set[str] = set()  # content the exported store had redacted (the manifest's ``redacted``)

    def verify(self) -> tuple[ArchiveSummary, list[Version]]:
        """Check everything: names, sizes, manifest, every version, every blob's hash, and the replay."""
        blob_names = self._check_members()
        manifest = self._manifest()
        versions = self._versions()
        blob_sizes = {sha: self._hash_blob(sha) for sha in blob_names}
        self.redacted = _redacted(manifest, versions, blob_sizes)
        _check_blobs(versions, blob_sizes, self.redacted)
        _dry_run(versions)
        summary = _summarise(str(manifest["namespace"]), versions)
        _check_counts(manifest, summary)
        return summary, versions

    def blob(self, sha: str) -> bytes:
        data = self._read(BLOBS + sha, self.limits.max_blob_bytes)
        if sha256_hex(data) != sha:  # the file changed under us since `verify`
            raise ArchiveError(f"blob {sha[:12]} does not match its name")
        return data

    def _check_members(self) -> set[str]:
        infos = self.zf.infolist()
        if len(infos) > self.limits.max_members:
            raise ArchiveError(f"the archive has {len(infos):,} members, over the limit of {self.limits.max_members:,}")
        names = [i.filename for i in infos]
        if len(set(names)) != len(names):
            raise ArchiveError("the archive holds two members with the same name")
        blobs: set[str] = set()
        for info in infos:
            self._check_member(info)
            match = _BLOB_NAME.fullmatch(info.filename)
            if match:
                blobs.add(match.group(1))
        if sum(i.file_size for i in infos) > self.limits.max_total_bytes:
            raise ArchiveError("the archive would unpack to more than the size limit")
        for required in (MANIFEST, VERSIONS):
            if required not in names:
                raise ArchiveError(f"the archive has no {required}: it is not a memdir archive")
        return blobs

    def _check_member(self, info: zipfile.ZipInfo) -> None:
        name = info.filename
        if name not in (MANIFEST, VERSIONS, BLOBS) and not _BLOB_NAME.fullmatch(name):
            raise ArchiveError(f"unexpected member {name[:80]!r} in the archive")
        if info.flag_bits & 0x1:
            raise ArchiveError(f"member {name!r} is encrypted")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise ArchiveError(f"member {name!r} uses an unsupported compression method")

    def _manifest(self) -> dict[str, Any]:
        manifest = _json(self._read(MANIFEST, self.limits.max_manifest_bytes), MANIFEST)
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise ArchiveError("manifest.json does not describe a memdir archive")
        if manifest.get("format_version") != FORMAT_VERSION:
            raise ArchiveError(
                f"archive format version {manifest.get('format_version')!r} is not supported "
                f"(this memdir reads version {FORMAT_VERSION})"
            )
        if not isinstance(manifest.get("namespace"), str) or not isinstance(manifest.get("counts"), dict):
            raise ArchiveError("manifest.json lacks the namespace or the counts")
        return manifest

    def _versions(self) -> list[Version]:
        text = self._read(VERSIONS, self.limits.max_versions_bytes)
        versions: list[Version] = []
        blank = 0
        for number, line in _lines(text):
            if not line.strip():
                blank += 1
                if blank > _MAX_BLANK_LINES:  # what memdir writes has none: a 0.5 MB zip of them took 5 GB to read
                    raise ArchiveError(f"versions.jsonl holds more than {_MAX_BLANK_LINES:,} empty lines")
                continue
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ArchiveError(f"versions.jsonl line {number} is not UTF-8 text") from exc
            data = _json(line, f"versions.jsonl line {number}")
            try:
                version = version_from_json(data)
            except (ValueError, MemdirError) as exc:
                raise ArchiveError(f"versions.jsonl line {number}: {str(exc).removeprefix('Error: ')}") from exc
            if versions and version.version <= versions[-1].version:
                raise ArchiveError(f"versions.jsonl line {number}: version numbers must increase")
            versions.append(version)
        return versions

    def _hash_blob(self, sha: str) -> int:
        """Stream a blob through SHA-256 (nothing kept in memory); its size."""
        digest, size = hashlib.sha256(), 0
        with self._member(BLOBS + sha) as fh:
            while chunk := fh.read(_CHUNK):
                size += len(chunk)
                self._spend(len(chunk), BLOBS + sha, size > self.limits.max_blob_bytes)
                digest.update(chunk)
        if digest.hexdigest() != sha:
            raise ArchiveError(f"blob {sha[:12]} is damaged: its content does not match its SHA-256")
        return size

    def _read(self, name: str, limit: int) -> bytes:
        with self._member(name) as fh:
            data = fh.read(limit + 1)
        self._spend(len(data), name, len(data) > limit)
        return data

    def _spend(self, size: int, name: str, over_member_limit: bool) -> None:
        self._budget -= size
        if over_member_limit or self._budget < 0:
            raise ArchiveError(f"member {name!r} unpacks to more than the size limit (a zip bomb?)")

    @contextlib.contextmanager
    def _member(self, name: str) -> Iterator[_Checked]:
        try:
            with self.zf.open(name) as fh:
                yield _Checked(fh, name)
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, RuntimeError, NotImplementedError) as exc:
            raise ArchiveError(f"member {name!r} is damaged ({type(exc).__name__})") from exc


class _Checked:
    """A member stream whose decompression errors become `ArchiveError` (they surface on read, not open)."""

    def __init__(self, fh: IO[bytes], name: str) -> None:
        self._fh = fh
        self._name = name

    def read(self, size: int) -> bytes:
        try:
            return self._fh.read(size)
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
            raise ArchiveError(f"member {self._name!r} is damaged ({exc})") from exc


_MAX_BLANK_LINES = 1000


def _lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    """The lines of ``data``, numbered from 1, one at a time: a list of them all holds a pointer a line, so 512 MiB
    of line breaks (a zip of half a megabyte) took 5 GB to read."""
    start, number = 0, 0
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        number += 1
        yield number, data[start:end]
        start = end + 1


def _json(data: bytes, where: str) -> Any:
    try:
        return json.loads(data.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        raise ArchiveError(f"{where} is not valid JSON") from exc


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number")


def _redacted(manifest: dict[str, Any], versions: list[Version], blob_sizes: dict[str, int]) -> set[str]:
    """The manifest's ``redacted`` hashes, checked: each some version's content, none also held as a blob."""
    listed = manifest.get("redacted", [])
    if not isinstance(listed, list) or not all(isinstance(s, str) and _SHA256.fullmatch(s) for s in listed):
        raise ArchiveError("manifest.json: 'redacted' must be a list of SHA-256 hashes")
    redacted = set(listed)
    if redacted - {v.sha256 for v in versions}:
        raise ArchiveError("manifest.json lists redacted content that no version has")
    if redacted & set(blob_sizes):
        raise ArchiveError("manifest.json lists content as redacted that the archive holds")
    return redacted


def _check_blobs(versions: list[Version], blob_sizes: dict[str, int], redacted: set[str]) -> None:
    used = {v.sha256 for v in versions if v.sha256 is not None}
    for version in versions:
        if version.sha256 is None or version.sha256 in redacted:
            continue
        size = blob_sizes.get(version.sha256)
        if size is None:
            raise ArchiveError(f"version {version.version}: its content (blob {version.sha256[:12]}) is missing")
        if size != version.size:
            raise ArchiveError(f"version {version.version}: size {version.size} does not match its content")
    unused = set(blob_sizes) - used
    if unused:
        raise ArchiveError(f"the archive holds {len(unused)} blob(s) that no version uses")


def _dry_run(versions: list[Version]) -> None:
    """Replay the history on a throwaway in-memory store: any version that could not apply to an empty
    namespace (a delete of nothing, a file under a file, ...) is found before the real store is touched.
    Content is left out (identical empty bytes): only paths decide whether a change applies."""
    rehearsal = MemoryStore()
    state: dict[str, Version] = {}
    for version in versions:
        moving = version.sha256 is None or (version.op == "rename" and version.old_path is not None)
        try:
            if version.op == "rename":
                _check_destination(rehearsal, version.path)
            rehearsal.import_version(version, None if moving else b"")
        except MemdirError as exc:
            raise ArchiveError(f"version {version.version} cannot be applied: {exc.reason}") from exc
        if moving and version.old_path is not None:
            before = state.get(version.old_path.key)
            if before is None or before.sha256 != version.sha256:
                raise ArchiveError(f"version {version.version} renames a file but claims other content")
        _apply(state, version)


def _check_destination(rehearsal: MemoryStore, path: MemoryPath) -> None:
    """What `Store.move` checks and `import_version` of a rename does not (on every backend): the destination
    is free and no file stands where one of its directories should be."""
    if rehearsal.stat(path) is not None:
        raise AlreadyExistsError(f"{path.virtual} already exists")
    for ancestor in path.ancestors():
        found = rehearsal.stat(ancestor)
        if found is not None and found.kind == "file":
            raise NotADirectoryError_(f"{ancestor.virtual} is a file")


def _check_counts(manifest: dict[str, Any], summary: ArchiveSummary) -> None:
    counts = manifest["counts"]
    for name in ("versions", "blobs", "files", "bytes"):
        if counts.get(name) != getattr(summary, name):
            raise ArchiveError(
                f"manifest.json counts {counts.get(name)!r} {name}, the archive holds {getattr(summary, name)}"
            )
