"""Session transcripts: one append-only JSONL file per session under ``<data dir>/sessions/``.

Each line is one record, written with one ``write`` as soon as it exists, so a killed process (even
``kill -9``) loses at most the record it was writing; a torn last line is ignored when the file is read and
cut off before anything else is appended. Records are made durable (``fsync``) once per turn, after the
tool results: an operating-system crash can lose the turn in progress, never corrupt earlier ones (the same
bargain as the stores' ``synchronous=NORMAL``), and a turn pays for one flush, not two. Replaying the
records rebuilds the transcript exactly (secrets redacted, below), which is what ``--resume`` continues:

- ``{"type": "session", "id", "started", "provider", "model", "store", "namespace", "cwd", "version": 1}``
- ``{"type": "message", "message": {...}, "usage": {...}?, "prompt": "..."?}`` one message, appended
- ``{"type": "clear", "results": {tool_use_id: placeholder}}`` old tool results cleared (client mode)
- ``{"type": "reset", "reason": "compact", "messages": [...]}`` the whole transcript replaced
- ``{"type": "usage", "usage": {...}}`` tokens spent outside the conversation (a compaction summary)

Files are ``0600`` and the directory ``0700``: transcripts hold memory contents and whatever the user said. Secrets
are redacted on the way to the file as the write policy redacts them in memory (`SessionLog` ``redact``; nothing
when ``secrets = "allow"``): a key typed into a prompt, or a model's tool call carrying one the gate redacted, reaches
the model in the live session but is not kept on disk, and a resumed session reads it redacted.

A session belongs to the store and namespace it ran on (the header's ``store``, a canonical URL from `store_key`,
and ``namespace``): `list_sessions` and `find_session` take them to see only that store's sessions, and resuming
a session of another store is refused (its transcript holds what that store's memory said). A session recorded
without a store (by a library agent before memdir 0.2) can still be resumed by its id.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import secrets
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..config import data_dir
from ..errors import MemdirError, SessionError
from ..gate import Rules
from ..policy.pipeline import redact
from ..store import redact_url, url_scheme
from .context import apply_cleared
from .events import Usage

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from ..store import Store
    from .transcript import Message

__all__ = [
    "SessionInfo",
    "SessionLog",
    "SessionState",
    "find_session",
    "list_sessions",
    "secret_redaction",
    "sessions_dir",
    "store_key",
    "store_label",
]

VERSION = 1
LATEST = "latest"  # holds the id of the session started or resumed last


def sessions_dir() -> Path:
    return data_dir() / "sessions"


def store_key(url: str, cwd: str | None = None) -> str:
    """The store a URL names, spelled one way, so that ``~/memory``, ``./memory`` and ``/home/me/memory`` are one
    store: paths made absolute (relative to ``cwd``, default the current directory) and resolved, a server's URL
    without its token, a database URL without its password."""
    try:
        scheme = url_scheme(url)
    except MemdirError:
        return url
    if scheme in (None, "file", "sqlite"):
        rest = url if scheme is None else url.split(":", 1)[1]
        path = rest[2:] if scheme is not None and rest.startswith("//") else rest
        full = os.path.join(cwd or os.getcwd(), os.path.expanduser(path))
        return f"{'sqlite' if scheme == 'sqlite' else 'file'}://{os.path.realpath(full)}"
    if scheme in ("http", "https"):
        parts = urllib.parse.urlsplit(url)
        host = parts.netloc.rpartition("@")[2].lower()
        return urllib.parse.urlunsplit((scheme, host, parts.path.rstrip("/"), "", ""))
    return redact_url(url)


def store_label(store: Store) -> str:
    """A `store_key` for a store given without its URL (a program's own `Agent(store)`)."""
    for attr in ("url", "path", "base"):  # RemoteStore/PostgresStore, SQLiteStore, DirectoryStore
        value = getattr(store, attr, None)
        if value is not None:
            prefix = {"path": "sqlite://", "base": ""}.get(attr, "")
            return store_key(f"{prefix}{value}")
    # One object in one process (an unnamed memory store, say): nothing else can share it. Spelled as a URL of a
    # scheme, so that store_key leaves it as it is.
    return f"memory:@{type(store).__name__}-{id(store):x}"


def new_session_id() -> str:
    """Sortable by time: ``20261129-143801-9f2c1a`` (UTC), with random bits so two processes never clash."""
    return dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)


