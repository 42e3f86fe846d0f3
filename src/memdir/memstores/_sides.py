"""The two kinds of side `memdir sync` mirrors between: a memdir store (any URL `memdir.open_store` takes, a
remote ``http://`` one included), and a memory store behind a Memory Stores API (Anthropic's, or a memdir
server's), reached with the official SDK.

Each side lists its memories as `Item`s (path, SHA-256, and the side's own id for it: the memory id on an API,
the path in a store, which follows renames through the store's change log) and applies changes with a
precondition on the content it expects, so a change made there since the sync looked is never overwritten.
Errors come out as memdir's: `ConflictError` (changed meanwhile), `AlreadyExistsError` (path taken),
`NotFoundError`, and the refusals (`InvalidRequestError`, `PathError`, `EncodingError`) of what a side cannot hold.
"""

from __future__ import annotations

import contextlib
import os
import urllib.parse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import (
    AlreadyExistsError,
    AuthenticationError,
    ConfigError,
    ConflictError,
    EncodingError,
    HistoryUnavailableError,
    NotFoundError,
    RateLimitError,
    StorageError,
    StorageUnavailableError,
)
from ..gate import Caller, GatedStore
from ..paths import MemoryPath, parse
from ..store import open_store
from ..store._records import MISSING, Origin, sha256_hex
from ._errors import InvalidRequestError

if TYPE_CHECKING:
    from collections.abc import Iterator

    import anthropic

    from ..store import Store

__all__ = ["ApiSide", "Item", "Side", "StoreSide", "open_side"]

API_SCHEME = "memstore:"
SERVER_SCHEMES = ("memstore+http://", "memstore+https://")


@dataclass(frozen=True, slots=True)
class Item:
    key: str  # the path below the root: "notes/a.md" (an API's /notes/a.md, a store's /memories/notes/a.md)
    sha256: str
    ident: str  # the side's id for it


class Side(Protocol):
    label: str  # how messages name it
    identity: str  # what the sync state knows it by (no secret in it)

    def scan(self) -> dict[str, Item]:
        """Every memory, by id."""
        ...

    def locate(self, idents: set[str], cursor: int | None) -> tuple[dict[str, str], int | None]:
        """Where each of ``idents`` (ids at the last sync) is now, renames followed (missing: gone), and the cursor
        to remember for next time."""
        ...

    def settled(self, cursor: int | None) -> int | None:
        """The cursor after this run's own changes (so they are not taken for someone else's next time)."""
        ...

    def read(self, item: Item) -> bytes: ...

    def create(self, key: str, content: bytes) -> Item: ...

    def change(self, item: Item, key: str, content: bytes | None) -> Item:
        """Move ``item`` to ``key`` and/or give it ``content``, if it still has ``item.sha256``."""
        ...

    def delete(self, item: Item) -> None: ...

    def close(self) -> None: ...


def _memory_path(key: str) -> MemoryPath:
    return parse("/memories/" + key)


class StoreSide:
    """A memdir store. An item's id is its path; `locate` follows renames through the store's change log."""

    def __init__(self, store: Store, label: str, identity: str) -> None:
        self.store, self.label, self.identity = store, label, identity
        self.origin = Origin("sync", None, "memdir sync")
        self._mine: set[int] = set()  # version numbers this run wrote

    def scan(self) -> dict[str, Item]:
        found: dict[str, Item] = {}
        for entry in self.store.list_files(MemoryPath.root()):
            sha = entry.sha256 or sha256_hex(self.store.read(entry.path).content)
            found[entry.path.key] = Item(entry.path.key, sha, entry.path.key)
        return found

    def locate(self, idents: set[str], cursor: int | None) -> tuple[dict[str, str], int | None]:
        where: dict[str, str | None] = {key: key for key in idents}
        last = cursor
        try:
            here = {key: key for key in idents}  # path now -> the id it had at the last sync
            gone: dict[str, str] = {}  # path -> id, of files deleted since (a write there again is the same memory)
            for version in self.store.log(cursor or 0):
                last = version.version
                _follow(version.path.key, None if version.old_path is None else version.old_path.key,
                        version.sha256 is None, where, here, gone)  # fmt: skip
        except HistoryUnavailableError:
            last = None  # no log: a rename looks like a delete and a create
        return {ident: now for ident, now in where.items() if now is not None}, last

    def settled(self, cursor: int | None) -> int | None:
        if cursor is None:
            return None
        for version in self.store.log(cursor, rescan=False):
            if version.version not in self._mine:
                break
            cursor = version.version
        return cursor

    def read(self, item: Item) -> bytes:
        return self.store.read(_memory_path(item.key)).content

    def create(self, key: str, content: bytes) -> Item:
        version = self.store.write(_memory_path(key), content, expect=MISSING, origin=self.origin, op="create")
        self._mine.add(version.version)
        return Item(key, version.sha256 or sha256_hex(content), key)

    def change(self, item: Item, key: str, content: bytes | None) -> Item:
        source, dest = _memory_path(item.key), _memory_path(key)
        current = self.store.read(source)
        if current.sha256 != item.sha256:
            raise ConflictError(f"{item.key} changed in {self.label} during the sync")
        if content is not None:
            version = self.store.write(source, content, expect=current.version, origin=self.origin)
            self._mine.add(version.version)
        if dest != source:
            self._mine.update(v.version for v in self.store.move(source, dest, origin=self.origin))
        return Item(key, sha256_hex(content) if content is not None else item.sha256, key)

    def delete(self, item: Item) -> None:
        target = _memory_path(item.key)
        if self.store.read(target).sha256 != item.sha256:
            raise ConflictError(f"{item.key} changed in {self.label} during the sync")
        self._mine.update(v.version for v in self.store.delete(target, origin=self.origin))

    def close(self) -> None:
        self.store.close()


