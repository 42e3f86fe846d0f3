"""``memdir migrate-store``: one summary line, a progress bar only on a terminal, one-line errors, and a real
process killed mid-copy (SIGKILL) or interrupted (Ctrl-C) resumes where it stopped."""

from __future__ import annotations

import contextlib
import os
import pty
import re
import select
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from cli.helpers import Run, add, seed
from memdir import Store, Version, open_store, parse
from memdir.policy.audit import audit_log
from memdir.store._records import sha256_hex


def changes(store: Store) -> list[tuple[object, ...]]:
    return [
        (v.path, v.op, v.actor, v.session, v.source, v.timestamp, v.sha256, v.size, v.old_path) for v in store.log()
    ]


@pytest.fixture
def source(tmp_path: Path) -> str:
    """A SQLite store with `seed`'s history in "default" and one file in "work"."""
    url = f"sqlite://{tmp_path / 'source.db'}"
    with open_store(url) as store:
        seed(store)
    with open_store(url, namespace="work") as store:
        add(store, "/memories/w.md", "create", b"work\n")
    return url


def test_a_copy_prints_one_line_and_no_progress_when_piped(run: Run, source: str, tmp_path: Path) -> None:
    result = run("migrate-store", source, str(tmp_path / "copy"))
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    line = result.stdout.removesuffix("\n")
    assert "\n" not in line
    assert line.startswith("Copied namespace 'default': 6 versions, 2 files, 15B, in ")
    assert line.endswith(" s; verified.")
    with open_store(source) as src, open_store(str(tmp_path / "copy")) as dst:
        assert changes(dst) == changes(src)


def test_all_namespaces_and_running_again(run: Run, source: str, tmp_path: Path) -> None:
    dst = f"sqlite://{tmp_path / 'copy.db'}"
    first = run("migrate-store", source, dst, "--all-namespaces")
    assert first.stdout.startswith("Copied 2 namespaces ('default', 'work'): 7 versions, 3 files, 20B, in ")
    again = run("migrate-store", source, dst, "--all-namespaces")
    assert again.stdout.startswith("Copied 2 namespaces ('default', 'work'): 7 versions (0 now, 7 by an earlier run)")


def test_the_namespace_comes_from_the_option_or_the_group(run: Run, source: str, tmp_path: Path) -> None:
    assert run("migrate-store", source, str(tmp_path / "a"), "-n", "work").stdout.startswith(
        "Copied namespace 'work': 1 version, 1 file, 5B"
    )
    assert run("--namespace", "work", "migrate-store", source, str(tmp_path / "b")).stdout.startswith(
        "Copied namespace 'work': 1 version"
    )


def test_a_dry_run_says_what_it_would_copy(run: Run, source: str, tmp_path: Path) -> None:
    result = run("migrate-store", source, str(tmp_path / "copy"), "--dry-run")
    assert result.exit_code == 0
    assert result.stdout == (
        "Would copy 6 versions of namespace 'default' (0 of 6 already in the destination), ending with 2 files, "
        "15B. Nothing was written.\n"
    )
    assert not (tmp_path / "copy").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["ftp://x", "{tmp}/b"], "Error: unknown store URL scheme 'ftp': use a directory path or one of "),
        (["{src}", "{src}"], "Error: SRC_URL and DST_URL name the same store: nothing to copy"),
        (["{tmp}/none", "{tmp}/b"], "Error: the source does not exist: there is no directory named 'none' there"),
        (["{src}", "{tmp}/b", "-n", "typo"], "Error: namespace 'typo' of the source has no history: nothing to copy"),
        (["{src}", "{tmp}/taken"], "Error: namespace 'default' of the destination already holds other content: "),
    ],
)
def test_bad_input_is_one_line_and_exit_1(run: Run, source: str, tmp_path: Path, args: list[str], message: str) -> None:
    with open_store(str(tmp_path / "taken")) as taken:
        taken.write("/memories/mine.md", b"mine\n")
    result = run("migrate-store", *(a.format(tmp=tmp_path, src=source) for a in args))
    assert result.exit_code == 1
    assert result.stderr.startswith(message)
    assert result.stderr.count("\n") == 1
    assert result.stdout == ""
    assert not (tmp_path / "b").exists()


def test_namespace_and_all_namespaces_exclude_each_other(run: Run, source: str, tmp_path: Path) -> None:
    result = run("migrate-store", source, str(tmp_path / "b"), "-n", "work", "--all-namespaces")
    assert result.exit_code == 2
    assert "--namespace and --all-namespaces exclude each other" in result.stderr


# -- real processes ----------------------------------------------------------------------------------------

TOTAL = 10_000


@pytest.fixture
def big_source(tmp_path: Path) -> str:
    """10,000 versions: 8,000 files created, 1,000 edited, 500 renamed, 500 deleted."""
    url = f"sqlite://{tmp_path / 'big.db'}"
    with open_store(url) as store:
        number = 0

        def put(path: str, op: str, content: bytes | None, old: str | None = None) -> None:
            nonlocal number
            number += 1
            sha = None if content is None else sha256_hex(content)
            old_path = None if old is None else parse(old)
            version = Version(
                number, parse(path), op, "model", "s", None, 1e9 + number, sha, len(content or b""), old_path
            )
            store.import_version(version, None if op in ("rename", "delete") else content)

        for i in range(8_000):
            put(f"/memories/d{i % 50}/f{i}.md", "create", f"file {i}\n".encode())
        for i in range(1_000):
            put(f"/memories/d{i % 50}/f{i}.md", "str_replace", f"file {i} edited\n".encode())
        for i in range(1_000, 1_500):
            put(f"/memories/moved/f{i}.md", "rename", f"file {i}\n".encode(), old=f"/memories/d{i % 50}/f{i}.md")
        for i in range(2_000, 2_500):
            put(f"/memories/d{i % 50}/f{i}.md", "delete", None)
    assert number == TOTAL
    return url


