"""`PostgresStore` beyond the backend contract (which runs on it through ``tests/backends.py``): upgrading from
the previous schema, many writers on one file from separate processes, a writer killed mid-write, and the errors
a user meets when the database is down or the login is wrong."""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import psycopg
import pytest

from memdir import ConfigError, MemoryTool, Origin, StorageUnavailableError, open_store
from memdir.policy.audit import audit_log
from memdir.schema import migrate
from memdir.store._pg import PgDatabase, split_url
from memdir.store.postgres import PostgresStore, migrations
from support.postgres import PgCluster
from support.processes import Spawn

# The same workers as tests/store/test_multiprocess.py runs on SQLite and directory stores.
WORKER = r"""
import json, os, sys, time
from memdir import MemoryTool, open_store

url, wid, rounds, go = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
store = open_store(url)
tool = MemoryTool(store, actor=f"worker-{wid}", session=f"session-{wid}")
while not os.path.exists(go):
    time.sleep(0.001)
failures = []
for i in range(rounds):
    inserted = tool.execute(
        {"command": "insert", "path": "/memories/shared/log.md", "insert_line": 1, "insert_text": f"w{wid}-{i}"}
    )
    if inserted.is_error:
        failures.append(inserted.text)
    # Each worker owns one counter line: a lost update would show as this worker's next str_replace failing.
    counted = tool.execute(
        {
            "command": "str_replace",
            "path": "/memories/shared/counters.md",
            "old_str": f"\nw{wid}: {i}\n",
            "new_str": f"\nw{wid}: {i + 1}\n",
        }
    )
    if counted.is_error:
        failures.append(counted.text)
store.close()
print(json.dumps(failures))
"""

WRITER = r"""
import sys
from memdir import MemoryTool, open_store

store = open_store(sys.argv[1])
tool = MemoryTool(store)
i = 0
while True:
    i += 1
    letter = b"AB"[i % 2 : i % 2 + 1]
    store.write("/memories/big.md", letter * (1_000_000 + (i % 7) * 100_000))
    old, new = f"count {i - 1}\n", f"count {i}\n"
    done = tool.execute({"command": "str_replace", "path": "/memories/counter.md", "old_str": old, "new_str": new})
    assert not done.is_error, done.text
    if i == 1:
        print("ready", flush=True)
"""
SIZES = {1_000_000 + k * 100_000 for k in range(7)}

# -- upgrading ------------------------------------------------------------------------------------------------------


def fill_first_schema(url: str) -> None:
    """A database at migration 0001 (the first release's schema), written as that release wrote it: versions
    numbered max + 1, no per-namespace counters. Namespace "a": notes.md written twice, old.md created then
    renamed to new.md, gone.md created then deleted. Namespace "b": one file."""
    db = PgDatabase(*split_url(url))
    assert db.migrate(migrations, until="0001_initial") == ["0001_initial"]
    rows = [
        # ns, version, path, op, sha, content, old_path
        ("a", 1, "notes.md", "create", b"one\n", None),
        ("a", 2, "notes.md", "str_replace", b"one\ntwo\n", None),
        ("a", 3, "old.md", "create", b"moved\n", None),
        ("a", 4, "new.md", "rename", b"moved\n", "old.md"),
        ("a", 5, "gone.md", "create", b"bye\n", None),
        ("a", 6, "gone.md", "delete", None, None),
        ("b", 1, "only.md", "create", b"b's\n", None),
    ]
    with db.transaction("fill") as conn:
        for ns, number, path, op, content, old in rows:
            sha = None if content is None else hashlib.sha256(content).hexdigest()
            conn.execute(
                "INSERT INTO memdir_versions (ns, version, path, op, actor, session, source, ts, sha256, size, "
                "old_path) VALUES (?, ?, ?, ?, 'model', 's1', NULL, ?, ?, ?, ?)",
                (ns, number, path, op, 1000.0 + number, sha, len(content or b""), old),
            )
            if content is not None:
                conn.execute("INSERT INTO memdir_blobs VALUES (?, ?, ?) ON CONFLICT DO NOTHING", (ns, sha, content))
                conn.execute(
                    "INSERT INTO memdir_files VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (ns, path) DO UPDATE SET "
                    "version = excluded.version, sha256 = excluded.sha256, size = excluded.size",
                    (ns, path, number, sha, len(content), 1000.0 + number),
                )
            if old is not None or content is None:
                conn.execute("DELETE FROM memdir_files WHERE ns = ? AND path = ?", (ns, old or path))
    db.close()


