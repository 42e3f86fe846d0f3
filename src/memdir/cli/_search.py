"""Searching memories: search, reindex."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from ..paths import parse
from ..search import hit_json, searcher
from ._group import Context, cli, fail_cleanly, pass_context
from ._output import echo_json, plural, shown, stdout_is_tty

if TYPE_CHECKING:
    from ..search import Found, SearchHit


@cli.command()
@click.argument("query")
@click.option("--limit", "-l", type=click.IntRange(1, 100), default=10, show_default=True, help="Passages to show.")
@click.option("--prefix", metavar="PATH", help="Only this file or the files below this directory.")
@click.option("--mode", type=click.Choice(["auto", "fts", "hybrid"]), default="auto", show_default=True,
              help="fts: full-text (BM25); hybrid: BM25 + embeddings; auto: hybrid when installed.")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
@pass_context
@fail_cleanly
def search(state: Context, query: str, limit: int, prefix: str | None, mode: str, as_json: bool) -> None:
    """Find the passages of memory that best match QUERY, best first.

    On a terminal, a table: each hit's rank, path, lines, relevance (1.00 for the best hit) and matched lines,
    shown between the lines just before and after them (dimmed). Piped, one tab-separated line per hit (path,
    lines, relevance, matched lines with their line breaks shown as \\n). The last line (stderr when piped)
    says which search ran. Passages that neither hold a word of QUERY nor come close to it in meaning are not
    results: a query about nothing in memory finds nothing.

    Example:

        memdir search "email preferences" --prefix /memories/clients
    """
    found = searcher(state.store()).search(
        query,
        limit=limit,
        path_prefix=parse(prefix) if prefix else None,
        mode=mode,  # type: ignore[arg-type]
    )
    if as_json:
        echo_json({"query": query, "mode": found.mode, "note": found.note, "hits": [hit_json(h) for h in found.hits]})
        return
    tty = stdout_is_tty()
    if tty:
        _table(found)
        return
    for h in found.hits:  # the passage as `view` numbers it (a tab after each number), its line breaks as \n
        passage = shown(h.passage).replace("\n", "\\n")
        click.echo(f"{h.path.virtual}\t{_lines(h)}\t{h.relevance:.2f}\t{passage}")
    click.echo(f"{plural(len(found.hits), 'hit')}. {found.note}", err=True)


@cli.command()
@click.option("--embed/--no-embed", default=None, help="Also compute embeddings (default: when hybrid is the default).")
@pass_context
@fail_cleanly
def reindex(state: Context, embed: bool | None) -> None:
    """Rebuild the search index from the store's files, with a progress bar.

    Rarely needed: the index follows every change by itself. Use it after changing the
    passage size, or to pick up edits made outside memdir at once.

    Example:

        memdir --store ~/memory reindex
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, transient=False, disable=not stdout_is_tty()) as bar:
        tasks: dict[str, Any] = {}

        def progress(label: str, done: int, total: int) -> None:
            if label not in tasks:
                tasks[label] = bar.add_task(label, total=total)
            bar.update(tasks[label], completed=done, total=total)

        count = searcher(state.store()).reindex(embed=embed, progress=progress)
    click.echo(f"Indexed {plural(count, 'file')}.")


def _lines(hit: SearchHit) -> str:
    return f"{hit.first_line}-{hit.last_line}" if hit.last_line > hit.first_line else str(hit.first_line)


def _table(found: Found) -> None:
    import sys

    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    # Text(...) everywhere: memories hold brackets ("[D1:3]", "[semantic]") that rich would read as markup.
    table = Table("#", "Path", "Lines", "Relevance", "Passage", box=None, header_style="bold", show_lines=True)
    for hit in found.hits:
        passage = Text()
        for part, style in ((hit.before, "dim"), (hit.passage, ""), (hit.after, "dim")):
            if part:
                passage.append(("\n" if passage else "") + shown(part.expandtabs(2)), style=style)
        table.add_row(str(hit.rank), Text(hit.path.virtual), _lines(hit), f"{hit.relevance:.2f}", passage)
    console = Console(file=sys.stdout)
    console.print(table)
    console.print(Text(f"{plural(len(found.hits), 'hit')}. {found.note}", style="dim"))
