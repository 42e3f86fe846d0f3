"""``memdir migrate``: shows and applies the named migrations of a store's databases (SQLite, directory,
PostgreSQL)."""

from __future__ import annotations

from pathlib import Path

from memdir import open_store
from memdir.store._schema import migrations as sqlite_migrations
from memdir.store.postgres import migrations as postgres_migrations

from .helpers import Run


def lines_of(stdout: str) -> list[list[str]]:
    return [line.split("\t") for line in stdout.splitlines()]


def test_list_changes_nothing_and_migrate_applies_everything_on_sqlite(run: Run, tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path / 'memory.db'}"
    listed = run("migrate", "--list", store=url)
    assert listed.exit_code == 0, listed.output
    assert not (tmp_path / "memory.db").exists()  # listing a store that is not there yet creates nothing
    rows = lines_of(listed.stdout)
    assert rows[: len(sqlite_migrations.names())] == [["memdir", n, "pending"] for n in sqlite_migrations.names()]
    assert {r[2] for r in rows} == {"pending"}
    assert {r[0] for r in rows} >= {"memdir", "memdir-audit", "memdir-quarantine", "memdir-search", "memdir-tokens"}
    assert listed.stderr == f"{len(rows)} migrations pending.\n"

    applied = run("migrate", store=url)
    assert applied.exit_code == 0, applied.output
    assert [r[:2] for r in lines_of(applied.stdout)] == [r[:2] for r in rows]
    assert {r[2] for r in lines_of(applied.stdout)} == {"applied now"}
    assert applied.stderr == f"{len(rows)} migrations applied now; the schema is up to date.\n"

    again = run("migrate", "--list", store=url)
    assert {r[2] for r in lines_of(again.stdout)} == {"applied"}
    assert again.stderr == "0 migrations pending.\n"
    with open_store(url) as store:  # the store opens on the migrated schema as on one it made itself
        assert store.write("/memories/a.md", b"x").version == 1


def test_a_directory_store_migrates_its_sidecar(run: Run, tmp_path: Path) -> None:
    open_store(str(tmp_path / "store")).close()  # the index exists; the features' database not yet
    result = run("migrate", "--store", str(tmp_path / "store"))
    assert result.exit_code == 0, result.output
    rows = lines_of(result.stdout)
    assert [r for r in rows if r[0] == "memdir"] == [["memdir", n, "applied"] for n in sqlite_migrations.names()]
    assert {r[2] for r in rows if r[0] != "memdir"} == {"applied now"}


def test_migrate_on_postgresql(run: Run, pg_url: str) -> None:
    listed = run("migrate", "--list", store=pg_url)
    assert listed.exit_code == 0, listed.output
    rows = lines_of(listed.stdout)
    assert rows[: len(postgres_migrations.names())] == [["memdir", n, "pending"] for n in postgres_migrations.names()]
    applied = run("migrate", store=pg_url)
    assert applied.exit_code == 0, applied.output
    assert {r[2] for r in lines_of(applied.stdout)} == {"applied now"}
    assert run("migrate", "--list", store=pg_url).stderr == "0 migrations pending.\n"


def test_stores_without_a_schema_say_so(run: Run) -> None:
    result = run("migrate", store="memory:")
    assert result.exit_code == 1
    assert result.stderr == "Error: memory: stores keep no database schema to migrate\n"
