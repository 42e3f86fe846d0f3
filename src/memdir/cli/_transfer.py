"""``memdir migrate-store``: copy namespaces with their history between any two stores (`memdir.transfer`)."""

from __future__ import annotations

import contextlib
import sys
from typing import TYPE_CHECKING

import click

from .._format import human_size
from ..transfer import migrate_store
from ._group import Context, cli, fail_cleanly
from ._output import plural

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from ..transfer import TransferReport


@cli.command("migrate-store")
@click.argument("src_url", metavar="SRC_URL")
@click.argument("dst_url", metavar="DST_URL")
@click.option("--namespace", "-n", metavar="NAME", help="The namespace to copy [default: the group's --namespace].")
@click.option("--all-namespaces", is_flag=True, help="Copy every namespace of SRC_URL that has history.")
@click.option("--dry-run", is_flag=True, help="Say what would be copied; write nothing.")
@click.pass_obj
@fail_cleanly
def migrate_store_(
    state: Context, src_url: str, dst_url: str, namespace: str | None, all_namespaces: bool, dry_run: bool
) -> None:
    """Copy a namespace and its whole history to another store; resumable.

    Any backend to any other (directory, sqlite:, http(s):, postgresql:, memory:). Every version keeps its op,
    actor, session, source and time. Interrupted (Ctrl-C, a crash, a lost connection), the same command resumes
    where it stopped; after a complete copy it copies what the source gained since. DST_URL must be empty or
    hold an earlier copy of SRC_URL: other content is refused. The copy is verified at the end.

    Example:

        memdir migrate-store sqlite:///home/me/memory.db postgresql://memdir@db.internal/memdir --all-namespaces
    """
    if namespace is not None and all_namespaces:
        raise click.UsageError("--namespace and --all-namespaces exclude each other")
    chosen = None if all_namespaces else namespace or state.namespace
    with _progress() as (progress, seen):
        try:
            reports = migrate_store(src_url, dst_url, namespace=chosen, dry_run=dry_run, progress=progress)
        except KeyboardInterrupt:
            click.echo(f"Interrupted{seen.where()}; run the same command again to resume.", err=True)
            sys.exit(130)  # 128 + SIGINT, as shells report it
    click.echo(_summary(reports, dry_run))


def _summary(reports: list[TransferReport], dry_run: bool) -> str:
    """The one line printed at the end."""
    names = ", ".join(_name(r) for r in reports)
    what = f"namespace {names}" if len(reports) == 1 else f"{len(reports)} namespaces ({names})"
    versions = sum(r.versions for r in reports)
    present = sum(r.present for r in reports)
    state = f"{plural(sum(r.files for r in reports), 'file')}, {human_size(sum(r.bytes for r in reports))}"
    if dry_run:
        return (
            f"Would copy {plural(versions - present, 'version')} of {what} "
            f"({present:,} of {versions:,} already in the destination), ending with {state}. Nothing was written."
        )
    copied = sum(r.copied for r in reports)
    seconds = sum(r.seconds for r in reports)
    resumed = f" ({copied:,} now, {present:,} by an earlier run)" if present else ""
    return f"Copied {what}: {plural(versions, 'version')}{resumed}, {state}, in {seconds:.1f} s; verified."


def _name(report: TransferReport) -> str:
    if report.destination == report.namespace:
        return repr(report.namespace)
    return f"{report.namespace!r} -> {report.destination!r}"


class _Seen:
    """Where the copy had got to, for the message after Ctrl-C."""

    def __init__(self) -> None:
        self.namespace: str | None = None
        self.done = 0
        self.total = 0

    def __call__(self, namespace: str, done: int, total: int) -> None:
        self.namespace, self.done, self.total = namespace, done, total

    def where(self) -> str:
        if self.namespace is None:
            return ""
        # "At least": the version in flight when Ctrl-C came may have been committed before its count was.
        return (
            f": at least {self.done:,} of {self.total:,} versions of namespace {self.namespace!r} are in the "
            "destination"
        )


@contextlib.contextmanager
def _progress() -> Iterator[tuple[Callable[[str, int, int], None], _Seen]]:
    """A progress callback: a bar per namespace on stderr when it is a terminal, nothing when it is piped."""
    seen = _Seen()
    if not sys.stderr.isatty():
        yield seen, seen
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeRemainingColumn

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("versions"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        tasks: dict[str, TaskID] = {}

        def update(namespace: str, done: int, total: int) -> None:
            seen(namespace, done, total)
            if namespace not in tasks:
                tasks[namespace] = bar.add_task(namespace, total=total)
            bar.update(tasks[namespace], completed=done)

        yield update, seen
