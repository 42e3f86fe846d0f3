"""memdir scan --history and memdir redact: a secret that reached the history (an edit made outside memdir, a note
written before the policy redacted it) is found by the version that holds it, and removed from the store for good."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.helpers import Run
from memdir import open_store
from memdir.policy.audit import audit_log

SECRET = "AKIAQ7W3E9R5T1Y8U2I7"


@pytest.fixture(params=["directory", "sqlite"])
def leaked(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store whose version 2 of /memories/a.md holds a key (written by hand on disk, or when secrets were
    allowed), and whose current a.md is clean; /memories/b.md's version 4 holds the same text as version 1."""
    url = str(tmp_path / "store") if request.param == "directory" else f"sqlite://{tmp_path / 'memory.db'}"
    with open_store(url) as store:
        store.write("/memories/a.md", b"first\n")
        store.write("/memories/a.md", f"key {SECRET}\n".encode())  # the store below the gate: kept as given
        store.write("/memories/a.md", b"clean\n")
        store.write("/memories/b.md", b"first\n")
    return url


def store_bytes(url: str, tmp_path: Path) -> bytes:
    """Every byte the store keeps on disk (files, sidecar, database, write-ahead logs)."""
    return b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())


def test_scan_history_finds_the_version_and_redact_removes_it_for_good(run: Run, leaked: str, tmp_path: Path) -> None:
    assert run("scan", store=leaked).exit_code == 0  # the current files are clean
    found = run("scan", "--history", store=leaked)
    assert (found.exit_code, found.stdout) == (
        1,
        "/memories/a.md@2:1: secret:aws-access-key (redact)  key AKIA****(20 chars)\n",
    )
    assert SECRET.encode() in store_bytes(leaked, tmp_path)

    done = run("redact", "/memories/a.md@2", "--yes", store=leaked)
    assert (done.exit_code, done.stdout) == (0, "Redacted /memories/a.md@2: its content is no longer stored.\n")
    assert SECRET.encode() not in store_bytes(leaked, tmp_path)
    assert run("scan", "--history", store=leaked).exit_code == 0
    shown = run("show", "/memories/a.md@2", store=leaked)
    assert (shown.exit_code, shown.stderr) == (1, "Error: that content was redacted: it is no longer stored\n")
    assert [line.split("\t")[0] for line in run("history", "/memories/a.md", store=leaked).stdout.splitlines()] == [
        "3", "2", "1"
    ]  # fmt: skip  # the version's record stays
    with open_store(leaked) as store:
        entries = [(e.command, e.actor, e.channel, e.outcome) for e in audit_log(store).entries()]
    assert ("redact", "user", "cli", "ok") in entries


def test_the_same_content_in_other_versions_is_named_and_goes_too(run: Run, leaked: str) -> None:
    with open_store(leaked) as store:
        store.delete("/memories/b.md")  # version 4 of b.md held "first", as version 1 of a.md did
    asked = run("redact", "/memories/a.md@1", store=leaked, input="y\n")
    assert asked.stderr.startswith(
        "Remove the content of /memories/a.md@1 (and the same content in /memories/b.md@4) for good?"
    )
    assert (
        asked.stdout
        == "Redacted /memories/a.md@1 (and the same content in /memories/b.md@4): its content is no longer stored.\n"
    )
    assert run("show", "/memories/b.md@4", store=leaked).exit_code == 1


@pytest.mark.parametrize(
    ("args", "input", "message"),
    [
        (["/memories/a.md@3", "--yes"], None, "a current file holds this content: change or delete the file first"),
        (["/memories/a.md@9", "--yes"], None, "/memories/a.md has no version 9"),
        (["/memories/a.md", "--yes"], None, "expected PATH@VERSION, e.g. /memories/notes.md@3, got: /memories/a.md"),
        (["/memories/a.md@2"], "n\n", "nothing was redacted"),
    ],
)
def test_what_is_refused_changes_nothing(
    run: Run, leaked: str, tmp_path: Path, args: list[str], input: str | None, message: str
) -> None:
    result = run("redact", *args, store=leaked, input=input)
    assert (result.exit_code, result.stderr.splitlines()[-1]) == (1, f"Error: {message}")
    assert SECRET.encode() in store_bytes(leaked, tmp_path)
    assert run("show", "/memories/a.md@3", store=leaked).stdout == "clean\n"


def test_a_deletion_and_a_second_redaction_are_refused(run: Run, leaked: str) -> None:
    with open_store(leaked) as store:
        store.delete("/memories/b.md")
    deletion = run("redact", "/memories/b.md@5", "--yes", store=leaked)
    assert deletion.stderr == "Error: version 5 of /memories/b.md is a deletion; it has no content\n"
    assert run("redact", "/memories/a.md@2", "--yes", store=leaked).exit_code == 0
    again = run("redact", "/memories/a.md@2", "--yes", store=leaked)
    assert (again.exit_code, again.stderr) == (1, "Error: the content of /memories/a.md@2 was already redacted\n")
