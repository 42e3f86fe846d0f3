"""``memdir migrate-store`` throughput: versions copied per second, SQLite -> directory, SQLite and PostgreSQL.

The source is a SQLite store of 10,000 files (100 directories x 100) with history: every file created, half of
them edited, 500 renamed and 500 deleted (16,000 versions). Each destination is new; the copy goes through
`memdir.transfer.copy_namespace` (the library function behind the command), with the verification at the end
timed apart. The directory store fsyncs every file it writes, as it does in use. PostgreSQL (when installed) is
a throwaway local cluster, as the tests start one.

    python benchmarks/bench_transfer.py            # full run (about a minute)
    python benchmarks/bench_transfer.py --quick    # smoke run (1,000 files)

Results go to stdout; docs/benchmarks.md holds the figures of record.
"""

from __future__ import annotations

import argparse
import contextlib
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import memdir
from memdir import Store, Version, parse
from memdir.store._records import sha256_hex
from memdir.transfer import copy_namespace

if TYPE_CHECKING:
    from collections.abc import Iterator

T0 = 1_700_000_000.0


def build_source(store: Store, files: int) -> int:
    """Create, edit, rename and delete as the module docstring says; returns the number of versions."""
    number = 0

    def add(path: str, op: str, content: bytes | None, old: str | None = None) -> None:
        nonlocal number
        number += 1
        version = Version(
            number,
            parse(path),
            op,
            "model",
            f"s-{number // 100}",
            None,
            T0 + number,
            None if content is None else sha256_hex(content),
            len(content or b""),
            None if old is None else parse(old),
        )
        store.import_version(version, None if op in ("rename", "delete") else content)

    paths = [f"/memories/d{i // 100:02d}/note-{i:04d}.md" for i in range(files)]
    bodies = {p: f"# {p}\n".encode() + b"- the customer prefers email follow-ups on Tuesdays\n" * 8 for p in paths}
    for path in paths:
        add(path, "create", bodies[path])
    for path in paths[::2]:
        bodies[path] += b"- and a follow-up line\n"
        add(path, "str_replace", bodies[path])
    for path in paths[1::20]:
        add(path.replace("note-", "moved-"), "rename", bodies[path], old=path)
    for path in paths[3::20]:
        add(path, "delete", None)
    return number


def measure(src: Store, dst_url: str) -> tuple[float, float]:
    """(versions/s of the copy alone, seconds of the whole call including verification)."""
    marks: list[float] = []

    def progress(done: int, total: int) -> None:
        if done in (0, total):
            marks.append(time.perf_counter())

    with memdir.open_store(dst_url) as dst:
        started = time.perf_counter()
        report = copy_namespace(src, dst, progress=progress)
        whole = time.perf_counter() - started
    assert report.copied == report.versions, report
    return report.versions / (marks[-1] - marks[0]), whole


@contextlib.contextmanager
def postgres() -> Iterator[str | None]:
    """A database on a throwaway local cluster (the test suite's: fsync and synchronous_commit off, so a commit
    waits for no flush, as with SQLite's synchronous=NORMAL in WAL mode); None when PostgreSQL is not installed."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    try:
        from support.postgres import PgCluster
    except ImportError:
        yield None
        return
    try:
        cluster = PgCluster()
    except (OSError, RuntimeError) as exc:
        print(f"(no PostgreSQL row: {exc})")
        yield None
        return
    try:
        cluster.start()
        yield cluster.create_database()
    finally:
        cluster.destroy()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="1,000 files instead of 10,000")
    args = parser.parse_args()
    files = 1_000 if args.quick else 10_000
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        with memdir.open_store(f"sqlite://{base / 'source.db'}") as src:
            started = time.perf_counter()
            versions = build_source(src, files)
            built = time.perf_counter() - started
            print(f"{platform.platform()}, Python {platform.python_version()}")
            print(f"source: {files:,} files, {versions:,} versions (built in {built:.1f} s)\n")
            print("| destination | versions/s (copy) | whole call incl. verification (s) |")
            print("|---|---|---|")
            targets = [("SQLite -> directory", str(base / "dir")), ("SQLite -> SQLite", f"sqlite://{base / 'b.db'}")]
            with postgres() as pg_url:
                if pg_url is not None:
                    targets.append(("SQLite -> PostgreSQL", pg_url))
                for name, url in targets:
                    rate, whole = measure(src, url)
                    print(f"| {name} | {rate:,.0f} | {whole:.1f} |")


if __name__ == "__main__":
    main()
