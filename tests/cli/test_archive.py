"""export / import: a namespace and its whole history travel between any two backends; a damaged or hostile
archive is refused before anything is written."""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from backends import BACKENDS, store_url
from cli.helpers import Run
from memdir import MISSING, Origin, RedactedError, StorageError, Store, Version, open_store
from memdir.archive import ArchiveError, ArchiveLimits, export_namespace, import_namespace
from memdir.store.sqlite import SQLiteStore
from support.redaction import redacted_history

MODEL = Origin("model", "s-1")
USER = Origin("user", None, "cli")
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256))


def build_history(store: Store) -> None:
    """Every kind of change: create, edit, a directory rename, delete, re-create, restore, shared content."""
    store.write("/memories/notes.md", b"one\n", expect=MISSING, origin=MODEL, op="create")
    store.update("/memories/notes.md", lambda f: f.content + b"two\n", origin=MODEL, op="str_replace")
    store.write("/memories/projects/a.md", "é ü\n".encode(), origin=MODEL, op="create")
    store.write("/memories/projects/b.md", b"bee\n", origin=MODEL, op="create")
    store.write("/memories/pic.png", PNG, origin=USER, op="create")
    store.move("/memories/projects", "/memories/archive/projects", origin=MODEL)
    store.delete("/memories/archive/projects/b.md", origin=USER)
    store.write("/memories/projects/b.md", b"bee again\n", origin=MODEL, op="create")
    store.restore("/memories/notes.md", 1, origin=USER)
    store.write("/memories/日本語.md", b"one\n", origin=Origin("model", "s-2"), op="create")


def log_of(store: Store) -> list[tuple[object, ...]]:
    return [
        (v.version, v.path, v.op, v.actor, v.session, v.source, v.timestamp, v.sha256, v.size, v.old_path)
        for v in store.log()
    ]


def files_of(store: Store) -> dict[str, bytes]:
    return {e.path.virtual: store.read(e.path).content for e in store.list_files()}


def histories_of(store: Store) -> dict[str, list[tuple[str, str, bytes | None]]]:
    paths = {v.path.virtual for v in store.log()}
    return {
        p: [(v.op, v.actor, None if v.deleted else store.read_version(p, v.version)) for v in store.history(p)]
        for p in sorted(paths)
    }


