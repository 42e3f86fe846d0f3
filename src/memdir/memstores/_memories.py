"""The memories of one memory store: what each endpoint of the Memory Stores API does, on a `Store`.

Writes are ordinary store calls (`Store.write`, `move`, `delete`) made with the caller's `Origin`: whatever
guards the store (the write policy, limits, the audit log) applies to them as to any door, and what is answered
is read back from the store, never echoed from the request (a write may have been redacted on its way in).
"""

from __future__ import annotations

import contextlib
import re
from typing import TYPE_CHECKING, Any

from ..errors import (
    AlreadyExistsError,
    ConflictError,
    NotADirectoryError_,
    NotAFileError,
    NotFoundError,
)
from ..paths import MemoryPath
from ..store._records import MISSING, sha256_hex
from ._errors import InvalidRequestError, PathConflictError, PreconditionFailedError
from ._json import memory_json, prefix_json, version_json
from ._lineage import Lineage
from ._paths import api_path, memory_path

if TYPE_CHECKING:
    from ..store import Store
    from ..store._records import Entry, FileData, Origin, Version
    from ._lineage import MemoryRow, VersionFilter, VersionRow

__all__ = ["MAX_CONTENT_BYTES", "Memories", "check_sha256"]

MAX_CONTENT_BYTES = 102_400  # 100 kB per memory, as the API documents
_SHA256 = re.compile(r"[0-9a-f]{64}")
_RETRIES = 20  # an unconditional update that keeps meeting a concurrent writer gives up after this many tries


def check_sha256(value: object, field: str) -> str:
    if not isinstance(value, str) or not _SHA256.fullmatch(value):
        raise InvalidRequestError(f"{field}: must be 64 lowercase hexadecimal characters")
    return value


def encode_content(value: object) -> bytes:
    if not isinstance(value, str):
        raise InvalidRequestError("content: must be a string")
    try:
        data = value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidRequestError("content: is not valid UTF-8 text (it holds an unpaired surrogate)") from exc
    if len(data) > MAX_CONTENT_BYTES:
        raise InvalidRequestError(f"content: {len(data):,} bytes, over the limit of {MAX_CONTENT_BYTES:,} per memory")
    return data


def _text(content: bytes) -> str:
    # A file another door wrote may not be UTF-8 (PUT /v1/files takes any bytes): shown with U+FFFD, its hash
    # and size still those of the bytes stored.
    return content.decode("utf-8", "replace")


