"""Tampering as an attacker with the database does it, and what `memdir verify` says about it.

Rows of the history and of the audit log are deleted, edited, inserted and moved with plain SQL (``sqlite3`` on
the SQLite file or the directory store's sidecar, psycopg on PostgreSQL), the audit log's append-only triggers
dropped first, as someone with the file can. `memdir verify` must name each break, with the numbers around it,
and exit 1; what was not touched still verifies clean.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

from memdir import MemoryTool, open_store
from memdir.cli import cli
from memdir.policy.integrity import IntegrityReport
from memdir.store._schema import migrations as sqlite_migrations
from support.postgres import database_url


@dataclass
class Target:
    """A store to tamper with, and how to reach its tables behind memdir's back."""

    url: str
    prefix: str  # of the store's own tables: "" on SQLite, "memdir_" on PostgreSQL
    history: Callable[[str], None]  # runs SQL on the database holding the versions
    audit: Callable[[str], None]  # ... and on the one holding the audit log
    unlock: str  # what an attacker runs first to get past the audit log's append-only triggers


def sqlite_runner(path: Path) -> Callable[[str], None]:
    def run(script: str) -> None:
        with contextlib.closing(sqlite3.connect(path)) as conn:
            conn.executescript(script)

    return run


def postgres_runner(url: str) -> Callable[[str], None]:
    def run(script: str) -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(script.encode())

    return run


def fill(url: str) -> None:
    """Six versions (1-3 create n1-n3, 4 edits n1, 5 renames n2 to m2, 6 deletes n3) and nine audit entries (each
    create followed by a view, then the edit, the rename, the delete)."""
    with open_store(url) as store, MemoryTool(store, actor="model", session="s") as tool:
        for i in (1, 2, 3):
            tool.execute({"command": "create", "path": f"/memories/n{i}.md", "file_text": f"note {i}\n"})
            tool.execute({"command": "view", "path": f"/memories/n{i}.md"})
        tool.execute({"command": "str_replace", "path": "/memories/n1.md", "old_str": "note", "new_str": "NOTE"})
        tool.execute({"command": "rename", "old_path": "/memories/n2.md", "new_path": "/memories/m2.md"})
        tool.execute({"command": "delete", "path": "/memories/n3.md"})


