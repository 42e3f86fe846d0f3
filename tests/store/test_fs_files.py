"""Writing a file through a temporary one (`memdir.store._fs.write_temp`): written and fsynced before it has a
name where the file system can (``O_TMPFILE``), so the fsync commits no directory entry with it; named the
classic way where it cannot; in every case 0600, one link, and nothing left behind when the write fails."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from memdir.errors import StorageError
from memdir.store import _fs
from memdir.store._fs import _files

UNNAMED = hasattr(os, "O_TMPFILE") and os.path.isdir("/proc/self/fd")


@pytest.fixture
def directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> _fs.DirHandle:
    monkeypatch.setitem(_files._unnamed, "on", UNNAMED)  # each test starts as a fresh process would
    handle = _fs.DirHandle(os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY))
    yield handle
    handle.close()


def names_at_fsync(monkeypatch: pytest.MonkeyPatch, directory: _fs.DirHandle) -> list[list[str]]:
    """What the directory holds each time a file is fsynced."""
    seen: list[list[str]] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        seen.append(sorted(os.listdir(directory.fd)))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return seen


def the_file(directory: _fs.DirHandle, name: str) -> tuple[bytes, os.stat_result]:
    st = os.stat(name, dir_fd=directory.fd, follow_symlinks=False)
    fd = os.open(name, os.O_RDONLY, dir_fd=directory.fd)
    try:
        return os.read(fd, 1 << 20), st
    finally:
        os.close(fd)


@pytest.mark.skipif(not UNNAMED, reason="needs O_TMPFILE and /proc (Linux)")
def test_the_file_is_fsynced_before_it_has_a_name(directory: _fs.DirHandle, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = names_at_fsync(monkeypatch, directory)
    name = _fs.write_temp(directory, b"note\n")
    assert seen == [[]]  # nothing in the directory yet when its data reached the disk
    content, st = the_file(directory, name)
    assert content == b"note\n" and stat.S_IMODE(st.st_mode) == 0o600 and st.st_nlink == 1
    assert os.listdir(directory.fd) == [name]


def test_where_unnamed_files_are_refused_the_file_is_named_first(
    directory: _fs.DirHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = os.open

    def no_tmpfile(path: str, flags: int, *args: object, **kwargs: object) -> int:
        if flags & getattr(os, "O_TMPFILE", 0) == getattr(os, "O_TMPFILE", -1):
            raise OSError(errno.EOPNOTSUPP, "not on this file system")
        return real(path, flags, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", no_tmpfile)
    seen = names_at_fsync(monkeypatch, directory)
    first = _fs.write_temp(directory, b"one\n")
    second = _fs.write_temp(directory, b"two\n")
    assert seen == [[first], sorted([first, second])]  # named before its fsync, each time
    assert the_file(directory, first)[0] == b"one\n" and the_file(directory, second)[0] == b"two\n"


@pytest.mark.skipif(not UNNAMED, reason="needs O_TMPFILE and /proc (Linux)")
def test_where_the_unnamed_file_cannot_be_linked_it_is_written_again_named(
    directory: _fs.DirHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A /proc that refuses the link (a locked-down container): the write still succeeds, once more the named
    way, and leaves one file; from then on the process writes the named way at once."""

    def refused(*_: object, **__: object) -> None:
        raise OSError(errno.EPERM, "not permitted")

    monkeypatch.setattr(os, "link", refused)
    seen = names_at_fsync(monkeypatch, directory)
    name = _fs.write_temp(directory, b"note\n")
    assert the_file(directory, name)[0] == b"note\n" and os.listdir(directory.fd) == [name]
    _fs.write_temp(directory, b"again\n")
    assert seen[:2] == [[], [name]] and len(seen) == 3 and len(seen[2]) == 2


@pytest.mark.parametrize("unnamed", [True, False] if UNNAMED else [False])
def test_a_full_disk_leaves_nothing_behind(
    directory: _fs.DirHandle, monkeypatch: pytest.MonkeyPatch, unnamed: bool
) -> None:
    monkeypatch.setitem(_files._unnamed, "on", unnamed)

    def full(*_: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(StorageError, match="no space"):
        _fs.write_temp(directory, b"note\n")
    assert os.listdir(directory.fd) == []


@pytest.mark.parametrize("unnamed", [True, False] if UNNAMED else [False])
def test_a_failed_fsync_leaves_nothing_behind(
    directory: _fs.DirHandle, monkeypatch: pytest.MonkeyPatch, unnamed: bool
) -> None:
    monkeypatch.setitem(_files._unnamed, "on", unnamed)

    def failed(_: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", failed)
    with pytest.raises(StorageError):
        _fs.write_temp(directory, b"note\n")
    assert os.listdir(directory.fd) == []


@pytest.mark.skipif(not UNNAMED, reason="needs O_TMPFILE and /proc (Linux)")
def test_a_directory_removed_meanwhile_fails_that_write_only(
    tmp_path: Path, directory: _fs.DirHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ENOENT from a removed directory is this write's failure, not a sign the file system lacks unnamed files."""
    (tmp_path / "gone").mkdir()
    gone = _fs.DirHandle(os.open(tmp_path / "gone", os.O_RDONLY | os.O_DIRECTORY))
    os.rmdir(tmp_path / "gone")
    with pytest.raises(StorageError):
        _fs.write_temp(gone, b"note\n")
    gone.close()
    seen = names_at_fsync(monkeypatch, directory)
    _fs.write_temp(directory, b"note\n")
    assert seen == [[]]  # still written unnamed
