"""``memdir claude-code status``: every Claude Code memory directory, and what in it needs a person's eye.

For each directory (`discover`): its files, bytes and last change; for its ``MEMORY.md``, whether Claude Code
loads all of it (only the first 200 lines or 25 KB, whichever comes first, reach a session: the lines past that
are named, with the fix); the secrets the write policy's scanner finds in any of its files (file, line, rule:
never the secret); and the notes whose frontmatter cannot be read or lacks its fields (memdir.automemory's
reader). Read-only: nothing is written anywhere, inside Claude Code's directories or memdir's.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._format import human_size, split_lines
from ..automemory import INDEX_MAX_BYTES, INDEX_MAX_LINES, cut_index, read_frontmatter
from ..policy import WritePolicy
from ..policy.sweep import mask
from ._discover import discover
from ._locate import Claude, Location
from ._stores import store_id

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["DirectoryStatus", "IndexLoad", "Problem", "Report", "render", "status"]

INDEX = "MEMORY.md"


@dataclass(frozen=True)
class Problem:
    """A secret or a frontmatter problem in one file (``line`` 1-based; 0: in the file's name)."""

    path: str  # relative to the memory directory
    line: int
    what: str

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "what": self.what}


@dataclass(frozen=True)
class IndexLoad:
    """How much of ``MEMORY.md`` a Claude Code session loads."""

    lines: int
    size: int
    loaded_lines: int  # whole lines loaded (all of them when ``whole``)
    loaded_size: int  # bytes loaded: the judge of ``whole`` (one overlong line is cut inside, its count unchanged)

    @property
    def whole(self) -> bool:
        return self.loaded_size >= self.size

    def to_json(self) -> dict[str, Any]:
        return {"lines": self.lines, "bytes": self.size, "loaded_lines": self.loaded_lines,
                "loaded_bytes": self.loaded_size, "whole": self.whole}  # fmt: skip


@dataclass
class DirectoryStatus:
    location: Location
    files: int = 0
    size: int = 0
    last_change: float | None = None
    index: IndexLoad | None = None
    secrets: list[Problem] = field(default_factory=list)
    frontmatter: list[Problem] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)

    @property
    def namespace(self) -> str:
        return store_id(self.location.directory)

    def to_json(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            **self.location.to_json(),
            "files": self.files,
            "bytes": self.size,
            "last_change": self.last_change,
            "index": None if self.index is None else self.index.to_json(),
            "secrets": [p.to_json() for p in self.secrets],
            "frontmatter": [p.to_json() for p in self.frontmatter],
            "unreadable": self.unreadable,
        }


@dataclass
class Report:
    claude: Claude
    directories: list[DirectoryStatus]
    notes: list[str]  # settings Claude Code ignores (an autoMemoryDirectory that is not absolute...)

    def to_json(self) -> dict[str, Any]:
        return {
            "config": str(self.claude.config),
            "directories": [d.to_json() for d in self.directories],
            "notes": self.notes,
        }


def status(claude: Claude | None = None) -> Report:
    claude = claude or Claude.here()
    notes: list[str] = []
    directories = [_look(location) for location in discover(claude, notes=notes)]
    return Report(claude, directories, sorted(set(notes)))


def _look(location: Location) -> DirectoryStatus:
    found = DirectoryStatus(location)
    for relative, path, st in _files(str(location.directory)):
        relative, named = _name(relative)
        found.secrets += named
        found.files += 1
        found.size += st.st_size
        found.last_change = max(found.last_change or 0.0, st.st_mtime)
        try:
            with open(path, "rb") as file:
                text = file.read().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            found.unreadable.append(relative)
            continue
        if relative == INDEX:
            found.index = _index_load(text)
        # The write policy's secret rules (memdir.policy.secrets, disguises seen through), the ones that redact a
        # secret written through memdir: what they would have caught, Claude Code wrote in unscreened.
        found.secrets += [Problem(relative, f.line, f.rule) for f in _SECRETS.secrets_in(text)]
        if relative.endswith(".md") and relative != INDEX:
            found.frontmatter += _frontmatter(relative, text)
    return found


_SECRETS = WritePolicy()


def _name(relative: str) -> tuple[str, list[Problem]]:
    """A file's name as status shows it, each secret in it masked as `memdir scan` masks one (a token pasted as a
    file name is still a token, and status promises never to print one), and those secrets, reported."""
    secrets = _SECRETS.secrets_in(relative)
    if not secrets:
        return relative, []
    parts, cursor = [], 0
    for secret in secrets:
        start, end = secret.span
        if start >= cursor:
            parts += [relative[cursor:start], mask(secret.rule, relative[start:end])]
            cursor = end
    shown = "".join([*parts, relative[cursor:]])
    return shown, [Problem(shown, 0, secret.rule) for secret in secrets]


