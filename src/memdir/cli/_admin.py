"""Whole-store commands: export and import (`memdir.archive`), doctor (`memdir.doctor`)."""

from __future__ import annotations

import contextlib
import sys
from typing import TYPE_CHECKING

import click

from ..archive import export_namespace, import_namespace
from ..doctor import diagnose
from ..policy.audit import record_cli
from . import Context, cli, fail_cleanly, pass_context
from ._output import plural

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from ..doctor import Report

_BIG = 500  # versions: an archive this size gets a progress bar on a terminal
_SEVERITY_COLOURS = {"error": "red", "warning": "yellow", "info": "blue"}


@cli.command("export")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--overwrite", is_flag=True, help="Replace FILE if it exists.")
@pass_context
@fail_cleanly
def export_(state: Context, file: str, overwrite: bool) -> None:
    """Write the namespace and its whole history to a zip file.

    The file is created with mode 0600: it holds every memory ever written.

    Example:

        memdir export backup.zip
    """
    with _progress("Exporting") as progress:
        summary = export_namespace(state.store(), file, overwrite=overwrite, progress=progress)
    record_cli(state.store(), "export", "/memories")
    files, versions = plural(summary.files, "file"), plural(summary.versions, "version")
    click.echo(f"Exported namespace {summary.namespace!r} to {file}: {files}, {versions}.")


@cli.command("import")
@click.argument("file", type=click.Path(dir_okay=False))
@pass_context
@fail_cleanly
def import_(state: Context, file: str) -> None:
    """Load an archive made by `memdir export` into an empty namespace.

    The whole archive is checked before anything is written.

    Example:

        memdir --store sqlite:///tmp/copy.db import backup.zip
    """
    store = state.store()
    with _progress("Importing") as progress:
        summary = import_namespace(store, file, progress=progress)
    record_cli(store, "import", "/memories")
    files, versions = plural(summary.files, "file"), plural(summary.versions, "version")
    click.echo(f"Imported {file} into namespace {store.namespace!r}: {files}, {versions}.")


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
    report = diagnose(state.url, repair=repair)
    _print_report(report, repair)
    if not report.ok:
        sys.exit(1)


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
    click.echo(f"Checking {report.url} ({report.kind} store)")
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