def test_a_database_of_the_previous_schema_is_upgraded_on_open(pg_url: str) -> None:
    fill_first_schema(pg_url)
    store_set = next(s for s in migrate(pg_url, apply=False) if s.name == "memdir")
    assert (store_set.applied, store_set.pending) == (("0001_initial",), tuple(migrations.names()[1:]))
    assert "0002_namespace_counters" in store_set.pending
    with open_store(pg_url, namespace="a") as store:
        # The counters were backfilled from what the first schema recorded...
        assert (store.usage().files, store.usage().bytes) == (2, len(b"one\ntwo\n") + len(b"moved\n"))
        assert store.namespaces() == ["a", "b"]
        # ...and everything the old schema held reads as before.
        assert store.read("/memories/notes.md").content == b"one\ntwo\n"
        assert [v.version for v in store.history("/memories/new.md")] == [3, 4]
        assert store.read_version("/memories/gone.md", 5) == b"bye\n"
        assert [v.version for v in store.log()] == [1, 2, 3, 4, 5, 6]
        # New versions continue the numbering, and the counters move with them.
        tool = MemoryTool(store)
        tool.execute({"command": "str_replace", "path": "/memories/notes.md", "old_str": "two", "new_str": "2"})
        assert store.history("/memories/notes.md")[-1].version == 7
        store.restore("/memories/gone.md", 5)
        assert store.usage().files == 3
        # The versions the old schema wrote have no chain value: the chain starts after them.
        chain = store.verify_chain()
        assert (chain.ok, chain.start, chain.unchained, chain.checked) == (True, 7, 6, 2)
    with open_store(pg_url, namespace="b") as other:
        assert other.write("/memories/only.md", b"new\n").version == 2
    store_set = next(s for s in migrate(pg_url, apply=False) if s.name == "memdir")
    assert (store_set.applied, store_set.pending) == (tuple(migrations.names()), ())


# -- concurrency ----------------------------------------------------------------------------------------------------

WORKERS = 6
ROUNDS = 60


def test_processes_editing_one_file_lose_no_update(pg_url: str, tmp_path: Path, spawn: Spawn) -> None:
    url = pg_url + "?pool_max=2"
    store = open_store(url)
    tool = MemoryTool(store)
    counters = "counters\n" + "".join(f"w{w}: 0\n" for w in range(WORKERS))
    for path, text in (("/memories/shared/log.md", "log\n"), ("/memories/shared/counters.md", counters)):
        assert not tool.execute({"command": "create", "path": path, "file_text": text}).is_error
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    go = tmp_path / "go"
    procs = [
        spawn([sys.executable, str(script), url, str(w), str(ROUNDS), str(go)], stdout=subprocess.PIPE)
        for w in range(WORKERS)
    ]
    go.touch()  # all start together, for the most contention
    outputs = [p.communicate(timeout=240)[0] for p in procs]
    assert [p.returncode for p in procs] == [0] * WORKERS
    assert [text for out in outputs for text in json.loads(out)] == []

    log = store.read("/memories/shared/log.md").content.decode().split("\n")
    assert sorted(log[1:-1]) == sorted(f"w{w}-{i}" for w in range(WORKERS) for i in range(ROUNDS))
    for w in range(WORKERS):  # each worker's own lines keep its order (each went in at the top)
        assert [line for line in log if line.startswith(f"w{w}-")] == [f"w{w}-{i}" for i in reversed(range(ROUNDS))]
    assert store.read("/memories/shared/counters.md").content.decode() == "counters\n" + "".join(
        f"w{w}: {ROUNDS}\n" for w in range(WORKERS)
    )
    for path in ("/memories/shared/log.md", "/memories/shared/counters.md"):
        history = store.history(path)
        assert len(history) == 1 + WORKERS * ROUNDS
        assert {v.actor for v in history[1:]} == {f"worker-{w}" for w in range(WORKERS)}
    versions = list(store.log())
    assert [v.version for v in versions] == list(range(1, 2 + 2 * WORKERS * ROUNDS + 1))
    # Chained under the namespace's row lock (versions) and the audit head's (the flushes of every process).
    history, audit = store.verify_chain(), audit_log(store).verify_chain()
    assert (history.ok, history.checked) == (True, len(versions))
    assert audit.ok and audit.checked == audit.entries >= 2 * WORKERS * ROUNDS
    store.close()


