"""Auto memory runs where the memory tool runs: on the backends that hold their own data. On a memdir server's
store the server's tool runs it, with the server's settings (tests/gate/test_remote_client.py), so a client's
``auto_memory=`` option has nothing to act on there."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["memory", "sqlite", "directory", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)
