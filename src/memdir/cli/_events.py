"""What an agent's events become on the terminal: progress lines on stderr, streamed text to the caller
(``memdir run``, ``memdir init`` and ``memdir chat`` share them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from ._output import shown

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from ..agent import AgentResult, Event

__all__ = ["drive", "print_progress"]


def print_progress(event: Event) -> None:
    line = event.progress
    if line:
        click.echo(shown(line, cell=True), err=True)  # it quotes the model's tool calls


def drive(events: Iterator[Event], on_text: Callable[[str], None] | None = None) -> AgentResult:
    """Consume one turn's events: progress on stderr, streamed text to ``on_text``; the result at the end."""
    from ..agent import Finished, TextDelta

    for event in events:
        if isinstance(event, TextDelta):
            if on_text is not None:
                on_text(event.text)
        elif isinstance(event, Finished):
            return event.result
        else:
            print_progress(event)
    raise click.ClickException("the agent stopped without an answer")