@pytest.mark.parametrize("source", BACKENDS)
@pytest.mark.parametrize("target", BACKENDS)
def test_round_trip_keeps_files_and_history(source: str, target: str, tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    archive = tmp_path / "backup.zip"
    with open_store(store_url(source, tmp_path / "a")) as original:
        build_history(original)
        exported = export_namespace(original, archive)
        with open_store(store_url(target, tmp_path / "b"), namespace="copy") as copy:
            imported = import_namespace(copy, archive)
            assert log_of(copy) == log_of(original)
            assert files_of(copy) == files_of(original)
            assert histories_of(copy) == histories_of(original)
            assert copy.usage() == original.usage()
    assert exported == imported
    assert (exported.namespace, exported.versions, exported.files, exported.blobs) == ("default", 11, 5, 6)


def test_the_archive_layout(tmp_path: Path) -> None:
    with open_store("memory:") as store:
        build_history(store)
        export_namespace(store, tmp_path / "backup.zip")
    with zipfile.ZipFile(tmp_path / "backup.zip") as zf:
        names = zf.namelist()
        manifest = json.loads(zf.read("manifest.json"))
        lines = zf.read("versions.jsonl").decode().splitlines()
        blobs = {name: zf.read(name) for name in names if name.startswith("blobs/")}
    assert names[0] == "versions.jsonl"
    assert names[-1] == "manifest.json"  # written last: it lists the content found redacted on the way
    assert manifest["format"] == "memdir-archive"
    assert manifest["format_version"] == 1
    assert manifest["namespace"] == "default"
    assert manifest["counts"] == {"versions": 11, "blobs": 6, "files": 5, "bytes": 4 + 6 + 10 + len(PNG) + 4}
    assert manifest["redacted"] == []
    assert json.loads(lines[0])["path"] == "/memories/notes.md"
    assert all(hashlib.sha256(data).hexdigest() == name.removeprefix("blobs/") for name, data in blobs.items())


def test_export_is_private_and_never_overwrites_by_accident(tmp_path: Path) -> None:
    target = tmp_path / "backup.zip"
    with open_store("memory:") as store:
        store.write("/memories/a.md", b"a")
        export_namespace(store, target)
        assert oct(target.stat().st_mode)[-3:] == "600"
        with pytest.raises(ArchiveError, match=r"backup\.zip already exists"):
            export_namespace(store, target)
        store.write("/memories/b.md", b"b")
        assert export_namespace(store, target, overwrite=True).files == 2
    assert [p.name for p in tmp_path.iterdir()] == ["backup.zip"]  # no temporary file left behind


def test_progress_is_reported_per_version(tmp_path: Path) -> None:
    seen: list[tuple[int, int]] = []
    with open_store("memory:") as store:
        build_history(store)
        export_namespace(store, tmp_path / "x.zip", progress=lambda done, total: seen.append((done, total)))
        assert seen == [(n, 11) for n in range(1, 12)]
        seen.clear()
        with open_store("memory:") as copy:
            import_namespace(copy, tmp_path / "x.zip", progress=lambda done, total: seen.append((done, total)))
    assert seen == [(n, 11) for n in range(1, 12)]


def test_import_names_a_missing_archive_as_given_and_creates_no_store(run: Run, tmp_path: Path) -> None:
    missing = str(tmp_path / "x" / "nonexistent.zip")
    result = run("import", missing, store=str(tmp_path / "store"))
    assert (result.exit_code, result.stdout, result.stderr) == (1, "", f"Error: no archive at {missing}\n")
    assert not (tmp_path / "store").exists()


def test_import_of_a_file_that_is_no_archive_creates_no_store(run: Run, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a zip\n")
    result = run("import", str(tmp_path / "notes.txt"), store=str(tmp_path / "store"))
    assert (result.exit_code, result.stderr) == (
        1,
        "Error: the archive is not a readable zip file (File is not a zip file)\n",
    )
    assert not (tmp_path / "store").exists()


def test_export_never_replaces_a_dangling_link_without_overwrite(run: Run, tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    run("write", "/memories/a.md", "-", store=store, input="hi\n")
    (tmp_path / "a.zip").symlink_to(tmp_path / "nowhere" / "x.zip")
    result = run("export", str(tmp_path / "a.zip"), store=store)
    assert result.exit_code == 1 and "already exists" in result.stderr
    assert (tmp_path / "a.zip").is_symlink()


def _memdir_with(closed: int, *args: str, **options: Any) -> subprocess.CompletedProcess[str]:
    """``memdir ARGS`` started with file descriptor ``closed`` (0: stdin, 1: stdout) closed, as ``<&-`` does."""
    return subprocess.run(
        [sys.executable, "-m", "memdir", *args], preexec_fn=lambda: os.close(closed), stderr=subprocess.PIPE,
        text=True, check=False, **options,
    )  # fmt: skip


def test_a_closed_stdin_or_stdout_is_a_one_line_error(tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    with open_store(store) as opened:
        opened.write("/memories/a.md", b"hi\n")
    out = _memdir_with(1, "--store", store, "export", "-")
    assert (out.returncode, out.stderr) == (
        1,
        "Error: standard output is closed: there is nowhere to write the archive\n",
    )
    into = _memdir_with(0, "--store", str(tmp_path / "new"), "import", "-", stdout=subprocess.DEVNULL)
    assert (into.returncode, into.stderr) == (
        1,
        "Error: standard input is closed: there is no archive to read from it\n",
    )
    assert not (tmp_path / "new").exists()
    listed = _memdir_with(1, "--store", store, "ls")  # any command: nothing to flush into a closed stdout
    assert (listed.returncode, listed.stderr) == (0, "")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
def test_export_to_a_full_device_is_a_one_line_error(tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    with open_store(store) as opened:
        opened.write("/memories/a.md", b"hi\n")
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "memdir", "--store", store, "export", "-"], stdout=full,
                              stderr=subprocess.PIPE, text=True, check=False)  # fmt: skip
    assert (done.returncode, done.stderr) == (
        1,
        "Error: could not write the archive to standard output: No space left on device\n",
    )


def test_import_needs_an_empty_namespace(tmp_path: Path) -> None:
    with open_store("memory:") as store:
        store.write("/memories/a.md", b"a")
        export_namespace(store, tmp_path / "x.zip")
        with pytest.raises(ArchiveError) as caught:
            import_namespace(store, tmp_path / "x.zip")
        assert str(caught.value) == "namespace 'default' is not empty: import into a new one (--namespace NAME)"
        store.delete("/memories/a.md")  # no files, but a history: still refused, numbers would interleave
        with pytest.raises(ArchiveError, match="is not empty"):
            import_namespace(store, tmp_path / "x.zip")


def test_an_import_that_fails_half_way_says_where_it_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with open_store("memory:") as store:
        build_history(store)
        export_namespace(store, tmp_path / "x.zip")
    with open_store("memory:") as copy:
        real = copy.import_version

        def flaky(version: Version, content: bytes | None) -> Version:
            if version.version == 4:
                raise StorageError("could not write a file: no space left on the device holding the store")
            return real(version, content)

        monkeypatch.setattr(copy, "import_version", flaky)
        with pytest.raises(ArchiveError) as caught:
            import_namespace(copy, tmp_path / "x.zip")
        assert str(caught.value) == (
            "the import stopped at version 4 (4 of 11): could not write a file: no space left on the device "
            "holding the store; the namespace holds the 3 versions before it"
        )
        assert len(list(copy.log())) == 3


# -- damaged and hostile archives --------------------------------------------------------------------------


@pytest.fixture
def good(tmp_path: Path) -> dict[str, bytes]:
    """The members of a valid archive, to tamper with."""
    with open_store("memory:") as store:
        store.write("/memories/a.md", b"alpha\n", op="create")
        store.write("/memories/a.md", b"alpha beta\n")
        store.move("/memories/a.md", "/memories/d/a.md")
        store.write("/memories/b.md", b"bee\n", op="create")
        store.delete("/memories/b.md")
        export_namespace(store, tmp_path / "good.zip")
    with zipfile.ZipFile(tmp_path / "good.zip") as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def write_zip(path: Path, members: list[tuple[str, bytes]] | dict[str, bytes]) -> Path:
    items = members.items() if isinstance(members, dict) else members
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about duplicate names, which one test wants
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
            for name, data in items:
                zf.writestr(name, data)
    return path


def refused(path: Path, limits: ArchiveLimits | None = None) -> str:
    """Import ``path`` into an empty store; return the error, after checking nothing was written."""
    with open_store("memory:") as store:
        with pytest.raises(ArchiveError) as caught:
            import_namespace(store, path, limits=limits or ArchiveLimits())
        assert store.usage().files == 0
        assert list(store.log()) == []
    return str(caught.value)


def versions(members: dict[str, bytes]) -> list[dict[str, object]]:
    return [json.loads(line) for line in members["versions.jsonl"].decode().splitlines()]


def with_versions(members: dict[str, bytes], change: Callable[[list[dict[str, object]]], None]) -> dict[str, bytes]:
    items = versions(members)
    change(items)
    return {**members, "versions.jsonl": "".join(json.dumps(v) + "\n" for v in items).encode()}


def blob_names(members: dict[str, bytes]) -> list[str]:
    return sorted(name for name in members if name.startswith("blobs/"))


def test_the_good_archive_imports(good: dict[str, bytes], tmp_path: Path) -> None:
    with open_store("memory:") as store:
        assert import_namespace(store, write_zip(tmp_path / "ok.zip", good)).versions == 5
        assert files_of(store) == {"/memories/d/a.md": b"alpha beta\n"}


def test_not_a_zip_file(tmp_path: Path) -> None:
    (tmp_path / "x.zip").write_bytes(b"PK\x03\x04 this is not really a zip")
    assert refused(tmp_path / "x.zip") == "the archive is not a readable zip file (File is not a zip file)"
    assert refused(tmp_path / "missing.zip") == "no archive at missing.zip"


@pytest.mark.parametrize(
    "name", ["../evil.md", "/etc/cron.d/evil", "blobs/../../evil", "C:\\evil", "blobs/" + "A" * 64, "memories/a.md"]
)
def test_member_names_outside_the_format_are_refused(good: dict[str, bytes], tmp_path: Path, name: str) -> None:
    path = write_zip(tmp_path / "x.zip", {**good, name: b"x"})
    assert refused(path) == f"unexpected member {name!r} in the archive"


def test_duplicate_member_names(good: dict[str, bytes], tmp_path: Path) -> None:
    path = write_zip(tmp_path / "x.zip", [*good.items(), ("versions.jsonl", b"")])
    assert refused(path) == "the archive holds two members with the same name"


def test_a_blob_whose_content_does_not_match_its_name(good: dict[str, bytes], tmp_path: Path) -> None:
    name = blob_names(good)[0]
    path = write_zip(tmp_path / "x.zip", {**good, name: b"tampered\n"})
    assert refused(path) == f"blob {name[6:18]} is damaged: its content does not match its SHA-256"


def test_a_missing_blob(good: dict[str, bytes], tmp_path: Path) -> None:
    name = blob_names(good)[0]
    members = {k: v for k, v in good.items() if k != name}
    message = refused(write_zip(tmp_path / "x.zip", members))
    assert message.endswith(f"its content (blob {name[6:18]}) is missing")


def test_a_blob_no_version_uses(good: dict[str, bytes], tmp_path: Path) -> None:
    extra = b"stowaway"
    path = write_zip(tmp_path / "x.zip", {**good, "blobs/" + hashlib.sha256(extra).hexdigest(): extra})
    assert refused(path) == "the archive holds 1 blob(s) that no version uses"


def test_missing_manifest_and_other_formats(good: dict[str, bytes], tmp_path: Path) -> None:
    members = {k: v for k, v in good.items() if k != "manifest.json"}
    assert refused(write_zip(tmp_path / "a.zip", members)) == (
        "the archive has no manifest.json: it is not a memdir archive"
    )
    future = {**json.loads(good["manifest.json"]), "format_version": 2}
    path = write_zip(tmp_path / "b.zip", {**good, "manifest.json": json.dumps(future).encode()})
    assert refused(path) == "archive format version 2 is not supported (this memdir reads version 1)"


def test_manifest_counts_must_match(good: dict[str, bytes], tmp_path: Path) -> None:
    manifest = json.loads(good["manifest.json"])
    manifest["counts"]["files"] = 7
    path = write_zip(tmp_path / "x.zip", {**good, "manifest.json": json.dumps(manifest).encode()})
    assert refused(path) == "manifest.json counts 7 files, the archive holds 1"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda vs: vs[0].update(path="/etc/passwd"), "versions.jsonl line 1: Path must start with /memories, got:"),
        (lambda vs: vs[0].update(path="/memories/../x"), "versions.jsonl line 1: Path /memories/../x would escape"),
        (lambda vs: vs[0].update(path="/memories/.memdir/x"), "versions.jsonl line 1: Path /memories/.memdir/x is"),
        (lambda vs: vs[0].update(op="chmod"), "versions.jsonl line 1: unknown op 'chmod'"),
        (lambda vs: vs[0].update(version="1"), "versions.jsonl line 1: 'version' is missing or has the wrong type"),
        (lambda vs: vs[0].update(size=True), "versions.jsonl line 1: 'size' is missing or has the wrong type"),
        (lambda vs: vs[0].update(sha256="ABC"), "versions.jsonl line 1: sha256 is not 64 lowercase hex digits"),
        (lambda vs: vs[1].update(version=1), "versions.jsonl line 2: version numbers must increase"),
        (
            lambda vs: vs[2].update(old_path="/memories/x.md"),
            "version 3 cannot be applied: /memories/x.md does not exist",
        ),
        (lambda vs: vs[4].update(path="/memories/zzz.md"), "version 5 cannot be applied: /memories/zzz.md does not"),
        (
            lambda vs: vs[2].update(sha256=vs[0]["sha256"], size=vs[0]["size"]),
            "version 3 renames a file but claims other content",
        ),
        (lambda vs: vs[2].update(path="/memories/a.md"), "version 3 cannot be applied: /memories/a.md already exists"),
        (lambda vs: vs[0].update(path="/memories/d"), "version 3 cannot be applied: /memories/d is a file"),
        # After 9999, no history, log or export of the namespace could show its time again.
        (lambda vs: vs[0].update(timestamp=3e11), "versions.jsonl line 1: a time must be from 1970 to the end of 9999"),
        (
            lambda vs: vs[0].update(timestamp="9999-12-31T23:59:59-14:00"),
            "versions.jsonl line 1: a time must be from 1970 to the end of 9999",
        ),
    ],
)
def test_versions_that_are_malformed_or_cannot_apply(
    good: dict[str, bytes], tmp_path: Path, change: Callable[[list[dict[str, object]]], None], message: str
) -> None:
    path = write_zip(tmp_path / "x.zip", with_versions(good, change))
    assert refused(path).startswith(message)


