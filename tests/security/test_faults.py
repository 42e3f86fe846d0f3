"""Disk faults: a full disk and a read-only store, and the modes of everything memdir creates.

Real faults where the machine allows them: each scenario runs in a child process inside an unprivileged user +
mount namespace (``unshare --user --map-root-user --mount``, or plain ``unshare --mount`` as root), where it
mounts a small tmpfs, fills it up or remounts it read-only. The mount disappears with the process.

The same scenarios also run with *injected* faults, at the OS-call boundary of a child process: ``os.write`` and
friends raise ``OSError(ENOSPC / EROFS)`` for the memory files, and SQLite is held at its current size
(``PRAGMA max_page_count``) or made read-only (``PRAGMA query_only``). The injected runs need no privileges, so
they cover the paths everywhere; they also cover a store that was already open when its disk became read-only,
which a real remount cannot produce (the kernel refuses to remount a file system read-only while SQLite holds
files open for writing).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from memdir import MemoryTool, Store, open_store

HELPER = r'''
import contextlib, errno, json, os, shutil, subprocess, sys
from memdir import MemoryTool, open_store
from memdir.store import _fileops as fileops_module

NO_SPACE = "no space left on the device holding the store"


class Disk:
    """A small disk at `where`: a real tmpfs ("real"), or a plain directory whose faults are injected."""

    def __init__(self, mode, where):
        self.mode, self.where = mode, where
        os.makedirs(where, exist_ok=True)
        if mode == "real":
            subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m,mode=0700", "memdir-test", where], check=True)
        self._undo = []

    def holds(self, fd):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return False
        return target == self.where or target.startswith(self.where + "/")

    def fill(self, *stores):
        if self.mode == "real":
            with open(os.path.join(self.where, "filler"), "wb", buffering=0) as fh:
                for size in (1 << 16, 1 << 12, 1 << 9, 1):
                    with contextlib.suppress(OSError):
                        while True:
                            fh.write(b"\0" * size)
            return
        real_write = os.write

        def write(fd, data):
            if self.holds(fd):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return real_write(fd, data)

        self._patch(os, "write", write)
        for store in stores:  # SQLite writes through its own C code: hold its file at the size it has
            conn = store._index.conn
            pages = conn.execute("PRAGMA page_count").fetchone()[0]
            conn.execute(f"PRAGMA max_page_count = {pages}")
            self._undo.append(lambda conn=conn: conn.execute("PRAGMA max_page_count = 1073741823"))

    def free(self):
        if self.mode == "real":
            os.unlink(os.path.join(self.where, "filler"))
        while self._undo:
            self._undo.pop()()

    def make_read_only(self, *stores):
        if self.mode == "real":
            subprocess.run(["mount", "-o", "remount,ro", self.where], check=True)
            return

        def refuse(*args, **kwargs):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))

        real_open = os.open

        def open_(path, flags, *args, **kwargs):
            if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
                refuse()
            return real_open(path, flags, *args, **kwargs)

        self._patch(os, "open", open_)
        for name in ("write", "mkdir", "rename", "replace", "unlink", "rmdir", "fchmod", "chmod"):
            self._patch(os, name, refuse)
        self._patch(fileops_module, "_libc", None)  # renameat2 is a C call: use the (patched) os.rename
        for store in stores:
            store._index.conn.execute("PRAGMA query_only = ON")

    def _patch(self, owner, name, value):
        old = getattr(owner, name)
        setattr(owner, name, value)
        self._undo.append(lambda: setattr(owner, name, old))


def run(tool, **command):
    result = tool.execute(command)
    return {"is_error": result.is_error, "text": result.text}


def files_below(path):
    return sorted(
        os.path.relpath(os.path.join(top, name), path) for top, _, names in os.walk(path) for name in names
    )


def history_ops(store, path):
    try:
        return [v.op for v in store.history(path)]
    except Exception as exc:
        return type(exc).__name__


def full_disk(mode, work, layout):
    """Fill the disk, try to write, free it, write again. `layout` says what lives on the small disk."""
    disk = Disk(mode, os.path.join(work, "disk"))
    roomy = os.path.join(work, "roomy")
    os.makedirs(roomy, exist_ok=True)
    if layout == "sqlite":
        url, options, memories = f"sqlite:///{disk.where}/memory.db", {}, None
    elif layout == "directory":
        url, options = os.path.join(disk.where, "store"), {}
        memories = os.path.join(url, "memories")
    elif layout == "index-on-full-disk":
        url, options = os.path.join(roomy, "store"), {"history": os.path.join(disk.where, "index.db")}
        memories = os.path.join(url, "memories")
    else:  # files on the full disk, index on a roomy one
        url, options = os.path.join(disk.where, "store"), {"history": os.path.join(roomy, "index.db")}
        memories = os.path.join(url, "memories")
    store = open_store(url, **options)
    tool = MemoryTool(store)
    out = {"setup": run(tool, command="create", path="/memories/a.md", file_text="old\n")}
    out["setup_dir"] = run(tool, command="create", path="/memories/keep/b.md", file_text="keep\n")
    sqlite_on_disk = [store] if layout in ("sqlite", "directory", "index-on-full-disk") else []
    disk.fill(*sqlite_on_disk)
    out["during"] = {
        "str_replace": run(tool, command="str_replace", path="/memories/a.md", old_str="old", new_str="new" * 30000),
        "insert": run(tool, command="insert", path="/memories/a.md", insert_line=1, insert_text="y" * 90000),
        "create": run(tool, command="create", path="/memories/big.md", file_text="x" * 90000),
        "create_nested": run(tool, command="create", path="/memories/deep/er/c.md", file_text="z" * 90000),
    }
    out["view_during"] = run(tool, command="view", path="/memories/a.md")
    out["listing_during"] = run(tool, command="view", path="/memories")
    out["files_during"] = files_below(memories) if memories else None
    out["bytes_during"] = store.read("/memories/a.md").content.decode()
    out["history_during"] = history_ops(store, "/memories/a.md")
    disk.free()
    out["after"] = run(tool, command="str_replace", path="/memories/a.md", old_str="old", new_str="new")
    out["bytes_after"] = store.read("/memories/a.md").content.decode()
    out["history_after"] = history_ops(store, "/memories/a.md")
    out["big_history"] = history_ops(store, "/memories/big.md")
    out["files_after"] = files_below(memories) if memories else None
    store.close()
    if layout == "sqlite":
        import sqlite3
        with contextlib.closing(sqlite3.connect(f"{disk.where}/memory.db")) as conn:
            out["integrity"] = conn.execute("PRAGMA integrity_check").fetchone()[0]
    return out


def read_only(mode, work, layout):
    """A store whose disk is read-only: real mode remounts a closed store's tmpfs read-only, then opens it;
    inject mode makes an open store's disk read-only under it."""
    disk = Disk(mode, os.path.join(work, "disk"))
    url = f"sqlite:///{disk.where}/memory.db" if layout == "sqlite" else os.path.join(disk.where, "store")
    store = open_store(url)
    tool = MemoryTool(store)
    for path, text in (("/memories/a.md", "old\n"), ("/memories/d/b.md", "bee\n")):
        assert not tool.execute({"command": "create", "path": path, "file_text": text}).is_error
    if mode == "real":
        store.close()
        disk.make_read_only()
        try:
            store = open_store(url)
        except Exception as exc:
            return {"open_error": f"{type(exc).__name__}: {exc}"}
        tool = MemoryTool(store)
    else:
        disk.make_read_only(store)
    out = {
        "view": run(tool, command="view", path="/memories/a.md"),
        "listing": run(tool, command="view", path="/memories"),
        "writes": {
            "create": run(tool, command="create", path="/memories/new.md", file_text="n\n"),
            "str_replace": run(tool, command="str_replace", path="/memories/a.md", old_str="old", new_str="new"),
            "insert": run(tool, command="insert", path="/memories/a.md", insert_line=0, insert_text="top"),
            "delete": run(tool, command="delete", path="/memories/d"),
            "rename": run(tool, command="rename", old_path="/memories/a.md", new_path="/memories/z.md"),
        },
    }
    out["view_after"] = run(tool, command="view", path="/memories/a.md")
    out["listing_after"] = run(tool, command="view", path="/memories")
    return out


