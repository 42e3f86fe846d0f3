"""``memdir doctor``: find what is wrong with a store's files and, asked to, repair what can be repaired.

It works from the store's URL, not through `open_store`: the point is to help when the store no longer opens.
`diagnose` returns a `Report` of `Finding` objects, each with a severity and, after a repair, what was done.

Directory store (``PATH``, ``file:PATH``)
    - the sidecar index (``.memdir/index.db``) missing, or damaged (not a database, ``PRAGMA
      integrity_check`` failing): repair moves the damaged file aside (``index.db.corrupt-<UTC time>``, with
      its ``-wal``/``-shm``; never deleted) and rebuilds the index from the files on disk. Each current file
      becomes one version, op ``import``, actor ``import``, timed at the file's mtime; the older history is
      in the file moved aside, for a person (or a future tool) to dig out;
    - namespace counters that disagree with the index, versions whose content is missing (as for SQLite);
    - changes committed to the index but not yet put in place on disk (a writer killed between the two):
      reported; memdir finishes them when the namespace is next used, and repair does it now. Their temporary
      files hold committed content and are not leftovers;
    - leftover ``.memdir-tmp-*`` files of a write that crashed: removed (under the writer lock, so a write
      in progress is never touched);
    - modes other than ``0600`` (files) / ``0700`` (directories): fixed;
    - symlinks, files with other names (hard links), non-regular files, names the path rules refuse, non-UTF-8
      names or contents: reported only; memdir never follows, opens or deletes them;
    - files changed outside memdir: reported; repair records them (listing the store does the same).

SQLite store (``sqlite:PATH``)
    - a damaged database: repair copies what can still be read into a new file, table by table and from
      both ends of each table (``iterdump`` stops at the first bad page and loses every table after it),
      moves the original aside (``<name>.corrupt-<UTC time>``, never deleted) and puts the copy in its place;
    - versions whose content is missing: reported (it cannot be made up);
    - namespace counters (files, bytes, last version) that disagree with the tables: fixed;
    - file modes other than ``0600``: fixed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import fcntl
import functools
import os
import sqlite3
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from .config import default_store_url
from .errors import ConfigError, MemdirError, PathError, StorageError
from .paths import ROOT, MemoryPath, is_valid_segment, parse
from .store import open_store
from .store._base import DEFAULT_NAMESPACE, Origin, check_namespace, sha256_hex
from .store._fs import DIR_MODE, FILE_MODE, TEMP_PREFIX, linked, open_root, read_at, scan_tree, walk
from .store._sql import PendingOp, SqlIndex, connect, pending_by_namespace
from .store.directory import INDEX_NAME, SIDECAR, DirectoryStore, namespace_root

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from .store._fs import DirHandle

__all__ = ["Finding", "Report", "Severity", "diagnose"]

Severity = Literal["info", "warning", "error"]

_REBUILT = Origin(actor="import", source="memdir doctor: index rebuilt from the files on disk")
_IMAGES = (".png", ".jpg", ".jpeg")  # binary on purpose: not reported as non-UTF-8
_MAX_CONTENT_CHECK = 64 * 1024 * 1024
_LOCK_WAIT = 10.0  # seconds to wait for a writer to finish before giving up on a namespace


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing found. ``where`` is relative to the store; ``repaired`` says what a repair did (None: nothing).
    ``info`` findings are not problems."""

    severity: Severity
    where: str
    problem: str
    repaired: str | None = None

    @property
    def remains(self) -> bool:
        return self.severity != "info" and self.repaired is None


@dataclass(slots=True)
class Report:
    url: str
    kind: str
    findings: list[Finding] = field(default_factory=list)

    def add(self, severity: Severity, where: str, problem: str, repaired: str | None = None) -> int:
        """Record a finding; its index, for `repaired`."""
        self.findings.append(Finding(severity, where, problem, repaired))
        return len(self.findings) - 1

    def repaired(self, index: int, action: Callable[[], str | None]) -> None:
        """Run the repair of finding ``index`` and record what it did. A repair that fails becomes a finding
        of its own (the problem then remains)."""
        try:
            done = action()
        except (MemdirError, OSError, sqlite3.Error) as exc:
            self.add("error", self.findings[index].where, f"the repair failed: {_reason(exc)}")
            return
        if done is not None:
            self.findings[index] = dataclasses.replace(self.findings[index], repaired=done)

    @property
    def problems(self) -> list[Finding]:
        return [f for f in self.findings if f.severity != "info"]

    @property
    def ok(self) -> bool:
        """True when no problem remains (after the repairs, if any were made)."""
        return not any(f.remains for f in self.findings)