def test_stores_in_threads_racing_renames_and_edits_keep_one_file(pg_url: str) -> None:
    """Separate store objects (separate pools, as separate servers have): one renames a file back and forth while
    others edit it; every edit lands on whichever name it has, none is lost, and never two copies exist."""
    stores = [PostgresStore(f"{pg_url}?pool_max={n + 1}") for n in range(4)]
    stores[0].write("/memories/a.md", b"")
    errors: list[str] = []

    def edit(n: int) -> None:
        tool = MemoryTool(stores[n], actor=f"t{n}")
        done = 0
        while done < 40:
            for path in ("/memories/a.md", "/memories/b.md"):
                text = f"t{n}-{done}"
                result = tool.execute({"command": "insert", "path": path, "insert_line": 0, "insert_text": text})
                if not result.is_error:
                    done += 1
                    break
                if "does not exist" not in result.text:
                    errors.append(result.text)

    def rename() -> None:
        for i in range(60):
            old, new = ("/memories/a.md", "/memories/b.md") if i % 2 == 0 else ("/memories/b.md", "/memories/a.md")
            stores[3].move(old, new, origin=Origin("mover"))

    threads = [threading.Thread(target=edit, args=(n,)) for n in range(3)] + [threading.Thread(target=rename)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    files = stores[0].list_files()
    assert [e.path.virtual for e in files] == ["/memories/a.md"]  # 60 renames: back where it started
    lines = stores[0].read("/memories/a.md").content.decode().split("\n")
    assert sorted(filter(None, lines)) == sorted(f"t{n}-{i}" for n in range(3) for i in range(40))
    for store in stores:
        store.close()


def test_a_writer_killed_mid_write_never_leaves_a_torn_file(pg_url: str, tmp_path: Path, spawn: Spawn) -> None:
    store = open_store(pg_url)
    store.write("/memories/big.md", b"A" * 1_000_000)
    tool = MemoryTool(store)
    assert not tool.execute({"command": "create", "path": "/memories/counter.md", "file_text": "count 0\n"}).is_error
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    rng = random.Random(20240601)
    last = 0
    for _ in range(6):
        proc = spawn([sys.executable, str(script), pg_url], stdout=subprocess.PIPE)
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.0, 0.25))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        proc.stdout.close()
        settle(pg_url)
        big = store.read("/memories/big.md").content
        assert len(big) in SIZES and big == big[:1] * len(big), "torn"
        assert store.history("/memories/big.md")[-1].sha256 == hashlib.sha256(big).hexdigest()
        counter = store.read("/memories/counter.md").content.decode()
        assert counter.startswith("count ") and counter.endswith("\n")
        last = max(last, int(counter.removeprefix("count ")))
        assert [e.path.virtual for e in store.list_files()] == ["/memories/big.md", "/memories/counter.md"]
        store.write("/memories/counter.md", b"count 0\n")
    assert last >= 1, "the writer never got going; the kills tested nothing"
    store.close()


def settle(url: str) -> None:
    """Wait for a killed writer's last transaction to end. Unlike a SQLite writer's, it outlives the process: the
    server still commits it if its COMMIT was sent before the kill (and rolls it back otherwise). Either way it
    holds its namespace's row lock until then, which this takes."""
    db = PgDatabase(*split_url(url))
    db.run("settle", lambda conn: conn.execute("SELECT 1 FROM memdir_namespaces WHERE ns = 'default' FOR UPDATE"))
    db.close()


# -- errors ---------------------------------------------------------------------------------------------------------


def test_a_stopped_database_is_a_clean_temporary_error(pg_cluster: PgCluster, pg_url: str) -> None:
    store = open_store(pg_url + "?pool_timeout=0.5")
    store.write("/memories/a.md", b"x")
    tool = MemoryTool(store)
    try:
        pg_cluster.stop()
        with pytest.raises(StorageUnavailableError) as caught:
            store.read("/memories/a.md")
        assert "retry later" in str(caught.value)
        assert pg_cluster.password not in str(caught.value)
        result = tool.execute({"command": "view", "path": "/memories/a.md"})
        assert result.is_error and "retry later" in result.text
        with pytest.raises(StorageUnavailableError, match=r"^could not open the store: the database server is"):
            open_store(pg_url)
    finally:
        pg_cluster.start()
    for _ in range(100):  # the pool reconnects in the background; a client that retries gets through
        try:
            assert store.read("/memories/a.md").content == b"x"
            break
        except StorageUnavailableError:
            continue
    else:
        pytest.fail("the store never came back after the database restarted")
    store.close()


