"""Session transcripts: one append-only JSONL file per session under ``<data dir>/sessions/``.

Each line is one record, written with one ``write`` as soon as it exists, so a killed process (even
``kill -9``) loses at most the record it was writing; a torn last line is ignored when the file is read and
cut off before anything else is appended. Records are made durable (``fsync``) once per turn, after the
tool results: an operating-system crash can lose the turn in progress, never corrupt earlier ones (the same
bargain as the stores' ``synchronous=NORMAL``), and a turn pays for one flush, not two. Replaying the
records rebuilds the transcript exactly, which is what ``--resume`` continues:

- ``{"type": "session", "id", "started", "provider", "model", "store", "namespace", "cwd", "version": 1}``
- ``{"type": "message", "message": {...}, "usage": {...}?, "prompt": "..."?}`` one message, appended
- ``{"type": "clear", "results": {tool_use_id: placeholder}}`` old tool results cleared (client mode)
- ``{"type": "reset", "reason": "compact", "messages": [...]}`` the whole transcript replaced
- ``{"type": "usage", "usage": {...}}`` tokens spent outside the conversation (a compaction summary)

Files are ``0600`` and the directory ``0700``: transcripts hold memory contents and whatever the user said.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..config import data_dir
from ..errors import SessionError
from .context import apply_cleared
from .events import Usage

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from .transcript import Message

__all__ = ["SessionInfo", "SessionLog", "SessionState", "find_session", "list_sessions", "sessions_dir"]

VERSION = 1
LATEST = "latest"  # holds the id of the session started or resumed last


def sessions_dir() -> Path:
    return data_dir() / "sessions"


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


class SessionLog:
    """The open transcript file of one session; every `append` is durable when it returns."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd = fd

    @classmethod
    def create(cls, header: dict[str, Any], directory: Path | None = None) -> SessionLog:
        where = directory or sessions_dir()
        _make_dir(where)
        path = where / f"{header['id']}.jsonl"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        log = cls(path, fd)
        log.append({"type": "session", "version": VERSION, **header})
        _mark_latest(path)
        _fsync_dir(where)  # the new file's name survives a crash too
        return log

    @classmethod
    def resume(cls, path: Path) -> tuple[SessionLog, SessionState]:
        state, good_bytes = _replay(path)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        if good_bytes < os.fstat(fd).st_size:
            os.ftruncate(fd, good_bytes)  # a torn last record: cut it off before appending
        _mark_latest(path)
        return cls(path, fd), state

    def append(self, record: dict[str, Any], *, sync: bool = True) -> None:
        """Write one record; with ``sync``, also make it and everything before it durable."""
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


def list_sessions(directory: Path | None = None) -> list[SessionInfo]:
    """Every readable session, newest first."""
    found: list[SessionInfo] = []
    for path in _files(directory or sessions_dir()):
        with contextlib.suppress(SessionError):
            state = read_session(path)
            started = str(state.header.get("started", ""))
            found.append(SessionInfo(state.id, started, state.turns, state.usage.total, state.first_prompt, path))
    return sorted(found, key=lambda s: (s.started, s.id), reverse=True)


def find_session(ref: str | None, directory: Path | None = None) -> Path:
    """The transcript ``ref`` names: an id or a unique prefix of one; empty or None for the latest used."""
    files = list(_files(directory or sessions_dir()))
    if not files:
        raise SessionError("there is no session to resume yet")
    if not ref or ref == "latest":
        return _latest(files)
    matches = [p for p in files if p.stem == ref] or [p for p in files if p.stem.startswith(ref)]
    if len(matches) != 1:
        why = "no session" if not matches else f"{len(matches)} sessions"
        raise SessionError(f"{why} match {ref!r}; `memdir sessions` lists them")
    return matches[0]


def _latest(files: list[Path]) -> Path:
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