@dataclass
class SessionState:
    """A session rebuilt from its records."""

    header: dict[str, Any]
    messages: list[Message] = field(default_factory=list)
    turns: int = 0
    usage: Usage = field(default_factory=Usage)
    first_prompt: str = ""

    @property
    def id(self) -> str:
        return str(self.header.get("id", ""))

    def apply(self, record: dict[str, Any]) -> None:
        kind = record.get("type")
        if kind == "message":
            self.messages.append(record["message"])
            self.turns += record["message"].get("role") == "assistant"
            if record.get("prompt") and not self.first_prompt:
                self.first_prompt = str(record["prompt"])
        elif kind == "clear":
            self.messages = apply_cleared(self.messages, record.get("results", {}))
        elif kind == "reset":
            self.messages = list(record.get("messages", []))
        if isinstance(record.get("usage"), dict):
            self.usage.add(Usage(**{k: int(v) for k, v in record["usage"].items() if k in Usage.__annotations__}))


@dataclass(frozen=True)
class SessionInfo:
    id: str
    started: str
    turns: int
    tokens: int
    first_prompt: str
    path: Path
    store: str | None = None  # `store_key` of the store it ran on; None when it was not recorded
    namespace: str | None = None

    def belongs_to(self, store: str | None, namespace: str | None) -> bool:
        """Whether it ran on ``store`` and ``namespace`` (None: any)."""
        return (store is None or self.store == store) and (namespace is None or self.namespace == namespace)


Redact = Callable[[str], str]
_KEPT = frozenset({"id", "tool_use_id", "type"})  # ids and kinds: never text that could hold a secret


class SessionLog:
    """The open transcript file of one session; every `append` is durable when it returns. ``redact``: what each
    text of a record becomes on disk (the write policy's redaction of secrets)."""

    def __init__(self, path: Path, fd: int, redact: Redact | None = None) -> None:
        self.path = path
        self._fd = fd
        self._redact = redact

    @classmethod
    def create(
        cls, header: dict[str, Any], directory: Path | None = None, *, redact: Redact | None = None
    ) -> SessionLog:
        where = directory or sessions_dir()
        _make_dir(where)
        path = where / f"{header['id']}.jsonl"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        log = cls(path, fd, redact)
        log.append({"type": "session", "version": VERSION, **header})
        _mark_latest(path)
        _fsync_dir(where)  # the new file's name survives a crash too
        return log

    @classmethod
    def resume(cls, path: Path, *, redact: Redact | None = None) -> tuple[SessionLog, SessionState]:
        state, good_bytes = _replay(path)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        if good_bytes < os.fstat(fd).st_size:
            os.ftruncate(fd, good_bytes)  # a torn last record: cut it off before appending
        _mark_latest(path)
        return cls(path, fd, redact), state

    def append(self, record: dict[str, Any], *, sync: bool = True) -> None:
        """Write one record (its texts redacted); with ``sync``, also make it and everything before it durable."""
        if self._redact is not None:
            record = _redacted(record, self._redact)
        data = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8", "surrogatepass")
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]
        if sync:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def read_session(path: Path) -> SessionState:
    return _replay(path)[0]


