"""``memdir sync``: mirror a memdir store and a memory store of a Memory Stores API (`memdir.memstores.sync`)."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..config import data_dir
from ._group import Context, cli, fail_cleanly
from ._output import plural

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from ..memstores import SyncReport

_DONE = {"create": "created", "change": "changed", "delete": "deleted", "link": "matched"}
_TODO = {"create": "would create", "change": "would change", "delete": "would delete", "link": "would match"}


@cli.command("sync")
@click.argument("src", metavar="SRC")
@click.argument("dst", metavar="DST")
@click.option("--dry-run", is_flag=True, help="Say what would change; change nothing.")
@click.option("--both", is_flag=True, help="Also copy what changed only in DST back to SRC (two-way).")
@click.option("--verbose", "-v", is_flag=True, help="List every change made, not only what was left.")
@click.option(
    "--state",
    "state_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Where the state of past syncs is kept [default: sync.db in memdir's data directory].",
)
@click.option("--namespace", "-n", metavar="NAME", help="The namespace of a memdir store side [default: the group's].")
@click.pass_obj
@fail_cleanly
def sync_(
    state: Context,
    src: str,
    dst: str,
    dry_run: bool,
    both: bool,
    verbose: bool,
    state_file: Path | None,
    namespace: str | None,
) -> None:
    """Mirror a memdir store and a memory store, either way; resumable.

    Each of SRC and DST is a memory store, `memstore:ID` (Anthropic's API with ANTHROPIC_API_KEY, or the one
    ANTHROPIC_BASE_URL names) or `memstore+http(s)://[TOKEN@]HOST:PORT/ID` (a memdir server; the token in the URL
    or MEMDIR_TOKEN), or a memdir store URL (any --store URL; --namespace picks the namespace). Memories new or
    changed in SRC since the last sync (by SHA-256) are created or changed in DST, deleted ones deleted, renamed
    ones renamed. A memory changed on both sides since the last sync is reported and left alone, never
    overwritten; exit status 1 while any such conflict remains. Interrupted, the same command resumes.

    Example:

        memdir sync ~/memory memstore:memstore_01Hx... --dry-run
    """
    from ..memstores import open_side, sync

    chosen = namespace or state.namespace
    source = open_side(src, namespace=chosen)
    with contextlib.closing(source), contextlib.closing(open_side(dst, namespace=chosen)) as target:
        location = state_file or data_dir() / "sync.db"
        with _progress() as progress:
            try:
                report = sync(source, target, state_path=location, both=both, dry_run=dry_run, progress=progress)
            except KeyboardInterrupt:
                click.echo("Interrupted; run the same command again to resume.", err=True)
                sys.exit(130)  # 128 + SIGINT, as shells report it
    _print(report, verbose or dry_run)
    if report.conflicts:
        sys.exit(1)


def _print(report: SyncReport, everything: bool) -> None:
    words = _TODO if report.dry_run else _DONE
    for change in report.changes:
        if change.kind in words:
            if everything:
                click.echo(f"{words[change.kind]}\t/{change.key}\tin {change.side}")
            continue
        click.echo(f"{change.kind}\t/{change.key}\t{change.detail}")
    click.echo(_summary(report), err=True)


def _summary(report: SyncReport) -> str:
    words = _TODO if report.dry_run else _DONE
    counts = [f"{len(report.of(kind))} {word}" for kind, word in words.items() if report.of(kind)]  # type: ignore[arg-type]
    left = [plural(len(report.of(kind)), kind) for kind in ("conflict", "kept", "skipped") if report.of(kind)]
    done = ", ".join(counts) or ("nothing would change" if report.dry_run else "nothing to change")
    tail = f"; left for a person: {', '.join(left)}" if left else ""
    return f"{'Dry run: ' if report.dry_run else 'Synced: '}{done}{tail}."


@contextlib.contextmanager
def _progress() -> Iterator[Callable[[int, int], None] | None]:
    """A progress bar on stderr when it is a terminal; nothing when it is piped."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn("syncing"), BarColumn(), MofNCompleteColumn(), TextColumn("changes"), TimeRemainingColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("sync", total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update
