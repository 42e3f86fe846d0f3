"""Screening text at rest: files, directories and stores, for `memdir scan` (and a pre-commit hook).

`sweep` reads each text once and reports every finding with where it is (file and line) and a **masked
preview** of its line: each secret on the line replaced by its issuer's public prefix, if any, and its length
(``export GITHUB_TOKEN=ghp_****(40 chars)``). The secret itself is never part of a result.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import HistoryUnavailableError, NotFoundError
from ..paths import MemoryPath
from .secrets import SECRET_RULES

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

    from ..store import Entry, Store
    from .findings import Finding
    from .pipeline import WritePolicy

__all__ = ["Located", "mask", "sweep", "texts_in_history", "texts_in_store", "texts_on_disk"]

_PREVIEW = 120  # characters of a line shown
# What a masked secret may still show: the issuer's fixed prefix (`ghp_`, `AKIA`), public by definition.
_PREFIXES = {rule.name: tuple(sorted(rule.hints, key=len, reverse=True)) for rule in SECRET_RULES if not rule.fold}


@dataclass(frozen=True, slots=True)
class Located:
    """A finding in a named text: ``where`` is a file path or a memory path."""

    where: str
    finding: Finding
    preview: str

    def to_json(self) -> dict[str, object]:
        return {"file": self.where, **self.finding.to_json(), "preview": self.preview}


def mask(rule: str, value: str) -> str:
    """``value`` (a secret ``rule`` found) as a preview shows it: its public prefix and its length."""
    prefix = next((p for p in _PREFIXES.get(rule, ()) if value.startswith(p)), "")
    return f"{prefix}****({len(value)} chars)"


def sweep(
    texts: Iterable[tuple[str, str]], policy: WritePolicy, *, untrusted: bool = False, secrets_only: bool = False
) -> Iterator[Located]:
    """The findings in each (where, text), in order, with the actions ``policy`` would take."""
    for where, text in texts:
        findings = [f for f in policy.findings(text, untrusted=untrusted) if not secrets_only or f.kind == "secret"]
        secrets = [f for f in findings if f.kind == "secret"]
        for finding in findings:
            yield Located(where, finding, _preview(text, finding, secrets))


def _preview(text: str, finding: Finding, secrets: list[Finding]) -> str:
    """The finding's line, each secret on it masked, cut to `_PREVIEW` characters around the finding."""
    start = text.rfind("\n", 0, finding.span[0]) + 1
    end = text.find("\n", finding.span[0])
    end = len(text) if end < 0 else end
    parts, cursor, anchor = [], start, 0
    for other in sorted(secrets, key=lambda f: f.span):
        lo, hi = other.span
        if hi <= start or lo >= end:
            continue
        parts.append(text[cursor : max(cursor, lo)])
        if other is finding:
            anchor = sum(map(len, parts))
        parts.append(mask(other.rule, text[lo:hi]))
        cursor = max(cursor, hi)
    parts.append(text[cursor:end] if cursor < end else "")
    line = "".join(parts).replace("\t", " ")
    if len(line) <= _PREVIEW:
        return line.strip()
    lo = max(0, min(anchor - _PREVIEW // 3, len(line) - _PREVIEW))
    return ("…" if lo else "") + line[lo : lo + _PREVIEW].strip() + ("…" if lo + _PREVIEW < len(line) else "")


def texts_on_disk(path: Path, unreadable: Callable[[OSError], None]) -> Iterator[tuple[str, str]]:
    """(name, text) for the file ``path``, or for each text file below the directory ``path``. OSError when
    ``path`` itself cannot be read; ``unreadable`` for each directory or file below it that cannot be.

    A scan that finds nothing says so, so it must not pass over what it could not read: what cannot be read is
    reported, and the walk goes on with the rest. A file named is read whatever its encoding, as standard input is
    (a Latin-1 note can hold a key as well as a UTF-8 one); below a directory, binary files (a NUL in their first
    bytes, as git judges: images, archives) are left out, and so are hidden names (``.git``, ``.venv``, a directory
    store's own files)."""
    if not path.is_dir():
        yield str(path), _decoded(path.read_bytes())
        return
    for found in _walk(path, unreadable):
        data = _read_below(found, unreadable)
        if data is not None and b"\0" not in data[:_SNIFF]:
            yield str(found), _decoded(data)


_SNIFF = 8192  # bytes looked at for a NUL


def _walk(top: Path, unreadable: Callable[[OSError], None]) -> Iterator[Path]:
    # onerror: os.walk would otherwise leave out a directory it cannot list, and say nothing.
    for folder, dirs, files in os.walk(top, onerror=unreadable):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if not name.startswith("."):
                yield Path(folder, name)


def _read_below(path: Path, unreadable: Callable[[OSError], None]) -> bytes | None:
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None  # a socket, a device, a FIFO (reading one would wait for a writer): not a file anyone wrote
        return path.read_bytes()
    except FileNotFoundError:
        return None  # removed while the walk went on, or a link to nothing
    except OSError as exc:
        unreadable(exc)
        return None


def _decoded(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def texts_in_store(store: Store) -> Iterator[tuple[str, str]]:
    """(memory path, text) for every file in ``store`` that is UTF-8 text."""
    for entry in _entries(store):
        data = store.read(entry.path).content
        try:
            yield entry.path.virtual, data.decode("utf-8")
        except UnicodeDecodeError:
            continue


def texts_in_history(store: Store) -> Iterator[tuple[str, str]]:
    """(``PATH@VERSION``, text) for each earlier content in ``store``'s history that no current file holds, each
    once, named by the last version that had it: what `memdir redact` can remove. Pruned and redacted contents are
    not there to read; a store without history has none."""
    current = {entry.sha256 for entry in _entries(store)}
    last: dict[str, tuple[MemoryPath, int]] = {}
    try:
        versions = list(store.log())
    except HistoryUnavailableError:
        return
    for version in versions:  # oldest first: the last one assigned is the last that had the content
        if version.sha256 is not None and version.sha256 not in current:
            last[version.sha256] = (version.path, version.version)
    for sha, (path, number) in sorted(last.items(), key=lambda item: (item[1][0].parts, item[1][1])):
        try:
            yield f"{path.virtual}@{number}", store.read_blob(sha).decode("utf-8")
        except (NotFoundError, UnicodeDecodeError):  # pruned, redacted, or not text
            continue


def _entries(store: Store) -> list[Entry]:
    try:
        return store.list_files(MemoryPath(()))
    except NotFoundError:  # an empty store
        return []