spec = json.loads(sys.argv[1])
scenario = {"full": full_disk, "read_only": read_only}[spec["scenario"]]
print(json.dumps(scenario(spec["mode"], spec["work"], spec["layout"])))
'''


@functools.cache
def namespace_prefix() -> tuple[str, ...] | None:
    """The command prefix that gives a child its own mount namespace (None when this machine allows none)."""
    if not sys.platform.startswith("linux") or shutil.which("unshare") is None or shutil.which("mount") is None:
        return None
    with tempfile.TemporaryDirectory(prefix="memdir-mount-probe-") as where:
        for prefix in (("unshare", "--user", "--map-root-user", "--mount"), ("unshare", "--mount")):
            try:
                done = subprocess.run(
                    [*prefix, "mount", "-t", "tmpfs", "-o", "size=64k", "memdir-probe", where],
                    capture_output=True,
                    timeout=30,
                )
            except (OSError, subprocess.TimeoutExpired):
                continue
            if done.returncode == 0:
                return prefix
    return None


def run_scenario(tmp_path: Path, mode: str, scenario: str, layout: str) -> dict[str, Any]:
    if mode == "real":
        prefix = namespace_prefix()
        if prefix is None:
            pytest.skip("no mount namespaces here (unshare/tmpfs refused); the injected run covers this scenario")
    elif not os.path.isdir("/proc/self/fd"):
        pytest.skip("fault injection tells the store's files by their /proc/self/fd links; this system has none")
    else:
        prefix = ()
    script = tmp_path / "fault_helper.py"
    script.write_text(HELPER)
    work = tmp_path / "work"
    work.mkdir()
    spec = json.dumps({"mode": mode, "scenario": scenario, "layout": layout, "work": str(work)})
    done = subprocess.run([*prefix, sys.executable, str(script), spec], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    result["_host"] = str(tmp_path)
    return result


MODES = ["real", "inject"]


# -- a full disk ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("layout", ["directory", "sqlite", "index-on-full-disk", "files-on-full-disk"])
def test_a_full_disk_fails_cleanly_and_keeps_the_old_content(tmp_path: Path, mode: str, layout: str) -> None:
    out = run_scenario(tmp_path, mode, "full", layout)
    assert not out["setup"]["is_error"], out["setup"]
    for label, result in out["during"].items():
        assert result["is_error"], f"{label} succeeded on a full disk: {result}"
        assert "no space left on the device holding the store" in result["text"], f"{label}: {result['text']}"
        assert result["text"].startswith("Error: "), result["text"]
        assert out["_host"] not in result["text"], "a host path leaked"
        assert "Internal error" not in result["text"]
    # The old content is intact, still readable, and no new version was recorded for the failed writes.
    assert out["bytes_during"] == "old\n"
    assert out["view_during"] == {
        "is_error": False,
        "text": "Here's the content of /memories/a.md with line numbers:\n     1\told",
    }
    assert out["history_during"] == ["create"]
    assert out["listing_during"]["text"].splitlines()[1:] == [
        "9B\t/memories",
        "4B\t/memories/a.md",
        "5B\t/memories/keep/",
        "5B\t/memories/keep/b.md",
    ]
    if out["files_during"] is not None:
        # No temporary file left behind, nothing half-created.
        assert out["files_during"] == ["a.md", "keep/b.md"], out["files_during"]
    # Once there is room again, everything works and the history is exactly what succeeded.
    assert not out["after"]["is_error"], out["after"]
    assert out["bytes_after"] == "new\n"
    assert out["history_after"] == ["create", "str_replace"]
    assert out["big_history"] == "NotFoundError"
    if out["files_after"] is not None:
        assert out["files_after"] == ["a.md", "keep/b.md"]
    if layout == "sqlite":
        assert out["integrity"] == "ok"


# -- a read-only store ----------------------------------------------------------------------------------------


def _assert_writes_refused(out: dict[str, Any]) -> None:
    for label, result in out["writes"].items():
        assert result["is_error"], f"{label} succeeded on a read-only store: {result}"
        assert "read-only" in result["text"], f"{label}: {result['text']}"
        assert out["_host"] not in result["text"]
        assert "Internal error" not in result["text"]


@pytest.mark.parametrize("layout", ["directory", "sqlite"])
def test_an_open_store_whose_disk_turns_read_only_keeps_reading_and_refuses_writes(tmp_path: Path, layout: str) -> None:
    out = run_scenario(tmp_path, "inject", "read_only", layout)
    assert out["view"] == {
        "is_error": False,
        "text": "Here's the content of /memories/a.md with line numbers:\n     1\told",
    }
    assert not out["listing"]["is_error"]
    _assert_writes_refused(out)
    assert out["view_after"] == out["view"]
    assert out["listing_after"] == out["listing"]


@pytest.mark.parametrize("layout", ["directory", "sqlite"])
def test_a_store_on_a_read_only_file_system_refuses_writes_with_a_clear_error(tmp_path: Path, layout: str) -> None:
    out = run_scenario(tmp_path, "real", "read_only", layout)
    if "open_error" in out:  # refusing to open at all is clean too, as long as the message says why
        assert out["open_error"].startswith("StorageError: ")
        assert "read-only" in out["open_error"]
        assert out["_host"] not in out["open_error"]
    else:
        _assert_writes_refused(out)


@pytest.mark.parametrize("layout", ["directory", "sqlite"])
def test_a_store_on_a_read_only_file_system_can_still_be_read(tmp_path: Path, layout: str) -> None:
    # SPEC.md / the brief: "a read-only store: writes fail cleanly, reads continue". A store kept on a read-only
    # mount (a read-only volume, a snapshot) should open for reading.
    out = run_scenario(tmp_path, "real", "read_only", layout)
    assert "open_error" not in out, out.get("open_error")
    assert out["view"] == {
        "is_error": False,
        "text": "Here's the content of /memories/a.md with line numbers:\n     1\told",
    }
    assert out["listing"]["text"].splitlines()[1:] == [
        "8B\t/memories",
        "4B\t/memories/a.md",
        "4B\t/memories/d/",
        "4B\t/memories/d/b.md",
    ]
    _assert_writes_refused(out)


# -- file modes -----------------------------------------------------------------------------------------------


def modes_below(path: Path) -> dict[str, str]:
    found = {}
    for top, dirs, files in os.walk(path):
        for name in dirs + files:
            full = Path(top) / name
            found[str(full.relative_to(path))] = oct(stat.S_IMODE(full.lstat().st_mode))
    return found


@pytest.fixture
def no_umask() -> Any:
    previous = os.umask(0)  # what many containers run with: every default mode would be world-writable
    try:
        yield
    finally:
        os.umask(previous)


def exercise(url: str) -> Store:
    store = open_store(url)
    tool = MemoryTool(store)
    for command in (
        {"command": "create", "path": "/memories/a/b/c.md", "file_text": "x\n"},
        {"command": "str_replace", "path": "/memories/a/b/c.md", "old_str": "x", "new_str": "y"},
        {"command": "insert", "path": "/memories/a/b/c.md", "insert_line": 0, "insert_text": "top"},
        {"command": "rename", "old_path": "/memories/a/b/c.md", "new_path": "/memories/q/r/c.md"},
        {"command": "create", "path": "/memories/top.md", "file_text": "t\n"},
    ):
        assert not tool.execute(command).is_error
    # The caller checks with the SQLite connection still open: its -wal and -shm files must be private too.
    store.list_files()
    return store


def test_directory_store_files_are_0600_and_directories_0700_whatever_the_umask(tmp_path: Path, no_umask: None) -> None:
    store = exercise(str(tmp_path / "new" / "deeper" / "store"))
    found = modes_below(tmp_path / "new")
    store.close()
    assert found, "nothing was created"
    for name, mode in found.items():
        is_dir = (tmp_path / "new" / name).is_dir()
        assert mode == ("0o700" if is_dir else "0o600"), f"{name} is {mode}"
    assert {"deeper/store/.memdir", "deeper/store/.memdir/index.db", "deeper/store/memories/q/r/c.md"} <= set(found)
    assert any(name.endswith("index.db-wal") for name in found), "the sidecar's WAL was not checked"


def test_sqlite_store_files_are_0600_and_directories_0700_whatever_the_umask(tmp_path: Path, no_umask: None) -> None:
    store = exercise(f"sqlite:///{tmp_path / 'new' / 'deeper' / 'memory.db'}")
    found = modes_below(tmp_path / "new")
    store.close()
    assert set(found) >= {"deeper", "deeper/memory.db", "deeper/memory.db-wal", "deeper/memory.db-shm"}
    for name, mode in found.items():
        assert mode == ("0o700" if name == "deeper" else "0o600"), f"{name} is {mode}"


def test_other_namespaces_are_private_too(tmp_path: Path, no_umask: None) -> None:
    store = open_store(str(tmp_path / "store"), namespace="tenant-a")
    assert not MemoryTool(store).execute({"command": "create", "path": "/memories/x/y.md", "file_text": "x"}).is_error
    for name, mode in modes_below(tmp_path / "store").items():
        assert mode == ("0o700" if (tmp_path / "store" / name).is_dir() else "0o600"), f"{name} is {mode}"
    store.close()