def _follow(
    key: str, old: str | None, deleted: bool, where: dict[str, str | None], here: dict[str, str], gone: dict[str, str]
) -> None:
    """Take one version of the log into ``where`` (id -> path now)."""
    if old is not None:  # a rename: whatever was at ``old`` is at ``key`` now
        ident = here.pop(old, None)
        if ident is not None:
            here[key], where[ident] = ident, key
    elif deleted:
        ident = here.pop(key, None)
        if ident is not None:
            gone[key], where[ident] = ident, None
    elif key in gone and key not in here:  # written again where it was deleted: the same memory
        ident = gone.pop(key)
        here[key], where[ident] = ident, key


class ApiSide:
    """A memory store behind a Memory Stores API, through the official SDK. Ids are memory ids (they stay)."""

    def __init__(self, client: anthropic.Anthropic, store_id: str, label: str) -> None:
        self.client, self.store_id, self.label = client, store_id, label
        self.identity = f"{str(client.base_url).rstrip('/')} {store_id}"
        self._memories = client.beta.memory_stores.memories
        with _api_errors(label):
            client.beta.memory_stores.retrieve(store_id)

    def scan(self) -> dict[str, Item]:
        with _api_errors(self.label):
            listed = self._memories.list(self.store_id, limit=100)
            return {m.id: Item(m.path[1:], m.content_sha256, m.id) for m in listed if m.type == "memory"}

    def locate(self, idents: set[str], cursor: int | None) -> tuple[dict[str, str], int | None]:
        return {ident: ident for ident in idents}, cursor  # a memory's id stays through renames: nothing to follow

    def settled(self, cursor: int | None) -> int | None:
        return cursor

    def read(self, item: Item) -> bytes:
        with _api_errors(self.label):
            found = self._memories.retrieve(item.ident, memory_store_id=self.store_id, view="full")
        data = (found.content or "").encode("utf-8")
        if sha256_hex(data) != item.sha256:
            if found.content_sha256 != item.sha256:
                raise ConflictError(f"{item.key} changed in {self.label} during the sync")
            # The same memory, but its text is not its bytes: a file another door stored that is not UTF-8.
            raise EncodingError(f"{item.key} is not UTF-8 text in {self.label}")
        return data

    def create(self, key: str, content: bytes) -> Item:
        text = _text(content, key)
        with _api_errors(self.label):
            made = self._memories.create(self.store_id, path="/" + key, content=text)
        return Item(made.path[1:], made.content_sha256, made.id)

    def change(self, item: Item, key: str, content: bytes | None) -> Item:
        changes: dict[str, Any] = {}
        if key != item.key:
            changes["path"] = "/" + key
        if content is not None:
            changes["content"] = _text(content, key)
        precondition: Any = {"type": "content_sha256", "content_sha256": item.sha256}
        with _api_errors(self.label):
            made = self._memories.update(
                item.ident, memory_store_id=self.store_id, precondition=precondition, **changes
            )
        return Item(made.path[1:], made.content_sha256, made.id)

    def delete(self, item: Item) -> None:
        with _api_errors(self.label):
            self._memories.delete(item.ident, memory_store_id=self.store_id, expected_content_sha256=item.sha256)

    def close(self) -> None:
        self.client.close()


