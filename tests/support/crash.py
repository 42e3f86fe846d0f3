"""A real process stopped between a directory-store COMMIT and the renames that make its change visible, then
killed with SIGKILL: the one window in which a committed change is not on disk yet.

The child runs a Python script after installing the test hook `memdir.store._visible.between_commit_and_apply`,
which, at the ``stop_at``-th command that has something to make visible, reports ``committed`` and waits.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["killed_after_commit"]

_STOP_HERE = r"""
import signal, sys
from memdir.store import _visible

_stop_at = int(sys.argv.pop(1))
_seen = 0


def _stop_here():
    global _seen
    _seen += 1
    if _seen == _stop_at:
        print("committed", flush=True)
        signal.pause()  # until the test's SIGKILL


_visible.between_commit_and_apply = _stop_here
"""


@contextlib.contextmanager
def killed_after_commit(script: str, *args: str, stop_at: int = 1) -> Iterator[None]:
    """Run ``script`` with ``args`` in ``sys.argv[1:]``; the body runs while the child waits in the window, then
    the child is killed with SIGKILL."""
    child = subprocess.Popen(
        [sys.executable, "-c", _STOP_HERE + script, str(stop_at), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line == b"committed\n", child.communicate()[1].decode()  # else the child ended without stopping
        yield
    finally:
        child.kill()
        child.communicate()
    assert child.returncode == -signal.SIGKILL
