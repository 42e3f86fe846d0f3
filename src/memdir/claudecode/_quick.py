"""Whether anything changed since the last snapshot, answered from the standard library alone.

`memdir claude-code snapshot` runs in every Claude Code session's hooks (start, compaction, end), and usually
nothing has changed. So the last snapshot leaves a manifest (``<data dir>/claude-code/snapshot.json``) of what it
saw: each memory directory's fingerprint (name, inode, size, mtime and ctime of every file in it), the folders
whose subdirectories are memory directories, the settings files that move them, and the working directories the
hooks came from. `unchanged` compares the disk with it without loading the stores, SQLite or the CLI
(`memdir._launch` calls it before anything else): the whole command takes a few tens of milliseconds. On any
difference, or any doubt, the full snapshot runs.

A fingerprint is taken *before* the directory is read for versions, so a change made while a snapshot runs is
seen by the next one.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from typing import Any

__all__ = [
    "MANIFEST_VERSION",
    "UNREADABLE",
    "fingerprint",
    "hook_payload",
    "listing",
    "manifest_path",
    "same_mark",
    "signature",
    "unchanged",
]

MANIFEST_VERSION = 1
UNREADABLE = "unreadable"  # a fingerprint that equals nothing, itself included: see `same_mark`
_stash: list[dict[str, Any] | None] = []  # what the quick check read from stdin, for the full snapshot after it


def manifest_path() -> str:
    from ..config import data_dir

    return os.path.join(data_dir(), "claude-code", "snapshot.json")


def config_dir() -> str:
    """As `memdir.claudecode._locate.Claude.here` has it (kept here so this module imports nothing of memdir's)."""
    given = os.environ.get("CLAUDE_CONFIG_DIR")
    if given:
        return os.path.abspath(os.path.expanduser(given))
    return os.path.join(os.environ.get("HOME") or os.path.expanduser("~"), ".claude")


def hook_payload() -> dict[str, Any] | None:
    """The JSON object Claude Code sends a hook on stdin (None from a terminal, or when stdin holds none). Stdin
    can be read once: after the quick check, the full snapshot gets what it read."""
    return _stash.pop() if _stash else _parse_stdin()


def _parse_stdin() -> dict[str, Any] | None:
    stream = sys.stdin
    if stream is None or stream.closed or stream.isatty():
        return None
    try:
        data = json.loads(stream.buffer.read(1 << 20) or b"null")  # a hook payload is a few hundred bytes
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def fingerprint(directory: str) -> str | None:
    """What every non-hidden file below ``directory`` is on disk, as one digest; None when it is not a directory.

    Any write changes it: memdir's own replace the inode, an editor writing in place changes mtime and ctime."""
    digest = hashlib.blake2b(digest_size=16)
    try:
        _walk(directory, "", digest)
    except FileNotFoundError:
        return None
    except OSError:
        return UNREADABLE  # the full snapshot looks (and reports) every time, until it can be read
    return digest.hexdigest()


def same_mark(now: str | None, seen: object) -> bool:
    """Whether a directory is as the last snapshot saw it. An unreadable one never is: a constant standing for
    "could not look" equal to itself would let every later change go unrecorded."""
    return now is not None and now != UNREADABLE and now == seen


def _walk(directory: str, prefix: str, digest: Any, parent: int | None = None) -> None:
    """Each subdirectory opened relative to its parent's descriptor, as the store walks (`memdir.store._fs`): a
    tree whose absolute paths pass PATH_MAX is fingerprinted, not reported unreadable. Links are not followed
    below the top (the memory directory itself may be one)."""
    flags = os.O_RDONLY | os.O_DIRECTORY | (os.O_NOFOLLOW if parent is not None else 0)
    fd = os.open(directory, flags, dir_fd=parent)
    try:
        with os.scandir(fd) as listing:
            entries = sorted((e for e in listing if not e.name.startswith(".")), key=lambda e: e.name)
        for entry in entries:
            st = entry.stat(follow_symlinks=False)
            name = prefix + entry.name
            digest.update(
                f"{name}\0{st.st_mode}\0{st.st_ino}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\n".encode()
            )
            if entry.is_dir(follow_symlinks=False):
                _walk(entry.name, name + "/", digest, fd)
    finally:
        os.close(fd)


def signature(path: str) -> list[int] | None:
    """A settings file as it is on disk (inode, size, mtime): None when missing."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_ino, st.st_size, st.st_mtime_ns]


def listing(directory: str, child: str | None = None) -> list[str]:
    """The subdirectories of ``directory`` (those holding ``child``, when given), sorted."""
    try:
        with os.scandir(directory) as entries:
            names = [e.name for e in entries if e.is_dir()]
    except OSError:
        return []
    if child is not None:
        names = [n for n in names if os.path.isdir(os.path.join(directory, n, child))]
    return sorted(names)


def unchanged(*, hook: bool = True) -> bool:
    """True when the disk is as the last snapshot left it (then there is nothing to record). ``hook``: a hook runs
    this command, and its payload on stdin names the session's working directory."""
    try:
        with open(manifest_path(), "rb") as file:
            manifest = json.load(file)
    except (OSError, ValueError):
        return False
    if not isinstance(manifest, dict) or manifest.get("version") != MANIFEST_VERSION:
        return False
    if manifest.get("config") != config_dir():
        return False
    payload = _parse_stdin() if hook else None
    _stash[:] = [payload]
    cwd = payload.get("cwd") if payload is not None else None
    if cwd is not None and cwd not in manifest.get("cwds", ()):
        return False  # a session in a directory memdir has not placed yet
    try:
        return _same(manifest)
    except (TypeError, ValueError, AttributeError):
        return False  # a manifest of another shape: let the full snapshot rewrite it


def _same(manifest: dict[str, Any]) -> bool:
    for path, seen in manifest["files"].items():
        if signature(path) != seen:
            return False
    for key, seen in manifest["lists"].items():
        directory, _, child = key.partition("\0")
        if listing(directory, child or None) != seen:
            return False
    return all(same_mark(fingerprint(path), seen) for path, seen in manifest["dirs"].items())