class Memories:
    """One memory store's memories and versions (``store`` is the namespace holding them)."""

    def __init__(self, store: Store, store_id: str) -> None:
        self.store = store
        self.store_id = store_id
        self.lineage = Lineage(store)

    # -- one memory ---------------------------------------------------------------------------------------

    def create(self, path: object, content: object, origin: Origin, *, full: bool) -> dict[str, Any]:
        target = memory_path(path)
        data = encode_content("" if content is None else content)
        try:
            version = self.store.write(target, data, expect=MISSING, origin=origin, op="create")
        except (AlreadyExistsError, NotADirectoryError_, NotAFileError) as exc:
            raise self._path_conflict(target) from exc
        # A new memory's ids are known from its version (`IdKey`): recorded by the next catch-up, whoever runs it.
        return self._written(version, self.lineage.ids.memory(version.version), version.timestamp, full=full)

    def retrieve(self, memory_id: object, *, full: bool) -> dict[str, Any]:
        row, data, version_id = self._current(memory_id)
        return self._read_memory(row, data, version_id, full=full)

    def update(
        self,
        memory_id: object,
        *,
        path: object,
        content: object,
        expected: str | None,
        origin: Origin,
        full: bool,
    ) -> dict[str, Any]:
        row, current, _ = self._current(memory_id)
        dest = None if path is None else memory_path(path)
        data = None if content is None else encode_content(content)
        for _ in range(_RETRIES):
            try:
                made = self._apply_update(row, current, dest, data, expected, origin)
                break
            except PreconditionFailedError:
                raise
            except ConflictError:
                current = self.store.read(current.path)  # written meanwhile: judged again on what is there now
        else:
            raise ConflictError(f"memory {row.id} kept changing under this update; try again")
        if not made:  # nothing to change: no new version
            return self._answer(current.path, full=full)
        return self._written(made[-1], row.id, row.created, full=full)

    def _apply_update(
        self,
        row: MemoryRow,
        current: FileData,
        dest: MemoryPath | None,
        data: bytes | None,
        expected: str | None,
        origin: Origin,
    ) -> list[Version]:
        """Write and/or move the memory, if ``expected`` (when given) holds; the versions made (none: nothing to
        do). `ConflictError` when the file changed since ``current`` was read."""
        source = current.path
        edits = data is not None and sha256_hex(data) != current.sha256
        moving = dest is not None and dest != source
        # A stale precondition is forgiven when the memory already is what the update asks for.
        already = not edits and not moving and (data is not None or dest is not None)
        if expected is not None and current.sha256 != expected and not already:
            raise PreconditionFailedError(
                f"memory {row.id} changed: its content_sha256 is {current.sha256}, not {expected}"
            )
        if moving and dest is not None and self._blocker(dest) is not None:
            raise self._path_conflict(dest)  # before anything is written: a rename-and-edit never half happens
        made = []
        if edits and data is not None:
            made.append(self.store.write(source, data, expect=current.version, origin=origin))
        if moving and dest is not None:
            made += self._move(source, dest, origin)
        return made

    def delete(self, memory_id: object, expected: str | None, origin: Origin) -> dict[str, Any]:
        row, current, _ = self._current(memory_id)
        if expected is not None and current.sha256 != expected:
            raise PreconditionFailedError(
                f"memory {row.id} changed: its content_sha256 is {current.sha256}, not {expected}"
            )
        # No precondition on the delete itself: the server's write lock keeps other doors' writes out meanwhile.
        self.store.delete(current.path, origin=origin)
        return {"type": "memory_deleted", "id": row.id}

    def _current(self, memory_id: object) -> tuple[MemoryRow, FileData, str]:
        """The memory, its file as it is now and the id of its current version. Checked against the file's
        current version (its id must name this memory): a file changed by another door since the ids were last
        brought up to date is caught up with first, never taken for this memory."""
        for attempt in range(2):
            try:
                row, number, version_id = self.lineage.latest(memory_id)
            except NotFoundError:
                if attempt:
                    raise
                self.lineage.catch_up(rescan=True)  # made moments ago, and not recorded yet?
                continue
            if row.key is None:
                break
            try:
                data = self.store.read(MemoryPath(tuple(row.key.split("/"))))
            except (NotFoundError, NotAFileError):
                data = None
            if data is not None and data.version == number:  # the file is at this memory's latest version
                return row, data, version_id
            if attempt == 0:
                self.lineage.catch_up(rescan=True)
        raise NotFoundError(f"memory {row.id} was deleted (its versions are still listed)")

    def _written(self, version: Version, memory_id: str, created: float, *, full: bool) -> dict[str, Any]:
        """The memory a write just made, from the write's own `Version` (what was stored: the store may have
        changed what was sent), its content read back for ``view=full``."""
        if version.sha256 is None:
            raise NotFoundError(f"memory {memory_id} was deleted meanwhile")
        content = None
        if full:
            data = self.store.read(version.path)
            if data.version != version.version:
                return self._answer(version.path, full=True)  # written again since: that version, whole
            content = _text(data.content)
        return memory_json(
            self.store_id, memory_id, api_path(version.path), sha256=version.sha256, size=version.size,
            version_id=self.lineage.ids.version(version.version), created=created, updated=version.timestamp,
            content=content,
        )  # fmt: skip

    def _answer(self, target: MemoryPath, *, full: bool) -> dict[str, Any]:
        """The memory at ``target`` as it is now, read back."""
        data = self.store.read(target)
        row = self.lineage.memories_at([target.key]).get(target.key)
        version = self.lineage.version_ids([data.version]).get(data.version)
        if row is None or version is None:  # written again since the catch-up: take that write in too
            self.lineage.catch_up()
            data = self.store.read(target)
            row = self.lineage.memories_at([target.key])[target.key]
            version = self.lineage.version_ids([data.version])[data.version]
        return self._read_memory(row, data, version, full=full)

    def _read_memory(self, row: MemoryRow, data: FileData, version: str, *, full: bool) -> dict[str, Any]:
        return memory_json(
            self.store_id, row.id, api_path(data.path), sha256=data.sha256, size=len(data.content),
            version_id=version, created=row.created, updated=data.modified,
            content=_text(data.content) if full else None,
        )  # fmt: skip

    def _listed_memory(self, row: MemoryRow, entry: Entry, version: str) -> dict[str, Any]:
        return memory_json(
            self.store_id, row.id, api_path(entry.path), sha256=entry.sha256 or "", size=entry.size,
            version_id=version, created=row.created, updated=entry.modified, content=None,
        )  # fmt: skip

    # -- paths taken ----------------------------------------------------------------------------------------

    def _move(self, source: MemoryPath, dest: MemoryPath, origin: Origin) -> list[Version]:
        try:
            return self.store.move(source, dest, origin=origin)
        except (AlreadyExistsError, NotADirectoryError_, NotAFileError) as exc:
            raise self._path_conflict(dest) from exc

    def _path_conflict(self, target: MemoryPath) -> PathConflictError:
        """Which memory stands in the way of a file at ``target``: one there, above it, or below it."""
        self.lineage.catch_up()  # its id may not be recorded yet
        blocker = self._blocker(target)
        key = blocker.key if blocker is not None else target.key
        row = self.lineage.memories_at([key]).get(key)
        shown = "/" + key
        return PathConflictError(
            f"another memory holds {shown}, which {'is' if key == target.key else 'overlaps'} {api_path(target)}",
            conflicting_path=shown,
            conflicting_memory_id=row.id if row is not None else "",
        )

    def _blocker(self, target: MemoryPath) -> MemoryPath | None:
        for place in [*target.ancestors(), target]:
            found = self.store.stat(place)
            if found is not None and found.kind == "file":
                return place
        try:
            below = self.store.list_files(target)
        except (NotFoundError, NotADirectoryError_):
            return None
        return below[0].path if below else None

    # -- listing ----------------------------------------------------------------------------------------------

    def listing(
        self, prefix: MemoryPath, *, depth: int, limit: int, after: list[str] | None, full: bool
    ) -> tuple[list[dict[str, Any]], list[str] | None]:
        """One page of the memories below ``prefix`` (``depth`` levels; deeper ones as prefixes), in tree order,
        from after the item ``after`` names; and the position to give for the next page (None at the end)."""
        self.lineage.catch_up(rescan=True)
        try:
            entries = self.store.list_files(prefix)
        except (NotFoundError, NotADirectoryError_):
            entries = []
        items = _group(entries, len(prefix.parts), depth)
        if after is not None:
            items = [item for item in items if _after(item[0], after)]
        page = items[: limit + 1]
        following = list(page[limit - 1][0]) if len(page) > limit else None
        return self._items(page[:limit], full=full), following

    def _items(self, page: list[tuple[tuple[str, ...], Entry | None]], *, full: bool) -> list[dict[str, Any]]:
        entries = [entry for _, entry in page if entry is not None]
        rows = self.lineage.memories_at(e.path.key for e in entries)
        versions = self.lineage.version_ids(e.version for e in entries)
        if any(e.path.key not in rows or e.version not in versions for e in entries):
            self.lineage.catch_up()  # a write landed between the catch-up and the listing
            rows = self.lineage.memories_at(e.path.key for e in entries)
            versions = self.lineage.version_ids(e.version for e in entries)
        out: list[dict[str, Any]] = []
        for parts, entry in page:
            if entry is None:
                out.append(prefix_json("/" + "/".join(parts) + "/"))
            elif entry.path.key in rows and entry.version in versions:
                out.append(self._listed(rows[entry.path.key], entry, versions[entry.version], full=full))
        return out

    def _listed(self, row: MemoryRow, entry: Entry, version: str, *, full: bool) -> dict[str, Any]:
        if not full:
            return self._listed_memory(row, entry, version)
        try:
            data = self.store.read(entry.path)
        except (NotFoundError, NotAFileError):
            return self._listed_memory(row, entry, version)  # deleted since the listing: as it was listed
        if data.version != entry.version:
            return self._answer(entry.path, full=True)  # written since the listing: the new version, whole
        return self._read_memory(row, data, version, full=True)

    # -- versions -----------------------------------------------------------------------------------------

    def versions(self, where: VersionFilter, limit: int, *, full: bool) -> tuple[list[dict[str, Any]], int | None]:
        """One page of versions, newest first; and the number to list below for the next page (None: the end)."""
        self.lineage.catch_up(rescan=True)
        rows = self.lineage.versions(where, limit + 1)
        following = rows[limit - 1].number if len(rows) > limit else None
        return [self._version(row, full=full) for row in rows[:limit]], following

    def version(self, version_id: object, *, full: bool) -> dict[str, Any]:
        self.lineage.catch_up(rescan=True)
        return self._version(self.lineage.version(version_id), full=full)

    def redact(self, version_id: object, by: str) -> tuple[VersionRow, dict[str, Any]]:
        """Redact a version: its path, hash and size are nulled, and its content leaves the store (unless another
        version that is not redacted has the same content: then those bytes are that version's too)."""
        self.lineage.catch_up(rescan=True)
        found = self.lineage.version(version_id)
        memory = self.lineage.memory(found.memory_id)
        current = None
        if memory.key is not None:
            held = self.store.stat(MemoryPath(tuple(memory.key.split("/"))))
            current = None if held is None else held.version
        before, kept = self.lineage.redact(version_id, current, by)
        if not kept and before.sha256 is not None:
            # ConflictError: another file holds these bytes now (written since): they are its content, not this one's.
            with contextlib.suppress(ConflictError):
                self.store.redact_content(before.sha256)
        return before, self._version(self.lineage.version(version_id), full=False)

    def _version(self, row: VersionRow, *, full: bool) -> dict[str, Any]:
        content = None
        if full and row.sha256 is not None:
            try:
                content = _text(self.store.read_blob(row.sha256))
            except NotFoundError:
                content = None  # pruned by `memdir gc` after the version retention period
        return version_json(self.store_id, row, content)

    # -- the whole store --------------------------------------------------------------------------------------

    def delete_everything(self, origin: Origin) -> None:
        """Delete every memory, then remove every version's content from the store and forget every id: what
        is left of the namespace is the record of its versions (paths, times, hashes), no content."""
        self.lineage.catch_up(rescan=True)
        tops = sorted({entry.path.parts[0] for entry in self.store.list_files(MemoryPath.root())})
        for name in tops:
            with contextlib.suppress(NotFoundError):  # deleted meanwhile
                self.store.delete(MemoryPath((name,)), origin=origin)
        self.lineage.catch_up()
        for sha in self.lineage.contents():
            with contextlib.suppress(ConflictError):  # a file written meanwhile by another door holds it
                self.store.redact_content(sha)
        self.lineage.forget()


def _group(entries: list[Entry], base: int, depth: int) -> list[tuple[tuple[str, ...], Entry | None]]:
    """Entries as items (their parts, the entry), those deeper than ``depth`` levels below ``base`` as one
    prefix item (its parts, None) per directory at that level, in tree order."""
    items: list[tuple[tuple[str, ...], Entry | None]] = []
    seen: set[tuple[str, ...]] = set()
    # Tree order by code point, whatever order the backend lists in: page tokens compare positions this way.
    for entry in sorted(entries, key=lambda e: e.path.parts):
        parts = entry.path.parts
        if depth == 0 or len(parts) - base <= depth:
            items.append((parts, entry))
            continue
        folder = parts[: base + depth]
        if folder not in seen:
            seen.add(folder)
            items.append((folder, None))
    return items


def _after(parts: tuple[str, ...], position: list[str]) -> bool:
    """Whether an item comes after the one the page token names (and, if that was a prefix, is not below it)."""
    last = tuple(position)
    return parts > last and parts[: len(last)] != last