def test_versions_that_are_not_json(good: dict[str, bytes], tmp_path: Path) -> None:
    bad = {**good, "versions.jsonl": good["versions.jsonl"] + b'{"version": NaN}\n'}
    assert refused(write_zip(tmp_path / "a.zip", bad)) == "versions.jsonl line 6 is not valid JSON"
    bad = {**good, "versions.jsonl": b"\xff\xfe"}
    assert refused(write_zip(tmp_path / "b.zip", bad)) == "versions.jsonl line 1 is not UTF-8 text"


def test_a_history_of_empty_lines_is_refused_as_it_is_read(good: dict[str, bytes], tmp_path: Path) -> None:
    """512 MiB of line breaks zip to half a megabyte, and were split into a list of 500 million lines (5 GB)."""
    bad = {**good, "versions.jsonl": b"\n" * 1001 + good["versions.jsonl"]}
    assert refused(write_zip(tmp_path / "a.zip", bad)) == "versions.jsonl holds more than 1,000 empty lines"
    fine = {**good, "versions.jsonl": good["versions.jsonl"] + b"\n\n"}
    write_zip(tmp_path / "b.zip", fine)
    with open_store("memory:") as store:
        assert import_namespace(store, tmp_path / "b.zip").versions == 5


def test_a_zip_bomb_is_stopped_while_it_unpacks(good: dict[str, bytes], tmp_path: Path) -> None:
    bomb = bytes(70 * 1024 * 1024)  # 70 MiB of zeros: ~70 KiB compressed, over the 64 MiB limit for one blob
    name = "blobs/" + hashlib.sha256(bomb).hexdigest()
    path = write_zip(tmp_path / "bomb.zip", {**good, name: bomb})
    del bomb
    assert path.stat().st_size < 1024 * 1024
    assert refused(path) == f"member {name!r} unpacks to more than the size limit (a zip bomb?)"


