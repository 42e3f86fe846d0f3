"""``memdir doctor``: find what is wrong with a store's files and, asked to, repair what can be repaired.

It works from the store's URL, not through `open_store`: the point is to help when the store no longer opens.
`diagnose` returns a `Report` of `Finding` objects, each with a severity and, after a repair, what was done.

Directory store (``PATH``, ``file:PATH``)
    - the sidecar index (``.memdir/index.db``) missing, or damaged (not a database, ``PRAGMA
      integrity_check`` failing): repair copies what can still be read of it into a new index (as for a SQLite
      store, below: damage in an index's own b-tree loses nothing), and only when nothing can be read, or
      there is no index, rebuilds it from the files on disk: each current file becomes one version, op
      ``import``, actor ``import``, timed at the file's mtime. The damaged file is moved aside
      (``index.db.corrupt-<UTC time>``, with its ``-wal``/``-shm``; never deleted), and only once its
      replacement is complete, so a repair that fails (a full disk) changes nothing;
    - a database SQLite cannot read for another reason than damage (a full disk, an I/O error): reported as
      that, and nothing is repaired (a sound history is never set aside for it);
    - the auxiliary database (``.memdir/aux.db``: audit log, review queue, search index) damaged: repair
      copies what can be read into a new one;
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

import sqlite3
from pathlib import Path

from ..config import default_store_url
from ..errors import ConfigError, MemdirError
from ..store import open_store
from ._directory import DirectoryDoctor
from ._report import Finding, Report, Severity, reason
from ._sqlite import SQLiteDoctor

__all__ = ["Finding", "Report", "Severity", "diagnose"]


def diagnose(url: str | None = None, *, repair: bool = False) -> Report:
    """Check the store at ``url`` (the default store when None); with ``repair``, fix what can be fixed."""
    target = url if url is not None else default_store_url()
    kind, location = _locate(target)
    report = Report(target, kind)
    try:
        if kind == "directory":
            DirectoryDoctor(Path(location).expanduser(), report, repair).run()
        elif kind == "sqlite":
            SQLiteDoctor(Path(location).expanduser(), report, repair).run()
        elif kind == "memory":
            report.add("info", "store", "an in-memory store lives inside one process: nothing on disk to check")
        else:
            _check_generic(target, report)
    except ConfigError:
        raise  # an unusable URL is the caller's error, reported like any other command's
    except (MemdirError, OSError, sqlite3.Error) as exc:
        report.add("error", "store", f"the check could not finish: {reason(exc)}")
    return report


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