def diagnose(url: str | None = None, *, repair: bool = False) -> Report:
    """Check the store at ``url`` (the default store when None); with ``repair``, fix what can be fixed."""
    target = url if url is not None else default_store_url()
    kind, location = _locate(target)
    report = Report(target, kind)
    try:
        if kind == "directory":
            _DirectoryDoctor(Path(location).expanduser(), report, repair).run()
        elif kind == "sqlite":
            _SQLiteDoctor(Path(location).expanduser(), report, repair).run()
        elif kind == "memory":
            report.add("info", "store", "an in-memory store lives inside one process: nothing on disk to check")
        else:
            _check_generic(target, report)
    except ConfigError:
        raise  # an unusable URL is the caller's error, reported like any other command's
    except (MemdirError, OSError, sqlite3.Error) as exc:
        report.add("error", "store", f"the check could not finish: {_reason(exc)}")
    return report


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError):
        return (exc.strerror or type(exc).__name__).lower()
    return str(exc).removeprefix("Error: ")


def _locate(url: str) -> tuple[str, str]:
    """The backend kind and location a URL names, the way `open_store` reads it, without opening anything."""
    if not url:
        raise ConfigError("empty store URL")
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    if len(scheme) <= 1 or "/" in scheme or "\\" in scheme:
        return "directory", url
    rest = url.split(":", 1)[1]
    rest = rest[2:] if rest.startswith("//") else rest
    if scheme in ("file", "sqlite") and not rest:
        raise ConfigError(f"a {scheme}: URL needs a path")
    return {"file": "directory"}.get(scheme, scheme), rest


def _check_generic(url: str, report: Report) -> None:
    """A backend doctor knows nothing about: open it and compare its counters with a listing."""
    with open_store(url) as store:
        usage, files = store.usage(), store.list_files()
    if (usage.files, usage.bytes) != (len(files), sum(f.size for f in files)):
        report.add("warning", "store", f"usage says {usage.files} files, a listing finds {len(files)}")


# -- shared: the SQLite schema (the SQLite store, and the directory store's sidecar) -------------------------


def _damage(path: Path) -> str | None:
    """Why the database at ``path`` is damaged, or None when SQLite finds it sound."""
    # SQLite reads the header itself: a plain open()/close() here would drop every SQLite lock this process
    # holds on the file (POSIX closes all of a process's locks on a file with any of its descriptors).
    try:
        with contextlib.closing(_open_readonly(path)) as conn:
            rows = conn.execute("PRAGMA integrity_check").fetchall()
    except sqlite3.DatabaseError as exc:
        return str(exc)
    if rows != [("ok",)]:
        return f"integrity check failed: {rows[0][0]}"
    return None


def _open_readonly(path: Path) -> sqlite3.Connection:
    # Read-only, so a check never changes the file it inspects; WAL mode needs the -shm file writable, so
    # fall back to a normal connection (which still writes nothing unless asked).
    try:
        conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.OperationalError:
        return sqlite3.connect(path)


def _check_schema(conn: sqlite3.Connection, report: Report, where: str, repair: bool) -> None:
    """Namespace counters against the tables (fixed), and content missing for versions (reported)."""
    try:
        for ns in _uncounted(conn):
            if repair:  # an empty row: the counter check just below then sets it from the tables
                conn.execute("INSERT INTO namespaces (ns) VALUES (?)", (ns,))
            else:
                report.add("error", f"{where}: namespace {ns}", "the namespace has no counters row")
        for ns, counted, actual in _counter_mismatches(conn):
            done = _fix_counters(conn, ns, actual) if repair else None
            report.add(
                "error",
                f"{where}: namespace {ns}",
                f"counters say {_counts(counted)}; the tables hold {_counts(actual)}",
                done,
            )
        for ns, lost in _missing_content(conn):
            report.add("error", f"{where}: namespace {ns}", f"the content of {_n(lost, 'version')} is missing")
    except sqlite3.Error as exc:
        report.add("error", where, f"could not check the tables: {exc}")