def test_the_total_unpacked_size_is_bounded(good: dict[str, bytes], tmp_path: Path) -> None:
    path = write_zip(tmp_path / "x.zip", good)
    assert refused(path, ArchiveLimits(max_total_bytes=100)) == "the archive would unpack to more than the size limit"
    assert refused(path, ArchiveLimits(max_members=3)).startswith("the archive has 5 members, over the limit of 3")


def test_an_encrypted_member_is_refused(good: dict[str, bytes], tmp_path: Path) -> None:
    path = write_zip(tmp_path / "x.zip", good)
    data = bytearray(path.read_bytes())
    central = data.rfind(b"PK\x01\x02")  # the last central-directory entry: set its "encrypted" flag
    data[central + 8] |= 0x1
    path.write_bytes(bytes(data))
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as zf:
        last = zf.infolist()[-1].filename
    assert refused(path) == f"member {last!r} is encrypted"


# -- the commands ------------------------------------------------------------------------------------------


def test_export_and_import_commands(run: Run, tmp_path: Path) -> None:
    source, target, archive = str(tmp_path / "dir-store"), f"sqlite://{tmp_path / 'copy.db'}", tmp_path / "b.zip"
    with open_store(source) as store:
        build_history(store)
    result = run("export", str(archive), store=source)
    assert (result.exit_code, result.stdout) == (
        0,
        f"Exported namespace 'default' to {archive}: 5 files, 11 versions.\n",
    )
    assert oct(archive.stat().st_mode)[-3:] == "600"
    result = run("-n", "team", "import", str(archive), store=target)
    assert (result.exit_code, result.stdout) == (
        0,
        f"Imported {archive} into namespace 'team': 5 files, 11 versions.\n",
    )
    assert run("-n", "team", "cat", "/memories/pic.png", store=target).stdout_bytes == PNG
    again = run("-n", "team", "import", str(archive), store=target)
    assert (again.exit_code, again.stdout) == (1, "")
    assert again.stderr == "Error: namespace 'team' is not empty: import into a new one (--namespace NAME)\n"