def memdir_process(*args: str, **options: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "memdir", *args], **options)


def copied_so_far(db: Path) -> int:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            return int(conn.execute("SELECT count(*) FROM versions").fetchone()[0])
    except sqlite3.Error:
        return 0  # not created yet, or its tables not yet


def held_after_a_kill(db: Path) -> int:
    """The versions a killed copy committed, counted by a read-write connection: the first one to open a WAL
    database after a crash rebuilds its index from the log, so it sees a commit whose frames reached the log just
    before the kill; a read-only one may not, and would then count one version fewer than the resumed run."""
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return int(conn.execute("SELECT count(*) FROM versions").fetchone()[0])


def stop_mid_copy(process: subprocess.Popen[bytes], db: Path, sig: signal.Signals) -> None:
    """Send ``sig`` once the copy is under way (a few hundred versions in)."""
    deadline = time.monotonic() + 120
    while copied_so_far(db) < 300:
        assert process.poll() is None, "the copy ended before it could be interrupted"
        assert time.monotonic() < deadline, "the copy never started"
        time.sleep(0.002)
    process.send_signal(sig)


def test_a_copy_killed_with_sigkill_resumes_without_losing_or_doubling(
    run: Run, big_source: str, tmp_path: Path
) -> None:
    db = tmp_path / "copy.db"
    with memdir_process("migrate-store", big_source, f"sqlite://{db}", stdout=subprocess.DEVNULL) as process:
        stop_mid_copy(process, db, signal.SIGKILL)
        process.wait(60)
    assert process.returncode == -signal.SIGKILL
    held = held_after_a_kill(db)
    assert 300 <= held < TOTAL
    result = run("migrate-store", big_source, f"sqlite://{db}")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(
        f"Copied namespace 'default': 10,000 versions ({TOTAL - held:,} now, {held:,} by an earlier run), 7,500 files"
    )
    with open_store(big_source) as src, open_store(f"sqlite://{db}") as dst:
        assert changes(dst) == changes(src)
        assert [v.version for v in dst.log()] == list(range(1, TOTAL + 1))


def test_ctrl_c_stops_cleanly_and_says_how_to_resume(run: Run, big_source: str, tmp_path: Path) -> None:
    db = tmp_path / "copy.db"
    process = memdir_process(
        "migrate-store", big_source, f"sqlite://{db}", stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    stop_mid_copy(process, db, signal.SIGINT)
    out, err = process.communicate(timeout=60)
    held = held_after_a_kill(db)
    assert process.returncode == 130, err
    assert out == b""
    said = re.fullmatch(
        r"Interrupted: at least ([\d,]+) of 10,000 versions of namespace 'default' are in the destination; "
        r"run the same command again to resume.\n",
        err.decode(),
    )
    assert said is not None, err
    # The version in flight may have been committed before its count was: never more than one beyond.
    assert int(said.group(1).replace(",", "")) in (held, held - 1)
    result = run("migrate-store", big_source, f"sqlite://{db}")
    assert f"({TOTAL - held:,} now, {held:,} by an earlier run)" in result.stdout


def test_a_terminal_gets_a_progress_bar(big_source: str, tmp_path: Path) -> None:
    leader, follower = pty.openpty()
    process = memdir_process(
        "migrate-store", big_source, f"sqlite://{tmp_path / 'copy.db'}", stdout=subprocess.PIPE, stderr=follower
    )
    os.close(follower)
    drawn = b""
    while True:
        ready, _, _ = select.select([leader], [], [], 120)
        if not ready:
            break
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the process closed the terminal
            break
        if not chunk:
            break
        drawn += chunk
    out, _ = process.communicate(timeout=60)
    os.close(leader)
    assert process.returncode == 0
    assert b"versions" in drawn and b"default" in drawn
    assert b"/10000" in drawn.replace(b"\x1b", b"") or b"/10,000" in drawn
    assert out.decode().startswith("Copied namespace 'default': 10,000 versions, 7,500 files")


def test_the_copy_is_audited_in_each_store_as_its_own(run: Run, tmp_path: Path) -> None:
    """The destination's writes were made inside the copy's call on the source, and joined it: the redaction the
    destination made was recorded in the source's log, and the destination's log had nothing of the copy."""
    source = str(tmp_path / "src")
    with open_store(source) as below_any_gate:  # as an older memdir, or a program embedding a backend, wrote it
        below_any_gate.write("/memories/k.md", b"token ghp_Zq9Xw2Lm4Np6Rt8Vb0Cd3Fg5Hj7Kk1Ms2Qu4\n")
    dest = f"sqlite://{tmp_path / 'dst.db'}"
    assert run("migrate-store", source, dest).exit_code == 0
    with open_store(dest) as copied:
        imported = [(e.command, e.path, e.outcome) for e in audit_log(copied).entries() if e.command == "import"]
    assert imported == [("import", "/memories/k.md", "redact")]
    with open_store(source) as original:
        assert {e.command for e in audit_log(original).entries()} <= {"migrate-store", "log", "blob", "list"}
