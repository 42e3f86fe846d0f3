"""Whole-store commands: export and import (`memdir.archive`), doctor (`memdir.doctor`), migrate
(`memdir.schema`)."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from typing import TYPE_CHECKING, NoReturn

import click

from ..archive import check_archive, export_namespace, import_namespace
from ..doctor import diagnose
from ..gate import GatedStore
from ..schema import migrate as migrate_schema
from ..store import redact_url
from . import _output
from ._group import Context, cli, fail_cleanly, pass_context
from ._output import plural

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from ..doctor import Report
    from ..store import Store

_BIG = 500  # versions: an archive this size gets a progress bar on a terminal
_SEVERITY_COLOURS = {"error": "red", "warning": "yellow", "info": "blue"}


@cli.command("export")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--overwrite", is_flag=True, help="Replace FILE if it exists.")
@pass_context
@fail_cleanly
def export_(state: Context, file: str, overwrite: bool) -> None:
    """Write the namespace and its whole history to a zip file (- for standard output).

    The file is created with mode 0600: it holds every memory ever written.

    Example:

        memdir export backup.zip
        memdir export - | ssh backup 'cat > memory.zip'
    """
    if file != "-" and os.path.lexists(file) and not overwrite:  # a dangling link too: it is not ours to replace
        raise click.ClickException(f"{file} already exists: choose another name, or pass --overwrite to replace it")
    with _progress("Exporting") as progress, _target(file) as path:
        summary = export_namespace(state.store(), path, overwrite=True, progress=progress)
    files, versions = plural(summary.files, "file"), plural(summary.versions, "version")
    where = "standard output" if file == "-" else file
    # The summary is for a person: on stderr when the archive itself is on stdout.
    click.echo(f"Exported namespace {summary.namespace!r} to {where}: {files}, {versions}.", err=file == "-")


@contextlib.contextmanager
def _target(file: str) -> Iterator[str]:
    """The path to export to: ``file``, or for ``-`` a private temporary file copied to stdout once complete (a
    zip's directory comes last, so a reader of a half-written stream would get nothing usable anyway)."""
    if file != "-":
        yield file
        return
    if sys.stdout is None or _output.STDOUT_CLOSED:  # started with standard output closed (`>&-`)
        raise click.ClickException("standard output is closed: there is nowhere to write the archive")
    with tempfile.TemporaryDirectory(prefix="memdir-export-") as folder:  # 0700, like every mkdtemp
        path = os.path.join(folder, "archive.zip")
        yield path
        try:
            with open(path, "rb") as archive:
                shutil.copyfileobj(archive, sys.stdout.buffer)
            sys.stdout.buffer.flush()  # all of it taken (or the reader gone) before the summary says so
        except BrokenPipeError:
            raise  # the reader went away: `main` ends quietly
        except OSError as exc:  # a full device (> /dev/full), an I/O error
            reason = exc.strerror or type(exc).__name__
            raise click.ClickException(f"could not write the archive to standard output: {reason}") from None


@cli.command("import")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@pass_context
@fail_cleanly
def import_(state: Context, file: str) -> None:
    """Load an archive made by `memdir export` into an empty namespace.

    FILE - reads the archive from standard input. The whole archive is checked before anything is written. Run by
    the store's owner, the import keeps each version's actor, session and time; every version's content is screened
    by the write policy as any write is. The store is created if it does not exist.

    Example:

        memdir --store sqlite:///tmp/copy.db import backup.zip
    """
    if file != "-" and not os.path.lexists(file):  # before the store is opened: a typo must not create one
        raise click.ClickException(f"no archive at {file}")
    with _source(file) as path:
        if not state.require_store(allow_missing=True):
            check_archive(path)  # a store is created for an archive that can be imported, not for any file
        store = state.store(create=True)
        if isinstance(store, GatedStore):  # the owner's own store: an admin import, keeping recorded provenance
            store = store.with_caller(admin=True)
        rehearsal = store.rehearsal() if isinstance(store, GatedStore) else None
        try:
            with _progress("Importing") as progress:
                summary = import_namespace(store, path, progress=progress, rehearsal=rehearsal)
        except KeyboardInterrupt:
            _interrupted(store)
    files, versions = plural(summary.files, "file"), plural(summary.versions, "version")
    click.echo(f"Imported {file} into namespace {store.namespace!r}: {files}, {versions}.")


def _interrupted(store: Store) -> NoReturn:
    """Ctrl-C during an import: each version went in whole, so the namespace holds the archive's first versions,
    and is no longer empty; say so (click's "Aborted!" said nothing of it)."""
    held = sum(1 for _ in store.log(rescan=False))
    where = f"namespace {store.namespace!r}"
    if held:
        where += f" holds the archive's first {plural(held, 'version')} and is not empty now: import into a new one"
        where += " (--namespace NAME), or into a new store"
    else:
        where += " is still empty: run the same command again"
    click.echo(f"Interrupted: {where}.", err=True)
    sys.exit(130)  # 128 + SIGINT, as shells report it


@contextlib.contextmanager
def _source(file: str) -> Iterator[str]:
    """The archive to import: ``file``, or for ``-`` standard input saved to a private temporary file (a zip is
    read from its end, which a pipe cannot do)."""
    if file != "-":
        yield file
        return
    if sys.stdin is None:  # started with standard input closed (`<&-`)
        raise click.ClickException("standard input is closed: there is no archive to read from it")
    with tempfile.TemporaryDirectory(prefix="memdir-import-") as folder:
        path = os.path.join(folder, "archive.zip")
        with open(path, "wb") as archive:
            shutil.copyfileobj(sys.stdin.buffer, archive)
        yield path


@cli.command()
@click.option("--repair", is_flag=True, help="Fix what can be fixed (damaged files are moved aside, never deleted).")
@pass_context
@fail_cleanly
def doctor(state: Context, repair: bool) -> None:
    """Check the store's files and, with --repair, fix them.

    Works on every namespace, even when the store no longer opens. Exits 1 when problems remain.

    Example:

        memdir --store ~/memory doctor --repair
    """
    state.require_store()
    report = diagnose(state.url, repair=repair)
    _print_report(report, repair)
    if not report.ok:
        sys.exit(1)


@cli.command()
@click.option("--list", "list_only", is_flag=True, help="Only show what is applied and pending; change nothing.")
@pass_context
@fail_cleanly
def migrate(state: Context, list_only: bool) -> None:
    """Create or upgrade the store's database tables (named migrations).

    Stores upgrade their tables when opened; this does it up front (say, before servers of a new release start
    on a shared PostgreSQL database) and lists each migration: applied, pending, or applied now.

    Example:

        memdir migrate --store postgresql://memdir@db.internal/memdir --list
    """
    sets = migrate_schema(state.url, apply=not list_only)
    for found in sets:
        for name in found.applied:
            click.echo(f"{found.name}\t{name}\t{'applied now' if name in found.ran else 'applied'}")
        for name in found.pending:
            click.echo(f"{found.name}\t{name}\tpending")
    ran, pending = sum(len(s.ran) for s in sets), sum(len(s.pending) for s in sets)
    if list_only:
        click.echo(f"{plural(pending, 'migration')} pending.", err=True)
    else:
        click.echo(f"{plural(ran, 'migration')} applied now; the schema is up to date.", err=True)


@contextlib.contextmanager
def _progress(label: str) -> Iterator[Callable[[int, int], None] | None]:
    """A progress callback that draws a bar on stderr for big archives, on a terminal only."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import Progress, TaskID

    with Progress(console=Console(stderr=True), transient=True) as bar:
        task: list[TaskID] = []

        def update(done: int, total: int) -> None:
            if total < _BIG:
                return
            if not task:
                task.append(bar.add_task(label, total=total))
            bar.update(task[0], completed=done)

        yield update


def _print_report(report: Report, repair: bool) -> None:
    click.echo(f"Checking {redact_url(report.url)} ({report.kind} store)")  # a PostgreSQL URL may hold a password
    for finding in report.findings:
        severity = click.style(f"{finding.severity:<8}", fg=_SEVERITY_COLOURS[finding.severity])
        click.echo(f"{severity}{finding.where}: {finding.problem}")
        if finding.repaired:
            click.echo(" " * 8 + click.style(f"repaired: {finding.repaired}", fg="green"))
    problems = report.problems
    if not problems:
        click.echo("No problems found.")
        return
    left = sum(1 for f in problems if f.remains)
    hint = " Run `memdir doctor --repair` to fix what can be fixed." if left and not repair else ""
    click.echo(f"{plural(len(problems), 'problem')} found, {len(problems) - left} repaired, {left} remaining.{hint}")