@pytest.mark.parametrize("kind", ["sqlite", "directory"])
def test_a_version_called_a_rename_but_moving_nothing_is_screened_too(run: Run, tmp_path: Path, kind: str) -> None:
    """A version with op ``rename`` and no ``old_path`` writes its content on every backend, so the gate must
    screen it as the write it is; it used to skip every ``rename`` and store the archive's secret raw."""
    secret = "AKIAZ7Q3LEAKTEST0001"
    content = f"aws {secret}\n".encode()
    with open_store("memory:") as source:
        source.write("/memories/a.md", content, op="create")
        export_namespace(source, tmp_path / "good.zip")
    with zipfile.ZipFile(tmp_path / "good.zip") as zf:
        members = {name: zf.read(name) for name in zf.namelist()}
    forged = with_versions(members, lambda vs: vs[0].update(op="rename", old_path=None))
    url = f"sqlite://{tmp_path / 'copy.db'}" if kind == "sqlite" else str(tmp_path / "copy")
    result = run("import", str(write_zip(tmp_path / "forged.zip", forged)), store=url)
    assert result.exit_code == 0, result.stderr
    with open_store(url) as store:
        stored = store.read("/memories/a.md").content
        assert secret.encode() not in stored and b"[REDACTED:aws-access-key]" in stored
        assert all(secret.encode() not in store.read_blob(v.sha256) for v in store.log() if v.sha256)


