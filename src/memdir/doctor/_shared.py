"""What the doctor checks alike in the SQLite store and the directory store's sidecar: the schema, the
namespace counters, missing content, file modes, and moving a damaged file aside."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import sqlite3
import stat
import time
from typing import TYPE_CHECKING

from ..store._fs import DIR_MODE, FILE_MODE

if TYPE_CHECKING:
    from pathlib import Path

    from ._report import Report

__all__ = [
    "BEING_CREATED",
    "Unchecked",
    "being_created",
    "check_mode",
    "check_schema",
    "create_private",
    "damage_of",
    "is_damage",
    "move_aside",
    "open_readonly",
    "plural",
    "salvage",
]


class Unchecked(Exception):
    """The database could not be checked at all (a full disk, an I/O error, a lock): that says nothing about
    damage, and nothing may be repaired on the strength of it."""


def damage_of(path: Path) -> str | None:
    """Why the database at ``path`` is damaged, or None when SQLite finds it sound. `Unchecked` when SQLite
    could not read it for another reason than damage: a repair would then set aside a sound history."""
    # SQLite reads the header itself: a plain open()/close() here would drop every SQLite lock this process
    # holds on the file (POSIX closes all of a process's locks on a file with any of its descriptors).
    try:
        with contextlib.closing(open_readonly(path)) as conn:
            rows = conn.execute("PRAGMA integrity_check").fetchall()
    except sqlite3.DatabaseError as exc:
        if not is_damage(exc):
            raise Unchecked(f"it could not be checked ({exc}; is the disk full?): nothing was changed") from exc
        return str(exc)
    if rows != [("ok",)]:
        return f"integrity check failed: {rows[0][0]}"
    return None


def is_damage(exc: sqlite3.DatabaseError) -> bool:
    """Whether SQLite's error says the file is damaged (or no database at all), not that it could not be read."""
    name = getattr(exc, "sqlite_errorname", None)
    if name is not None:
        return str(name).startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB"))
    return type(exc) is sqlite3.DatabaseError  # raised without a code: "malformed", "not a database"


def salvage(path: Path) -> tuple[int, Path] | None:
    """Copy every readable row of the damaged database at ``path`` into a new file, which then replaces it (the
    original is moved aside, never deleted): the number of rows kept and where the original went, or None when
    nothing at all could be read
    (``path`` is then left as it is). Nothing is moved before the copy is complete: a repair that fails (a full
    disk) leaves the files as they were."""
    copy = path.with_name(f"{path.name}.salvage-{os.getpid()}")
    create_private(copy)
    try:
        rows = _copy_readable(path, copy)
    except sqlite3.DatabaseError as exc:
        copy.unlink()
        if not is_damage(exc):
            raise
        return None
    except BaseException:
        copy.unlink()
        raise
    aside = move_aside(path)
    os.rename(copy, path)
    return rows, aside


def _copy_readable(source: Path, dest: Path) -> int:
    """Copy every table's readable rows from ``source`` into ``dest``; the number of rows copied.
    `sqlite3.DatabaseError` when not even the schema can be read."""
    with contextlib.closing(open_readonly(source)) as src, contextlib.closing(sqlite3.connect(dest)) as dst:
        schema = src.execute("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL").fetchall()
        tables = [(name, sql) for kind, name, sql in schema if kind == "table" and not name.startswith("sqlite_")]
        copied = 0
        for name, sql in tables:
            with contextlib.suppress(sqlite3.DatabaseError):  # a table that cannot be read is lost, not the rest
                dst.execute(sql)
                copied += _copy_table(src, dst, name)
        for kind, _, sql in schema:
            if kind in ("index", "trigger"):
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


def open_readonly(path: Path) -> sqlite3.Connection:
    # Read-only, so a check never changes the file it inspects; WAL mode needs the -shm file writable, so
    # fall back to a normal connection (which still writes nothing unless asked).
    try:
        conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.OperationalError:
        return sqlite3.connect(path)


_STORE_TABLES = ("_memdir_migrations", "namespaces", "files", "versions")
BEING_CREATED = "another process is creating this store's tables right now: nothing to check yet"


_CREATING = 60.0  # seconds: how recent a database with tables still missing must be to be one being made


def being_created(path: Path) -> bool:
    """Whether the database at ``path`` is one another process has just made and not yet given its tables (a
    store opened for the first time: checked then, its missing tables read as damage). Only a database made in
    the last minute whose tables hold nothing yet: one that lost tables it had is damaged."""
    if time.time() - os.stat(path).st_mtime > _CREATING:
        return False
    with contextlib.closing(open_readonly(path)) as conn:
        names = {str(name) for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if names >= set(_STORE_TABLES):
            return False
        present = [table for table in _STORE_TABLES[1:] if table in names]
        return not any(conn.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone() for table in present)


def check_schema(conn: sqlite3.Connection, report: Report, where: str, repair: bool) -> None:
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
            report.add("error", f"{where}: namespace {ns}", f"the content of {plural(lost, 'version')} is missing")
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
    return f"{plural(counts[0], 'file')}, {plural(counts[1], 'byte')}, last version {counts[2]}"


def plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def _missing_content(conn: sqlite3.Connection) -> list[tuple[str, int]]:
    rows = conn.execute(
        "SELECT ns, count(*) FROM versions v WHERE sha256 IS NOT NULL"
        " AND NOT EXISTS (SELECT 1 FROM blobs b WHERE b.ns = v.ns AND b.sha256 = v.sha256) GROUP BY ns ORDER BY ns"
    ).fetchall()
    return [(str(ns), int(n)) for ns, n in rows]


def move_aside(path: Path) -> Path:
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


def create_private(path: Path) -> None:
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


def check_mode(report: Report, where: str, st: os.stat_result, parent: Path | int, name: str, repair: bool) -> None:
    want = DIR_MODE if stat.S_ISDIR(st.st_mode) else FILE_MODE
    have = stat.S_IMODE(st.st_mode)
    if have != want:
        done = _fix_mode(parent, name, want) if repair else None
        report.add("warning", where, f"mode {have:04o}, should be {want:04o} (memory is private)", done)