def _uncounted(conn: sqlite3.Connection) -> list[str]:
    rows = conn.execute(
        "SELECT ns FROM versions UNION SELECT ns FROM files EXCEPT SELECT ns FROM namespaces ORDER BY 1"
    ).fetchall()
    return [str(r[0]) for r in rows]


def _counter_mismatches(conn: sqlite3.Connection) -> list[tuple[str, tuple[int, int, int], tuple[int, int, int]]]:
    rows = conn.execute(
        "SELECT n.ns, n.files, n.bytes, n.last_version,"
        " (SELECT count(*) FROM files f WHERE f.ns = n.ns),"
        " (SELECT coalesce(sum(size), 0) FROM files f WHERE f.ns = n.ns),"
        " (SELECT coalesce(max(version), 0) FROM versions v WHERE v.ns = n.ns)"
        " FROM namespaces n ORDER BY n.ns"
    ).fetchall()
    # A last_version above the highest version is harmless (numbers skip); below it, the next write collides.
    return [
        (str(r[0]), (r[1], r[2], r[3]), (r[4], r[5], max(r[3], r[6])))
        for r in rows
        if (r[1], r[2]) != (r[4], r[5]) or r[3] < r[6]
    ]


def _fix_counters(conn: sqlite3.Connection, ns: str, actual: tuple[int, int, int]) -> str:
    conn.execute("UPDATE namespaces SET files = ?, bytes = ?, last_version = ? WHERE ns = ?", (*actual, ns))
    return "counters set from the tables"


def _counts(counts: tuple[int, int, int]) -> str:
    return f"{_n(counts[0], 'file')}, {_n(counts[1], 'byte')}, last version {counts[2]}"


def _n(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def _missing_content(conn: sqlite3.Connection) -> list[tuple[str, int]]:
    rows = conn.execute(
        "SELECT ns, count(*) FROM versions v WHERE sha256 IS NOT NULL"
        " AND NOT EXISTS (SELECT 1 FROM blobs b WHERE b.ns = v.ns AND b.sha256 = v.sha256) GROUP BY ns ORDER BY ns"
    ).fetchall()
    return [(str(ns), int(n)) for ns, n in rows]


def _move_aside(path: Path) -> Path:
    """Rename a damaged database, and its -wal/-shm (a stale WAL must never meet a new database), to
    ``<name>.corrupt-<UTC time>``. Nothing is deleted."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    aside = path.with_name(f"{path.name}.corrupt-{stamp}")
    counter = 1
    while aside.exists():
        counter += 1
        aside = path.with_name(f"{path.name}.corrupt-{stamp}-{counter}")
    os.rename(path, aside)
    for suffix in ("-wal", "-shm"):
        companion = path.with_name(path.name + suffix)
        if companion.exists():
            os.rename(companion, aside.with_name(aside.name + suffix))
    return aside


def _create_private(path: Path) -> None:
    """Create an empty file ``0600`` before SQLite creates it with the umask's mode (its -wal and -shm
    inherit the database's mode)."""
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_CLOEXEC, FILE_MODE)
    os.fchmod(fd, FILE_MODE)
    os.close(fd)


def _fix_mode(parent: Path | int, name: str, mode: int) -> str | None:
    # follow_symlinks=False: if the entry was swapped for a link since it was looked at, the link's target
    # is never touched (Linux refuses to chmod a link itself).
    try:
        if isinstance(parent, int):
            os.chmod(name, mode, dir_fd=parent, follow_symlinks=False)
        else:
            os.chmod(parent / name, mode, follow_symlinks=False)
    except (OSError, NotImplementedError):
        return None
    return f"mode set to {mode:04o}"


def _check_mode(report: Report, where: str, st: os.stat_result, parent: Path | int, name: str, repair: bool) -> None:
    want = DIR_MODE if stat.S_ISDIR(st.st_mode) else FILE_MODE
    have = stat.S_IMODE(st.st_mode)
    if have != want:
        done = _fix_mode(parent, name, want) if repair else None
        report.add("warning", where, f"mode {have:04o}, should be {want:04o} (memory is private)", done)


# -- the SQLite store ------------------------------------------------------------------------------------------


