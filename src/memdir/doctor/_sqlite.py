"""The doctor of a SQLite store (``sqlite:PATH``): a damaged database copied table by table into a new file."""

from __future__ import annotations

import contextlib
import os
import stat
from typing import TYPE_CHECKING

from ..store._sql import connect
from ._shared import BEING_CREATED, Unchecked, being_created, check_mode, check_schema, damage_of, plural, salvage

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
        try:
            damage = damage_of(self.path)
        except Unchecked as exc:
            self.report.add("error", self.path.name, str(exc))
            return
        if damage is None:
            if being_created(self.path):
                self.report.add("info", self.path.name, BEING_CREATED)
                return
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
        salvaged = salvage(self.path)
        if salvaged is None:
            # Nothing readable at all: the original stays where it is, for a person to decide.
            problem = "nothing in it can be read, so nothing was salvaged; move it away to start an empty store"
            self.report.add("error", self.path.name, problem)
            return None
        rows, aside = salvaged
        return f"{plural(rows, 'row')} salvaged into a new database; the original is kept as {aside.name}"