def test_export_refuses_to_overwrite_without_the_flag(run: Run, tmp_path: Path) -> None:
    (tmp_path / "b.zip").write_bytes(b"precious")
    result = run("export", str(tmp_path / "b.zip"), store="memory:")
    assert (result.exit_code, result.stderr) == (
        1,
        f"Error: {tmp_path / 'b.zip'} already exists: choose another name, or pass --overwrite to replace it\n",
    )
    assert (tmp_path / "b.zip").read_bytes() == b"precious"
    assert run("export", "--overwrite", str(tmp_path / "b.zip"), store="memory:").exit_code == 0


def test_import_of_a_damaged_archive_is_one_line(run: Run, tmp_path: Path) -> None:
    (tmp_path / "b.zip").write_bytes(b"garbage")
    result = run("import", str(tmp_path / "b.zip"), store="memory:")
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == "Error: the archive is not a readable zip file (File is not a zip file)\n"


def test_archives_written_before_times_were_iso_8601_still_import(run: Run, tmp_path: Path) -> None:
    """memdir 0.1 wrote each version's time as seconds since the epoch; such an archive imports unchanged."""
    with open_store(f"sqlite://{tmp_path / 'a.db'}") as source:
        source.write("/memories/a.md", b"one\n", origin=Origin("user"))
        source.write("/memories/a.md", b"two\n", origin=Origin("user"))
        times = [v.timestamp for v in source.log()]
        export_namespace(source, tmp_path / "new.zip")
    with zipfile.ZipFile(tmp_path / "new.zip") as new, zipfile.ZipFile(tmp_path / "old.zip", "w") as old:
        for member in new.namelist():
            data = new.read(member)
            if member.endswith("versions.jsonl"):
                records = [json.loads(line) for line in data.decode().splitlines()]
                assert all(r["timestamp"].endswith("Z") for r in records)  # written as ISO 8601 now
                data = "".join(
                    json.dumps({**r, "timestamp": t}) + "\n" for r, t in zip(records, times, strict=True)
                ).encode()
            old.writestr(member, data)
    copy = str(tmp_path / "copy")
    assert run("import", str(tmp_path / "old.zip"), store=copy).exit_code == 0
    with open_store(copy) as store:
        assert [v.timestamp for v in store.log()] == times  # to the bit
        assert store.read("/memories/a.md").content == b"two\n"


# -- content redacted in the exported store ------------------------------------------------------------------

REDACTING = [kind for kind in BACKENDS if kind != "remote"]  # a remote store cannot redact (the server's API can)


