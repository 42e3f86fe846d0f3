"""Run a command on a pseudo-terminal, as a person at a terminal would: read what it shows until it shows
``until``, type Ctrl-C, and return what it showed and how it ended."""

from __future__ import annotations

import contextlib
import os
import pty
import select
import signal
import time

__all__ = ["ctrl_c_on_a_terminal"]


def ctrl_c_on_a_terminal(argv: list[str], env: dict[str, str], until: bytes, timeout: float = 60.0) -> tuple[str, int]:
    """(everything the command showed, with CRLF as LF; its wait status) after one Ctrl-C once ``until`` showed."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: the terminal is its stdin, stdout and stderr
        os.execve(argv[0], argv, env)
    seen = b""
    try:
        deadline = time.monotonic() + timeout
        while until not in seen and time.monotonic() < deadline:
            seen += _read(fd)
        os.write(fd, b"\x03")  # Ctrl-C, typed at the terminal
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                seen += _read(fd)
                return seen.decode(errors="replace").replace("\r\n", "\n"), status
            seen += _read(fd)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise AssertionError(f"still running {timeout:.0f} s after Ctrl-C; it showed: {seen!r}")
    finally:
        os.close(fd)


def _read(fd: int) -> bytes:
    if not select.select([fd], [], [], 0.1)[0]:
        return b""
    with contextlib.suppress(OSError):  # the terminal's other side closed: the child is gone
        return os.read(fd, 65536)
    return b""
