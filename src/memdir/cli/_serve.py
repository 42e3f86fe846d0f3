"""Serving a store over HTTP, and the tokens that open it: serve, token create|list|revoke."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import sys
from typing import TYPE_CHECKING, Any

import click

from ..store import open_store
from ._group import Context, _shown, checked_store_url, cli, fail_cleanly
from ._output import duration, iso, print_rows, stdout_is_tty

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from ..server import ServerConfig
    from ..server.tokens import TokenInfo, TokenRegistry

_pass_state = click.make_pass_decorator(Context)


def _store_url(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is not None:
        ctx.ensure_object(Context).store_url = checked_store_url(ctx, param, value)


def _with_store(fn: Callable[..., None]) -> Callable[..., None]:
    """Pass the shared `Context`, accepting ``--store`` after the subcommand too (no ``--namespace``: a server
    serves every namespace, and a token names its own)."""
    return click.option(
        "--store",
        "store_url",
        metavar="URL",
        expose_value=False,
        callback=_store_url,
        help="Store URL (overrides MEMDIR_STORE and the group's --store).",
    )(_pass_state(fn))


def _served_url(state: Context) -> str:
    """The store a server keeps its tokens in: one that outlives this process, on this machine."""
    url = state.url
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    if scheme in ("http", "https"):
        raise click.ClickException("tokens live with the served store: run this where the server's store is")
    if scheme == "memory":
        raise click.ClickException("a memory: store lives in one process; serve a directory or sqlite: store")
    return url


def _seconds(name: str, default: float, text: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    kind = click.FloatRange(min=0, min_open=True)
    return click.option(name, default=default, show_default=True, type=kind, metavar="SECONDS", help=text)


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="Port to listen on.")
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 64), help="Worker processes.")
@click.option(
    "--rate", default=100.0, show_default=True, type=click.FloatRange(0), help="Requests/s per token (0: off)."
)
@click.option(
    "--burst", default=200, show_default=True, type=click.IntRange(1), help="Requests a token may send at once."
)
@_seconds("--header-timeout", 10.0, "Time a client has to send a request's head (slow clients get 408).")
@_seconds("--body-timeout", 60.0, "Time a client has to send a request's body, once its head has come.")
@click.option(
    "--claude-code", "claude_code", is_flag=True, help="Serve every Claude Code memory directory, one namespace each."
)
@_with_store
@fail_cleanly
def serve(state: Context, workers: int, claude_code: bool, **options: Any) -> None:
    """Serve the store over HTTP to many tenants (the web page, the tool, MCP).

    The web page at /, the memory tool at /v1/tool, the store API under /v1, MCP at /mcp. Every request needs a
    token (`memdir token create`); each token reaches one namespace. Logs are JSON lines on stderr; on a terminal
    it also says where to open the page. SIGTERM or Ctrl-C stops it after the requests in flight, and the exit
    status is the signal's. The store is created if it does not exist.

    With --claude-code, every Claude Code memory directory on this machine is a namespace, and the web page
    shows them all; sign in with the token printed on stdout (see docs/claude-code.md).

    Example:

        memdir serve --store sqlite:///srv/memdir/memory.db --port 8765 --workers 2
    """
    from ..server import ServerConfig, listen
    from ..server import serve as run

    url = None if claude_code else _served_url(state)  # a store that cannot be served: said before anything else
    sock = listen(options["host"], options["port"])  # so is a taken port
    with contextlib.closing(sock):
        if url is None:
            config = _claude_code(options)
        else:
            config = ServerConfig(store_url=url, **options)
            with _registry(state, create=True) as tokens:
                count = len(tokens.list())
            if sys.stderr.isatty():
                _banner(config.host, sock.getsockname()[1], url, count)
        stopped = run(config, workers=workers, sock=sock)
    if stopped is not None:
        _end_by(stopped)


def _claude_code(options: dict[str, Any]) -> ServerConfig:
    from ..server.routers.claude_code import prepare

    config, secret, served = prepare(**options)
    click.echo(secret)
    click.echo(f"Serving {served} Claude Code memory directories on http://{config.host}:{config.port}/ ; sign in "
               "there with the token above (shown once; a restart makes a new one).", err=True)  # fmt: skip
    return config


def _banner(host: str, port: int, url: str, tokens: int) -> None:
    """For a person at a terminal: where to open the page, how to sign in, how to get a token."""
    shown = f"[{host}]" if ":" in host else host
    local = {"0.0.0.0": "127.0.0.1", "[::]": "[::1]"}.get(shown, shown)  # an address a browser can open
    base = f"http://{local}:{port}"
    make = f"memdir --store {shlex.quote(_shown(url))} token create --namespace NAME"
    lines = [
        f"memdir serve: open {base}/ in a browser and sign in with a token ({_count(tokens)} in this store).",
        f"  Make a token:  {make}",
        f"  MCP clients:   {base}/mcp        Ctrl-C stops the server.",
    ]
    if local != shown:
        lines.append(f"  Listening on every address of this machine ({host}), port {port}.")
    for line in lines:
        click.echo(line, err=True)
    if tokens == 0:
        first = make.replace("NAME", "default")
        click.secho(
            f"Warning: this store has no tokens yet, so nobody can sign in. Make one: {first}", err=True, fg="yellow"
        )


def _count(tokens: int) -> str:
    return f"{tokens} token" + ("" if tokens == 1 else "s")


def _end_by(sig: int) -> None:
    """End the process by ``sig``, as if it had not been caught: a shell then reports 128 + the signal's number,
    and a service manager sees the death it sent for."""
    sys.stdout.flush()
    sys.stderr.flush()
    signal.signal(sig, signal.SIG_DFL)
    os.kill(os.getpid(), sig)
    sys.exit(128 + sig)  # where the signal cannot end the process (it is blocked): the status a shell would show


@cli.group()
def token() -> None:
    """Manage the tokens that open a served store (memdir serve).

    A token opens one namespace; it is shown once and kept hashed in the store.

    Example:

        memdir --store sqlite:///srv/memdir/memory.db token create --namespace alice
    """


@contextlib.contextmanager
def _registry(state: Context, *, create: bool = False) -> Iterator[TokenRegistry]:
    from ..server.tokens import TokenRegistry

    url = _served_url(state)
    existed = state.require_store(allow_missing=create)
    with open_store(url) as store:
        if not existed:
            click.echo(f"Created a new store at {_shown(url)}.", err=True)
        yield TokenRegistry(store.aux)


@token.command("create")
@click.option("--namespace", "-n", required=True, metavar="NAME", help="The namespace the token opens.")
@click.option("--label", metavar="TEXT", help="A note to recognise the token by in `memdir token list`.")
@click.option("--expires", metavar="DURATION", help="Refuse the token after this long: 30d, 12h, 90m (default: never).")
@click.option(
    "--admin",
    is_flag=True,
    help="Let its imports keep the actors and times they carry (memdir import or migrate-store into this server); "
    "anyone else's are recorded as theirs, now.",
)
@click.option(
    "--tenant",
    metavar="NAME",
    help="Who owns the memory stores the token reaches [default: the memory store's owner when NAME is one, "
    "else NAME].",
)
@_with_store
@fail_cleanly
def token_create(
    state: Context, namespace: str, label: str | None, expires: str | None, admin: bool, tenant: str | None
) -> None:
    """Create a token for one namespace and print it: it is shown only this once.

    The store is created if it does not exist yet (tokens are made before the first `memdir serve`).

    Example:

        MEMDIR_TOKEN=$(memdir --store sqlite:///srv/memdir/memory.db token create -n alice --label laptop)
        memdir --store sqlite:///srv/memdir/memory.db token create -n ci --expires 30d
    """
    from ..memstores import token_tenant

    lifetime = None if expires is None else duration(expires, "--expires")
    with _registry(state, create=True) as tokens, open_store(_served_url(state)) as store:
        owner = tenant or token_tenant(store.aux, namespace)
        secret, info = tokens.create(namespace, label, expires_in=lifetime, tenant=owner, admin=admin)
    click.echo(secret)
    until = "" if info.expires is None else f", valid until {iso(info.expires)}"
    click.echo(
        f"Created token {info.id} for namespace {info.namespace!r}{until}. Keep it now: it is not shown again.",
        err=True,
    )


@token.command("list")
@click.option("--all", "include_revoked", is_flag=True, help="Include revoked and expired tokens.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@_with_store
@fail_cleanly
def token_list(state: Context, include_revoked: bool, as_json: bool) -> None:
    """List the tokens (never the tokens themselves): id, namespace, label, times, admin.

    Times: created, expires, last used (recorded to the minute), revoked.

    Example:

        memdir token list --all
    """
    with _registry(state) as tokens:
        found = tokens.list(include_revoked=include_revoked)
    if as_json:
        click.echo(json.dumps([_token_json(t) for t in found], indent=2, ensure_ascii=False))
        return
    rows = [(t.id, t.namespace, t.label or "-", iso(t.created), _expires(t), iso(t.last_used), iso(t.revoked),
             "admin" if t.admin else "-") for t in found]  # fmt: skip
    headers = ("Id", "Namespace", "Label", "Created", "Expires", "Last used", "Revoked", "Admin")
    print_rows(headers, rows, stdout_is_tty())


def _expires(info: TokenInfo) -> str:
    if info.expires is None:
        return "never"
    return iso(info.expires) + (" (expired)" if info.expired else "")


def _token_json(info: TokenInfo) -> dict[str, object]:
    times = {"created": info.created, "expires": info.expires, "last_used": info.last_used, "revoked": info.revoked}
    shown: dict[str, object] = {"id": info.id, "namespace": info.namespace, "label": info.label}
    shown.update({key: None if value is None else iso(value) for key, value in times.items()})
    return {**shown, "admin": info.admin, "active": info.active}


@token.command("revoke")
@click.argument("token_id", metavar="ID")
@_with_store
@fail_cleanly
def token_revoke(state: Context, token_id: str) -> None:
    """Revoke a token: its next request is refused, in every server process.

    Example:

        memdir token revoke 3f9a1c0b7d2e
    """
    with _registry(state) as tokens:
        info = tokens.revoke(token_id)
    click.echo(f"Revoked token {info.id} (namespace {info.namespace!r}).")
