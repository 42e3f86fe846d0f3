"""The safety tests run on the backends that hold their own data (a remote store screens on its server)."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["memory", "sqlite", "directory"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)
