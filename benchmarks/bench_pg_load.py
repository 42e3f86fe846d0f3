"""Many ``memdir serve`` processes on one PostgreSQL database, under a mixed load on shared files, with faults.

The load: clients (asyncio, raw HTTP/1.1 keep-alive connections, in a process of their own) spread over the
servers, each sending one memory tool command after another (``POST /v1/tool``) in one namespace:

- ``view``         a shared file (30%);
- ``str_replace``  the client's own counter line in a shared file, ``tok c007:`` -> ``tok c007:+`` (25%): the
                   number of ``+`` must end up equal to the number of acknowledged replacements;
- ``insert``       a line with a unique id (``ins c007-000042``) after line 1 of a random shared file (25%): every
                   acknowledged id must end up in its file exactly once;
- ``create``       a private file (8%), ``rename`` it (7%), ``delete`` renamed ones (5%): each client's directory
                   must end up holding exactly what its acknowledged commands left there.

Every change carries an ``Idempotency-Key`` made for it. A client whose connection breaks (a server killed) or
that gets ``503 unavailable`` (the database restarting) sends the same request again, with the same key, to the
next server, until it is answered (or a deadline passes: the outcome is then "unknown", and the checks accept
either). `verify` then reads the database directly and reports every lost, duplicated or unexpected change, and
checks that the database recorded exactly the acknowledged changes' keys (plus, at most, the unknown ones).

    python benchmarks/bench_pg_load.py                        # 1, 2 and 4 servers, 100 clients, 60 s each
    python benchmarks/bench_pg_load.py --servers 4 --duration 20
    python benchmarks/bench_pg_load.py --dsn postgresql://...  # an empty database of yours, not a throwaway cluster

Also measured: requests per second, p50/p99 per command, where the CPU goes (server processes, PostgreSQL, the
load client) and what PostgreSQL's sessions wait on (``pg_stat_activity``, sampled every 50 ms). The tests
(``tests/server/test_pg_load.py``) run the same code, shorter, and with a server killed and PostgreSQL
restarted mid-load. Figures of record: docs/benchmarks.md, "PostgreSQL (issue 7)".
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import os
import platform
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import httpx

if TYPE_CHECKING:
    from collections.abc import Callable

NAMESPACE = "load"
SHARED = "/memories/shared"
PRIVATE = "/memories/private"
MIX = {"view": 30, "str_replace": 25, "insert": 25, "create": 8, "rename": 7, "delete": 5}
WRITES = ("str_replace", "insert", "create", "rename", "delete")
EXPECTED = {
    "view": "Here's the content of ",
    "create": "File created successfully at: ",
    "str_replace": "The memory file has been edited. Here is the snippet",
    "insert": "The file ",
    "rename": "Successfully renamed ",
    "delete": "Successfully deleted ",
}


@dataclass
class Workload:
    """What the load client runs (it travels to the client's process as JSON)."""

    urls: list[str]
    tokens: list[str]  # one per namespace: client n works in namespace n % len(tokens)
    clients: int  # in all, spread over the servers
    duration: float
    shared_files: int = 16
    give_up: float = 60.0  # seconds a command keeps being retried before its outcome counts as unknown
    keys: bool = True  # send Idempotency-Key (False: measure what recording and looking them up costs)
    run: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    # When this file appears the clients stop (after the command each has in flight), even before ``duration``:
    # a test ends the load once what it waits for has happened, rather than after a time that a busy machine
    # may not honour.
    stop_file: str | None = None


def shared_path(index: int) -> str:
    return f"{SHARED}/f{index:02d}.md"


def namespace(index: int) -> str:
    return NAMESPACE if index == 0 else f"{NAMESPACE}{index}"


def home_of(client: int, namespaces: int, shared_files: int) -> tuple[int, int]:
    """(namespace index, shared file index) holding ``client``'s counter line."""
    return client % namespaces, (client // namespaces) % shared_files


def counter_line(client: int) -> str:
    return f"tok c{client:03d}:"


# -- the servers ----------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class ServerFarm:
    """``count`` ``memdir serve`` processes (one worker each) on one store, each on a port of its own."""

    def __init__(self, store_url: str, count: int, workdir: Path) -> None:
        self.store_url = store_url
        self.workdir = workdir
        self.env = {**os.environ, "MEMDIR_HOME": str(workdir / "home")}
        self.ports = [free_port() for _ in range(count)]
        self.processes: list[subprocess.Popen[bytes] | None] = [None] * count

    @property
    def urls(self) -> list[str]:
        return [f"http://127.0.0.1:{port}" for port in self.ports]

    def memdir(self, *args: str) -> str:
        command = [sys.executable, "-m", "memdir", "--store", self.store_url, *args]
        return subprocess.run(command, env=self.env, capture_output=True, text=True, check=True).stdout.strip()

    def start(self, index: int | None = None) -> None:
        """Start one server (or all), and wait until each answers ``/healthz``."""
        indices = range(len(self.ports)) if index is None else [index]
        for i in indices:
            log = (self.workdir / f"server-{i}.log").open("ab")  # the JSON logs, as in production
            args = ["serve", "--port", str(self.ports[i]), "--rate", "0"]
            command = [sys.executable, "-m", "memdir", "--store", self.store_url, *args]
            self.processes[i] = subprocess.Popen(command, env=self.env, stderr=log, stdout=subprocess.DEVNULL)
            log.close()
        for i in indices:
            self._wait_ready(i)

    def _wait_ready(self, index: int) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            process = self.processes[index]
            if process is not None and process.poll() is not None:
                break
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{self.urls[index]}/healthz", timeout=5).status_code == 200:
                    return
            time.sleep(0.05)
        tail = (self.workdir / f"server-{index}.log").read_text(errors="replace")[-3000:]
        raise RuntimeError(f"server {index} did not start:\n{tail}")

    def kill(self, index: int) -> None:
        """``kill -9``: no shutdown, requests in flight die with the process."""
        process = self.processes[index]
        if process is not None:
            process.send_signal(signal.SIGKILL)
            process.wait(30)
            self.processes[index] = None

    def stop(self) -> None:
        for process in self.processes:
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for i, process in enumerate(self.processes):
            if process is not None:
                try:
                    process.wait(60)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(30)
                self.processes[i] = None

    def pids(self) -> list[int]:
        return [p.pid for p in self.processes if p is not None]

    def errors_logged(self) -> list[str]:
        """The servers' log lines at level error (a traceback's first line each)."""
        found = []
        for log in sorted(self.workdir.glob("server-*.log")):
            for line in log.read_text(errors="replace").splitlines():
                if '"level": "error"' in line:
                    found.append(line[:500])
        return found


def prepare(farm: ServerFarm, clients: int, shared_files: int, namespaces: int = 1) -> list[str]:
    """A token per namespace of the load, and its shared files with a counter line per client; the tokens."""
    tokens = [farm.memdir("token", "create", "-n", namespace(k)) for k in range(namespaces)]
    for k, token in enumerate(tokens):
        with httpx.Client(base_url=farm.urls[0], headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
            for f in range(shared_files):
                mine = [c for c in range(clients) if home_of(c, namespaces, shared_files) == (k, f)]
                text = "\n".join([f"# shared file {f}"] + [counter_line(c) for c in mine]) + "\n"
                answer = http.post("/v1/tool", json={"command": "create", "path": shared_path(f), "file_text": text})
                if answer.json()["is_error"]:
                    raise RuntimeError(answer.json()["text"])
    return tokens


# -- the load client (a process of its own) ---------------------------------------------------------------------


class Connection:
    """One keep-alive HTTP/1.1 connection to a server (raw: the client's own CPU must not be the bottleneck)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self, token: str, body: bytes, key: str | None) -> tuple[int, dict[str, str], bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        assert self.reader is not None
        extra = f"Idempotency-Key: {key}\r\n" if key else ""
        head = (
            f"POST /v1/tool HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nAuthorization: Bearer {token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n{extra}\r\n"
        )
        self.writer.write(head.encode() + body)
        raw = await self.reader.readuntil(b"\r\n\r\n")
        lines = raw.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
        content = await self.reader.readexactly(int(headers.get("content-length", "0")))
        if headers.get("connection", "").lower() == "close":
            self.close()
        return status, headers, content

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


@dataclass
class Tally:
    """What the clients saw (JSON for the parent process)."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in MIX})  # ms per command
    statuses: dict[str, int] = field(default_factory=dict)  # HTTP status of every attempt
    broken: dict[str, int] = field(default_factory=dict)  # attempts whose connection failed, by exception
    replayed: int = 0  # answers rebuilt from an earlier attempt (Idempotent-Replayed)
    retried: int = 0  # commands sent more than once
    unexpected: list[str] = field(default_factory=list)  # answers that were not the command's success (samples)
    unexpected_count: int = 0
    acked_keys: list[str] = field(default_factory=list)
    unknown_keys: list[str] = field(default_factory=list)
    inserted: list[str] = field(default_factory=list)  # acknowledged insert ids
    inserted_unknown: list[str] = field(default_factory=list)
    replaced: dict[str, int] = field(default_factory=dict)  # client -> acknowledged replacements
    replaced_unknown: dict[str, int] = field(default_factory=dict)
    private: dict[str, list[str]] = field(default_factory=dict)  # client -> names its acknowledged commands left
    private_unknown: dict[str, list[str]] = field(default_factory=dict)  # names that may or may not be there
    done_at: list[float] = field(default_factory=list)  # seconds since the start, per finished command
    started: float = 0.0
    elapsed: float = 0.0
    cpu: float = 0.0  # the client process's own CPU seconds

    def count(self, table: dict[str, int], key: str) -> None:
        table[key] = table.get(key, 0) + 1


class Client:
    """One simulated agent: one command at a time, against its home server first."""

    def __init__(self, number: int, workload: Workload, tally: Tally) -> None:
        self.n = number
        self.w = workload
        self.tally = tally
        self.rng = random.Random(f"{workload.run}-{number}")
        self.ports = [int(u.rsplit(":", 1)[1]) for u in workload.urls]
        self.home = number % len(self.ports)
        self.connections = [Connection(p) for p in self.ports]
        self.seq = 0
        self.created: collections.deque[str] = collections.deque()  # n<seq>.md, not renamed yet
        self.renamed: collections.deque[str] = collections.deque()  # r<seq>.md, not deleted yet
        self.name = f"c{number:03d}"
        self.token = workload.tokens[number % len(workload.tokens)]

    async def run(self, stop_at: float, stopped: asyncio.Event) -> None:
        kinds, weights = list(MIX), list(MIX.values())
        try:
            while time.monotonic() < stop_at and not stopped.is_set():
                await self.one(self.rng.choices(kinds, weights)[0])
        finally:
            for connection in self.connections:
                connection.close()

    async def one(self, kind: str) -> None:
        self.seq += 1
        command, on_done = self.command(kind)
        kind = command["command"]
        key = f"{self.w.run}-{self.name}-{self.seq}" if kind in WRITES and self.w.keys else None
        started = time.monotonic()
        answer = await self.send(json.dumps(command).encode(), key, started)
        self.tally.latencies[kind].append(1000 * (time.monotonic() - started))
        self.tally.done_at.append(time.monotonic() - self.tally.started)
        if answer is None:  # unknown: it may or may not have been applied
            if key:
                self.tally.unknown_keys.append(key)
            on_done(None)
            return
        text, is_error = answer
        ok = not is_error and text.startswith(EXPECTED[kind])
        if not ok:
            self.tally.unexpected_count += 1
            if len(self.tally.unexpected) < 20:
                self.tally.unexpected.append(f"{kind}: {text[:300]}")
        elif key:
            self.tally.acked_keys.append(key)
        on_done(ok)

    async def send(self, body: bytes, key: str | None, started: float) -> tuple[str, bool] | None:
        """The answer (text, is_error), retried on broken connections and 503s; None after ``give_up`` s."""
        attempt = 0
        while time.monotonic() - started < self.w.give_up:
            server = (self.home + attempt) % len(self.ports)
            attempt += 1
            if attempt == 2:
                self.tally.retried += 1
            try:
                status, headers, content = await asyncio.wait_for(
                    self.connections[server].post(self.token, body, key), 30
                )
            except (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError) as exc:
                self.connections[server].close()
                self.tally.count(self.tally.broken, type(exc).__name__)
                if attempt % len(self.ports) == 0:  # every server failed once: back off before the next round
                    await asyncio.sleep(min(2.0, 0.05 * 2 ** (attempt // len(self.ports))) * self.rng.uniform(0.5, 1.5))
                continue
            self.tally.count(self.tally.statuses, str(status))
            if status in (429, 503):
                wait = float(headers.get("retry-after", "1") or 1)
                await asyncio.sleep(wait * self.rng.uniform(0.5, 1.5))
                continue
            self.tally.replayed += headers.get("idempotent-replayed") == "true"
            if status != 200:
                return f"HTTP {status}: {content[:200].decode('utf-8', 'replace')}", True
            data = json.loads(content)
            return str(data["text"]), bool(data["is_error"])
        return None

    # -- the commands and what their outcome means -----------------------------------------------------------

    def command(self, kind: str) -> tuple[dict[str, Any], Any]:
        if kind == "delete" and not self.renamed:
            kind = "rename"
        if kind == "rename" and not self.created:
            kind = "create"
        made: tuple[dict[str, Any], Any] = getattr(self, f"_{kind}")()
        return made

    def _view(self) -> tuple[dict[str, Any], Any]:
        path = shared_path(self.rng.randrange(self.w.shared_files))
        return {"command": "view", "path": path}, lambda _ok: None

    def _str_replace(self) -> tuple[dict[str, Any], Any]:
        line = counter_line(self.n)
        path = shared_path(home_of(self.n, len(self.w.tokens), self.w.shared_files)[1])
        command = {"command": "str_replace", "path": path, "old_str": line, "new_str": line + "+"}
        return command, lambda ok: self._note(self.tally.replaced, self.tally.replaced_unknown, ok)

    def _insert(self) -> tuple[dict[str, Any], Any]:
        line = f"ins {self.name}-{self.seq:06d}"
        path = shared_path(self.rng.randrange(self.w.shared_files))
        command = {"command": "insert", "path": path, "insert_line": 1, "insert_text": line + "\n"}

        def done(ok: bool | None) -> None:
            if ok:
                self.tally.inserted.append(line)
            elif ok is None:
                self.tally.inserted_unknown.append(line)

        return command, done

    def _create(self) -> tuple[dict[str, Any], Any]:
        name = f"n{self.seq}.md"
        command = {"command": "create", "path": f"{PRIVATE}/{self.name}/{name}", "file_text": f"note {self.seq}\n"}

        def done(ok: bool | None) -> None:
            if ok:
                self.created.append(name)
            elif ok is None:
                self._unknown(name)

        return command, done

    def _rename(self) -> tuple[dict[str, Any], Any]:
        old = self.created.popleft()
        new = "r" + old[1:]
        base = f"{PRIVATE}/{self.name}"
        command = {"command": "rename", "old_path": f"{base}/{old}", "new_path": f"{base}/{new}"}

        def done(ok: bool | None) -> None:
            if ok:
                self.renamed.append(new)
            else:
                self._unknown(old, new)  # refused or unknown: where the file is, is no longer certain

        return command, done

    def _delete(self) -> tuple[dict[str, Any], Any]:
        name = self.renamed.popleft()
        command = {"command": "delete", "path": f"{PRIVATE}/{self.name}/{name}"}
        return command, lambda ok: None if ok else self._unknown(name)

    def _note(self, acked: dict[str, int], unknown: dict[str, int], ok: bool | None) -> None:
        if ok:
            self.tally.count(acked, self.name)
        elif ok is None:
            self.tally.count(unknown, self.name)

    def _unknown(self, *names: str) -> None:
        self.tally.private_unknown.setdefault(self.name, []).extend(names)

    def finish(self) -> None:
        self.tally.private[self.name] = [*self.created, *self.renamed]


async def run_clients(workload: Workload) -> Tally:
    tally = Tally(started=time.monotonic())
    clients = [Client(n, workload, tally) for n in range(workload.clients)]
    stop_at = tally.started + workload.duration
    stopped = asyncio.Event()
    watcher = asyncio.ensure_future(_watch(workload.stop_file, stopped))
    await asyncio.gather(*(c.run(stop_at, stopped) for c in clients))
    watcher.cancel()
    for client in clients:
        client.finish()
    tally.elapsed = time.monotonic() - tally.started
    tally.cpu = time.process_time()
    return tally


async def _watch(stop_file: str | None, stopped: asyncio.Event) -> None:
    while stop_file is not None and not os.path.exists(stop_file):
        await asyncio.sleep(0.05)
    if stop_file is not None:
        stopped.set()


def client_main(spec: Path, out: Path) -> None:
    """The load client's process: run the workload in ``spec``, write the tally to ``out``."""
    workload = Workload(**json.loads(spec.read_text()))
    try:
        import uvloop

        tally = uvloop.run(run_clients(workload))
    except ImportError:
        tally = asyncio.run(run_clients(workload))
    out.write_text(json.dumps(asdict(tally)))


class LoadClient:
    """The load client, running in its own process (so its CPU is not the servers')."""

    def __init__(self, workload: Workload, workdir: Path) -> None:
        self.workload = workload
        self.spec = workdir / f"load-{workload.run}.json"
        self.out = workdir / f"tally-{workload.run}.json"
        self.spec.write_text(json.dumps(asdict(workload)))
        self.process = subprocess.Popen([sys.executable, __file__, "client", str(self.spec), str(self.out)])

    def stop(self) -> None:
        """End the load now (see `Workload.stop_file`)."""
        if self.workload.stop_file is None:
            raise RuntimeError("this load has no stop file: it ends after its duration")
        Path(self.workload.stop_file).touch()

    def wait(self, timeout: float) -> Tally:
        if self.process.wait(timeout) != 0:
            raise RuntimeError(f"the load client failed (exit status {self.process.returncode})")
        return Tally(**json.loads(self.out.read_text()))


# -- the checks --------------------------------------------------------------------------------------------------


def verify(store_url: str, workload: Workload, tally: Tally) -> list[str]:
    """Every way the database disagrees with what the clients were told (empty: nothing lost or duplicated)."""
    import memdir

    problems: list[str] = []
    shared: dict[tuple[int, int], str] = {}
    private: dict[str, set[str]] = collections.defaultdict(set)
    for k in range(len(workload.tokens)):
        with memdir.open_store(store_url, namespace=namespace(k)) as store:
            for f in range(workload.shared_files):
                shared[k, f] = store.read(shared_path(f)).content.decode()
            for entry in store.list_files(PRIVATE) if store.stat(PRIVATE) else []:
                client, name = entry.path.parts[-2:]
                private[client].add(name)
    problems += _check_inserts(shared, tally)
    problems += _check_counters(shared, workload, tally)
    problems += _check_private(private, tally)
    if workload.keys:
        problems += _check_keys(store_url, [namespace(k) for k in range(len(workload.tokens))], tally)
    return problems


def _check_inserts(shared: dict[tuple[int, int], str], tally: Tally) -> list[str]:
    found = collections.Counter(
        line for text in shared.values() for line in text.splitlines() if line.startswith("ins ")
    )
    acked, unknown = set(tally.inserted), set(tally.inserted_unknown)
    problems = [f"insert {line!r} acknowledged but found {found[line]} times" for line in acked if found[line] != 1]
    problems += [f"insert {line!r} (unknown outcome) found {found[line]} times" for line in unknown if found[line] > 1]
    problems += [f"insert {line!r} found but never sent" for line in found if line not in acked | unknown]
    return problems


def _check_counters(shared: dict[tuple[int, int], str], workload: Workload, tally: Tally) -> list[str]:
    problems = []
    for c in range(workload.clients):
        name, prefix = f"c{c:03d}", counter_line(c)
        text = shared[home_of(c, len(workload.tokens), workload.shared_files)]
        lines = [line for line in text.splitlines() if line.startswith(prefix)]
        if len(lines) != 1:
            problems.append(f"counter line of {name} found {len(lines)} times")
            continue
        plus, acked, unknown = (
            len(lines[0]) - len(prefix),
            tally.replaced.get(name, 0),
            tally.replaced_unknown.get(name, 0),
        )
        if not acked <= plus <= acked + unknown:
            problems.append(f"{name}: {acked} str_replace acknowledged (+{unknown} unknown), the file shows {plus}")
    return problems


def _check_private(private: dict[str, set[str]], tally: Tally) -> list[str]:
    problems = []
    for name in sorted(set(private) | set(tally.private)):
        expected, maybe = set(tally.private.get(name, [])), set(tally.private_unknown.get(name, []))
        actual = private.get(name, set())
        problems += [f"{name}: {f} acknowledged but missing" for f in sorted(expected - actual)]
        problems += [f"{name}: {f} present but never acknowledged" for f in sorted(actual - expected - maybe)]
    return problems


def _check_keys(store_url: str, namespaces: list[str], tally: Tally) -> list[str]:
    """The keys the database recorded are the acknowledged changes' (each once), plus at most the unknown ones."""
    import psycopg

    with psycopg.connect(store_url) as conn:
        rows = conn.execute(
            "SELECT request, count(DISTINCT op) FROM memdir_versions WHERE ns = ANY(%s) AND request IS NOT NULL "
            "GROUP BY request",
            (namespaces,),
        ).fetchall()
    recorded = {str(r[0]) for r in rows}
    acked, unknown = set(tally.acked_keys), set(tally.unknown_keys)
    problems = [f"acknowledged change {k} is not in the database" for k in sorted(acked - recorded)[:20]]
    problems += [f"change {k} recorded but never acknowledged" for k in sorted(recorded - acked - unknown)[:20]]
    problems += [f"change {r[0]} recorded as {r[1]} different operations" for r in rows if r[1] != 1][:20]
    return problems


def server_errors(tally: Tally) -> dict[str, int]:
    """Attempts answered 5xx, by status."""
    return {status: n for status, n in tally.statuses.items() if status.startswith("5")}


# -- measuring where the time goes (the benchmark) ---------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process (0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def postgres_pids(data_dir: Path | None) -> list[int]:
    """The postmaster and every process it started (backends, WAL writer...), when the cluster is local."""
    if data_dir is None:
        return []
    try:
        postmaster = int((data_dir / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return []
    children = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError):
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == postmaster:
                    children.append(int(entry.name))
    return [postmaster, *children]


def machine_busy() -> tuple[float, float]:
    """(busy, total) jiffies of the whole machine since boot."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + values[4]
    return sum(values) - idle, sum(values)


class WaitSampler(threading.Thread):
    """What PostgreSQL's client sessions are doing, sampled every 50 ms (``pg_stat_activity``): per kind, the
    average number of sessions doing it (so 1.0 = one session at it all the time)."""

    KINDS: ClassVar[dict[str, str]] = {
        "lock": "waiting for a lock (the namespace's row: another server's write)",
        "server": "in a transaction, waiting for its memdir server (Python: screening, encoding, the GIL)",
        "postgres": "running in PostgreSQL (CPU, I/O, internal locks)",
    }

    def __init__(self, dsn: str) -> None:
        super().__init__(daemon=True)
        self.dsn = dsn
        self.samples: collections.Counter[str] = collections.Counter()
        self.ticks = 0
        self.stopped = threading.Event()

    def run(self) -> None:
        import psycopg

        while not self.stopped.is_set():
            try:
                with psycopg.connect(self.dsn, autocommit=True) as conn:
                    while not self.stopped.wait(0.05):
                        self._sample(conn)
            except psycopg.OperationalError:  # PostgreSQL restarting (the fault runs): sample again once it is up
                self.stopped.wait(0.5)

    def _sample(self, conn: Any) -> None:
        rows = conn.execute(
            "SELECT state, wait_event_type FROM pg_stat_activity WHERE datname = current_database() "
            "AND backend_type = 'client backend' AND pid <> pg_backend_pid()"
        ).fetchall()
        self.ticks += 1
        for state, wait in rows:
            kind = self._kind(str(state), wait)
            if kind is not None:
                self.samples[kind] += 1

    @staticmethod
    def _kind(state: str, wait: str | None) -> str | None:
        if state == "idle":
            return None  # a pooled connection nobody uses now
        if wait == "Lock":
            return "lock"
        return "server" if state.startswith("idle in transaction") else "postgres"

    def stop(self) -> dict[str, float]:
        self.stopped.set()
        self.join(10)
        return {kind: self.samples[kind] / max(1, self.ticks) for kind in self.KINDS}


@dataclass
class Setup:
    """One measurement's settings."""

    servers: int
    clients: int = 100
    seconds: float = 60.0
    keys: bool = True
    namespaces: int = 1
    fault: str | None = None  # "kill": kill -9 server 1 a third in, restart it 2 s later; "restart": PostgreSQL

    @property
    def label(self) -> str:
        keys = "" if self.keys else ", no keys"
        spread = f", {self.namespaces} namespaces" if self.namespaces > 1 else ""
        fault = {"kill": ", a server killed", "restart": ", PostgreSQL restarted", None: ""}[self.fault]
        return f"{self.servers} server{'s' if self.servers > 1 else ''}{keys}{spread}{fault}"


@dataclass
class Measured:
    setup: Setup
    seconds: float
    commands: int
    per_command: dict[str, tuple[int, float, float]]  # count, p50 ms, p99 ms
    cpu: dict[str, float]  # cores used on average: servers, postgres, client, machine
    waits: dict[str, float]  # WaitSampler's
    problems: list[str]
    statuses: dict[str, int]
    unexpected: int
    tally: Tally

    @property
    def rate(self) -> float:
        return self.commands / self.seconds


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def measure(
    dsn: str, data_dir: Path | None, setup: Setup, workdir: Path, restart: Callable[[], None] | None = None
) -> Measured:
    farm = ServerFarm(dsn, setup.servers, workdir)
    farm.start()
    try:
        tokens = prepare(farm, setup.clients, 16, setup.namespaces)
        workload = Workload(farm.urls, tokens, setup.clients, setup.seconds, keys=setup.keys)
        servers_before = sum(cpu_seconds(pid) for pid in farm.pids())
        pg_before = {pid: cpu_seconds(pid) for pid in postgres_pids(data_dir)}
        busy0, total0 = machine_busy()
        sampler = WaitSampler(dsn)
        sampler.start()
        load = LoadClient(workload, workdir)
        if setup.fault is not None:
            time.sleep(setup.seconds / 3)
            _inflict(setup.fault, farm, restart)
        tally = load.wait(setup.seconds + 120)
        waits = sampler.stop()
        busy1, total1 = machine_busy()
        servers_used = sum(cpu_seconds(pid) for pid in farm.pids()) - servers_before
        pg_used = sum(cpu_seconds(pid) - pg_before.get(pid, 0.0) for pid in postgres_pids(data_dir))
    finally:
        farm.stop()
    cores = os.cpu_count() or 1
    cpu = {  # average cores busy during the run
        "servers": servers_used / tally.elapsed,
        "postgres": pg_used / tally.elapsed,
        "client": tally.cpu / tally.elapsed,
        "machine": cores * (busy1 - busy0) / max(1, total1 - total0),
    }
    per_command = {k: (len(v), percentile(v, 0.5), percentile(v, 0.99)) for k, v in tally.latencies.items()}
    return Measured(
        setup, tally.elapsed, sum(len(v) for v in tally.latencies.values()), per_command, cpu, waits,
        verify(dsn, workload, tally), tally.statuses, tally.unexpected_count, tally,
    )  # fmt: skip


def _inflict(fault: str, farm: ServerFarm, restart: Callable[[], None] | None) -> None:
    if fault == "kill":
        farm.kill(1)
        time.sleep(2)
        farm.start(1)
    elif restart is not None:
        restart()


def report(results: list[Measured]) -> None:
    print(f"{platform.platform()}, Python {platform.python_version()}, {os.cpu_count()} CPUs\n")
    print(
        "| run | clients | commands/s | writes/s | "
        + " | ".join(f"{k} p50 / p99 ms" for k in MIX)
        + " | 5xx | problems |"
    )
    print("|---" * (len(MIX) + 6) + "|")
    for m in results:
        cells = [f"{m.per_command[k][1]:.0f} / {m.per_command[k][2]:.0f}" for k in MIX]
        writes = sum(m.per_command[k][0] for k in WRITES) / m.seconds
        fives = sum(n for s, n in m.statuses.items() if s.startswith("5"))
        print(
            f"| {m.setup.label} | {m.setup.clients} | {m.rate:,.0f} | {writes:,.0f} | {' | '.join(cells)} | "
            f"{fives} | {len(m.problems)} |"
        )
    print(
        "\n| run | CPU cores: servers | PostgreSQL | load client | other processes | machine | sessions: "
        + " | ".join(WaitSampler.KINDS)
        + " |"
    )
    print("|---" * (6 + len(WaitSampler.KINDS)) + "|")
    for m in results:
        ours = m.cpu["servers"] + m.cpu["postgres"] + m.cpu["client"]
        waits = " | ".join(f"{m.waits[k]:.2f}" for k in WaitSampler.KINDS)
        print(
            f"| {m.setup.label} | {m.cpu['servers']:.2f} | {m.cpu['postgres']:.2f} | {m.cpu['client']:.2f} | "
            f"{max(0.0, m.cpu['machine'] - ours):.2f} | {m.cpu['machine']:.2f} | {waits} |"
        )
    print(
        "\nsessions: the average number of PostgreSQL sessions "
        + "; ".join(f"{k}: {v}" for k, v in WaitSampler.KINDS.items())
    )
    for m in results:
        if m.setup.fault is not None:
            t = m.tally
            slowest = max(max(v) for v in t.latencies.values() if v)
            print(
                f"\n{m.setup.label}: answers by status {t.statuses}; broken connections {t.broken or 0}; "
                f"commands sent more than once {t.retried}; answers replayed {t.replayed}; unknown outcomes "
                f"{len(t.unknown_keys)}; slowest command {slowest / 1000:.1f} s"
            )
        for problem in m.problems[:10]:
            print(f"PROBLEM ({m.setup.label}): {problem}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--servers", type=int, action="append", help="server processes (repeatable; 1, 2, 4)")
    parser.add_argument("--clients", type=int, default=100, help="clients in all, spread over the servers")
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of load per measurement")
    parser.add_argument("--dsn", help="an empty PostgreSQL database to use (default: a throwaway cluster)")
    parser.add_argument("--no-keys", dest="keys", action="store_false", help="send no Idempotency-Key")
    parser.add_argument("--namespaces", type=int, default=1, help="spread the clients over this many namespaces")
    parser.add_argument("--fault", choices=("kill", "restart"), help="kill -9 a server, or restart PostgreSQL")
    args = parser.parse_args()
    counts = args.servers or [1, 2, 4]
    setups = [Setup(n, args.clients, args.duration, args.keys, args.namespaces, args.fault) for n in counts]
    results = []
    with tempfile.TemporaryDirectory(prefix="memdir-pgload-") as tmp:
        cluster = None
        if args.dsn is None:
            sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
            from support.postgres import PgCluster

            cluster = PgCluster()
            cluster.start()
        try:
            for n, setup in enumerate(setups):
                dsn = args.dsn or cluster.create_database()  # type: ignore[union-attr]
                workdir = Path(tmp) / f"run-{n}"
                workdir.mkdir()
                data = cluster.data if cluster is not None else None
                restart = cluster.restart if cluster is not None else None
                results.append(measure(dsn, data, setup, workdir, restart))
        finally:
            if cluster is not None:
                cluster.destroy()
    report(results)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "client":
        client_main(Path(sys.argv[2]), Path(sys.argv[3]))
    else:
        main()
