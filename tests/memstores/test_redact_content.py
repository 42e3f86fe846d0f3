"""`Store.redact_content` on every backend: the content goes, the versions stay, a current file's content is
refused; a store that cannot forget content says so instead of pretending."""

from __future__ import annotations

import pytest

from memdir import ConflictError, NotFoundError, Store
from memdir.errors import HistoryUnavailableError


def test_content_goes_and_the_versions_stay(store: Store, backend: str) -> None:
    if backend == "remote":
        with pytest.raises(HistoryUnavailableError):  # a client cannot make the server forget: the API can
            store.redact_content("0" * 64)
        return
    first = store.write("/memories/a.md", b"to be redacted")
    store.write("/memories/a.md", b"current")
    assert first.sha256 is not None
    with pytest.raises(ConflictError):  # a current file holds it
        store.redact_content(store.read("/memories/a.md").sha256)
    assert store.redact_content(first.sha256) is True
    with pytest.raises(NotFoundError, match="redacted"):
        store.read_blob(first.sha256)
    with pytest.raises(NotFoundError):
        store.read_version("/memories/a.md", first.version)
    assert [v.version for v in store.history("/memories/a.md")] == [first.version, first.version + 1]
    assert store.read("/memories/a.md").content == b"current"
    assert store.redact_content(first.sha256) is False  # nothing left to remove
    store.write("/memories/b.md", b"to be redacted")  # the same content written again is stored again
    assert store.read("/memories/b.md").content == b"to be redacted"
    assert store.read_blob(first.sha256) == b"to be redacted"
    store.write("/memories/empty.md", b"")  # the empty content is not taken for a redacted one
    assert store.read_blob(store.read("/memories/empty.md").sha256) == b""
