"""``spawn``: child processes a test starts, reaped however the test ends.

A test that fails while its workers still run would otherwise leave them running into the next test, whose
"subprocess is still running" warnings then fail it too (CI saw a failure of one test spill into another).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from typing import Any

import pytest

Spawn = Callable[..., "subprocess.Popen[str]"]


@pytest.fixture
def spawn() -> Iterator[Spawn]:
    started: list[subprocess.Popen[str]] = []

    def start(args: list[str], **options: Any) -> subprocess.Popen[str]:
        process: subprocess.Popen[str] = subprocess.Popen(args, text=True, **options)
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait()
        for pipe in (process.stdin, process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()
