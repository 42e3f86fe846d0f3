"""The ``memdir chat`` session: read a line, run it (or a slash command), show the answer as it streams.

On a terminal, input comes from prompt_toolkit (line editing, up/down history kept in the data directory) and
the answer is rendered as Markdown while it streams (rich). Piped, each line of stdin is one prompt and the
answer is written as plain text, so the whole session can be scripted and tested. Ctrl-C cancels the turn in
progress (the transcript stays valid); at the prompt it clears the line. Ctrl-D or /exit ends the session.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from ..config import data_dir
from ..errors import MemdirError
from ._events import drive, print_progress
from ._output import plural, shown

if TYPE_CHECKING:
    from collections.abc import Callable, Generator, Iterator
    from pathlib import Path

    from prompt_toolkit.history import FileHistory

    from ..agent import Agent, Event

__all__ = ["Chat"]

HELP = """\
/memory            what memory is loaded and where it lives
/context           token use by category (system, tools, memory, messages)
/compact [focus]   summarise the older conversation now (optionally focused)
/clear             start a new conversation (a new session)
/resume [SESSION]  list recent sessions, or continue one
/exit              end the chat (also Ctrl-D)"""


class Chat:
    def __init__(self, agent: Agent, *, interactive: bool) -> None:
        self.agent = agent
        self.interactive = interactive
        self._read = _terminal_reader(agent.kept_on_disk()) if interactive else _pipe_reader()
        self.commands: dict[str, Callable[[str], bool]] = {
            "/memory": self.memory,
            "/context": self.context,
            "/compact": self.compact,
            "/clear": self.clear,
            "/resume": self.resume,
            "/help": self.help,
            "/exit": lambda _arg: False,
            "/quit": lambda _arg: False,
        }

    def greet(self) -> None:
        """Once, before the first prompt: where memory lives, which model answers, where the commands are."""
        agent = self.agent
        where = agent.store_key  # the URL spelled out (~ expanded, no password)
        resumed = f", continuing session {agent.session_id}" if agent.messages else ""
        _err(f"memdir chat: store {where} (namespace {agent.store.namespace}), model {agent.model}{resumed}.")
        _err("/help lists the commands; /exit or Ctrl-D ends the chat.")

    def loop(self) -> None:
        self.greet()
        while True:
            line = self._read()
            if line is None:
                return
            line = line.strip()
            if not line:
                continue
            if line.startswith("/"):
                name, _, arg = line.partition(" ")
                command = self.commands.get(name)
                if command is None:
                    _err(f"Unknown command {name}; /help lists them.")
                elif not command(arg.strip()):
                    return
                continue
            self.turn(line)

    def turn(self, prompt: str) -> None:
        events: Generator[Event, None, None] = self.agent.stream(prompt)
        try:
            self._show(events)
        except KeyboardInterrupt:
            events.close()
            self.agent.repair()
            _err("[cancelled]")
        except MemdirError as exc:  # one failed turn (an API error, max turns) does not end the chat
            _err(f"Error: {str(exc).removeprefix('Error: ')}")

    def _show(self, events: Iterator[Event]) -> None:
        if not self.interactive:
            result = drive(events, on_text=_write)
            if not result.answer.endswith("\n"):
                _write("\n")
            return
        from rich.console import Console
        from rich.live import Live
        from rich.markdown import Markdown

        text: list[str] = []
        with Live(Markdown(""), console=Console(), refresh_per_second=12, vertical_overflow="visible") as live:

            def show(delta: str) -> None:
                text.append(delta)
                live.update(Markdown(shown("".join(text))))

            drive(events, on_text=show)

    # -- slash commands (True: go on) -------------------------------------------------------------------------

    def help(self, _arg: str) -> bool:
        click.echo(HELP)
        return True

    def memory(self, _arg: str) -> bool:
        agent = self.agent
        usage = agent.store.usage()
        click.echo(f"Store: {agent.store_key} (namespace {agent.store.namespace})")
        click.echo(f"Memory: {plural(usage.files, 'file')}, {plural(usage.bytes, 'byte')} under /memories")
        loaded = agent.backfill.items if agent.backfill else ()
        click.echo("Loaded at start: " + (", ".join(f"{n} ({t:,} tokens)" for n, t in loaded) or "nothing"))
        click.echo(f"Session: {agent.session_id}" + (f" ({agent.transcript_path})" if agent.transcript_path else ""))
        return True

    def context(self, _arg: str) -> bool:
        report = self.agent.context_report()
        rows = [("system", report.system), ("tools", report.tools), ("memory", report.memory),
                ("messages", report.messages)]  # fmt: skip
        for name, tokens in rows:
            click.echo(f"{name:<10}{tokens:>10,} tokens")
        click.echo(f"{'total':<10}{report.total:>10,} tokens (estimate)")
        if report.exact is not None:
            click.echo(f"{'counted':<10}{report.exact:>10,} tokens (the API's count)")
        share = 100 * (report.exact or report.total) / max(report.limit, 1)
        click.echo(f"Compaction starts at {report.limit:,} tokens ({share:.0f}% used).")
        return True

    def compact(self, focus: str) -> bool:
        try:
            for event in self.agent.compact(focus or None):
                print_progress(event)
        except MemdirError as exc:
            _err(f"Error: {exc}")
        return True

    def clear(self, _arg: str) -> bool:
        self.agent.clear()
        click.echo(f"Started a new conversation (session {self.agent.session_id}).")
        return True

    def resume(self, ref: str) -> bool:
        from ..agent.sessions import list_sessions

        if not ref:
            agent = self.agent
            found = list_sessions(agent.sessions_dir, store=agent.store_key, namespace=agent.store.namespace)[:10]
            for info in found:
                prompt = " ".join(info.first_prompt.split())[:60]
                click.echo(f"{info.id}\t{info.started}\t{plural(info.turns, 'turn')}\t{prompt}")
            click.echo("Continue one with /resume SESSION." if found else "No earlier sessions on this store yet.")
            return True
        try:
            self.agent.resume(ref)
        except MemdirError as exc:
            _err(f"Error: {exc}")
            return True
        click.echo(f"Resumed session {self.agent.session_id} ({plural(len(self.agent.messages), 'message')}).")
        return True


def _write(text: str) -> None:
    sys.stdout.write(shown(text))
    sys.stdout.flush()


def _err(line: str) -> None:
    click.echo(line, err=True)


def _pipe_reader() -> Callable[[], str | None]:
    def read() -> str | None:
        line = sys.stdin.readline()
        return line if line else None

    return read


def _terminal_reader(kept: Callable[[str], str] | None) -> Callable[[], str | None]:
    from prompt_toolkit import PromptSession

    path = data_dir() / "chat_history"
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.touch(mode=0o600, exist_ok=True)  # what was typed may be private: owner only
    session: PromptSession[str] = PromptSession(history=_history(path, kept))

    def read() -> str | None:
        while True:
            try:
                return session.prompt("› ")
            except KeyboardInterrupt:  # at the prompt, Ctrl-C clears the line; Ctrl-D ends the chat
                continue
            except EOFError:
                return None

    return read


def _history(path: Path, kept: Callable[[str], str] | None) -> FileHistory:
    """Up/down history in ``path``, each line as ``kept`` keeps it on disk (a key typed into a prompt is recalled
    in this chat, and redacted in the file)."""
    from prompt_toolkit.history import FileHistory

    class Redacted(FileHistory):
        def store_string(self, string: str) -> None:
            super().store_string(string if kept is None else kept(string))

    return Redacted(str(path))
