"""A throwaway PostgreSQL cluster for the tests: ``initdb`` into a temporary directory, ``pg_ctl start`` on a free
loopback port, deleted when the session ends. Started on first use only, so a run without PostgreSQL tests never
starts it.

Logins over TCP need the superuser's password (scram-sha-256), so the tests exercise real authentication (and
that no message shows the password). ``fsync=off``: a crash of the test machine loses nothing anyone needs.

Fixtures: ``pg_cluster`` (the session's `PgCluster`) and ``pg_url`` (a fresh database for the test, as a
``postgresql://`` store URL). `database_url` gives a test a database of its own by key from plain code
(`backends.store_url`); every database made for a test is dropped when the test ends.
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import os
import re
import secrets
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

__all__ = ["PgCluster", "database_url", "find_bin_dir", "shared_cluster"]

_SUPERUSER = "postgres"


def find_bin_dir() -> Path:
    """Where initdb and pg_ctl are: on PATH, or Debian's /usr/lib/postgresql/<version>/bin (newest first)."""
    on_path = shutil.which("initdb")
    if on_path:
        return Path(on_path).resolve().parent
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(re.sub(r"\D", "", p.split("/")[4]) or 0)
    )
    if not found:
        raise RuntimeError("PostgreSQL is not installed (no initdb): run .ci/setup, or apt-get install postgresql")
    return Path(found[-1]).parent


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PgCluster:
    """One PostgreSQL server of the test session (its data directory in a temporary directory)."""

    def __init__(self) -> None:
        self.bin = find_bin_dir()
        self.root = Path(tempfile.mkdtemp(prefix="memdir-pg-"))
        self.data = self.root / "data"
        self.password = secrets.token_urlsafe(16)
        self.port = _free_port()
        self.running = False
        # initdb and postgres refuse to run as root: as root, the cluster belongs to the `postgres` OS user.
        self._as = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if self._as:
            shutil.chown(self.root, "postgres")
        pwfile = self.root / "pw"
        pwfile.write_text(self.password)
        if self._as:
            shutil.chown(pwfile, "postgres")
        self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            _SUPERUSER,
            f"--pwfile={pwfile}",
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            "--encoding=UTF8",
            "--locale=C.UTF-8",
            "--no-sync",
        )
        pwfile.unlink()

    def _run(self, tool: str, *args: str) -> None:
        command = [*self._as, str(self.bin / tool), *args]
        done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=self.root)
        if done.returncode != 0:
            log = self.root / "log"
            tail = log.read_text()[-2000:] if log.exists() else ""
            raise RuntimeError(f"{tool} failed ({done.returncode}): {done.stderr.strip()}\n{tail}")

    # -- lifecycle --------------------------------------------------------------------------------------------

    def start(self) -> None:
        settings = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off "
            "-c full_page_writes=off -c max_connections=300 -c shared_buffers=64MB"
        )
        self._run(
            "pg_ctl", "start", "-w", "-t", "60", "-D", str(self.data), "-l", str(self.root / "log"), "-o", settings
        )
        self.running = True

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``fast``: connections are terminated; ``immediate``: as if it crashed)."""
        self._run("pg_ctl", "stop", "-w", "-t", "60", "-D", str(self.data), "-m", mode)
        self.running = False

    def restart(self) -> None:
        self.stop()
        self.start()

    def destroy(self) -> None:
        if self.running:
            with contextlib.suppress(RuntimeError):
                self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)

    # -- databases --------------------------------------------------------------------------------------------

    def dsn(self, dbname: str = "postgres", *, password: str | None = None) -> str:
        secret = self.password if password is None else password
        return f"postgresql://{_SUPERUSER}:{secret}@127.0.0.1:{self.port}/{dbname}"

    def admin(self) -> psycopg.Connection[tuple[object, ...]]:
        return psycopg.connect(self.dsn(), autocommit=True)

    def create_database(self, name: str | None = None) -> str:
        """A new, empty database; its DSN."""
        dbname = name or f"t_{uuid.uuid4().hex[:20]}"
        with self.admin() as conn:
            # FILE_COPY copies the (tiny) template's files instead of WAL-logging every page: faster here.
            conn.execute(f'CREATE DATABASE "{dbname}" STRATEGY = FILE_COPY')
        return self.dsn(dbname)

    def drop_database(self, dsn: str) -> None:
        dbname = dsn.rsplit("/", 1)[1].split("?", 1)[0]
        with self.admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')


_CLUSTER: PgCluster | None = None
_TEST_DATABASES: dict[str, str] = {}


def shared_cluster() -> PgCluster:
    """The session's cluster, started on first use (and running: a test that stopped it gets it back)."""
    global _CLUSTER
    if _CLUSTER is None:
        _CLUSTER = PgCluster()
        atexit.register(_CLUSTER.destroy)  # also when the session dies before pytest_sessionfinish
    if not _CLUSTER.running:
        _CLUSTER.start()
    return _CLUSTER


def database_url(key: str) -> str:
    """A database of this test's own for ``key`` (the same URL for the same key), dropped after the test."""
    if key not in _TEST_DATABASES:
        _TEST_DATABASES[key] = shared_cluster().create_database()
    return _TEST_DATABASES[key]


def pytest_sessionfinish() -> None:
    global _CLUSTER
    if _CLUSTER is not None:
        _CLUSTER.destroy()
        _CLUSTER = None


@pytest.fixture
def pg_cluster() -> PgCluster:
    """The session's cluster, running (started again if an earlier test stopped it and failed before restarting)."""
    return shared_cluster()


@pytest.fixture
def pg_url(pg_cluster: PgCluster) -> str:
    """A fresh, empty database for this test, as a store URL."""
    return database_url(f"pg_url:{uuid.uuid4().hex}")


@pytest.fixture(autouse=True)
def _drop_test_databases() -> Iterator[None]:
    yield
    if not _TEST_DATABASES:
        return
    cluster = shared_cluster()
    while _TEST_DATABASES:
        cluster.drop_database(_TEST_DATABASES.popitem()[1])
