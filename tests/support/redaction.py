"""A history with redacted content, as the Memory Stores API's ``redact`` leaves one, for the copy tests."""

from __future__ import annotations

from memdir import Origin, Store, Version

__all__ = ["redacted_history"]


def redacted_history(store: Store) -> Version:
    """A file whose first content was redacted after it was replaced, then renamed; returns that first version."""
    first = store.write(
        "/memories/keys.md", b"the old text, since redacted\n", origin=Origin("model", "s-1"), op="create"
    )
    store.write("/memories/keys.md", b"the new text\n", origin=Origin("user", None, "cli"))
    store.move("/memories/keys.md", "/memories/moved.md", origin=Origin("user", None, "cli"))
    assert first.sha256 is not None and store.redact_content(first.sha256)
    return first