def _replay(path: Path) -> tuple[SessionState, int]:
    """The state the records describe, and how many bytes of the file hold whole records."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SessionError(f"session {path.stem} cannot be read ({exc.strerror})") from exc
    state: SessionState | None = None
    good = 0
    for number, line in enumerate(raw.splitlines(keepends=True), 1):
        record = _record(line)
        if record is None:
            if line.endswith(b"\n") and raw[good + len(line) :].strip():
                raise SessionError(f"session {path.stem} is damaged at line {number}")
            break  # the last record was being written when the process died
        if state is None:
            if record.get("type") != "session":
                raise SessionError(f"{path.name} is not a memdir session transcript")
            state = SessionState(header=record)
        else:
            state.apply(record)
        good += len(line)
    if state is None:
        raise SessionError(f"session {path.stem} is empty")
    return state, good


def _record(line: bytes) -> dict[str, Any] | None:
    if not line.endswith(b"\n"):
        return None
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def list_sessions(
    directory: Path | None = None, *, store: str | None = None, namespace: str | None = None
) -> list[SessionInfo]:
    """Every readable session, newest first; with ``store`` (a `store_key`) and ``namespace``, only theirs."""
    found: list[SessionInfo] = []
    for path in _files(directory or sessions_dir()):
        with contextlib.suppress(SessionError):
            info = _info(path, read_session(path))
            if info.belongs_to(store, namespace):
                found.append(info)
    return sorted(found, key=lambda s: (s.started, s.id), reverse=True)


def _info(path: Path, state: SessionState) -> SessionInfo:
    header = state.header
    recorded = header.get("store")
    cwd = header.get("cwd")
    where = store_key(str(recorded), str(cwd) if cwd else None) if recorded else None
    namespace = header.get("namespace")
    started = str(header.get("started", ""))
    return SessionInfo(
        state.id, started, state.turns, state.usage.total, state.first_prompt, path, where,
        None if namespace is None else str(namespace),
    )  # fmt: skip


def find_session(
    ref: str | None, directory: Path | None = None, *, store: str | None = None, namespace: str | None = None
) -> Path:
    """The transcript ``ref`` names: an id or a unique prefix of one; empty or None for the latest used. With
    ``store`` and ``namespace``, the latest is the latest of theirs, and a session of another store or namespace
    is refused (`SessionError` saying which store it belongs to)."""
    files = list(_files(directory or sessions_dir()))
    if not ref or ref == "latest":
        return _latest(files, store, namespace)
    matches = [p for p in files if p.stem == ref] or [p for p in files if p.stem.startswith(ref)]
    if len(matches) != 1:
        why = "no session" if not matches else f"{len(matches)} sessions"
        raise SessionError(f"{why} match {ref!r}; `memdir sessions` lists them")
    _check_belongs(matches[0], store, namespace)
    return matches[0]


def _check_belongs(path: Path, store: str | None, namespace: str | None) -> None:
    info = _info(path, read_session(path))
    if info.store is None or info.belongs_to(store, namespace):
        return  # recorded without its store: whoever names it by id decides
    raise SessionError(
        f"session {info.id} ran on {info.store} (namespace {info.namespace}), not on this store "
        f"({store}, namespace {namespace}): its transcript holds that store's memory. Resume it with "
        f"--store {info.store}" + ("" if info.namespace in (None, "default") else f" --namespace {info.namespace}")
    )


def _latest(files: list[Path], store: str | None = None, namespace: str | None = None) -> Path:
    if store is not None or namespace is not None:
        mine = (
            {info.path for info in list_sessions(files[0].parent, store=store, namespace=namespace)} if files else set()
        )
        files = [p for p in files if p in mine]
    if not files:
        where = "" if store is None else f" on this store ({store}, namespace {namespace})"
        raise SessionError(f"there is no session to resume yet{where}")
    # File times tick coarsely (a few ms on many kernels), so two sessions written in one tick tie; the
    # ``latest`` pointer, rewritten whenever a session starts or resumes, says which of them came last.
    newest = max(p.stat().st_mtime_ns for p in files)
    tied = sorted(p for p in files if p.stat().st_mtime_ns == newest)
    try:
        pointed = (files[0].parent / LATEST).read_text("utf-8").strip()
    except OSError:
        pointed = ""
    return next((p for p in tied if p.stem == pointed), tied[-1])


def _mark_latest(path: Path) -> None:
    # Best effort: a lost pointer only weakens the tie-break above, never loses a session.
    with contextlib.suppress(OSError):
        fd = os.open(path.parent / LATEST, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, path.stem.encode())
        finally:
            os.close(fd)


def _files(directory: Path) -> Iterator[Path]:
    if directory.is_dir():
        yield from (p for p in directory.glob("*.jsonl") if p.is_file())


def _make_dir(path: Path) -> None:
    # Each level is created 0700 explicitly: mkdir(mode=) is filtered by the umask and applies to the leaf only.
    for level in reversed([path, *path.parents]):
        if not level.exists():
            level.mkdir(mode=0o700)
            os.chmod(level, 0o700)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _redacted(value: Any, redact: Redact, key: str | None = None) -> Any:
    """``value`` (a record, or a part of one) with ``redact`` applied to every text in it but ids and kinds."""
    if isinstance(value, str):
        return value if key in _KEPT else redact(value)
    if isinstance(value, dict):
        return {k: _redacted(v, redact, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_redacted(item, redact) for item in value]
    return value


def secret_redaction(namespace: str) -> Redact | None:
    """What a file of a session keeps of a text: secrets redacted as ``namespace``'s write policy redacts them in
    memory (a key typed into a prompt reaches the model, not the disk); None when the policy allows them."""
    policy = Rules.for_namespace(namespace).policy
    if policy.secrets == "allow":
        return None

    def redacted(text: str) -> str:
        found = policy.secrets_in(text)
        return redact(text, found)[0] if found else text

    return redacted