def _text(content: bytes, key: str) -> str:
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise EncodingError(f"{key} is not UTF-8 text: a Memory Stores API holds text only") from exc


@contextlib.contextmanager
def _api_errors(label: str) -> Iterator[None]:
    """The SDK's exceptions as memdir's, at the boundary."""
    import anthropic

    try:
        yield
    except anthropic.ConflictError as exc:
        if exc.type == "memory_path_conflict_error":
            raise AlreadyExistsError(f"{label}: {exc.api_message or 'the path is taken'}") from exc
        raise ConflictError(f"{label}: {exc.api_message or 'the memory changed'}") from exc
    except anthropic.NotFoundError as exc:
        raise NotFoundError(f"{label}: {exc.api_message or 'not found'}") from exc
    except (anthropic.BadRequestError, anthropic.UnprocessableEntityError) as exc:
        raise InvalidRequestError(f"{label} refused it: {exc.api_message or exc.message}") from exc
    except (anthropic.AuthenticationError, anthropic.PermissionDeniedError) as exc:
        raise AuthenticationError(f"{label} refused the API key: {exc.api_message or exc.message}") from exc
    except anthropic.RateLimitError as exc:
        raise RateLimitError(f"{label} asks to slow down: {exc.api_message or 'rate limited'}") from exc
    except (anthropic.APIConnectionError, anthropic.InternalServerError) as exc:
        raise StorageUnavailableError(f"{label} could not be reached or failed; run the sync again later") from exc
    except anthropic.APIStatusError as exc:
        raise StorageError(f"{label} answered HTTP {exc.status_code}: {exc.api_message or ''}") from exc


def open_side(spec: str, *, namespace: str) -> Side:
    """``memstore:ID`` (Anthropic's API, or ``ANTHROPIC_BASE_URL``'s, with ``ANTHROPIC_API_KEY``),
    ``memstore+http(s)://[TOKEN@]HOST[:PORT]/ID`` (a memdir server: the token in the URL or ``MEMDIR_TOKEN``),
    or any memdir store URL (``namespace`` names its namespace)."""
    if spec.startswith(API_SCHEME):
        return _anthropic_side(spec.removeprefix(API_SCHEME))
    if spec.startswith(SERVER_SCHEMES):
        return _server_side(spec.removeprefix("memstore+"))
    backend = open_store(spec, namespace=namespace)
    # Behind the gate, as every door's store is: what sync copies in is screened, limited and audited under the
    # store's own policy (the other side may hold what this one's policy refuses). A server's store has its own.
    store = backend if backend.runs_commands else GatedStore(backend, Caller("sync", channel="sync"))
    return StoreSide(store, _shown(spec), f"{_shown(spec)} {store.namespace}")


def _anthropic_side(store_id: str) -> ApiSide:
    import anthropic

    key = os.environ.get("ANTHROPIC_API_KEY")
    if not key:
        raise ConfigError("memstore:ID needs ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL for another endpoint)")
    return ApiSide(anthropic.Anthropic(api_key=key), _store_id(store_id), f"memstore:{store_id}")


def _server_side(url: str) -> ApiSide:
    import anthropic

    parts = urllib.parse.urlsplit(url)
    base, _, store_id = parts.path.rstrip("/").rpartition("/")
    # Never ANTHROPIC_API_KEY here: this host is not Anthropic's, and that key must not travel to it.
    key = urllib.parse.unquote(parts.username or "") or os.environ.get("MEMDIR_TOKEN", "")
    if not key:
        raise ConfigError("memstore+http(s)://HOST/ID needs a token: in the URL (TOKEN@HOST) or MEMDIR_TOKEN")
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    netloc += f":{parts.port}" if parts.port else ""
    root = urllib.parse.urlunsplit((parts.scheme, netloc, base, "", ""))
    client = anthropic.Anthropic(api_key=key, base_url=root)
    return ApiSide(client, _store_id(store_id), f"memstore+{root}/{store_id}")


def _store_id(value: str) -> str:
    if not value.startswith("memstore_") or not value.replace("_", "").isalnum():
        raise ConfigError(f"{value[:80]!r} is not a memory store id (memstore_...)")
    return value


def _shown(url: str) -> str:
    """A store URL without its user part (a token or a password never goes into the sync state or a message)."""
    parts = urllib.parse.urlsplit(url)
    if not parts.scheme or len(parts.scheme) == 1 or "@" not in parts.netloc:
        return url
    return urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))
