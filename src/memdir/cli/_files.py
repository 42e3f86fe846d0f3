"""Reading files and their history, and restoring old versions: ls, cat, history, show, diff, restore."""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any

import click

from ..archive import version_to_json
from ..errors import NotAFileError, NotFoundError
from ..paths import parse
from ..store import Origin, Stat
from ._group import Context, cli, fail_cleanly, pass_context
from ._output import echo_json, iso, print_rows, shown, size, stdout_is_tty, version_number, write_bytes

if TYPE_CHECKING:
    from ..paths import MemoryPath
    from ..store import Store, Version


@cli.command("ls")
@click.argument("path", default="/memories")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@pass_context
@fail_cleanly
def ls(state: Context, path: str, as_json: bool) -> None:
    """List the files below PATH with size, version and time.

    PATH defaults to /memories. Sizes are bytes and the header is left out when stdout is not a terminal.

    Example:

        memdir ls /memories/projects
    """
    stats = file_stats(state.store(), parse(path))
    if as_json:
        echo_json([_stat_json(s) for s in stats])
        return
    tty = stdout_is_tty()
    rows = [(s.path.virtual, size(s.size, tty), str(s.version), iso(s.modified)) for s in stats]
    print_rows(("Path", "Size", "Version", "Modified"), rows, tty)


@cli.command()
@click.argument("path")
@pass_context
@fail_cleanly
def cat(state: Context, path: str) -> None:
    """Print the current content of a file (byte for byte into a pipe).

    Into a pipe or a file, byte for byte. On a terminal, what the terminal would act on instead of showing
    (escape sequences, control characters, right-to-left overrides) is printed escaped: \\x1b, \\u202e.

    Example:

        memdir cat /memories/notes.md
    """
    data = state.store().read(parse(path))
    write_bytes(data.content)


@cli.command()
@click.argument("path")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@pass_context
@fail_cleanly
def history(state: Context, path: str, as_json: bool) -> None:
    """List the versions of a file, newest first.

    The history follows the file back through renames and past deletions. Columns: version, time, operation,
    actor, session, size, SHA-256, where a rename came from, and the source of the content when known.

    Example:

        memdir history /memories/notes.md
    """
    versions = state.store().history(parse(path))[::-1]
    if as_json:
        echo_json([{**version_to_json(v), "time": iso(v.timestamp)} for v in versions])
        return
    tty = stdout_is_tty()
    rows = [
        (str(v.version), iso(v.timestamp), v.op, v.actor, v.session or "-", size(v.size, tty),
         (v.sha256 or "-")[:12], v.old_path.virtual if v.old_path else "-", v.source or "-")
        for v in versions
    ]  # fmt: skip
    headers = ("Version", "Time", "Op", "Actor", "Session", "Size", "SHA-256", "Renamed from", "Source")
    print_rows(headers, rows, tty)


@cli.command()
@click.argument("spec", metavar="PATH@VERSION")
@pass_context
@fail_cleanly
def show(state: Context, spec: str) -> None:
    """Print a file's content at one version (byte for byte into a pipe).

    Into a pipe or a file, byte for byte. On a terminal, what the terminal would act on instead of showing
    (escape sequences, control characters, right-to-left overrides) is printed escaped: \\x1b, \\u202e.

    Example:

        memdir show /memories/notes.md@3
    """
    raw, _, number = spec.rpartition("@")
    if not raw:
        raise click.ClickException(f"expected PATH@VERSION, e.g. /memories/notes.md@3, got: {spec}")
    content = state.store().read_version(parse(raw), version_number(number))
    write_bytes(content)


