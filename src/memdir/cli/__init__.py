"""The ``memdir`` command: a thin shell where each command calls one library function.

Errors reach the user in one place (`fail_cleanly`): a `MemdirError` becomes one line on stderr and exit
status 1; anything unexpected is logged with its traceback to the memdir log and reported in one line too. A
closed stdout (a reader such as ``head`` that has read enough) is no error: the command ends quietly with exit
status 1 (`main`).

The store a command gets (`Context.store`) is behind the gate (`memdir.gate`) as the local user (actor ``user``,
channel ``cli``), so the write policy, the limits and the audit log apply to every command; each command is one
entry of the audit log, named after it. A memdir server's store (``http://...``) is a thin client: the server's
gate applies.

The commands live by theme: the memory tool and the store's location here, reading and restoring files in
`_files`, archives and the doctor in `_admin`; the output helpers they share in `_output`.
"""

from __future__ import annotations

import json
import os
import re
import sys
from typing import Any

import click

from .._format import is_text
from ..errors import MemdirError
from ..store import check_url, store_exists
from ..tool import MemoryTool
from . import _output
from ._group import Context, _shown, cli, fail_cleanly, pass_context
from ._output import shown, stdout_is_tty

__all__ = ["Context", "cli", "fail_cleanly", "main", "pass_context"]


# As a memdir server takes a label (`X-Memdir-Actor`): the history and the audit log show it on one line.
_LABEL = re.compile(r"[^\x00-\x1f\x7f-\x9f]{1,256}")


def _label(_ctx: click.Context, param: click.Parameter, value: str) -> str:
    if not _LABEL.fullmatch(value) or not is_text(value):
        name = f"--{param.name}"
        raise click.ClickException(f"{name} must be 1 to 256 characters of text, with no control characters")
    return value


@cli.command()
@click.argument("command_json", metavar="JSON")
@click.option(
    "--actor", default="user", show_default=True, callback=_label, help="Actor recorded on the versions this writes."
)
@pass_context
@fail_cleanly
def tool(state: Context, command_json: str, actor: str) -> None:
    """Run one memory-tool command and print what the model would read.

    JSON is the command, or - to read it from standard input. Exits 1 when the result is an error.

    Example:

        memdir tool '{"command": "create", "path": "/memories/a.md", "file_text": "hi"}'
        echo '{"command": "view", "path": "/memories"}' | memdir tool -
    """
    text = sys.stdin.read() if command_json == "-" else command_json
    try:
        command: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise click.ClickException(f"the command is not valid JSON: {exc.msg} at position {exc.pos}") from exc
    except RecursionError as exc:
        raise click.ClickException("the command is not valid JSON: it is nested too deeply") from exc
    writes = not (isinstance(command, dict) and command.get("command") == "view")
    result = MemoryTool(state.store(create=writes), actor=actor).execute(command)
    click.echo(shown(result.text) if stdout_is_tty() else result.text)  # a pipe gets what the model reads
    if result.is_error:
        sys.exit(1)


@cli.command()
@pass_context
@fail_cleanly
def mcp(state: Context) -> None:
    """Serve the store to MCP clients over stdio (Claude Code, Claude Desktop, ...).

    Example:

        claude mcp add memdir -- memdir mcp --store ~/memory
    """
    from ..integrations.mcp import run_stdio

    run_stdio(state.store(create=True), name=_shown(state.url))


@cli.command()
@pass_context
@fail_cleanly
def where(state: Context) -> None:
    """Print the store memdir would use here, and why (on stderr).

    Without --store or MEMDIR_STORE each git repository has its own store (worktrees and subdirectories
    share it); [memory] location in the settings moves it.

    Example:

        memdir where
    """
    from ..project import resolve_store

    if state.store_url is not None:
        from_env = os.environ.get("MEMDIR_STORE") == state.store_url
        url, reason = state.store_url, "MEMDIR_STORE is set" if from_env else "--store was given"
    else:
        choice = resolve_store()
        url, reason = choice.url, choice.reason
    check_url(url)  # a URL `memdir ls` would refuse is refused here too, not printed as if it could be used
    click.echo(_shown(url))  # ~ expanded, as it is opened; a PostgreSQL URL's password never printed
    try:
        exists = "" if store_exists(url) else "; it does not exist yet: a writing command creates it"
    except MemdirError:  # a database that cannot be reached now: `where` still says which one it is
        exists = ""
    click.echo(f"({reason}{exists})", err=True)


def main() -> None:
    """Run the command. A reader that closed our stdout (``memdir history | head -1``) ends it quietly, exit status
    1: click does so for a write the command makes, this for output still buffered when the command is done."""
    if sys.stdout is None:  # started with stdout closed (`>&-`): what a command prints goes nowhere, as a shell's
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - for the process's life
        _output.STDOUT_CLOSED = True  # `memdir export -` refuses: its archive would be lost
    try:
        try:
            cli(prog_name="memdir")  # ends in SystemExit
        finally:
            sys.stdout.flush()  # here, not at the interpreter's exit, where it would print "Exception ignored"
    except BrokenPipeError:
        # The Python docs' note on SIGPIPE: stdout goes to devnull, so the interpreter's own flush of what is still
        # buffered has nowhere left to fail.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)


# The commands register themselves on `cli` (from `_group`) when imported.
from . import _admin, _agent, _claude, _config, _edit, _files, _safety, _search, _serve, _sync, _transfer  # noqa: E402, F401