class _SQLiteDoctor:
    def __init__(self, path: Path, report: Report, repair: bool) -> None:
        self.path = path
        self.report = report
        self.repair = repair

    def run(self) -> None:
        if not self.path.is_file():
            self.report.add("error", self.path.name, "no SQLite store at this location")
            return
        self._check_modes()
        damage = _damage(self.path)
        if damage is None:
            self._check_tables()
            return
        index = self.report.add("error", self.path.name, f"the database is damaged ({damage})")
        if self.repair:
            self.report.repaired(index, self._salvage)
            if not self.report.findings[index].remains:
                self._check_tables()  # the salvaged copy: its counters may need fixing, content may be missing

    def _check_tables(self) -> None:
        with contextlib.closing(connect(self.path)) as conn:
            _check_schema(conn, self.report, self.path.name, self.repair)

    def _check_modes(self) -> None:
        for suffix in ("", "-wal", "-shm"):
            name = self.path.name + suffix
            with contextlib.suppress(FileNotFoundError):
                st = os.lstat(self.path.parent / name)
                if stat.S_ISREG(st.st_mode):
                    _check_mode(self.report, name, st, self.path.parent, name, self.repair)

    def _salvage(self) -> str | None:
        """Copy what is readable into a new file; when anything was, it replaces the original (moved aside)."""
        copy = self.path.with_name(f"{self.path.name}.salvage-{os.getpid()}")
        _create_private(copy)
        try:
            rows = _copy_readable(self.path, copy)
        except sqlite3.DatabaseError:
            copy.unlink()
            # Nothing readable at all: the original stays where it is, for a person to decide.
            problem = "nothing in it can be read, so nothing was salvaged; move it away to start an empty store"
            self.report.add("error", self.path.name, problem)
            return None
        aside = _move_aside(self.path)
        os.rename(copy, self.path)
        return f"{_n(rows, 'row')} salvaged into a new database; the original is kept as {aside.name}"


def _copy_readable(source: Path, dest: Path) -> int:
    """Copy every table's readable rows from ``source`` into ``dest``; the number of rows copied.
    `sqlite3.DatabaseError` when not even the schema can be read."""
    with contextlib.closing(_open_readonly(source)) as src, contextlib.closing(sqlite3.connect(dest)) as dst:
        schema = src.execute("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL").fetchall()
        tables = [(name, sql) for kind, name, sql in schema if kind == "table" and not name.startswith("sqlite_")]
        copied = 0
        for name, sql in tables:
            with contextlib.suppress(sqlite3.DatabaseError):  # a table that cannot be read is lost, not the rest
                dst.execute(sql)
                copied += _copy_table(src, dst, name)
        for kind, _, sql in schema:
            if kind == "index":
                with contextlib.suppress(sqlite3.Error):
                    dst.execute(sql)
        dst.commit()
        return copied


def _copy_table(src: sqlite3.Connection, dst: sqlite3.Connection, name: str) -> int:
    """Rows read in key order until a damaged page stops the scan, then in reverse key order from the other
    end: only the rows on damaged pages are lost."""
    quoted = '"' + name.replace('"', '""') + '"'
    columns = src.execute(f"PRAGMA table_info({quoted})").fetchall()
    keys = [f'"{c[1]}"' for c in sorted(columns, key=lambda c: c[5]) if c[5]] or ["rowid"]
    marks = ",".join("?" * len(columns))
    for order in ("ASC", "DESC"):
        query = f"SELECT * FROM {quoted} ORDER BY " + ", ".join(f"{k} {order}" for k in keys)
        with contextlib.suppress(sqlite3.DatabaseError):
            for row in src.execute(query):
                dst.execute(f"INSERT OR IGNORE INTO {quoted} VALUES ({marks})", row)
    return int(dst.execute(f"SELECT count(*) FROM {quoted}").fetchone()[0])


# -- the directory store ---------------------------------------------------------------------------------------


