"""Symlinks, hard links, swaps and special files planted in a directory store's tree.

Whatever someone with write access to the memory directory plants there (a link to a file or a directory
outside, a dangling link, a link to the sidecar, a hard link to a file outside or from outside to a memory file, a
FIFO, a device node), the memory tool must neither read nor write anything outside the store, must never hang, and
must answer with SPEC.md's escape error or with not-found. That includes links swapped in *while* commands run (the
check-then-use window).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import hashlib
import os
import socket
import stat
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memdir import MemoryTool, ToolResult, open_store
from memdir.store import DirectoryStore

pytestmark = pytest.mark.skipif(not hasattr(os, "O_NOFOLLOW"), reason="POSIX-only: symlink and FIFO semantics")

SECRET = "TOP-SECRET-OUTSIDE\n"


@dataclass
class Planted:
    home: Path
    memories: Path
    outside: Path
    store: DirectoryStore
    tool: MemoryTool

    def run(self, **command: Any) -> ToolResult:
        return self.tool.execute(command)


def fingerprint(root: Path) -> dict[str, tuple[str, int, int]]:
    """Every entry under ``root``, links not followed: kind, content hash (files) and mtime."""
    found: dict[str, tuple[str, int, int]] = {}
    for top, dirs, files in os.walk(root):
        for name in dirs + files:
            full = os.path.join(top, name)
            st = os.lstat(full)
            digest = 0
            if stat.S_ISREG(st.st_mode):
                digest = int.from_bytes(hashlib.sha256(Path(full).read_bytes()).digest()[:8], "big")
            elif stat.S_ISLNK(st.st_mode):
                digest = hash(os.readlink(full))
            found[os.path.relpath(full, root)] = (oct(stat.S_IFMT(st.st_mode)), digest, st.st_mtime_ns)
    return found


@pytest.fixture
def planted(tmp_path: Path) -> Iterator[Planted]:
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "secret.md").write_text(SECRET)
    (outside / "dir" / "inner.md").write_text(SECRET)
    store = open_store(str(tmp_path / "store"))
    assert isinstance(store, DirectoryStore)
    tool = MemoryTool(store)
    assert not tool.execute({"command": "create", "path": "/memories/real.md", "file_text": "real\n"}).is_error
    assert not tool.execute({"command": "create", "path": "/memories/sub/keep.md", "file_text": "keep\n"}).is_error
    memories = tmp_path / "store" / "memories"
    os.symlink(outside / "secret.md", memories / "file-link.md")
    os.symlink(outside / "dir", memories / "dir-link")
    os.symlink(tmp_path / "nowhere.md", memories / "dangling.md")
    os.symlink(tmp_path / "store" / ".memdir", memories / "sidecar")
    os.symlink(tmp_path / "store" / ".memdir" / "index.db", memories / "index.md")
    os.symlink("../../outside/secret.md", memories / "relative.md")
    os.symlink("../../outside/secret.md", memories / "sub" / "nested-link.md")
    os.symlink("loop.md", memories / "loop.md")
    os.symlink(".", memories / "self")
    yield Planted(tmp_path, memories, outside, store, tool)
    store.close()


# Links named directly, links on the way to a name, and where they lead.
DIRECT_LINKS = [
    "/memories/file-link.md",
    "/memories/dir-link",
    "/memories/dangling.md",
    "/memories/sidecar",
    "/memories/index.md",
    "/memories/relative.md",
    "/memories/sub/nested-link.md",
    "/memories/loop.md",
    "/memories/self",
]
THROUGH_LINKS = [
    "/memories/dir-link/inner.md",
    "/memories/dir-link/new.md",
    "/memories/sidecar/index.db",
    "/memories/self/real.md",
    "/memories/dir-link/deeper/new.md",
]


def escape(path: str) -> str:
    return f"Error: Path {path} would escape /memories directory"


def assert_outside_untouched(planted: Planted, before: dict[str, tuple[str, int, int]]) -> None:
    assert fingerprint(planted.outside) == before
    assert (planted.outside / "secret.md").read_text() == SECRET
    assert not (planted.home / "nowhere.md").exists(), "a dangling link was written through"


def all_commands(planted: Planted, path: str) -> dict[str, ToolResult]:
    """Every command on ``path``, each with the whole of it (a rename both from and to it), by label."""
    return {
        "view": planted.run(command="view", path=path),
        "view-range": planted.run(command="view", path=path, view_range=[1, -1]),
        "create": planted.run(command="create", path=path, file_text="PWNED\n"),
        "str_replace": planted.run(command="str_replace", path=path, old_str="TOP", new_str="PWNED"),
        "insert": planted.run(command="insert", path=path, insert_line=0, insert_text="PWNED"),
        "delete": planted.run(command="delete", path=path),
        "rename-from": planted.run(command="rename", old_path=path, new_path="/memories/moved.md"),
        "rename-to": planted.run(command="rename", old_path="/memories/real.md", new_path=path),
    }


@pytest.mark.parametrize("path", DIRECT_LINKS + THROUGH_LINKS)
def test_every_command_through_a_link_is_an_escape(planted: Planted, path: str) -> None:
    # A link named directly or met on the way (a link to a directory must not pass for "a file":
    # O_DIRECTORY|O_NOFOLLOW on a link fails with ENOTDIR), and the error names the path as the model sent it.
    before = fingerprint(planted.outside)
    sidecar = (planted.home / "store" / ".memdir" / "index.db").read_bytes()
    for label, result in all_commands(planted, path).items():
        assert (label, result.is_error, result.text) == (label, True, escape(path))
    assert_outside_untouched(planted, before)
    assert (planted.home / "store" / ".memdir" / "index.db").read_bytes() == sidecar
    assert (planted.memories / "real.md").read_text() == "real\n"
    assert not (planted.memories / "moved.md").exists()
    assert not (planted.outside / "dir" / "deeper").exists()
    if path in DIRECT_LINKS:
        assert os.path.islink(planted.memories / path.removeprefix("/memories/")), "the link itself was removed"


def test_the_same_escape_through_an_unnormalised_spelling(planted: Planted) -> None:
    for path in ("//memories//file-link.md", "/memories/dir-link//inner.md/"):
        assert planted.run(command="view", path=path).text == escape(path)
        assert planted.run(command="delete", path=path).text == escape(path)


def test_listings_and_usage_skip_links(planted: Planted) -> None:
    listing = planted.run(command="view", path="/memories").text
    assert listing.splitlines()[1:] == [
        "10B\t/memories",
        "5B\t/memories/real.md",
        "5B\t/memories/sub/",
        "5B\t/memories/sub/keep.md",
    ]
    assert planted.run(command="view", path="/memories/sub").text.splitlines()[1:] == [
        "5B\t/memories/sub",
        "5B\t/memories/sub/keep.md",
    ]
    assert [e.path.virtual for e in planted.store.list_files()] == ["/memories/real.md", "/memories/sub/keep.md"]
    assert (planted.store.usage().files, planted.store.usage().bytes) == (2, 10)


def test_deleting_or_moving_a_directory_holding_links_never_follows_them(planted: Planted) -> None:
    before = fingerprint(planted.outside)
    (planted.memories / "sub" / "real-dir").mkdir()
    os.symlink(planted.outside / "dir", planted.memories / "sub" / "real-dir" / "out")
    os.symlink(planted.outside, planted.memories / "sub" / "all-out")
    assert planted.run(command="rename", old_path="/memories/sub", new_path="/memories/moved").text == (
        "Successfully renamed /memories/sub to /memories/moved"
    )
    assert planted.run(command="delete", path="/memories/moved").text == "Successfully deleted /memories/moved"
    assert not (planted.memories / "moved").exists()
    assert_outside_untouched(planted, before)


def test_the_root_swapped_for_a_link_after_opening_is_refused(planted: Planted) -> None:
    (planted.outside / "real.md").write_text(SECRET)
    before = fingerprint(planted.outside)
    os.rename(planted.memories, planted.home / "store" / "memories.moved")
    os.symlink(planted.outside, planted.memories)
    commands: list[dict[str, Any]] = [
        {"command": "view", "path": "/memories"},
        {"command": "view", "path": "/memories/real.md"},
        {"command": "view", "path": "/memories/secret.md"},
        {"command": "create", "path": "/memories/new.md", "file_text": "PWNED"},
        {"command": "str_replace", "path": "/memories/real.md", "old_str": "TOP", "new_str": "PWNED"},
        {"command": "insert", "path": "/memories/real.md", "insert_line": 0, "insert_text": "PWNED"},
        {"command": "delete", "path": "/memories/real.md"},
        {"command": "rename", "old_path": "/memories/real.md", "new_path": "/memories/x.md"},
    ]
    for command in commands:
        result = planted.tool.execute(command)
        assert result.is_error, f"{command}: {result.text}"
        assert "TOP-SECRET" not in result.text
        assert str(planted.home) not in result.text, "a host path leaked into a tool result"
        assert "Internal error" not in result.text
    assert fingerprint(planted.outside) == before


def test_the_root_replaced_by_a_file_is_refused(planted: Planted) -> None:
    os.rename(planted.memories, planted.home / "store" / "memories.moved")
    planted.memories.write_text(SECRET)
    result = planted.run(command="view", path="/memories")
    assert result.is_error
    assert "TOP-SECRET" not in result.text
    assert str(planted.home) not in result.text


# -- hard links ---------------------------------------------------------------------------------------------------


def sidecar_holds(planted: Planted, needle: bytes) -> bool:
    """Whether any file of the sidecar (index, auxiliary database, their write-ahead logs) holds ``needle``."""
    return any(needle in f.read_bytes() for f in (planted.home / "store" / ".memdir").iterdir() if f.is_file())


def test_a_hard_link_to_an_outside_file_is_refused_like_a_symlink(planted: Planted) -> None:
    # Reading it would put the outside file's bytes in front of the model and into the history for good.
    os.link(planted.outside / "secret.md", planted.memories / "hard.md")
    os.link(planted.outside / "dir" / "inner.md", planted.memories / "sub" / "hard.md")
    before = fingerprint(planted.outside)
    for path in ("/memories/hard.md", "/memories/sub/hard.md"):
        for label, result in all_commands(planted, path).items():
            assert (label, result.is_error, result.text) == (label, True, escape(path))
    assert_outside_untouched(planted, before)
    assert os.stat(planted.memories / "hard.md").st_nlink == 2, "the link itself was replaced or removed"
    assert (planted.memories / "real.md").read_text() == "real\n"
    assert "hard.md" not in planted.run(command="view", path="/memories").text
    assert [e.path.virtual for e in planted.store.list_files()] == ["/memories/real.md", "/memories/sub/keep.md"]
    assert not sidecar_holds(planted, b"TOP-SECRET")


def test_a_hard_link_made_to_a_memory_file_from_outside_is_refused(planted: Planted) -> None:
    # Someone gives a memory file a second name outside the store: through it they would read whatever memdir keeps
    # there. memdir stops using the file (as if it were a symlink): nothing more is read or written under its name.
    peek = planted.outside / "peek.md"
    os.link(planted.memories / "real.md", peek)
    for label, result in all_commands(planted, "/memories/real.md").items():
        if label != "rename-to":  # that one renames real.md itself: the same escape, for the source
            assert (label, result.is_error, result.text) == (label, True, escape("/memories/real.md"))
    assert planted.run(command="create", path="/memories/other.md", file_text="private\n").text == (
        "File created successfully at: /memories/other.md"
    )
    assert peek.read_text() == "real\n", "a write reached the outside name"
    assert os.stat(peek).st_nlink == 2 and os.path.samefile(peek, planted.memories / "real.md")
    assert "real.md" not in planted.run(command="view", path="/memories").text
    os.unlink(peek)  # the second name gone, the file is memdir's again
    assert planted.run(command="view", path="/memories/real.md").text.endswith("1\treal")


def test_doctor_reports_hard_links_without_reading_them(planted: Planted) -> None:
    from memdir.doctor import diagnose

    os.link(planted.outside / "secret.md", planted.memories / "hard.md")
    found = [(f.where, f.problem) for f in diagnose(str(planted.home / "store")).findings]
    assert (
        "memories/hard.md",
        "a file with other names (hard links): memdir never reads it; the model cannot see it",
    ) in found


# -- races: a link swapped in and out while commands run ------------------------------------------------------

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_RENAME_EXCHANGE = 2


def exchange(a: Path, b: Path) -> None:
    """Atomically swap two names (renameat2 RENAME_EXCHANGE): the name is never missing, never half-swapped."""
    if _libc.renameat2(-100, os.fsencode(a), -100, os.fsencode(b), _RENAME_EXCHANGE) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


def exchange_supported(tmp_path: Path) -> bool:
    (tmp_path / "probe-a").mkdir()
    os.symlink(tmp_path, tmp_path / "probe-b")
    try:
        exchange(tmp_path / "probe-a", tmp_path / "probe-b")
    except (OSError, AttributeError):
        return False
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp_path / "probe-a")
        with contextlib.suppress(OSError):
            os.unlink(tmp_path / "probe-b")
        with contextlib.suppress(OSError):
            os.rmdir(tmp_path / "probe-a")
        with contextlib.suppress(OSError):
            os.rmdir(tmp_path / "probe-b")
    return True


def swapping(
    real: Path, outside: Path, stop: threading.Event, swaps: list[int], *, hard: bool = False
) -> Callable[[], None]:
    """Keep putting a link to ``outside`` (a symlink, or with ``hard`` a hard link) under ``real``'s name for a
    moment, then the real entry back. A write may replace the link while it is there (rename over it); then the
    newer file is kept and a link re-planted."""
    spare = real.parent / f".{real.name}.spare"
    outside_inode = os.stat(outside).st_ino

    def still_the_link() -> bool:
        return spare.is_symlink() if not hard else os.lstat(spare).st_ino == outside_inode

    def loop() -> None:
        while not stop.is_set():
            (os.link if hard else os.symlink)(outside, spare)
            exchange(real, spare)  # `real`'s name now holds the link
            time.sleep(0.0002)
            exchange(real, spare)  # and the real entry again
            if still_the_link():
                os.unlink(spare)
            else:  # a write replaced the link while it was there: keep what it wrote
                os.rename(spare, real)
            swaps[0] += 1
            time.sleep(0.0001)

    return loop


REFUSALS = (
    "Error: Path /memories/",  # the escape
    "The path /memories/",  # view: not found (the link hid the file)
    "Error: The path /memories/",  # edits: not found
    "No replacement was performed",  # str_replace read the file between two of its own inserts
    "Error: The memory store could not complete",  # a clean storage error
    "Error: /memories/",  # the file was swapped after it was read: "changed on disk by another program"
)


def assert_expected_refusals(results: list[ToolResult]) -> None:
    for result in results:
        if result.is_error:
            assert result.text.startswith(REFUSALS), result.text
    assert any("would escape /memories directory" in r.text for r in results), "the link was never met"


def hammer(planted: Planted, sub: str, seconds: float) -> list[ToolResult]:
    results: list[ToolResult] = []
    deadline = time.monotonic() + seconds
    i = 0
    while time.monotonic() < deadline:
        i += 1
        commands: list[dict[str, Any]] = [
            {"command": "create", "path": f"/memories/{sub}/n{i}.md", "file_text": f"new {i}\n"},
            {"command": "view", "path": f"/memories/{sub}/target.md"},
            {"command": "str_replace", "path": f"/memories/{sub}/target.md", "old_str": "count", "new_str": "count"},
            {"command": "insert", "path": f"/memories/{sub}/target.md", "insert_line": 0, "insert_text": f"i{i}"},
            {"command": "view", "path": f"/memories/{sub}"},
            {"command": "view", "path": "/memories"},
            {"command": "rename", "old_path": f"/memories/{sub}/n{i}.md", "new_path": f"/memories/{sub}/m{i}.md"},
            {"command": "delete", "path": f"/memories/{sub}/m{i}.md"},
            {"command": "delete", "path": f"/memories/{sub}/n{i}.md"},
        ]
        results.extend(planted.tool.execute(c) for c in commands)
    return results


def test_a_directory_swapped_for_an_outside_link_mid_command_never_leaks(planted: Planted) -> None:
    if not exchange_supported(planted.home):
        pytest.skip("renameat2(RENAME_EXCHANGE) is not available on this kernel or file system")
    canary = planted.home / "canary"
    canary.mkdir()
    (canary / "target.md").write_text("CANARY count\n")
    before = fingerprint(canary)
    assert not planted.run(command="create", path="/memories/race/target.md", file_text="count\n").is_error
    stop, swaps = threading.Event(), [0]
    swapper = threading.Thread(target=swapping(planted.memories / "race", canary, stop, swaps), daemon=True)
    swapper.start()
    try:
        results = hammer(planted, "race", seconds=2.0)
    finally:
        stop.set()
        swapper.join(10)
    assert not swapper.is_alive()
    assert swaps[0] > 50, "the swapper barely ran; the race was not exercised"
    assert fingerprint(canary) == before, "the outside directory was modified through the link"
    assert sorted(os.listdir(canary)) == ["target.md"]
    for result in results:
        assert "CANARY" not in result.text, result.text
        assert "Internal error" not in result.text, result.text
        assert str(planted.home) not in result.text
    assert any(not r.is_error for r in results), "no command ever got through"
    assert_expected_refusals(results)
    # The tree is consistent afterwards: the real directory is back and holds what the tool reports.
    assert (planted.memories / "race").is_dir() and not (planted.memories / "race").is_symlink()
    listed = [e.path.virtual for e in planted.store.list_files()]
    assert "/memories/race/target.md" in listed


@pytest.mark.parametrize("hard", [False, True], ids=["symlink", "hard-link"])
def test_a_file_swapped_for_an_outside_link_mid_command_never_leaks(planted: Planted, hard: bool) -> None:
    # A hard link cannot be told from the file by its name: memdir checks the link count before the open and on the
    # open descriptor, so one swapped in between is refused too, and its bytes never reach memory or the history.
    if not exchange_supported(planted.home):
        pytest.skip("renameat2(RENAME_EXCHANGE) is not available on this kernel or file system")
    canary = planted.home / "canary.md"
    canary.write_text("CANARY count\n")
    assert not planted.run(command="create", path="/memories/swap/target.md", file_text="count\n").is_error
    stop, swaps = threading.Event(), [0]
    swapper = threading.Thread(
        target=swapping(planted.memories / "swap" / "target.md", canary, stop, swaps, hard=hard), daemon=True
    )
    swapper.start()
    try:
        results = hammer(planted, "swap", seconds=1.5)
    finally:
        stop.set()
        swapper.join(10)
    assert not swapper.is_alive()
    assert swaps[0] > 50
    assert canary.read_text() == "CANARY count\n"
    assert os.stat(canary).st_nlink == 1, "a planted hard link was left behind"
    assert sorted(os.listdir(planted.home)) == ["canary.md", "outside", "store"]
    for result in results:
        assert "CANARY" not in result.text, result.text
        assert "Internal error" not in result.text, result.text
    assert_expected_refusals(results)
    assert not sidecar_holds(planted, b"CANARY"), "the outside file's bytes reached the history"


# -- special files --------------------------------------------------------------------------------------------


def plant_specials(memories: Path) -> list[str]:
    """A FIFO (opening it for reading would block forever), a socket, and (when allowed) character devices
    that never end (/dev/zero) or block (/dev/tty-like), under file names the model might use."""
    names = []
    os.mkfifo(memories / "pipe.md")
    os.mkfifo(memories / "sub" / "pipe.md")
    names += ["pipe.md", "sub/pipe.md"]
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(memories / "socket.md"))
    sock.close()
    names.append("socket.md")
    try:
        os.mknod(memories / "zero.md", 0o600 | stat.S_IFCHR, os.makedev(1, 5))
        names.append("zero.md")
    except PermissionError:
        pass  # no CAP_MKNOD here: FIFOs and sockets still cover "not a regular file"
    return names


def run_bounded(work: Callable[[], list[ToolResult]], seconds: float) -> list[ToolResult]:
    done: list[list[ToolResult]] = []
    worker = threading.Thread(target=lambda: done.append(work()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), "a command hung on a special file"
    return done[0]


def test_fifos_sockets_and_devices_are_never_opened_or_listed(planted: Planted) -> None:
    names = plant_specials(planted.memories)

    def work() -> list[ToolResult]:
        out = []
        for name in names:
            path = f"/memories/{name}"
            out.append(planted.run(command="view", path=path))
            out.append(planted.run(command="str_replace", path=path, old_str="\0", new_str="x"))
            out.append(planted.run(command="insert", path=path, insert_line=0, insert_text="x"))
            out.append(planted.run(command="delete", path=path))
            out.append(planted.run(command="rename", old_path=path, new_path=f"/memories/moved-{len(out)}.md"))
            out.append(planted.run(command="view", path="/memories"))
            out.append(planted.run(command="view", path="/memories/sub"))
        return out

    started = time.monotonic()
    results = run_bounded(work, 20)
    assert time.monotonic() - started < 10
    for name in names:
        path = f"/memories/{name}"
        assert planted.run(command="view", path=path).text == (
            f"The path {path} does not exist. Please provide a valid path."
        )
        assert planted.run(command="str_replace", path=path, old_str="a", new_str="b").text == (
            f"Error: The path {path} does not exist. Please provide a valid path."
        )
        assert planted.run(command="insert", path=path, insert_line=0, insert_text="b").text == (
            f"Error: The path {path} does not exist"
        )
        assert planted.run(command="delete", path=path).text == f"Error: The path {path} does not exist"
        assert planted.run(command="rename", old_path=path, new_path="/memories/x.md").text == (
            f"Error: The path {path} does not exist"
        )
        assert not stat.S_ISREG(os.lstat(planted.memories / name).st_mode), "a special file was replaced"
    for result in results:
        assert "Internal error" not in result.text
    listing = planted.run(command="view", path="/memories").text
    assert "pipe" not in listing and "socket" not in listing and "zero" not in listing
    assert [e.path.virtual for e in planted.store.list_files()] == ["/memories/real.md", "/memories/sub/keep.md"]


def test_create_over_a_fifo_replaces_it_without_opening_it(planted: Planted) -> None:
    # `view` reports a FIFO as missing, so `create` may take the name: rename(2) replaces the entry and
    # nothing ever opens the FIFO (which would block).
    os.mkfifo(planted.memories / "pipe.md")
    result = run_bounded(lambda: [planted.run(command="create", path="/memories/pipe.md", file_text="now\n")], 10)
    assert result[0].text == "File created successfully at: /memories/pipe.md"
    assert (planted.memories / "pipe.md").read_text() == "now\n"


def test_a_directory_store_opened_on_a_path_through_a_link_works(tmp_path: Path) -> None:
    # A link in the caller's own path is the caller's choice (resolved once, at open).
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "via")
    store = open_store(str(tmp_path / "via" / "store"))
    tool = MemoryTool(store)
    assert not tool.execute({"command": "create", "path": "/memories/a.md", "file_text": "a"}).is_error
    assert (tmp_path / "real" / "store" / "memories" / "a.md").read_text() == "a"
    store.close()


def test_symlink_errors_do_not_leak_errno_or_paths(planted: Planted) -> None:
    for path in ("/memories/file-link.md", "/memories/dir-link/inner.md"):
        for command in ("view", "delete"):
            text = planted.run(command=command, path=path).text
            assert str(planted.home) not in text
            assert "Errno" not in text and "ELOOP" not in text and str(errno.ELOOP) not in text.split()
