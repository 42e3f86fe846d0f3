"""Four ``memdir serve`` processes on one PostgreSQL database under a mixed load on shared files, and the faults
they must ride out: a server killed mid-load (``kill -9``) and PostgreSQL restarted mid-load.

The load and the checks are benchmarks/bench_pg_load.py's (its module docstring says what the clients do and what
is checked); here they run for seconds instead of a minute. Every run must end with nothing lost and nothing
applied twice: every acknowledged insert exactly once in its file, every acknowledged str_replace counted on its
line, each client's private files exactly what its acknowledged creates, renames and deletes left, and the
database holding exactly the acknowledged changes' idempotency keys.
"""

from __future__ import annotations

import importlib.util
import json
import socket
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import memdir
from support.postgres import PgCluster

_SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_pg_load.py"
_spec = importlib.util.spec_from_file_location("bench_pg_load", _SCRIPT)
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
sys.modules["bench_pg_load"] = bench  # dataclasses look their module up by name
_spec.loader.exec_module(bench)

SERVERS = 4
CLIENTS = 4 * 25
SECONDS = 12.0


@pytest.fixture
def farm(pg_url: str, tmp_path: Path) -> Iterator[Any]:
    servers = bench.ServerFarm(pg_url, SERVERS, tmp_path)
    try:
        servers.start()
        yield servers
    finally:
        servers.stop()


def start_load(farm: Any, tmp_path: Path, seconds: float = SECONDS, *, stoppable: bool = False) -> tuple[Any, Any]:
    tokens = bench.prepare(farm, CLIENTS, 16)
    stop_file = str(tmp_path / "stop-the-load") if stoppable else None
    workload = bench.Workload(farm.urls, tokens, CLIENTS, seconds, stop_file=stop_file)
    return workload, bench.LoadClient(workload, tmp_path)


def tool_requests(log: Path, *, after_last_start: bool = False) -> int:
    """How many /v1/tool requests a server's JSON log shows (since it last became ready, or in all)."""
    text = log.read_text(errors="replace") if log.exists() else ""
    if after_last_start:
        text = text.rsplit("memdir server ready", 1)[1] if "memdir server ready" in text else ""
    return text.count('"route": "/v1/tool"')


def wait_for(condition: Any, what: str, timeout: float = 120.0) -> None:
    """Wait until ``condition()`` holds: the machine may be busy, so no fixed time is assumed."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"still waiting, after {timeout:.0f} s, for {what}")
        time.sleep(0.05)


def assert_all_accounted(farm: Any, pg_url: str, workload: Any, tally: Any) -> None:
    assert bench.verify(pg_url, workload, tally) == []
    assert tally.unexpected == [] and tally.unexpected_count == 0
    assert tally.unknown_keys == [] and tally.inserted_unknown == []  # every command got its answer in the end
    done = {kind: len(times) for kind, times in tally.latencies.items()}
    assert all(count > 0 for count in done.values()), done
    assert len(tally.inserted) > 50 and sum(tally.replaced.values()) > 50


def test_four_servers_under_mixed_load_lose_no_update(farm: Any, pg_url: str, tmp_path: Path) -> None:
    workload, load = start_load(farm, tmp_path)
    tally = load.wait(SECONDS + 120)
    assert_all_accounted(farm, pg_url, workload, tally)
    assert set(tally.statuses) == {"200"}  # zero 5xx, and no other error either
    assert tally.broken == {} and tally.retried == 0
    assert farm.errors_logged() == []


def test_a_server_killed_mid_load_loses_and_duplicates_nothing(farm: Any, pg_url: str, tmp_path: Path) -> None:
    # The load runs until the test has seen what it needs (a load of fixed length could end, on a busy machine,
    # before the restarted server is even up: "assert 0 > 10" below).
    workload, load = start_load(farm, tmp_path, 600.0, stoppable=True)
    log = tmp_path / "server-1.log"
    wait_for(lambda: tool_requests(log) > 50, "server 1 to be busy with the load")
    farm.kill(1)  # requests in flight die with it; its clients retry elsewhere with the same keys
    farm.start(1)  # back on the same port (start waits until it answers)
    restarted = time.monotonic()
    wait_for(lambda: tool_requests(log, after_last_start=True) > 50, "the restarted server's clients to come back")
    load.stop()
    tally = load.wait(SECONDS + 120)
    assert_all_accounted(farm, pg_url, workload, tally)
    assert set(tally.statuses) == {"200"}  # the clients saw broken connections, never an error answer
    assert tally.broken and tally.retried > 0, "the kill should have broken connections"
    # Its clients came back to it: the restarted server's log has their requests.
    assert tool_requests(log, after_last_start=True) > 10
    assert sum(1 for t in tally.done_at if tally.started + t > restarted) > 100


def test_postgres_restarted_mid_load_gives_only_temporary_503s_and_loses_nothing(
    farm: Any, pg_url: str, pg_cluster: PgCluster, tmp_path: Path
) -> None:
    workload, load = start_load(farm, tmp_path)
    time.sleep(SECONDS / 3)
    pg_cluster.restart()  # pg_ctl restart -m fast: sessions terminated, the servers' pools reconnect
    restarted = time.monotonic()
    tally = load.wait(SECONDS + 120)
    assert_all_accounted(farm, pg_url, workload, tally)
    assert set(tally.statuses) <= {"200", "503"}, tally.statuses  # clean and temporary, never a 500
    assert tally.broken == {}  # the servers stayed up
    assert sum(1 for t in tally.done_at if tally.started + t > restarted + 1) > 100  # served again once it was back


def test_a_change_whose_answer_died_with_its_server_is_answered_by_another(
    farm: Any, pg_url: str, tmp_path: Path
) -> None:
    """The change committed, then its server was killed before the client read the answer: sent again (same key)
    to another server, it is answered as the first server would have, and made once."""
    token = bench.prepare(farm, 1, 1)[0]
    key = uuid.uuid4().hex
    body = json.dumps({"command": "insert", "path": bench.shared_path(0), "insert_line": 1, "insert_text": "once"})
    port = farm.ports[0]
    request = (
        f"POST /v1/tool HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nIdempotency-Key: {key}\r\n\r\n{body}"
    )
    with (
        memdir.open_store(pg_url, namespace=bench.NAMESPACE) as store,
        socket.create_connection(("127.0.0.1", port)) as sock,
    ):
        sock.sendall(request.encode())
        deadline = time.monotonic() + 30
        while not store.requested(key) and time.monotonic() < deadline:  # committed?
            time.sleep(0.01)
        farm.kill(0)  # the answer, if it was even sent, is never read
        assert len(store.requested(key)) == 1
    headers = {"Authorization": f"Bearer {token}", "Idempotency-Key": key, "Content-Type": "application/json"}
    again = httpx.post(f"{farm.urls[1]}/v1/tool", content=body, headers=headers)
    assert again.headers["idempotent-replayed"] == "true"
    assert again.json()["text"] == f"The file {bench.shared_path(0)} has been edited."
    with memdir.open_store(pg_url, namespace=bench.NAMESPACE) as store:
        assert store.read(bench.shared_path(0)).content.decode().splitlines().count("once") == 1
        assert len(store.requested(key)) == 1
