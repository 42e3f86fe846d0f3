"""Helpers shared by the CLI tests (imported as ``cli.helpers``: ``tests`` is on the path)."""

from __future__ import annotations

from collections.abc import Callable

from click.testing import Result

from memdir import Store, Version, parse
from memdir.store._records import sha256_hex

T0 = 1_700_000_000.0  # 2023-11-14T22:13:20Z: versions made with `add` get times from here, a minute apart

Run = Callable[..., Result]


def add(
    store: Store,
    path: str,
    op: str,
    content: bytes | None,
    *,
    old: str | None = None,
    actor: str = "model",
    session: str | None = "s-1",
) -> Version:
    """Record a version at a fixed time (T0 + one minute per version already in the store). A rename passes
    the moved content (for its hash) and ``old``; a delete passes None."""
    number = sum(1 for _ in store.log()) + 1
    version = Version(
        version=number,
        path=parse(path),
        op=op,
        actor=actor,
        session=session,
        source=None,
        timestamp=T0 + 60 * number,
        sha256=None if content is None else sha256_hex(content),
        size=len(content or b""),
        old_path=None if old is None else parse(old),
    )
    return store.import_version(version, None if op in ("delete", "rename") else content)


def seed(store: Store) -> None:
    """A small history: notes.md created and edited, a file moved into a folder, and one deleted."""
    add(store, "/memories/notes.md", "create", b"one\ntwo\n")
    add(store, "/memories/notes.md", "str_replace", b"one\nthree\n", session="s-2")
    add(store, "/memories/todo.md", "create", b"milk\n", actor="user", session=None)
    add(store, "/memories/lists/todo.md", "rename", b"milk\n", old="/memories/todo.md", actor="user", session=None)
    add(store, "/memories/old.md", "create", b"gone\n")
    add(store, "/memories/old.md", "delete", None)
