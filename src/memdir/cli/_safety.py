"""Safety commands: scan, review (the quarantine), audit, verify and gc (expiry and retention)."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..errors import ConfigError, MemdirError
from ..gate import Caller, GatedStore, audit_entries, review_queue
from ..paths import parse
from ..policy.config import load_policy, parse_duration
from ..policy.integrity import verify as verify_store
from ..policy.retention import apply as apply_gc
from ..policy.retention import plan as plan_gc
from ..policy.sweep import Located, sweep, texts_in_history, texts_in_store, texts_on_disk
from ..store import open_store, store_exists, url_scheme
from ._group import Context, cli, fail_cleanly, pass_context
from ._output import duration, echo_json, iso, plural, print_rows, shown, stdout_is_tty

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from ..gate import ReviewQueue
    from ..policy.quarantine import HeldWrite
    from ..policy.retention import GcPlan
    from ..store import Store

_ACTS = frozenset({"redact", "quarantine", "block"})


@cli.command()
@click.argument("paths", nargs=-1, metavar="[PATH]...")
@click.option(
    "--json", "as_json", is_flag=True, help="One JSON object per finding (file, line, kind, rule, preview...)."
)
@click.option("--secrets-only", is_flag=True, help="Report secrets only, not injected instructions.")
@click.option("--untrusted", is_flag=True, help="Judge the text as untrusted content (policy.untrusted_injection).")
@click.option(
    "--history", is_flag=True, help="In a store, also every earlier content of its history (named PATH@VERSION)."
)
@pass_context
@fail_cleanly
def scan(
    state: Context, paths: tuple[str, ...], as_json: bool, secrets_only: bool, untrusted: bool, history: bool
) -> None:
    """Check files, directories or a store for secrets and injected instructions.

    PATH is a file, a directory (every text file below it, hidden names left out), a store URL (sqlite:...,
    postgresql://..., http://...: every file in the store's namespace) or `-` for standard input. Without PATH:
    the store given with --store, else standard input.
    Each finding is listed as FILE:LINE: KIND:RULE (ACTION) and its line, the secret masked: a secret itself is
    never printed. Exits 1 when anything is found, 0 when nothing is, 2 when a PATH (or a directory or file below
    one) cannot be read: each is named on stderr, and the rest is scanned all the same.

    Example:

        memdir scan notes/ && echo clean
        memdir --store sqlite:///home/me/memory.db scan
        memdir scan --secrets-only $(git diff --cached --name-only)
    """
    policy = load_policy(state.namespace).write
    missed: list[str] = []
    texts = _texts(paths or (_given_store(state) or "-",), state.namespace, _report(missed), history=history)
    found = False
    for item in sweep(texts, policy, untrusted=untrusted, secrets_only=secrets_only):
        found = True
        click.echo(json.dumps(item.to_json(), ensure_ascii=False) if as_json else _scan_line(item))
    if missed:  # "could not look" wins over "found something": what was not read may hold anything
        sys.exit(2)
    if found:
        sys.exit(1)


def _report(missed: list[str]) -> Callable[[OSError | MemdirError], None]:
    """Say on stderr what could not be read, as it is met, and keep count for the exit status."""

    def report(exc: OSError | MemdirError) -> None:
        missed.append(_unreadable(exc))
        click.echo(f"Error: {shown(missed[-1], cell=True)}", err=True)

    return report


def _texts(
    paths: tuple[str, ...], namespace: str, unreadable: Callable[[OSError | MemdirError], None], *, history: bool
) -> Iterator[tuple[str, str]]:
    """(name, text) for each PATH in turn; one that cannot be read, wholly or in part, goes to ``unreadable``
    and the next one is read all the same."""
    for path in paths:
        try:
            yield from _texts_of(path, namespace, unreadable, history=history)
        except (OSError, MemdirError) as exc:
            unreadable(exc)


def _texts_of(
    path: str, namespace: str, unreadable: Callable[[OSError], None], *, history: bool
) -> Iterator[tuple[str, str]]:
    """(name, text) for one PATH: standard input, a store (a URL with a scheme; with ``history``, a directory
    store's path too: its history is in the store, not in the files), or files on disk."""
    if history and url_scheme(path) is None and Path(path).is_dir() and store_exists(path):
        path = f"file:{path}"
    if path == "-":
        with click.open_file("-", "rb") as stdin:
            yield "-", stdin.read().decode("utf-8", "replace")
    elif (scheme := url_scheme(path)) is not None:
        _check_local_store(scheme, path)
        backend = open_store(path, namespace=namespace)
        # Scanning reads every file: through the gate, one audit entry (a server's store: the server's gate).
        store = backend if backend.runs_commands else GatedStore(backend, Caller("user", channel="cli"))
        try:
            with _one_call(store):
                yield from texts_in_store(store)
                if history:  # what `memdir redact PATH@VERSION` can remove
                    yield from texts_in_history(store)
        finally:
            store.close()
    else:
        if not Path(path).exists():
            raise FileNotFoundError(f"{path}: no such file or directory")
        yield from texts_on_disk(Path(path), unreadable)


@contextlib.contextmanager
def _one_call(store: Store) -> Iterator[None]:
    if isinstance(store, GatedStore):
        with store.call("scan"):
            yield
    else:
        yield


def _given_store(state: Context) -> str | None:
    """The store named with --store on the command line (not one MEMDIR_STORE names: `... | memdir scan` with
    MEMDIR_STORE set reads what it is given)."""
    if state.store_url is None or os.environ.get("MEMDIR_STORE") == state.store_url:
        return None
    return state.store_url


def _check_local_store(scheme: str, url: str) -> None:
    """A store on this machine that is not there is an error: scanning it must not create it."""
    if scheme in ("sqlite", "file"):
        where = url.split(":", 1)[1]
        where = where[2:] if where.startswith("//") else where
        if where and not Path(where).expanduser().exists():
            raise FileNotFoundError(f"{url}: no such store")


def _scan_line(item: Located) -> str:
    f = item.finding
    return shown(f"{item.where}:{f.line}: {f.kind}:{f.rule} ({f.action})  {item.preview}", cell=True)


def _unreadable(exc: OSError | MemdirError) -> str:
    if isinstance(exc, FileNotFoundError) and exc.args and isinstance(exc.args[0], str) and exc.filename is None:
        return exc.args[0]
    if isinstance(exc, OSError):
        return f"{exc.filename or 'input'}: {exc.strerror or 'cannot be read'}"
    return exc.reason


@cli.group(invoke_without_command=True)
@click.option("--all", "show_all", is_flag=True, help="Also list the items already approved or rejected.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list (without diffs).")
@pass_context
@fail_cleanly
def review(state: Context, show_all: bool, as_json: bool) -> None:
    """List the writes held for review, each with a diff against the current file.

    Approve one with `memdir review approve ID` (it is applied as a new version by actor `user`), or
    discard it with `memdir review reject ID`.

    Example:

        memdir review && memdir review approve 3
    """
    if click.get_current_context().invoked_subcommand is not None:
        return
    quarantine = review_queue(state.store())  # a server's store: the server's queue
    items = quarantine.items(None if show_all else "pending")
    if as_json:
        echo_json([item.to_json() for item in items])
        return
    if not items:
        click.echo("No writes are waiting for review." if not show_all else "The quarantine is empty.")
    for item in items:
        _print_held(quarantine, item)


@review.command("approve")
@click.argument("item_id", metavar="ID", type=int)
@pass_context
@fail_cleanly
def review_approve(state: Context, item_id: int) -> None:
    """Apply a held write as a new version; print the version number.

    Example:

        memdir review approve 3
    """
    click.echo(review_queue(state.store()).approve(item_id))


@review.command("reject")
@click.argument("item_id", metavar="ID", type=int)
@click.option("--reason", help="Why, kept with the item.")
@pass_context
@fail_cleanly
def review_reject(state: Context, item_id: int, reason: str | None) -> None:
    """Discard a held write.

    Example:

        memdir review reject 3 --reason "copied from a phishing e-mail"
    """
    review_queue(state.store()).reject(item_id, reason=reason)
    click.echo(f"Rejected #{item_id}.")


@cli.command()
@click.option("--path", "path", metavar="PATH", help="Only this file, or the files below this directory.")
@click.option("--since", metavar="TIME", help="From this time on: 2026-11-29, 2026-11-29T14:00:00Z, or 7d / 12h ago.")
@click.option("--limit", type=click.IntRange(min=1), help="Only the last N entries.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@pass_context
@fail_cleanly
def audit(state: Context, path: str | None, since: str | None, limit: int | None, as_json: bool) -> None:
    """Show the audit log: every read and write, oldest first.

    Columns: time, channel, actor, session, command, path, outcome, SHA-256 of the content, findings.
    Content itself is never logged.

    Example:

        memdir audit --path /memories/notes.md --since 7d
    """
    where = parse(path).virtual if path else None
    entries = audit_entries(state.store(), path=where, since=_since(since), limit=limit)
    if as_json:
        echo_json([{**e.to_json(), "time": iso(e.ts)} for e in entries])
        return
    rows = [
        (iso(e.ts), e.channel, e.actor, e.session or "-", e.command, _paths(e.path, e.new_path), e.outcome,
         (e.sha256 or "-")[:12], e.detail or "-")
        for e in entries
    ]  # fmt: skip
    print_rows(("Time", "Channel", "Actor", "Session", "Command", "Path", "Outcome", "SHA-256", "Findings"), rows,
               stdout_is_tty())  # fmt: skip


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the report as a JSON object.")
@pass_context
@fail_cleanly
def verify(state: Context, as_json: bool) -> None:
    """Check files, history and audit log for changes made behind memdir's back.

    Files are checked against their latest version; the history and the audit log against their hash
    chains, so versions or audit entries deleted, edited, inserted or reordered with direct access to the
    database are reported (see docs/safety.md). Prints each chain's head: keep it elsewhere to notice a
    rewrite of the whole chain later. Exits 1 when anything is off.

    Example:

        memdir --store ~/memory verify
    """
    report = verify_store(state.store())
    if as_json:
        echo_json(report.to_json())
    else:
        for line in report.lines():
            click.echo(line)
    if not report.ok:
        sys.exit(1)


@cli.command()
@click.option("--apply", "apply_", is_flag=True, help="Do it (without it, only show what would be done).")
@click.option("--keep-versions", metavar="DURATION", help="Override policy.keep_versions (e.g. 90d).")
@pass_context
@fail_cleanly
def gc(state: Context, apply_: bool, keep_versions: str | None) -> None:
    """Delete expired files and prune old versions, per the [policy] settings.

    Files matching a policy.ttl glob that were not read or written for that long are deleted (actor `gc`);
    versions superseded longer ago than policy.keep_versions are pruned. Without --apply, nothing changes.

    Example:

        memdir gc && memdir gc --apply
    """
    config = load_policy(state.namespace)
    if keep_versions is not None:
        config = type(config)(config.write, config.ttl, duration(keep_versions, "--keep-versions"))
    store = state.store()
    planned = plan_gc(store, config)
    if not apply_:
        _print_plan(planned, config.ttl == () and config.keep_versions is None)
        return
    done = apply_gc(store, planned)
    for path in done.deleted:
        click.echo(f"deleted {path}")
    for path in done.skipped:
        click.echo(f"kept    {path} (used or changed meanwhile)")
    click.echo(
        f"Deleted {plural(len(done.deleted), 'file')}, pruned {plural(done.versions_pruned, 'version')} "
        f"and {plural(done.quarantine_pruned, 'reviewed write')}."
    )


# -- helpers ------------------------------------------------------------------------------------------------------


def _print_held(quarantine: ReviewQueue, item: HeldWrite) -> None:
    rules = ", ".join(f"{f.kind}:{f.rule} (line {f.line})" for f in item.findings)
    who = shown(item.actor + (f", session {item.session}" if item.session else ""), cell=True)
    command = shown(str(item.command.get("command")), cell=True)
    click.echo(
        click.style(f"#{item.id}", bold=True) + f" {item.status}  {iso(item.ts)}  {command} {item.path}  by {who}"
    )
    if item.source:
        click.echo(f"    source: {shown(item.source, cell=True)}")
    click.echo(f"    found: {rules}")
    for line in quarantine.diff(item):  # shown as stored: nothing in it may act on the reviewer's terminal
        click.echo("    " + shown(line.rstrip("\n")))
    click.echo()


def _print_plan(planned: GcPlan, unconfigured: bool) -> None:
    if unconfigured:
        click.echo("Nothing to do: set [policy.ttl] rules or policy.keep_versions (see docs/safety.md).")
        return
    for item in planned.expired:
        click.echo(f"would delete {item.path.virtual} (last used {iso(item.last_used)}; rule {item.rule.pattern})")
    if planned.prune_before is not None:
        click.echo(f"would prune {plural(planned.prunable, 'version')} superseded before {iso(planned.prune_before)}")
    click.echo(f"Dry run: {plural(len(planned.expired), 'file')} expired. Run `memdir gc --apply` to do it.")


def _since(text: str | None) -> float | None:
    """An ISO 8601 date or time (UTC unless it says otherwise), or a duration ago (``7d``)."""
    if text is None:
        return None
    try:
        return time.time() - parse_duration(text, "--since")
    except ConfigError:
        pass
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise click.ClickException(f"--since: expected a date, a time or a duration such as 7d, got {text!r}") from None
    return (when if when.tzinfo else when.replace(tzinfo=dt.UTC)).timestamp()


def _paths(path: str | None, new_path: str | None) -> str:
    return f"{path} -> {new_path}" if new_path else (path or "-")
