"""The safety tests run on the backends that hold their own data (a remote store screens on its server); on
PostgreSQL the audit log, the quarantine and the access times live in the store's own database."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["memory", "sqlite", "directory", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)