class _DirectoryDoctor:
    def __init__(self, base: Path, report: Report, repair: bool) -> None:
        self.base = base.absolute()
        self.index = self.base / SIDECAR / INDEX_NAME
        self.report = report
        self.repair = repair
        # Operations still pending after this run (namespace -> rows): their temporary files are not leftovers,
        # their paths not outside changes.
        self.pending: dict[str, list[PendingOp]] = {}

    def run(self) -> None:
        if not self.base.is_dir() or not any((self.base / n).exists() for n in ("memories", "namespaces", SIDECAR)):
            self.report.add("error", str(self.base), "no memdir directory store at this location")
            return
        _check_mode(self.report, ".", os.stat(self.base), self.base.parent, self.base.name, self.repair)
        damage = _damage(self.index) if self.index.exists() else None
        if self.index.exists() and damage is None:
            self._pending_changes()  # first: a repair puts them in place before the walk looks for leftovers
        self._walk_tree()
        if self._index_sound(damage):
            with contextlib.closing(connect(self.index)) as conn:
                _check_schema(conn, self.report, f"{SIDECAR}/{INDEX_NAME}", self.repair)
                self._outside_changes(conn)

    # -- changes committed but not yet visible

    def _pending_changes(self) -> None:
        for namespace, rows in _pending_ops(self.index).items():
            # A live writer records that its changes are done with its next command (`_Noted`): rows whose
            # change is visibly in place are not news, and the next writer drops them.
            ops = [op for op in rows if self._outstanding(namespace, op)]
            if not ops:
                continue
            problem = (
                f"{_n(len(ops), 'committed change')} not yet put in place on disk (a writer was stopped before it "
                "could; done when the store is next used)"
            )
            index = self.report.add("info", f"namespace {namespace}", problem)
            if self.repair:
                self.report.repaired(index, functools.partial(self._finish_pending, namespace))
            if self.report.findings[index].repaired is None:
                self.pending[namespace] = ops

    def _finish_pending(self, namespace: str) -> str:
        with DirectoryStore(self.base, namespace=namespace):
            pass  # opening a namespace finishes what its writers left undone
        return "put in place (files edited by hand meanwhile are kept, and recorded as versions by actor `external`)"

    def _outstanding(self, namespace: str, op: PendingOp) -> bool:
        """Whether ``op`` is not yet in place: its temporary file, or the file it removes or moves, is still
        there (an existence check: doctor reads a damaged tree without judging content here)."""
        top = self.base / ("memories" if namespace == DEFAULT_NAMESPACE else f"namespaces/{namespace}")
        if op.op == "install":
            assert op.temp is not None
            return os.path.lexists(top / op.path.rpartition("/")[0] / op.temp)
        return os.path.lexists(top / (op.old_path if op.op == "rename" and op.old_path else op.path))

    def _committed_temp(self, here: str) -> bool:
        """Whether ``here`` (as the walk names it) is the temporary file of a pending change."""
        for namespace, ops in self.pending.items():
            top = "memories" if namespace == DEFAULT_NAMESPACE else f"namespaces/{namespace}"
            for op in ops:
                parent = op.path.rpartition("/")[0]
                if op.temp is not None and here == "/".join(filter(None, (top, parent, op.temp))):
                    return True
        return False

    # -- the sidecar index

    def _index_sound(self, damage: str | None) -> bool:
        """``damage``: what `_damage` found in the index, if it exists."""
        where = f"{SIDECAR}/{INDEX_NAME}"
        if not self.index.exists():
            index = self.report.add("warning", where, "the history index is missing (the history is lost)")
        else:
            if damage is None:
                return True
            index = self.report.add("error", where, f"the history index is damaged ({damage})")
        if self.repair:
            self.report.repaired(index, self._rebuild)
        return False

    def _rebuild(self) -> str:
        aside = _move_aside(self.index) if self.index.exists() else None
        self.index.parent.mkdir(mode=DIR_MODE, exist_ok=True)
        _create_private(self.index)
        files = 0
        for namespace, root in self._namespaces():
            index = SqlIndex(self.index, namespace)
            try:
                files += self._record_files(index, root)
            finally:
                index.close()
        kept = f"the damaged index is kept as {aside.name}; " if aside is not None else ""
        return f"{kept}index rebuilt from the {_n(files, 'file')} on disk (op and actor `import`)"

    def _record_files(self, index: SqlIndex, root: Path) -> int:
        with _writer_lock(root) as handle, index.transaction("rebuild the index") as conn:
            found = sorted(scan_tree(handle, MemoryPath.root()), key=lambda item: item[0].parts)
            for path, _ in found:
                with walk(handle, path.parent) as parent:
                    content, st = read_at(parent, path.name, path)
                index.record_write(
                    conn, path.key, sha=sha256_hex(content), content=content, op="import",
                    origin=_REBUILT, stamp=st.stamp, ts=st.mtime, replaced=None,  # a new index: no file yet
                )  # fmt: skip
            return len(found)

    def _outside_changes(self, conn: sqlite3.Connection) -> None:
        for namespace, root in self._namespaces():
            unfinished = {key for op in self.pending.get(namespace, []) for key in (op.path, op.old_path) if key}
            changed = _changed_outside(conn, namespace, root, unfinished)
            if not changed:
                continue
            problem = f"{_n(changed, 'file')} changed outside memdir (recorded as versions when the store is next used)"
            index = self.report.add("info", f"namespace {namespace}", problem)
            if self.repair:
                self.report.repaired(index, functools.partial(self._record_outside_changes, namespace))

    def _record_outside_changes(self, namespace: str) -> str:
        with DirectoryStore(self.base, namespace=namespace) as store:
            store.list_files()  # listing records every outside change, as any use of the store would
        return "recorded as versions by actor `external`"

    def _namespaces(self) -> Iterator[tuple[str, Path]]:
        if (self.base / "memories").is_dir():
            yield DEFAULT_NAMESPACE, namespace_root(self.base, DEFAULT_NAMESPACE)
        others = self.base / "namespaces"
        if not others.is_dir():
            return
        with os.scandir(others) as listing:
            names = sorted(e.name for e in listing if e.is_dir(follow_symlinks=False) and _valid_namespace(e.name))
        for name in names:
            yield name, namespace_root(self.base, name)

    # -- the files

    def _walk_tree(self) -> None:
        for name in ("memories", "namespaces", SIDECAR):
            st = _lstat(self.base, name)
            if st is None:
                continue
            if not stat.S_ISDIR(st.st_mode):
                self.report.add("warning", name, "should be a directory; memdir will not use it")
                continue
            _check_mode(self.report, name, st, self.base, name, self.repair)
            if name == "namespaces":
                self._walk_namespaces()
            else:
                self._walk_root(self.base / name, name, tree=name == "memories")

    def _walk_namespaces(self) -> None:
        fd = os.open(self.base / "namespaces", _DIR_FLAGS)
        try:
            with os.scandir(fd) as listing:
                entries = sorted(listing, key=lambda e: e.name)
            for entry in entries:
                where = f"namespaces/{_shown(entry.name)}"
                st = entry.stat(follow_symlinks=False)
                if not stat.S_ISDIR(st.st_mode) or not _valid_namespace(entry.name):
                    self.report.add("warning", where, "not a namespace directory memdir can use; left alone")
                    continue
                _check_mode(self.report, where, st, fd, entry.name, self.repair)
                self._walk_root(self.base / "namespaces" / entry.name, where, tree=True)
        finally:
            os.close(fd)

    def _walk_root(self, root: Path, where: str, *, tree: bool) -> None:
        """Walk one namespace's tree (``tree``) or the sidecar directory. A namespace is walked under the
        writer lock when repairing, so a temporary file is removed only when no write can be using it."""
        with _writer_lock(root) if self.repair and tree else _no_lock(root) as handle:
            self._visit(handle.fd, where, tree=tree)

    def _visit(self, fd: int, where: str, *, tree: bool) -> None:
        with os.scandir(fd) as listing:
            entries = sorted(listing, key=lambda e: e.name)
        for entry in entries:
            here = f"{where}/{_shown(entry.name)}"
            try:
                st = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue  # removed while we looked
            self._check_entry(fd, entry.name, here, st, tree=tree)

    def _check_entry(self, fd: int, name: str, here: str, st: os.stat_result, *, tree: bool) -> None:
        if stat.S_ISLNK(st.st_mode):
            self.report.add("warning", here, "a symbolic link: memdir never follows it; the model cannot see it")
        elif tree and linked(st):  # a hard link: never read here either (it may be a file outside the store)
            self.report.add(
                "warning", here, "a file with other names (hard links): memdir never reads it; the model cannot see it"
            )
        elif tree and name.startswith(TEMP_PREFIX) and stat.S_ISREG(st.st_mode):
            if self._committed_temp(here):
                return  # holds a committed change, reported with its namespace
            done = _unlink(fd, name) if self.repair else None
            self.report.add("warning", here, "a temporary file left by an interrupted write", done)
        elif not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
            self.report.add("warning", here, "not a regular file or directory: memdir ignores it")
        else:
            _check_mode(self.report, here, st, fd, name, self.repair)
            if tree:
                self._check_name(name, here)
            if stat.S_ISDIR(st.st_mode):
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                try:
                    self._visit(child, here, tree=tree)
                finally:
                    os.close(child)
            elif tree and is_valid_segment(name):
                self._check_content(fd, name, here)

    def _check_name(self, name: str, here: str) -> None:
        why = _refused_name(name)
        if why is not None:
            self.report.add("warning", here, f"a name the path rules refuse ({why}): the model cannot see it")

    def _check_content(self, fd: int, name: str, here: str) -> None:
        if name.lower().endswith(_IMAGES):
            return
        try:
            file_fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd)
        except OSError:
            return  # gone, or swapped for something else: the next run sees it
        with os.fdopen(file_fd, "rb") as fh:
            content = fh.read(_MAX_CONTENT_CHECK)
        try:
            content.decode("utf-8")
        except UnicodeDecodeError:
            self.report.add("warning", here, "the content is not UTF-8 text: the model's text commands refuse it")


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _lstat(parent: Path, name: str) -> os.stat_result | None:
    try:
        return os.lstat(parent / name)
    except FileNotFoundError:
        return None