@pytest.fixture(params=["sqlite", "directory", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Target]:
    if request.param == "sqlite":
        db = tmp_path / "m.db"
        found = Target(f"sqlite://{db}", "", sqlite_runner(db), sqlite_runner(db), _SQLITE_UNLOCK)
    elif request.param == "directory":
        sidecar = tmp_path / "store" / ".memdir"
        found = Target(
            str(tmp_path / "store"), "", sqlite_runner(sidecar / "index.db"), sqlite_runner(sidecar / "aux.db"),
            _SQLITE_UNLOCK,
        )  # fmt: skip
    else:
        url = database_url(str(tmp_path))
        found = Target(url, "memdir_", postgres_runner(url), postgres_runner(url), _POSTGRES_UNLOCK)
    fill(found.url)
    yield found


_SQLITE_UNLOCK = "DROP TRIGGER audit_no_update; DROP TRIGGER audit_no_delete;"
_POSTGRES_UNLOCK = "ALTER TABLE audit DISABLE TRIGGER USER;"


def verify(url: str) -> tuple[int, list[str], dict[str, object]]:
    """`memdir verify --json` on ``url``: (exit code, the lines `memdir verify` prints for it, the JSON report).
    One run: a verify is itself a read in the audit log, so a second run would find one more entry."""
    as_json = CliRunner().invoke(cli, ["--store", url, "verify", "--json"])
    assert not as_json.stderr, as_json.stderr
    report = json.loads(as_json.stdout)
    return as_json.exit_code, IntegrityReport.from_json(report).lines(), report


def breaks(report: dict[str, object], log: str) -> list[tuple[object, ...]]:
    chain = report[log]
    assert isinstance(chain, dict)
    return [(b["kind"], b["first"], b["last"], b["before"], b["after"]) for b in chain["breaks"]]


def test_an_untouched_store_verifies_clean(target: Target) -> None:
    code, lines, report = verify(target.url)
    assert (code, report["ok"]) == (0, True)
    assert lines[0] == "2 files checked: all match their history."
    assert lines[1].startswith("History: 6 versions, chained from version 1 to 6: intact (head ")
    assert lines[2].startswith("Audit log: 9 entries, chained from entry 1 to 9: intact (head ")


HISTORY = [
    pytest.param(
        "DELETE FROM {p}versions WHERE version = 3",
        [("deleted", 3, 3, 2, 4)],
        "deleted    history: version 3 is missing: deleted behind memdir's back (no prune accounts for it)",
        id="a version deleted",
    ),
    pytest.param(
        "UPDATE {p}versions SET actor = 'mallory' WHERE version = 2",
        [("edited", 2, 2, 1, 3)],
        "edited     history: version 2 was changed behind memdir's back: its fields no longer match its chain value",
        id="a version edited",
    ),
    pytest.param(
        "UPDATE {p}versions SET ts = ts - 86400, sha256 = NULL WHERE version = 4",
        [("edited", 4, 4, 3, 5)],
        "edited     history: version 4 was changed behind memdir's back: its fields no longer match its chain value",
        id="a version's time and hash edited",
    ),
    pytest.param(
        "DELETE FROM {p}versions WHERE version = 6",
        [("truncated", 6, 6, 5, None)],
        "truncated  history: version 6 (the newest) is missing: deleted behind memdir's back (memdir gave out "
        "numbers up to 6)",
        id="the newest version deleted",
    ),
    pytest.param(
        "DELETE FROM {p}versions WHERE version >= 5; UPDATE {p}namespaces SET last_version = 4",
        # The head no longer matches; and the audit log, which recorded versions 5 and 6, says they were lost.
        [("head", 4, 4, None, None), ("truncated", 5, 6, 4, None)],
        "head       history: the chain's head does not match the newest version (4): newer ones were deleted and the "
        "count lowered, or this one was changed and its chain value recomputed, or the head was changed",
        id="the newest versions deleted and the count lowered",
    ),
    pytest.param(
        "UPDATE {p}versions SET version = -2 WHERE version = 2; UPDATE {p}versions SET version = 2 WHERE version = 3;"
        "UPDATE {p}versions SET version = 3 WHERE version = -2",
        [("reordered", 2, 2, 1, 3), ("reordered", 3, 3, 2, 4)],
        "reordered  history: version 2 holds what was recorded as version 3: entries were moved",
        id="two versions swapped",
    ),
    pytest.param(
        "INSERT INTO {p}versions (ns, version, path, op, actor, session, source, ts, sha256, size, old_path, chain) "
        "SELECT ns, 7, path, op, actor, session, source, ts, sha256, size, old_path, chain FROM {p}versions "
        "WHERE version = 6",
        [("inserted", 7, 7, 6, None)],
        "inserted   history: version 7 lies beyond the last number memdir gave out (6): added behind memdir's back",
        id="a version inserted",
    ),
]


@pytest.mark.parametrize(("sql", "expected", "line"), HISTORY)
def test_tampered_history_is_reported(target: Target, sql: str, expected: list[tuple[object, ...]], line: str) -> None:
    target.history(sql.format(p=target.prefix))
    code, lines, report = verify(target.url)
    assert code == 1
    assert breaks(report, "history") == expected
    assert line in lines
    assert breaks(report, "audit") == [], "the audit log was not touched"


AUDIT = [
    pytest.param(
        "DELETE FROM audit WHERE seq = 4",
        [("deleted", 4, 4, 3, 5)],
        "deleted    audit log: audit entry 4 is missing: deleted behind memdir's back",
        id="an entry deleted",
    ),
    pytest.param(
        "UPDATE audit SET path = '/memories/elsewhere.md' WHERE seq = 2",
        [("edited", 2, 2, 1, 3)],
        "edited     audit log: audit entry 2 was changed behind memdir's back: its fields no longer match its chain "
        "value",
        id="an entry edited",
    ),
    pytest.param(
        "DELETE FROM audit WHERE seq >= 8",
        [("truncated", 8, 9, 7, None)],
        "truncated  audit log: audit entries 8-9 (the newest) are missing: deleted behind memdir's back (memdir gave "
        "out numbers up to 9)",
        id="the tail cut off",
    ),
    pytest.param(
        "UPDATE audit SET seq = -2 WHERE seq = 2; UPDATE audit SET seq = 2 WHERE seq = 3; "
        "UPDATE audit SET seq = 3 WHERE seq = -2",
        [("reordered", 2, 2, 1, 3), ("reordered", 3, 3, 2, 4)],
        "reordered  audit log: audit entry 3 holds what was recorded as audit entry 2: entries were moved",
        id="two entries swapped",
    ),
    pytest.param(
        "INSERT INTO audit (ns, ts, channel, actor, command, outcome) VALUES ('default', 0, 'tool', 'x', 'view', 'ok')",
        [("inserted", 9, 9, 9, None)],
        "inserted   audit log: an audit entry with no number or chain value lies after audit entry 9: added behind "
        "memdir's back",
        id="an entry inserted",
    ),
]


@pytest.mark.parametrize(("sql", "expected", "line"), AUDIT)
def test_a_tampered_audit_log_is_reported(
    target: Target, sql: str, expected: list[tuple[object, ...]], line: str
) -> None:
    target.audit(target.unlock + sql)
    code, lines, report = verify(target.url)
    assert code == 1
    assert breaks(report, "audit") == expected
    assert line in lines
    assert breaks(report, "history") == [], "the history was not touched"


def test_the_audit_log_records_on_after_tampering_and_the_break_stays_reported(target: Target) -> None:
    target.audit(target.unlock + "DELETE FROM audit WHERE seq = 5")
    with open_store(target.url) as store, MemoryTool(store) as tool:
        tool.execute({"command": "view", "path": "/memories/n1.md"})
    _, _, report = verify(target.url)
    assert breaks(report, "audit") == [("deleted", 5, 5, 4, 6)]
    audit = report["audit"]
    assert isinstance(audit, dict) and (audit["last"], audit["entries"]) == (10, 9)


# -- pruning ------------------------------------------------------------------------------------------------------


def test_a_pruned_history_verifies_and_a_deletion_after_it_is_still_found(target: Target) -> None:
    with open_store(target.url) as store:
        # 1 (n1, edited by 4), 3 (n3, deleted by 6) and 6 go; 2 stays, as the source of the kept rename 5.
        pruned = store.prune_history(float("inf"))
    assert pruned == 3
    code, lines, report = verify(target.url)
    assert code == 0, lines
    assert lines[1].startswith("History: 3 versions (3 pruned), chained from version 1 to 6: intact")
    target.history(f"DELETE FROM {target.prefix}versions WHERE version = 5")
    _, _, report = verify(target.url)
    assert breaks(report, "history") == [("deleted", 5, 5, 4, 6)]


def test_a_version_inserted_into_a_pruned_run_is_found(target: Target) -> None:
    with open_store(target.url) as store:
        store.prune_history(float("inf"))
    p = target.prefix
    target.history(
        f"INSERT INTO {p}versions (ns, version, path, op, actor, ts, size) VALUES ('default', 3, 'x.md', 'create', "
        "'mallory', 0, 0)"
    )
    _, _, report = verify(target.url)
    assert breaks(report, "history") == [("inserted", 3, 3, 3, None)]


# -- stores from before the chain ----------------------------------------------------------------------------------


def test_versions_from_before_the_chain_are_counted_not_called_tampered(tmp_path: Path) -> None:
    # A SQLite store as memdir wrote it before migration 0005: three versions without chain values.
    db = tmp_path / "old.db"
    with contextlib.closing(sqlite3.connect(db, isolation_level=None)) as conn:
        sqlite_migrations.apply(conn, until="0004_pending_in_namespace_row")
        conn.execute("INSERT INTO namespaces (ns, last_version, files, bytes) VALUES ('default', 3, 1, 3)")
        for number, content in ((1, b"one"), (2, b"two"), (3, b"new")):
            sha = hashlib.sha256(content).hexdigest()
            conn.execute(
                "INSERT INTO versions (ns, version, path, op, actor, ts, sha256, size) "
                "VALUES ('default', ?, 'a.md', 'write', 'model', ?, ?, 3)",
                (number, 1000.0 + number, sha),
            )
            conn.execute("INSERT INTO blobs VALUES ('default', ?, ?)", (sha, content))
        conn.execute("INSERT INTO files VALUES ('default', 'a.md', 3, ?, 3, 1003.0, NULL)", (sha,))
    url = f"sqlite://{db}"
    with open_store(url) as store:  # the migration starts the chain after version 3
        store.write("/memories/a.md", b"four")
        store.write("/memories/b.md", b"five")
    code, lines, report = verify(url)
    assert (code, report["ok"]) == (0, True)
    assert lines[1].startswith(
        "History: 5 versions (3 from before the chain, not checked), chained from version 4 to 5"
    )
    history = report["history"]
    assert isinstance(history, dict) and (history["start"], history["checked"]) == (4, 2)
    sqlite_runner(db)("UPDATE versions SET actor = 'mallory' WHERE version = 2")
    assert verify(url)[0] == 0, "nothing to check a version from before the chain against"
    sqlite_runner(db)("UPDATE versions SET actor = 'mallory' WHERE version = 5")
    assert breaks(verify(url)[2], "history") == [("edited", 5, 5, 4, None)]


def test_a_head_overwritten_with_anything_stops_no_write_and_is_reported(target: Target) -> None:
    target.history(f"UPDATE {target.prefix}namespaces SET chain = 'not a chain value'")
    assert breaks(verify(target.url)[2], "history") == [("head", 6, 6, None, None)]
    with open_store(target.url) as store:
        assert store.write("/memories/after.md", b"still written").version == 7
    # Version 7 links to what the head held, not to version 6: the break is where the chain went astray.
    assert breaks(verify(target.url)[2], "history") == [("edited", 7, 7, 6, None)]


def test_an_old_versions_content_rewritten_is_reported(target: Target) -> None:
    # The chain covers each version's recorded hash; verify also hashes the content kept for it.
    sha = hashlib.sha256(b"note 1\n").hexdigest()  # version 1's, superseded by the edit of version 4
    target.history(f"UPDATE {target.prefix}blobs SET content = {_LIE[target.prefix]} WHERE sha256 = '{sha}'")
    code, lines, report = verify(target.url)
    assert code == 1 and breaks(report, "history") == []
    assert "damaged    /memories/n1.md: the stored content of version 1 no longer matches its hash" in lines


_LIE = {"": "x'6c6965'", "memdir_": "'\\x6c6965'::bytea"}
