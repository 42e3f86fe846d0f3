"""Screening text at rest: files, directories and stores, for `memdir scan` (and a pre-commit hook).

`sweep` reads each text once and reports every finding with where it is (file and line) and a **masked
preview** of its line: each secret on the line replaced by its issuer's public prefix, if any, and its length
(``export GITHUB_TOKEN=ghp_****(40 chars)``). The secret itself is never part of a result.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import HistoryUnavailableError, NotFoundError
from ..paths import MemoryPath
from .secrets import SECRET_RULES

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from ..store import Entry, Store
    from .findings import Finding
    from .pipeline import WritePolicy

__all__ = ["Located", "mask", "sweep", "texts_in_history", "texts_in_paths", "texts_in_store"]

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


def texts_in_paths(paths: Iterable[Path]) -> Iterator[tuple[str, str]]:
    """(path, text) for each file named and each file below each directory named. Below a directory, hidden
    names (``.git``, ``.venv``, the directory store's own files) are left out; a file that is not UTF-8 text
    (an image, an archive) is skipped. OSError for a path that cannot be read."""
    for path in paths:
        if path.is_dir():
            for found in _walk(path):
                text = _text(found)
                if text is not None:
                    yield str(found), text
        else:
            text = _text(path, named=True)
            if text is not None:
                yield str(path), text


def _walk(top: Path) -> Iterator[Path]:
    for folder, dirs, files in os.walk(top):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if not name.startswith("."):
                yield Path(folder, name)


def _text(path: Path, *, named: bool = False) -> str | None:
    data = path.read_bytes() if named else _read_quietly(path)
    if data is None or b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _read_quietly(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:  # a socket or a file gone meanwhile, below a directory being walked: not the user's file
        return None


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