class _TakesVersions(click.Command):
    """A command with VERSION arguments: ``-5`` there is a version someone meant (counted back from the current
    one, perhaps), which click would report as an unknown option. It is answered as any invalid version is."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as exc:
            if exc.option_name[1:].isdigit():
                version_number(exc.option_name)  # raises: versions are numbers from 1
            raise


@cli.command(cls=_TakesVersions)
@click.argument("path")
@click.argument("v1", required=False)
@click.argument("v2", required=False)
@pass_context
@fail_cleanly
def diff(state: Context, path: str, v1: str | None, v2: str | None) -> None:
    """Show the changes between two versions of a file (a unified diff).

    V2 defaults to the current content; V1 to the version before the current one.

    Example:

        memdir diff /memories/notes.md 3
    """
    first = None if v1 is None else version_number(v1)
    second = None if v2 is None else version_number(v2)
    lines = unified_diff(state.store(), parse(path), first, second)
    for line in lines:
        click.echo(_colour(shown(line)), nl=False)


@cli.command(cls=_TakesVersions)
@click.argument("path")
@click.argument("version")
@pass_context
@fail_cleanly
def restore(state: Context, path: str, version: str) -> None:
    """Make an old version current again; print the new version number.

    The restore is recorded as a new version, by actor `user`. When the file already holds that version's
    content, nothing is written (the current version number is printed, and stderr says so).

    Example:

        memdir restore /memories/notes.md 3
    """
    number, target, store = version_number(version), parse(path), state.store()
    current = already_current(store, target, number)
    if current is not None:
        click.echo(f"{target.virtual} already holds the content of version {number} (it is version {current}); "
                   "nothing was written.", err=True)  # fmt: skip
        click.echo(current)
        return
    origin = Origin(actor="user", source=f"restored from version {number}")
    restored = store.restore(target, number, origin=origin)
    click.echo(restored.version)


@cli.command()
@click.argument("spec", metavar="PATH@VERSION")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@pass_context
@fail_cleanly
def redact(state: Context, spec: str, yes: bool) -> None:
    """Remove an old version's content from the store for good.

    The version keeps its record (path, time, hash, size); its bytes leave the store, and so do those of every
    other version with the same content (a store keeps each content once). For a secret that reached the history:
    an edit made outside memdir, a note written before the policy redacted it (`memdir scan --history` finds
    them). A current file's content cannot be redacted: change or delete the file first. Recorded in the audit log.

    Example:

        memdir redact /memories/notes.md@3
    """
    raw, _, number = spec.rpartition("@")
    if not raw:
        raise click.ClickException(f"expected PATH@VERSION, e.g. /memories/notes.md@3, got: {spec}")
    target, store = parse(raw), state.store()
    version = version_of(store, target, version_number(number))
    if version.sha256 is None:
        raise click.ClickException(f"version {version.version} of {target.virtual} is a deletion; it has no content")
    sharing = [f"{v.path.virtual}@{v.version}" for v in store.log() if v.sha256 == version.sha256 and v != version]
    also = f" (and the same content in {', '.join(sharing)})" if sharing else ""
    if not yes and not click.confirm(f"Remove the content of {spec}{also} for good?", err=True):
        raise click.ClickException("nothing was redacted")
    if not store.redact_content(version.sha256):
        raise click.ClickException(f"the content of {spec} was already redacted")
    click.echo(f"Redacted {target.virtual}@{version.version}{also}: its content is no longer stored.")


# -- on top of the store contract ------------------------------------------------------------------------------


def file_stats(store: Store, path: MemoryPath) -> list[Stat]:
    """The `Stat` of every file below ``path``, or of ``path`` itself when it is a file."""
    here = store.stat(path)
    if here is None:
        raise NotFoundError(f"{path.virtual} does not exist")
    if here.kind == "file":
        return [here]
    return [Stat(e.path, "file", e.size, e.version, e.sha256, e.modified) for e in store.list_files(path)]


def version_of(store: Store, path: MemoryPath, number: int) -> Version:
    """Version ``number`` of ``path`` (`NotFoundError` when it has none)."""
    wanted = next((v for v in store.history(path) if v.version == number), None)
    if wanted is None:
        raise NotFoundError(f"{path.virtual} has no version {number}")
    return wanted


def already_current(store: Store, path: MemoryPath, number: int) -> int | None:
    """The current version of ``path`` when its content is already that of version ``number`` (so restoring it
    would only add a duplicate), else None. `NotFoundError` when ``path`` has no version ``number``."""
    wanted = version_of(store, path, number)
    now = store.stat(path)
    if now is None or now.kind != "file" or wanted.sha256 is None or now.sha256 != wanted.sha256:
        return None
    return now.version


def _stat_json(stat: Stat) -> dict[str, Any]:
    return {
        "path": stat.path.virtual,
        "size": stat.size,
        "version": stat.version,
        "sha256": stat.sha256,
        "modified": iso(stat.modified),
    }


def unified_diff(store: Store, path: MemoryPath, first: int | None, second: int | None) -> list[str]:
    """The lines of a unified diff from version ``first`` (None: the one before the current) to ``second``
    (None: the current content). A deletion counts as empty; content that is not UTF-8 is compared whole."""
    if first is None:
        versions = store.history(path)
        old = _side(store, path, versions[-2].version) if len(versions) > 1 else ("/dev/null", b"")
    else:
        old = _side(store, path, first)
    new = _side(store, path, second)
    texts = [_text(old[1]), _text(new[1])]
    if texts[0] is None or texts[1] is None:
        return [] if old[1] == new[1] else [f"Binary contents of {old[0]} and {new[0]} differ\n"]
    lines = difflib.unified_diff(_lines(texts[0]), _lines(texts[1]), old[0], new[0])
    return "".join(lines).splitlines(keepends=True)


def _side(store: Store, path: MemoryPath, version: int | None) -> tuple[str, bytes]:
    """(label, content) of one side of a diff: a version, or the current content when ``version`` is None."""
    if version is None:
        try:
            return f"{path.virtual} (current)", store.read(path).content
        except (NotFoundError, NotAFileError):
            return f"{path.virtual} (deleted)", b""
    match = [v for v in store.history(path) if v.version == version]
    if not match:
        raise NotFoundError(f"{path.virtual} has no version {version}")
    if match[0].deleted:
        return f"{path.virtual}@{version} (deleted)", b""
    return f"{path.virtual}@{version}", store.read_version(path, version)


def _text(content: bytes) -> str | None:
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _lines(text: str) -> list[str]:
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n\\ No newline at end of file\n"
    return lines


def _colour(line: str) -> str:
    """Colours for a terminal; click strips them when stdout is not one."""
    text, end = (line[:-1], "\n") if line.endswith("\n") else (line, "")
    if text.startswith(("+++", "---")):
        return click.style(text, bold=True) + end
    colour = {"@": "cyan", "+": "green", "-": "red"}.get(text[:1])
    return (click.style(text, fg=colour) if colour else text) + end
