"""Everyday changes without JSON in shell quotes: write, edit, rm, mv.

Each one is a memory-tool command (`memdir.MemoryTool`) run as actor ``user`` on the store the CLI opened, so
whatever applies to a write there (path rules, limits, the write policy, auto memory's upkeep, history and audit)
applies to these as well: they are shortcuts, not a way around the tool. What the tool answers is printed; an
error is one line on stderr and exit status 1.
"""

from __future__ import annotations

import errno
import os
import sys
import tempfile
from typing import TYPE_CHECKING, Any

import click

from ..paths import parse
from ..tool import MemoryTool
from ._group import Context, cli, fail_cleanly, pass_context

if TYPE_CHECKING:
    from ..paths import MemoryPath
    from ..store import Stat, Store
    from ..tool import ToolResult

__all__ = ["edit", "mv", "rm", "write"]

_ACTOR = "user"


def _run(store: Store, command: dict[str, Any], *, overwrite: bool = False) -> None:
    with MemoryTool(store, actor=_ACTOR, create_overwrites=overwrite) as tool:
        result = tool.execute(command)
    if result.is_error:
        raise click.ClickException(result.text.removeprefix("Error: "))
    click.echo(result.text)


def _read(source: str) -> bytes:
    if source == "-":
        return sys.stdin.buffer.read()
    try:
        with open(source, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise click.ClickException(f"cannot read {source}: {exc.strerror or exc}") from exc


def _text(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise click.ClickException(f"{where} is not UTF-8 text (byte {exc.start}); memory files are text") from exc


@cli.command()
@click.argument("path")
@click.argument("source", type=click.Path(dir_okay=False, allow_dash=True), default="-", metavar="[FILE]")
@click.option("--overwrite", is_flag=True, help="Replace the file if it exists (its old text stays in the history).")
@pass_context
@fail_cleanly
def write(state: Context, path: str, source: str, overwrite: bool) -> None:
    """Write a memory file from FILE or standard input (- or nothing).

    Refuses a file that exists unless --overwrite is given. The store is created if it does not exist.

    Example:

        echo "- prefers email" | memdir write /memories/preferences.md
        memdir write /memories/notes.md notes.md --overwrite
    """
    target = parse(path)
    text = _text(_read(source), "the input" if source == "-" else source)
    store = state.store(create=True)
    found = store.stat(target)
    if found is not None and found.kind == "file" and not overwrite:
        raise click.ClickException(f"{target.virtual} already exists: pass --overwrite to replace it")
    if found is None or found.kind != "file":
        _run(store, {"command": "create", "path": path, "file_text": text})
        return
    _replace(store, target, path, text)


@cli.command()
@click.argument("path")
@pass_context
@fail_cleanly
def edit(state: Context, path: str) -> None:
    """Edit a memory file in $VISUAL or $EDITOR; the change is a new version.

    A new path starts empty. Nothing is written when the text is unchanged, or when the file changed while you
    were editing (your text is then kept in a temporary file, named in the message).

    Example:

        EDITOR=nano memdir edit /memories/preferences.md
    """
    target = parse(path)
    store = state.store(create=True)
    before = store.stat(target)
    old = _text(store.read(target).content, target.virtual) if before is not None else ""
    new = _edited(old, target)
    if new is None or new == old:
        click.echo(f"No changes; {target.virtual} was not written.", err=True)
        return
    _check_unchanged(store, target, before, new)
    if before is None:  # a new file: the tool's own words say so
        _run(store, {"command": "create", "path": path, "file_text": new}, overwrite=True)
        return
    _replace(store, target, path, new)


def _replace(store: Store, target: MemoryPath, path: str, text: str) -> None:
    """Write ``text`` over the file at ``target``, said as an edit (`_echo_saved`)."""
    with MemoryTool(store, actor=_ACTOR, create_overwrites=True) as tool:
        result = tool.execute({"command": "create", "path": path, "file_text": text})
    _echo_saved(store, target, path, result)


def _edited(old: str, path: MemoryPath) -> str | None:
    """``old`` after the user's editor ran on it; None when it was not saved. Passed as bytes, so that click
    does not decode what the editor saved: text in another encoding is refused here, in our words."""
    try:
        data = click.edit(old.encode("utf-8"), extension=_suffix(path), require_save=True)
    except FileNotFoundError:  # the editor deleted or moved the file it was given
        raise click.ClickException(f"the file being edited was removed; nothing was saved to {path.virtual}") from None
    except click.ClickException as exc:
        if isinstance(exc.__cause__, OSError):  # the editor could not even start
            raise click.ClickException(_not_started(exc.__cause__)) from None
        if exc.message.endswith("Editing failed"):  # click's words for an editor that exited with an error
            editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
            why = f"the editor {editor} exited with an error; nothing was saved to {path.virtual}"
            raise click.ClickException(why) from None
        raise
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        kept = _keep(data, path)
        raise click.ClickException(
            f"the edited text is not UTF-8 (byte {exc.start}); nothing was saved to {path.virtual}. It is in {kept}"
        ) from None


def _not_started(exc: OSError) -> str:
    editor = exc.filename or os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    why = {errno.ENOENT: "not found", errno.EACCES: "not executable"}.get(exc.errno or 0, "it cannot be run")
    return f"could not start the editor {editor} ({why}); set $VISUAL or $EDITOR to an editor that is installed"


def _echo_saved(store: Store, target: MemoryPath, path: str, result: ToolResult) -> None:
    """An edit of an existing file said as one: ``Saved PATH (version N).``, not the tool's "File created"; what
    the tool added (a note that a secret was redacted) kept, and a write held for review told in its words."""
    if result.is_error:
        raise click.ClickException(result.text.removeprefix("Error: "))
    created = f"File created successfully at: {path}"
    if not result.text.startswith(created):
        click.echo(result.text)
        return
    now = store.stat(target)
    saved = f"Saved {target.virtual}" + (f" (version {now.version})." if now is not None else ".")
    click.echo(saved + result.text.removeprefix(created))


def _suffix(path: MemoryPath) -> str:
    """The file's own extension, so the editor highlights it (``.md`` for a name without one)."""
    name = path.name if not path.is_root else ""
    return os.path.splitext(name)[1] or ".md"


def _check_unchanged(store: Store, path: MemoryPath, before: Stat | None, text: str) -> None:
    """Refuse to write over a change someone else made while the editor was open; keep the edited text."""
    now = store.stat(path)
    if (now and (now.kind, now.version)) == (before and (before.kind, before.version)):
        return
    kept = _keep(text.encode("utf-8"), path)
    now_at = f"version {now.version}" if now is not None else "deleted"
    raise click.ClickException(
        f"{path.virtual} changed while you were editing (now {now_at}); nothing was written. Your text is in {kept}"
    )


def _keep(data: bytes, path: MemoryPath) -> str:
    """Save what the user wrote that could not be stored, so that no edit is lost: a private temporary file."""
    fd, kept = tempfile.mkstemp(prefix="memdir-edit-", suffix=_suffix(path))  # 0600: it is memory content
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    return kept


@cli.command()
@click.argument("path")
@click.option("--recursive", "-r", is_flag=True, help="Delete a directory and everything below it.")
@pass_context
@fail_cleanly
def rm(state: Context, path: str, recursive: bool) -> None:
    """Delete a memory file (a directory with -r); its history stays.

    Example:

        memdir rm /memories/old-notes.md
    """
    store = state.store()
    found = store.stat(parse(path))
    if found is not None and found.kind == "dir" and not recursive:
        raise click.ClickException(f"{parse(path).virtual} is a directory: pass -r to delete it and everything below")
    _run(store, {"command": "delete", "path": path})


@cli.command()
@click.argument("src", metavar="PATH")
@click.argument("dst", metavar="NEW_PATH")
@pass_context
@fail_cleanly
def mv(state: Context, src: str, dst: str) -> None:
    """Rename or move a memory file or directory; NEW_PATH must not exist.

    Example:

        memdir mv /memories/notes.md /memories/archive/notes-2026.md
    """
    _run(state.store(), {"command": "rename", "old_path": src, "new_path": dst})