def _files(directory: str) -> Iterator[tuple[str, str, os.stat_result]]:
    """The non-hidden regular files below ``directory`` (as the store sees them: links are not followed)."""
    stack = [(directory, "")]
    while stack:
        folder, prefix = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = sorted((e for e in listing if not e.name.startswith(".")), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                stack.append((entry.path, f"{prefix}{entry.name}/"))
            elif entry.is_file(follow_symlinks=False):
                yield f"{prefix}{entry.name}", entry.path, entry.stat(follow_symlinks=False)


def _index_load(text: str) -> IndexLoad:
    cut = cut_index(text)
    whole_lines = len(split_lines(text)) if cut == text else cut.count("\n")  # a cut inside a line: not whole
    return IndexLoad(len(split_lines(text)), len(text.encode("utf-8")), whole_lines, len(cut.encode("utf-8")))


def _frontmatter(relative: str, text: str) -> list[Problem]:
    front = read_frontmatter(text)
    if front is None:
        return []
    if front.error is not None:
        return [Problem(relative, 1, f"frontmatter cannot be read: {front.error}")]
    return [Problem(relative, 1, f"frontmatter: {problem}") for problem in front.problems]


# -- as text -----------------------------------------------------------------------------------------------------


def render(report: Report) -> str:
    """The report as `memdir claude-code status` prints it."""
    home = str(report.claude.home)
    shown = _shorten(home)
    projects = sum(d.location.kind == "project" for d in report.directories)
    agents = len(report.directories) - projects
    lines = [
        f"Claude Code memory in {shown(str(report.claude.config))}: "
        f"{_count(projects, 'project directory', 'project directories')}, {_count(agents, 'agent', 'agents')}"
    ]
    for directory in report.directories:
        lines += ["", *_directory_lines(directory, shown)]
    if report.notes:
        lines += ["", "Settings:", *(f"  {shown(note)}" for note in report.notes)]
    return "\n".join(lines)


def _directory_lines(d: DirectoryStatus, shown: Any) -> list[str]:
    last = "never" if d.last_change is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(d.last_change))
    lines = [
        shown(d.location.label),
        f"  {shown(str(d.location.directory))}: {_count(d.files, 'file', 'files')}, {human_size(d.size)}, "
        f"last change {last}",
        f"  namespace {d.namespace}",
    ]
    if d.location.reason.startswith("autoMemoryDirectory"):
        lines.append(f"  moved there by {shown(d.location.reason)}")
    if d.index is not None:
        lines.append(f"  {_index_line(d.index)}")
    lines += [f"  secret: {p.path} {f'line {p.line}' if p.line else 'in its name'}: {p.what}" for p in d.secrets]
    lines += [f"  note: {p.path}: {p.what}" for p in d.frontmatter]
    lines += [f"  unreadable (not UTF-8 text): {path}" for path in d.unreadable]
    return lines


def _index_line(index: IndexLoad) -> str:
    size = f"{_count(index.lines, 'line', 'lines')}, {human_size(index.size)}"
    if index.whole:
        return f"MEMORY.md: {size}: Claude Code loads all of it"
    limit = f"{INDEX_MAX_LINES} lines or {INDEX_MAX_BYTES // 1024} KB"
    if index.loaded_lines == 0:  # the first line alone is over the byte limit
        loaded, dropped = f"the first {INDEX_MAX_BYTES // 1024} KB of line 1", "the rest is"
    else:
        loaded, rest = _line_span(1, index.loaded_lines), index.lines - index.loaded_lines
        dropped = f"{_line_span(index.loaded_lines + 1, index.lines)} {'is' if rest == 1 else 'are'}"
    return (
        f"MEMORY.md: {size}: Claude Code loads only {loaded} (the first {limit}); {dropped} not loaded. Move the "
        "detail into topic files and keep one short line per note in MEMORY.md."
    )


def _line_span(first: int, last: int) -> str:
    return f"line {first}" if first == last else f"lines {first}-{last}"


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _shorten(home: str) -> Any:
    def shown(text: str) -> str:
        return text.replace(home + os.sep, "~" + os.sep)  # paths in the home directory, as people write them

    return shown