def _unlink(fd: int, name: str) -> str | None:
    try:
        os.unlink(name, dir_fd=fd)
    except OSError:
        return None
    return "removed"


def _shown(name: str) -> str:
    """A file name fit to print: bytes that are not UTF-8 appear as ``\\xNN``."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def _refused_name(name: str) -> str | None:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return "not valid UTF-8"
    if is_valid_segment(name):
        return None
    try:
        parse(f"{ROOT}/{name}")
    except PathError as exc:
        return exc.why or "it would escape /memories"
    return "not in Unicode normal form C"


def _changed_outside(conn: sqlite3.Connection, namespace: str, root: Path, unfinished: set[str]) -> int:
    """How many files were created, edited or deleted on disk since memdir last saw them. A file whose
    on-disk identity changed (a chmod, a touch) but whose content did not is not counted, nor are the paths of
    ``unfinished`` changes (committed, not yet put in place)."""
    rows = conn.execute("SELECT path, stamp, sha256 FROM files WHERE ns = ?", (namespace,)).fetchall()
    known = {str(path): (stamp, sha) for path, stamp, sha in rows if str(path) not in unfinished}
    changed = 0
    with open_root(root) as handle:
        on_disk = {p: st for p, st in scan_tree(handle, MemoryPath.root()) if p.key not in unfinished}
        for path, st in on_disk.items():
            stamp, sha = known.get(path.key, (None, None))
            if stamp != st.stamp and (sha is None or _hash_at(handle, path) != sha):
                changed += 1
    return changed + len(known.keys() - {p.key for p in on_disk})


def _pending_ops(index: Path) -> dict[str, list[PendingOp]]:
    """The pending file operations in the index, by namespace (none in an index from before they existed)."""
    try:
        with contextlib.closing(_open_readonly(index)) as conn:
            return pending_by_namespace(conn)
    except sqlite3.Error:
        return {}  # no such table yet (an index from before it existed); damage is the index check's to report


def _hash_at(root: DirHandle, path: MemoryPath) -> str | None:
    try:
        with walk(root, path.parent) as parent:
            return sha256_hex(read_at(parent, path.name, path)[0])
    except MemdirError:
        return None  # gone or swapped meanwhile: counted as changed


def _valid_namespace(name: str) -> bool:
    try:
        check_namespace(name)
    except MemdirError:
        return False
    return True


@contextlib.contextmanager
def _writer_lock(root: Path) -> Iterator[DirHandle]:
    """The directory store's writer lock (an exclusive flock on the namespace root), waited for a while."""
    with _no_lock(root) as handle:
        deadline = time.monotonic() + _LOCK_WAIT
        while True:
            try:
                fcntl.flock(handle.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise StorageError(f"{root.name} is busy: a memdir writer holds it; try again") from None
                time.sleep(0.05)
        yield handle


@contextlib.contextmanager
def _no_lock(root: Path) -> Iterator[DirHandle]:
    with open_root(root) as handle:
        yield handle