@pytest.mark.parametrize(("source", "target"), [(kind, "sqlite") for kind in REDACTING] + [("sqlite", "directory")])
def test_redacted_content_travels_as_redacted(source: str, target: str, tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    archive = tmp_path / "backup.zip"
    with open_store(store_url(source, tmp_path / "a")) as original:
        first = redacted_history(original)
        summary = export_namespace(original, archive)
        with open_store(store_url(target, tmp_path / "b"), namespace="copy") as copy:
            assert import_namespace(copy, archive) == summary
            copied = list(copy.log())
            assert [(v.path, v.op, v.actor) for v in copied] == [(v.path, v.op, v.actor) for v in original.log()]
            assert files_of(copy) == files_of(original) == {"/memories/moved.md": b"the new text\n"}
            stand_in = copied[0]
            assert stand_in.sha256 != first.sha256  # the original's hash is not carried over
            with pytest.raises(RedactedError):
                copy.read_version("/memories/keys.md", stand_in.version)
            assert stand_in.sha256 is not None
            with pytest.raises(RedactedError):
                copy.read_blob(stand_in.sha256)
    with zipfile.ZipFile(archive) as zf:
        assert json.loads(zf.read("manifest.json"))["redacted"] == [first.sha256]
        assert f"blobs/{first.sha256}" not in zf.namelist()


def test_a_target_that_cannot_redact_says_so(tmp_path: Path) -> None:
    archive = tmp_path / "backup.zip"
    with open_store("memory:") as original:
        redacted_history(original)
        export_namespace(original, archive)
    with (
        open_store(store_url("remote", tmp_path), namespace="copy") as copy,
        pytest.raises(ArchiveError, match="stand-in text that could not be redacted here"),
    ):
        import_namespace(copy, archive)


def with_redacted(archive: Path, redacted: object, forged: Path) -> Path:
    """A copy of ``archive`` whose manifest lists ``redacted`` as the redacted content."""
    with zipfile.ZipFile(archive) as zf, zipfile.ZipFile(forged, "w") as out:
        for name in zf.namelist():
            data = zf.read(name)
            if name == "manifest.json":
                data = json.dumps({**json.loads(data), "redacted": redacted}).encode()
            out.writestr(name, data)
    return forged


@pytest.mark.parametrize(
    ("redacted", "message"),
    [
        ("nope", "must be a list of SHA-256 hashes"),
        (["A" * 64], "must be a list of SHA-256 hashes"),
        (["0" * 64], "redacted content that no version has"),
    ],
)
def test_a_forged_redacted_list_is_refused(redacted: object, message: str, tmp_path: Path) -> None:
    archive = tmp_path / "backup.zip"
    with open_store("memory:") as original:
        redacted_history(original)
        export_namespace(original, archive)
    forged = with_redacted(archive, redacted, tmp_path / "forged.zip")
    with open_store("memory:") as copy:
        with pytest.raises(ArchiveError, match=message):
            import_namespace(copy, forged)
        assert not list(copy.log())


def test_content_listed_as_redacted_but_held_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "backup.zip"
    with open_store("memory:") as original:
        kept = original.write("/memories/a.md", b"kept\n")
        export_namespace(original, archive)
    forged = with_redacted(archive, [kept.sha256], tmp_path / "forged.zip")
    with open_store("memory:") as copy, pytest.raises(ArchiveError, match="that the archive holds"):
        import_namespace(copy, forged)


def test_ctrl_c_during_an_import_says_what_the_namespace_now_holds(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with open_store("memory:") as source:
        build_history(source)
        export_namespace(source, tmp_path / "x.zip")
    real = SQLiteStore.import_version

    def interrupted_at_the_third(self: SQLiteStore, version: Version, content: bytes | None, **options: Any) -> Version:
        if version.version == 3:
            raise KeyboardInterrupt
        return real(self, version, content, **options)

    monkeypatch.setattr(SQLiteStore, "import_version", interrupted_at_the_third)
    result = run("import", str(tmp_path / "x.zip"), store=f"sqlite://{tmp_path / 'm.db'}")
    assert result.exit_code == 130
    assert result.stderr.endswith(
        "Interrupted: namespace 'default' holds the archive's first 2 versions and is not empty now: import into a "
        "new one (--namespace NAME), or into a new store.\n"
    )
