"""A full disk under the database: writes fail cleanly (nothing partial), reads go on, and writes work again once
space is freed.

The disk is real: a 48 MiB tmpfs mounted for the test, holding a PostgreSQL tablespace that the test's database
lives in (its tables, indexes and TOAST; the cluster's WAL stays on the main disk, as on a server whose data
volume fills while its WAL volume does not). The test fills the file system with a ballast file until the kernel
says ENOSPC, and PostgreSQL then fails to extend its files (SQLSTATE 53100). Mounting needs root
(CAP_SYS_ADMIN), which the CI has; elsewhere the test is skipped, saying why.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.postgres import PgCluster

from .test_pg_load import bench


@pytest.fixture
def small_disk(pg_cluster: PgCluster) -> Iterator[Path]:
    # Beside the cluster's data directory: a place the postgres OS user can reach (pytest's tmp_path is private).
    mount = pg_cluster.root / f"small-{uuid.uuid4().hex[:8]}"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=48m,mode=0755", "tmpfs", str(mount)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small file system here (needs root): {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)
        mount.rmdir()


@pytest.fixture
def full_disk_url(pg_cluster: PgCluster, small_disk: Path) -> Iterator[str]:
    """A database whose tables live on the small disk."""
    location = small_disk / "tablespace"
    location.mkdir()
    if os.geteuid() == 0:
        shutil.chown(location, "postgres")  # the cluster runs as the postgres OS user when we are root
    name = f"small_{uuid.uuid4().hex[:12]}"
    with pg_cluster.admin() as conn:
        conn.execute(f"CREATE TABLESPACE {name} LOCATION '{location}'")
        conn.execute(f'CREATE DATABASE "{name}" TABLESPACE {name}')
    try:
        yield pg_cluster.dsn(name)
    finally:
        with pg_cluster.admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f"DROP TABLESPACE IF EXISTS {name}")


def fill(disk: Path) -> Path:
    """Write a ballast file until the file system is full; the ballast."""
    ballast = disk / "ballast"
    chunk = b"\0" * (1 << 20)
    with ballast.open("wb") as out:
        try:
            while True:
                out.write(chunk)
                out.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    with contextlib.suppress(OSError), ballast.open("ab") as out:  # the last partial megabyte, byte pages at a time
        while True:
            out.write(b"\0" * 4096)
            out.flush()
    return ballast


def tool(client: httpx.Client, **command: Any) -> httpx.Response:
    return client.post("/v1/tool", json=command)


def test_a_full_disk_fails_writes_cleanly_and_reads_go_on(full_disk_url: str, small_disk: Path, tmp_path: Path) -> None:
    farm = bench.ServerFarm(full_disk_url, 1, tmp_path)
    try:
        farm.start()
        token = farm.memdir("token", "create", "-n", "alice")
        with httpx.Client(base_url=farm.urls[0], headers={"Authorization": f"Bearer {token}"}, timeout=60) as client:
            assert not tool(client, command="create", path="/memories/a.md", file_text="kept\n").json()["is_error"]
            before = client.get("/v1/log").json()["versions"]
            ballast = fill(small_disk)

            # Writes: each one refused whole, in the API's words, with nothing left behind.
            big = secrets.token_hex(40_000)  # 80 KB that compresses poorly: new pages, not leftover space
            for n in range(5):
                answer = tool(client, command="create", path=f"/memories/big{n}.md", file_text=big)
                assert answer.status_code == 200 and answer.json()["is_error"], answer.text
                assert answer.json()["text"] == (
                    "Error: The memory store could not complete the `create` command: could not write a file: "
                    "the database's disk is full"
                )
            put = client.put("/v1/files/memories/big.md", content=big.encode())
            assert put.status_code == 507, put.text
            assert put.json()["error"]["code"] == "insufficient_storage"
            assert "Traceback" not in put.text

            # Reads go on.
            assert client.get("/v1/files/memories/a.md").text == "kept\n"
            view = tool(client, command="view", path="/memories/a.md").json()
            assert not view["is_error"] and "kept" in view["text"]
            assert client.get("/v1/log").json()["versions"] == before  # nothing partial was recorded
            assert client.get("/v1/stat/memories/big.md").status_code == 404

            # Space freed: writes work again, without restarting anything.
            ballast.unlink()
            again = tool(client, command="create", path="/memories/big0.md", file_text=big)
            assert again.json() == {**again.json(), "is_error": False}
            assert client.get("/v1/files/memories/big0.md").text == big
    finally:
        farm.stop()
