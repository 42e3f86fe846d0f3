"""`PgDatabase` / `PgConnection`: the PostgreSQL side of `AuxDatabase`, on the throwaway cluster."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import errors as pg_errors
from psycopg_pool import PoolTimeout

from memdir.errors import ConfigError, StorageError, StorageFullError, StorageUnavailableError
from memdir.store import redact_url
from memdir.store._db import AuxDatabase, SqlDatabase
from memdir.store._migrations import Migrations, Schema
from memdir.store._pg import PgDatabase, PgOptions, _pyformat, split_url, translate
from support.postgres import PgCluster

UNAVAILABLE = "could not save: the database server is unavailable; retry later"


@pytest.fixture
def db(pg_url: str) -> Iterator[PgDatabase]:
    database = PgDatabase(pg_url)
    yield database
    database.close()


def test_both_databases_are_aux_databases(db: PgDatabase) -> None:
    databases: list[AuxDatabase] = [db, SqlDatabase(None)]
    assert [d.dialect for d in databases] == ["postgres", "sqlite"]


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT ? + ?", ("SELECT %s + %s", (None, None))),
        ("SELECT '?', \"a?\", ? -- why?\n", ("SELECT '?', \"a?\", %s -- why?\n", (None,))),
        ("SELECT 'it''s ?', ?", ("SELECT 'it''s ?', %s", (None,))),
        ("SELECT x LIKE 'a%' || ?", ("SELECT x LIKE 'a%%' || %s", (None,))),
        ("SELECT 5 % 2", ("SELECT 5 %% 2", ())),
        ("SELECT ?1, ?2, ?1", ("SELECT %s, %s, %s", (0, 1, 0))),
    ],
)
def test_placeholders_are_rewritten_outside_literals(sql: str, expected: tuple[str, tuple[int | None, ...]]) -> None:
    assert _pyformat(sql) == expected


def test_sqlite_style_sql_runs(db: PgDatabase) -> None:
    with db.transaction("test") as conn:
        conn.execute("CREATE TABLE t (id BIGSERIAL PRIMARY KEY, name TEXT, n INTEGER, data BYTEA)")
        row = conn.execute("INSERT INTO t (name, n, data) VALUES (?, ?, ?) RETURNING id", ("a%b?", True, b"\x00\xff"))
        assert row.fetchone() == (1,)
        conn.executemany("INSERT INTO t (name, n) VALUES (?, ?)", [("b", 2), ("c", 3)])
        assert conn.execute("UPDATE t SET n = n + 1 WHERE n >= ?", (2,)).rowcount == 2
    with db.reading("test") as conn:
        assert conn.execute(
            "SELECT name, n, data FROM t WHERE id = ?1 OR name = ?2 AND ?1 > 0", (1, "x")
        ).fetchall() == [("a%b?", 1, b"\x00\xff")]
        assert [r[0] for r in conn.execute("SELECT name FROM t ORDER BY id")] == ["a%b?", "b", "c"]
        assert conn.execute("SELECT 1 WHERE false").fetchone() is None
        assert conn.execute("SELECT 1").fetchall() == [(1,)]


def test_a_failed_transaction_keeps_nothing_and_is_translated(db: PgDatabase) -> None:
    with db.transaction("test") as conn:
        conn.execute("CREATE TABLE t (k TEXT PRIMARY KEY)")
    with (
        pytest.raises(StorageError, match=r"^could not add a row: database error \(23505\)$"),
        db.transaction("add a row") as conn,
    ):
        conn.execute("INSERT INTO t VALUES ('a')")
        conn.execute("INSERT INTO t VALUES ('a')")
    with db.reading("test") as conn:
        assert conn.execute("SELECT count(*) FROM t").fetchone() == (0,)


def test_reading_cannot_write(db: PgDatabase) -> None:
    with pytest.raises(StorageError, match="read-only"), db.reading("sneak a write") as conn:
        conn.execute("CREATE TABLE t (k TEXT)")


def test_run_retries_a_transaction_that_lost_a_deadlock(db: PgDatabase) -> None:
    with db.transaction("test") as conn:
        conn.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v INTEGER)")
        conn.execute("INSERT INTO t VALUES (1, 0), (2, 0)")
    barrier = threading.Barrier(2)
    attempts = {1: 0, 2: 0}

    def bump(first: int, second: int) -> None:
        def work(conn: object) -> None:
            attempts[first] += 1
            conn.execute("UPDATE t SET v = v + 1 WHERE k = ?", (first,))  # type: ignore[attr-defined]
            if attempts[first] == 1:
                barrier.wait(10)  # both hold one row and want the other's: PostgreSQL aborts one
            conn.execute("UPDATE t SET v = v + 1 WHERE k = ?", (second,))  # type: ignore[attr-defined]

        db.run("bump", work)

    threads = [threading.Thread(target=bump, args=(1, 2)), threading.Thread(target=bump, args=(2, 1))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # The deadlock's victim ran again (on a loaded machine its retry may meet the other's lock once more, and
    # wait its turn again: still one winner, run once, and no lost update).
    winner, victim = sorted(attempts.values())
    assert winner == 1 and victim >= 2
    with db.reading("test") as conn:
        assert conn.execute("SELECT k, v FROM t ORDER BY k").fetchall() == [(1, 2), (2, 2)]


def test_migrations_apply_once_in_order_and_record(db: PgDatabase) -> None:
    steps = Migrations("test-set-pg")
    seen: list[str] = []

    @steps("0001_a")
    def _a(schema: Schema) -> None:
        seen.append(schema.dialect)
        schema.script("CREATE TABLE a (x TEXT); CREATE TABLE b (y TEXT);")

    @steps("0002_b")
    def _b(schema: Schema) -> None:
        schema.execute("INSERT INTO a VALUES (?)", ("one",))

    assert db.status(steps) == ([], ["0001_a", "0002_b"])
    assert db.migrate(steps, until="0001_a") == ["0001_a"]
    assert db.status(steps) == (["0001_a"], ["0002_b"])
    db.ensure(steps)
    db.ensure(steps)
    assert seen == ["postgres"]
    assert db.status(steps) == (["0001_a", "0002_b"], [])
    with db.reading("test") as conn:
        assert conn.execute("SELECT x FROM a").fetchall() == [("one",)]


def test_a_failing_migration_leaves_nothing(db: PgDatabase) -> None:
    steps = Migrations("test-set-pg-broken")

    @steps("0001_half")
    def _half(schema: Schema) -> None:
        schema.execute("CREATE TABLE half (x TEXT)")
        schema.execute("SELECT no_such_function()")

    with pytest.raises(StorageError, match="could not prepare the store"):
        db.ensure(steps)
    assert db.status(steps) == ([], ["0001_half"])
    with db.reading("test") as conn:
        assert conn.execute("SELECT to_regclass('half')").fetchone() == (None,)


def test_concurrent_migrators_serialise(pg_url: str) -> None:
    steps = Migrations("test-set-pg-race")
    runs: list[int] = []

    @steps("0001_once")
    def _once(schema: Schema) -> None:
        runs.append(1)
        schema.execute("CREATE TABLE once (x TEXT)")

    databases = [PgDatabase(pg_url) for _ in range(4)]
    threads = [threading.Thread(target=d.ensure, args=(steps,)) for d in databases]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for database in databases:
        database.close()
    assert runs == [1]


def test_url_options_are_memdirs_own_and_removed() -> None:
    dsn, options = split_url("postgresql://u:p@h:5/db?pool_max=3&sslmode=disable&pool_timeout=2.5&pool_min=0")
    assert dsn == "postgresql://u:p@h:5/db?sslmode=disable"
    assert options == PgOptions(pool_min=0, pool_max=3, pool_timeout=2.5)
    with pytest.raises(ConfigError, match="invalid pool_max='x'"):
        split_url("postgresql://h/db?pool_max=x")
    with pytest.raises(ConfigError, match="pool_min is larger than pool_max"):
        split_url("postgresql://h/db?pool_min=5&pool_max=2")


def test_passwords_are_redacted() -> None:
    assert redact_url("postgresql://me:s3cret@db:5432/m?pool_max=2") == "postgresql://me:***@db:5432/m?pool_max=2"
    assert (
        redact_url("postgres://db/m?password=s3cret&sslmode=require") == "postgres://db/m?password=***&sslmode=require"
    )
    assert redact_url("postgresql://me@db/m") == "postgresql://me@db/m"
    assert redact_url("sqlite:///home/me/m.db") == "sqlite:///home/me/m.db"
    assert redact_url("/home/me/store") == "/home/me/store"
    assert redact_url("C:\\memory") == "C:\\memory"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        # libpq reads the user part up to its "@", "#" and "?" included; urlsplit stopped at them.
        ("postgresql://me:Pa#ss_s3cret@db:5432/m", "postgresql://me:***@db:5432/m"),
        ("postgresql://me:pa?ss_s3cret@db/m?sslmode=require", "postgresql://me:***@db/m?sslmode=require"),
        ("postgresql://me:pa/ss_s3cret@db/m", "postgresql://me:***@db/m"),  # refused by libpq, never shown
        ("http://mdt_s3cret@127.0.0.1:8765", "http://***@127.0.0.1:8765"),  # a memdir server's token
        ("https://me:s3cret@memory.example", "https://me:***@memory.example"),
        (
            "postgresql:///m?host=/run/postgresql&password=s3cret",
            "postgresql:///m?host=%2Frun%2Fpostgresql&password=***",
        ),
        ("postgresql://db/m?options=-c%20x%3Dy@z", "postgresql://db/m?options=-c%20x%3Dy@z"),
        ("postgresql://me:s3cret@db?application_name=me@work", "postgresql://me:***@db?application_name=me@work"),
    ],
)
def test_no_password_or_token_is_shown_however_it_is_spelled(url: str, shown: str) -> None:
    assert redact_url(url) == shown and "s3cret" not in redact_url(url)


def test_a_url_without_a_host_keeps_its_form() -> None:
    """``postgresql:///db`` is libpq's default socket (or host= in the query); urlunsplit wrote it back as
    ``postgresql:/db``, which libpq refuses."""
    assert split_url("postgresql:///m?host=/run/postgresql&pool_max=2")[0] == "postgresql:///m?host=%2Frun%2Fpostgresql"
    assert split_url("postgresql:///m")[0] == "postgresql:///m"
    # libpq ends the user part at its first "@": one in the query is the query's.
    dsn, options = split_url("postgresql://me:pw@db?application_name=me@work&pool_max=5")
    assert (dsn, options.pool_max) == ("postgresql://me:pw@db?application_name=me%40work", 5)
    assert (
        split_url("postgresql://me:Pa#ss@db/m?pool_max=2&sslmode=disable")[0]
        == "postgresql://me:Pa#ss@db/m?sslmode=disable"
    )


def test_a_wrong_password_is_a_clean_config_error(pg_cluster: PgCluster) -> None:
    with pytest.raises(ConfigError) as caught:
        PgDatabase(pg_cluster.dsn(password="not-the-password"))
    assert (
        str(caught.value)
        == "could not open the store: the database refused the login (check the user name and password)"
    )


def test_a_missing_database_is_a_clean_config_error(pg_cluster: PgCluster) -> None:
    with pytest.raises(
        ConfigError, match=r"^could not open the store: the database named in the store URL does not exist$"
    ):
        PgDatabase(pg_cluster.dsn("no_such_database"))


def test_an_unreachable_server_is_unavailable(pg_cluster: PgCluster) -> None:
    dsn = pg_cluster.dsn().replace(f":{pg_cluster.port}/", ":1/")
    with pytest.raises(StorageUnavailableError) as caught:
        PgDatabase(dsn)
    assert str(caught.value) == "could not open the store: the database server is unavailable; retry later"
    assert pg_cluster.password not in str(caught.value)


def test_a_restart_is_survived_by_the_pool(pg_cluster: PgCluster, pg_url: str) -> None:
    db = PgDatabase(pg_url, PgOptions(pool_min=2, pool_max=2, pool_timeout=5))
    try:
        with db.transaction("test") as conn:
            conn.execute("CREATE TABLE t (x INTEGER)")
        pg_cluster.restart()
        for n in range(4):  # every pooled connection died with the server; each is replaced on first use
            with db.transaction("test") as conn:
                conn.execute("INSERT INTO t VALUES (?)", (n,))
        with db.reading("test") as conn:
            assert conn.execute("SELECT count(*) FROM t").fetchone() == (4,)
    finally:
        db.close()


def test_a_stopped_server_is_unavailable_then_back(pg_cluster: PgCluster, pg_url: str) -> None:
    db = PgDatabase(pg_url, PgOptions(pool_timeout=0.5))
    try:
        with db.reading("read the store") as conn:
            conn.execute("SELECT 1")
        pg_cluster.stop()
        with pytest.raises(StorageUnavailableError) as caught, db.reading("read the store") as conn:
            conn.execute("SELECT 1")
        assert str(caught.value) in (
            "could not read the store: the database server is unavailable; retry later",
            "could not read the store: no database connection became free in time; retry later",
        )
        pg_cluster.start()
        assert _retrying(db) == (1,)  # the error said "retry later": a client retrying gets through
    finally:
        if not pg_cluster.running:
            pg_cluster.start()
        db.close()


def _retrying(db: PgDatabase) -> tuple[object, ...] | None:
    for _ in range(100):  # the pool reconnects in the background, with backoff; a bounded number of tries
        try:
            with db.reading("read the store") as conn:
                return conn.execute("SELECT 1").fetchone()
        except StorageUnavailableError:
            continue
    return None


def test_close_then_use_reopens(db: PgDatabase) -> None:
    db.close()
    assert db.closed
    with db.reading("test") as conn:
        assert conn.execute("SELECT 2").fetchone() == (2,)
    assert not db.closed


@pytest.mark.parametrize(
    ("error", "kind", "message"),
    [
        (
            pg_errors.DiskFull("disk full at /var/lib/x"),
            StorageFullError,
            "could not save: the database's disk is full",
        ),
        (pg_errors.AdminShutdown("terminating"), StorageUnavailableError, UNAVAILABLE),
        (pg_errors.CannotConnectNow("starting up"), StorageUnavailableError, UNAVAILABLE),
        (psycopg.OperationalError("server closed the connection unexpectedly"), StorageUnavailableError, UNAVAILABLE),
        (
            pg_errors.DeadlockDetected("deadlock"),
            StorageUnavailableError,
            "could not save: too much contention on the database; retry later",
        ),
        (
            pg_errors.ReadOnlySqlTransaction("read-only"),
            StorageError,
            "could not save: the database is read-only (a standby server?)",
        ),
        (
            pg_errors.InsufficientPrivilege("denied"),
            StorageError,
            "could not save: the database user lacks a permission memdir needs",
        ),
        (pg_errors.UniqueViolation("Key (k)=(secret) exists"), StorageError, "could not save: database error (23505)"),
        (
            PoolTimeout("couldn't get a connection after 10 sec"),
            StorageUnavailableError,
            "could not save: no database connection became free in time; retry later",
        ),
    ],
)
def test_errors_are_translated_without_the_servers_text(error: psycopg.Error, kind: type, message: str) -> None:
    translated = translate(error, "save")
    assert type(translated) is kind
    assert str(translated) == message
