"""Output shared by the commands: tables on a terminal, tab-separated lines for scripts, JSON, bytes."""

from __future__ import annotations

import datetime as dt
import json
import sys
from typing import TYPE_CHECKING

import click

from .._format import human_size
from .._format import shown as shown  # re-exported: the commands import it from here

if TYPE_CHECKING:
    from collections.abc import Sequence


STDOUT_CLOSED = False  # the process started with standard output closed (set by `memdir.cli.main`)


def stdout_is_tty() -> bool:
    return sys.stdout.isatty()


def iso(timestamp: float | None) -> str:
    """A time as ISO 8601 in UTC, to the second."""
    if timestamp is None:
        return "-"
    return dt.datetime.fromtimestamp(timestamp, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def size(count: int, tty: bool) -> str:
    """Human-readable for a person, exact bytes for a script."""
    return human_size(count) if tty else str(count)


def plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def version_number(text: str) -> int:
    """A VERSION argument. Checked here rather than with click's int type, whose error is three lines."""
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise click.ClickException(f"invalid version {text!r}: versions are numbers from 1 (see `memdir history`)")
    return int(text)


# The longest DURATION: a time that far from now is still a date (year 1 to 9999) to compute, store and print.
MAX_DURATION_DAYS = 36_500


def duration(text: str, option: str) -> float:
    """A DURATION option (``30d``, ``12h``, ``90m``, ``2w``, ``45s``): seconds, at most `MAX_DURATION_DAYS`."""
    from ..errors import ConfigError
    from ..policy.config import parse_duration

    try:
        seconds = parse_duration(text, option)
    except ConfigError:
        raise click.ClickException(f"{option} must be a duration such as 30d, 12h or 90m, got {text!r}") from None
    if seconds > MAX_DURATION_DAYS * 86_400:
        raise click.ClickException(f"{option} is too long: at most {MAX_DURATION_DAYS:,}d (100 years), got {text!r}")
    return seconds


def echo_json(data: object) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def write_bytes(data: bytes) -> None:
    """A file's content: byte for byte into a pipe or a file; on a terminal, as text with what the terminal would
    act on escaped (`shown`)."""
    if stdout_is_tty():
        click.echo(shown(data.decode("utf-8", "replace")), nl=False)
        return
    click.echo(data, nl=False)  # bytes go to the binary stream untouched


def print_rows(headers: Sequence[str], rows: Sequence[Sequence[str]], tty: bool) -> None:
    """A table on a terminal; without one, tab-separated lines and no header, ready for ``cut`` or ``awk``."""
    cells = [[shown(cell, cell=True) for cell in row] for row in rows]
    if not tty:
        for row in cells:
            click.echo("\t".join(row))
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(*headers, box=None, header_style="bold")
    for row in cells:
        table.add_row(*(Text(cell) for cell in row))  # Text: a "[...]" in a label is not rich markup
    console = Console(file=sys.stdout)
    # Never squeeze a column into "…": a hash or a time cut short is useless. A narrow terminal wraps lines.
    console.width = max(console.width, console.measure(table, options=console.options.update_width(10_000)).maximum)
    console.print(table)
