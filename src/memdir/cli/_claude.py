"""Claude Code's own memory: memdir claude-code where|snapshot|status|install|uninstall|restore|watch.

Each command calls one function of `memdir.claudecode`. ``--store`` here takes a ``claude-code:`` URL and
defaults to ``claude-code:`` (the current project's auto memory), whatever ``MEMDIR_STORE`` says.
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import TYPE_CHECKING

import click

from ..errors import ConfigError
from ..gate import GatedStore
from ._group import Context, cli, fail_cleanly
from ._output import echo_json, iso, plural

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..claudecode import Snapshot
    from ..claudecode._restore import Change
    from ..store import Store

_CLAUDE_CODE = "claude-code:"


def _claude_store(fn: Callable[..., None]) -> Callable[..., None]:
    return click.option(
        "--store",
        "store_url",
        default=_CLAUDE_CODE,
        show_default=True,
        metavar="URL",
        help="A claude-code: URL: claude-code:/path/to/project, claude-code:agent/NAME, claude-code:dir:/path.",
    )(fn)


def _checked(url: str) -> str:
    if not url.lower().startswith(_CLAUDE_CODE):
        raise ConfigError(f"these commands work on Claude Code's directories: give a claude-code: URL, not {url!r}")
    return url


@cli.group("claude-code")
def claude_code() -> None:
    """Claude Code's own memory (auto memory, sub-agents'), versioned in place.

    `memdir --store claude-code: ...` works on the current project's auto memory
    (`claude-code:/path/to/project` another's, `claude-code:agent/NAME` a sub-agent's) with every other command:
    history, diff, show, restore, search, the memory tool. These commands look after all of them.

    Example:

        memdir claude-code install && memdir claude-code status
    """


@claude_code.command()
@_claude_store
@fail_cleanly
def where(store_url: str) -> None:
    """Print the memory directory a claude-code: URL names, and why (on stderr).

    Example:

        memdir claude-code where --store claude-code:agent/reviewer
    """
    from ..claudecode import locate_url

    location = locate_url(_checked(store_url))
    click.echo(location.directory)
    click.echo(f"({location.label}: {location.disabled or location.reason})", err=True)


@claude_code.command()
@fail_cleanly
def snapshot() -> None:
    """Record every change in Claude Code's memory directories since the last look.

    This is what the hooks `memdir claude-code install` adds run at each session's start, compaction and end
    (it reads the hook's JSON on stdin when there is one). Prints nothing on stdout (a SessionStart hook's
    output would reach Claude's context); a summary on stderr when something was recorded.

    Example:

        memdir claude-code snapshot
    """
    from ..claudecode import _quick, snapshot

    found = snapshot(payload=_quick.hook_payload())
    if found.versions or any(r.error for r in found.recorded):  # a directory looked at may hold no change
        click.echo(found.summary(), err=True)


@claude_code.command()
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@fail_cleanly
def status(as_json: bool) -> None:
    """Every project's and agent's memory, and what in it needs a look.

    Files, bytes and last change of each directory.

    For each MEMORY.md, whether Claude Code loads all of it (it loads the first 200 lines or 25 KB); secrets
    found in any memory file (file, line and kind, never the secret); notes whose frontmatter is malformed.
    Reads only: nothing is written.

    Example:

        memdir claude-code status
    """
    from ..claudecode import _status

    report = _status.status()
    if as_json:
        echo_json(report.to_json())
        return
    click.echo(_status.render(report))


@claude_code.command()
@fail_cleanly
def install() -> None:
    """Add hooks that snapshot Claude Code's memory at each session's start and end.

    The hooks run `memdir claude-code snapshot` on SessionStart, PreCompact and SessionEnd.

    Merged into your user settings (~/.claude/settings.json, or $CLAUDE_CONFIG_DIR/settings.json): everything
    else in the file stays byte for byte, a backup of it is written first, and installing twice changes
    nothing. `memdir claude-code uninstall` takes them out again. Also prints how to add memdir's MCP server.

    Example:

        memdir claude-code install
    """
    from ..claudecode import Claude, install_hooks
    from ..claudecode._hooks import hook_command

    executable = _memdir_executable()
    change = install_hooks(Claude.here(), hook_command(executable))
    if change.events:
        click.echo(f"Added the snapshot hook ({', '.join(change.events)}) to {change.settings}.")
        if change.backup is not None:
            click.echo(f"The file as it was: {change.backup}")
    else:
        click.echo(f"The snapshot hooks are already in {change.settings}.")
    click.echo("memdir's MCP server over each project's auto memory (history, search, the memory tool):")
    click.echo(f"  claude mcp add --scope user memdir -- {_quoted(executable)} mcp --store 'claude-code:?create=1'")


@claude_code.command()
@fail_cleanly
def uninstall() -> None:
    """Take out the hooks `memdir claude-code install` added (the history stays).

    Example:

        memdir claude-code uninstall
    """
    from ..claudecode import Claude, uninstall_hooks

    change = uninstall_hooks(Claude.here())
    if change.restored:
        click.echo(f"Put back {change.settings} as it was before the hooks were installed.")
    elif change.events:
        click.echo(f"Removed the snapshot hook ({', '.join(change.events)}) from {change.settings}.")
    else:
        click.echo(f"No memdir hooks in {change.settings}.")


@claude_code.command()
@click.option("--all", "everything", is_flag=True, help="Every file of the directory (required).")
@click.option("--at", "at", required=True, metavar="TIME", help="2026-11-29T14:38:01Z, 2026-11-29, or 2h / 3d ago.")
@click.option("--keep-newer", is_flag=True, help="Keep the files created after TIME (default: delete them).")
@click.option("--dry-run", is_flag=True, help="Print what would change; change nothing.")
@_claude_store
@fail_cleanly
def restore(store_url: str, everything: bool, at: str, keep_newer: bool, dry_run: bool) -> None:
    """Bring a memory directory back to how it was at TIME, as new versions.

    Files that changed since are written back, files that did not exist then are deleted; nothing of the
    history goes, so this too can be undone. One file: `memdir --store claude-code: restore PATH VERSION`.

    Example:

        memdir claude-code restore --all --at "2026-11-29 09:00"
    """
    from ..claudecode._restore import parse_time, plan_restore, restore_all

    if not everything:
        raise click.ClickException("say --all: this restores every file of the directory")
    moment = parse_time(at)
    state = Context(_checked(store_url))
    try:
        store = state.store()
        # Tried first on an empty store under the same rules: all of it is restored, or nothing.
        rehearsal = store.rehearsal() if isinstance(store, GatedStore) else None
        if dry_run:
            _print_plan(store, plan_restore(store, moment, keep_newer=keep_newer), rehearsal)
            return
        done = restore_all(store, moment, keep_newer=keep_newer, rehearsal=rehearsal)
    finally:
        state.close()
    click.echo(f"Restored to {iso(moment)}: {plural(len(done), 'new version')}.")


def _print_plan(store: Store, plan: list[Change], rehearsal: Store | None) -> None:
    """Each change, tab-separated; a write the rules would refuse as ``refused`` with why (exit status 1)."""
    from ..claudecode._restore import rehearse

    refused = {r.change: str(r) for r in ([] if rehearsal is None else rehearse(store, plan, rehearsal))}
    for change in plan:
        reason = refused.get(change)
        click.echo(f"{change.action}\t{change.path.virtual}" + ("" if reason is None else f"\trefused: {reason}"))
    if refused:
        raise click.ClickException(f"{plural(len(refused), 'file')} would be refused: the restore would change nothing")


@claude_code.command()
@fail_cleanly
def watch() -> None:
    """Record changes to Claude Code's memory as they happen (until Ctrl-C).

    The hooks record at each session's start, compaction and end; this records every change at once.

    Example:

        memdir claude-code watch
    """
    from ..claudecode import watch as run

    click.echo("Watching Claude Code's memory directories (Ctrl-C stops).", err=True)
    try:
        run(report=_print_recorded)
    except KeyboardInterrupt:
        click.echo("Stopped.", err=True)


def _print_recorded(found: Snapshot) -> None:
    for recorded in found.recorded:
        for version in recorded.versions:
            click.echo(f"{iso(version.timestamp)}\t{recorded.location.label}\t{version.op}\t{version.path.virtual}")
        if recorded.error:
            click.echo(f"{recorded.location.label}: {recorded.error}", err=True)


def _memdir_executable() -> str:
    """The memdir a hook should run: this one, by absolute path (a hook's PATH may lack a virtualenv's bin)."""
    argv0 = sys.argv[0]
    if os.path.basename(argv0) == "memdir" and os.path.isfile(argv0):
        return os.path.abspath(argv0)
    return shutil.which("memdir") or os.path.join(os.path.dirname(sys.executable), "memdir")


def _quoted(text: str) -> str:
    import shlex

    return shlex.quote(text)
