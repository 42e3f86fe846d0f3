"""The doctor of a SQLite store (``sqlite:PATH``): a damaged database copied table by table into a new file."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
from typing import TYPE_CHECKING

from ..store._sql import connect
from ._shared import check_mode, check_schema, create_private, damage_of, move_aside, open_readonly, plural

if TYPE_CHECKING:
    from pathlib import Path

    from ._report import Report

__all__ = ["SQLiteDoctor"]


class SQLiteDoctor:
    def __init__(self, path: Path, report: Report, repair: bool) -> None:
        self.path = path
        self.report = report
        self.repair = repair

    def run(self) -> None:
        if not self.path.is_file():
            self.report.add("error", self.path.name, "no SQLite store at this location")
            return
        self._check_modes()
        damage = damage_of(self.path)
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
            check_schema(conn, self.report, self.path.name, self.repair)

    def _check_modes(self) -> None:
        for suffix in ("", "-wal", "-shm"):
            name = self.path.name + suffix
            with contextlib.suppress(FileNotFoundError):
                st = os.lstat(self.path.parent / name)
                if stat.S_ISREG(st.st_mode):
                    check_mode(self.report, name, st, self.path.parent, name, self.repair)

    def _salvage(self) -> str | None:
        """Copy what is readable into a new file; when anything was, it replaces the original (moved aside)."""
        copy = self.path.with_name(f"{self.path.name}.salvage-{os.getpid()}")
        create_private(copy)
        try:
            rows = _copy_readable(self.path, copy)
        except sqlite3.DatabaseError:
            copy.unlink()
            # Nothing readable at all: the original stays where it is, for a person to decide.
            problem = "nothing in it can be read, so nothing was salvaged; move it away to start an empty store"
            self.report.add("error", self.path.name, problem)
            return None
        aside = move_aside(self.path)
        os.rename(copy, self.path)
        return f"{plural(rows, 'row')} salvaged into a new database; the original is kept as {aside.name}"


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