def test_a_wrong_password_is_a_config_error_without_the_password(pg_cluster: PgCluster, pg_url: str) -> None:
    wrong = pg_url.replace(pg_cluster.password, "hunter2-wrong")
    with pytest.raises(ConfigError) as caught:
        open_store(wrong)
    message = str(caught.value)
    assert message == "could not open the store: the database refused the login (check the user name and password)"
    assert "hunter2" not in message and pg_cluster.password not in message


def test_url_options_are_checked(pg_url: str) -> None:
    with pytest.raises(ConfigError, match="has a parameter libpq does not know"):
        open_store(pg_url + "?pool_size=3")
    with pytest.raises(ConfigError, match="invalid pool_max='many'"):
        open_store(pg_url + "?pool_max=many")
    with open_store(pg_url.replace("postgresql://", "postgres://") + "?pool_max=1&pool_min=0&sslmode=disable") as s:
        assert s.write("/memories/a.md", b"1").version == 1
        assert "?pool_max=1&pool_min=0&sslmode=disable" in repr(s)


def test_the_store_never_shows_the_password(pg_cluster: PgCluster, pg_url: str) -> None:
    with open_store(pg_url) as store:
        assert pg_cluster.password not in repr(store)
        assert ":***@" in repr(store)


def test_a_url_without_a_host_and_a_password_with_a_hash_open_the_store(pg_cluster: PgCluster, pg_url: str) -> None:
    dbname, role = pg_url.rsplit("/", 1)[1], f"hash_{uuid.uuid4().hex[:12]}"
    with pg_cluster.admin() as conn:  # the role goes with the session's cluster
        conn.execute(f"CREATE ROLE {role} LOGIN SUPERUSER PASSWORD 'Pa#ss?word'")
    hostless = f"postgresql:///{dbname}?host=127.0.0.1&port={pg_cluster.port}&user={role}&password=Pa%23ss%3Fword"
    with open_store(hostless) as store:
        assert store.write("/memories/a.md", b"1").version == 1
        assert "Pa#ss" not in repr(store) and "password=***" in repr(store)
    with open_store(f"postgresql://{role}:Pa#ss?word@127.0.0.1:{pg_cluster.port}/{dbname}") as store:
        assert store.read("/memories/a.md").content == b"1"
        assert "Pa#ss" not in repr(store) and f"{role}:***@" in repr(store)


def test_another_applications_table_is_named_and_a_schema_of_memdirs_own_avoids_it(
    pg_cluster: PgCluster, pg_url: str
) -> None:
    """The feature tables (audit, quarantine, search_*...) are not prefixed: in a database another application
    uses, a table of the same name is named in a clear error, and a schema of memdir's own keeps them apart."""
    dbname = pg_url.rsplit("/", 1)[1]
    with psycopg.connect(pg_cluster.dsn(dbname), autocommit=True) as conn:
        conn.execute("CREATE TABLE audit (app_row int)")
        conn.execute("INSERT INTO audit VALUES (7)")
    with open_store(pg_url) as store, pytest.raises(ConfigError) as caught:
        audit_log(store).entries()
    assert 'already holds a table "audit" that memdir did not make' in str(caught.value)
    with psycopg.connect(pg_cluster.dsn(dbname), autocommit=True) as conn:
        conn.execute("CREATE SCHEMA memdir")
    with open_store(pg_url + "?options=-csearch_path%3Dmemdir") as store:
        tool = MemoryTool(store, actor="ada")
        assert not tool.execute({"command": "create", "path": "/memories/a.md", "file_text": "x\n"}).is_error
        tool.close()
        assert [(e.command, e.actor) for e in audit_log(store).entries()] == [("create", "ada")]
    with psycopg.connect(pg_cluster.dsn(dbname), autocommit=True) as conn:
        assert conn.execute("SELECT app_row FROM public.audit").fetchall() == [(7,)]
        assert conn.execute("SELECT count(*) FROM memdir.audit").fetchone() == (1,)


def test_many_namespaces_share_one_pool(pg_cluster: PgCluster, pg_url: str) -> None:
    """A server opens a store per namespace: they share the process's pool for the URL, not a pool each."""
    stores = [open_store(pg_url + "?pool_max=2", namespace=f"ns{n}") for n in range(20)]
    for n, store in enumerate(stores):
        store.write("/memories/a.md", f"{n}".encode())
    assert stores[0].namespaces() == sorted(f"ns{n}" for n in range(20))
    with pg_cluster.admin() as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND application_name = 'memdir'",
            [pg_url.rsplit("/", 1)[1]],
        ).fetchone()
    assert row is not None and 1 <= int(str(row[0])) <= 2
    for store in stores:
        store.close()
