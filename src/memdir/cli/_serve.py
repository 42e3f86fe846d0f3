"""Serving a store over HTTP, and the tokens that open it: serve, token create|list|revoke."""

from __future__ import annotations

import contextlib
import json
from typing import TYPE_CHECKING, Any

import click

from ..store import open_store
from . import Context, cli, fail_cleanly
from ._output import iso, print_rows, stdout_is_tty

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from ..server.tokens import TokenRegistry

_pass_state = click.make_pass_decorator(Context)


def _store_url(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    if value is not None:
        ctx.ensure_object(Context).store_url = value


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
@click.option(
    "--claude-code", "claude_code", is_flag=True, help="Serve every Claude Code memory directory, one namespace each."
)
@_with_store
@fail_cleanly
def serve(state: Context, host: str, port: int, workers: int, rate: float, burst: int, claude_code: bool) -> None:
    """Serve the store over HTTP to many tenants (the tool, the store API, MCP).

    The memory tool at /v1/tool, the store API under /v1, MCP at /mcp. Every request needs a token
    (`memdir token create`); each token reaches one namespace. Logs are JSON lines on stderr. SIGTERM or Ctrl-C
    stops it after the requests in flight.

    With --claude-code, every Claude Code memory directory on this machine is a namespace, and the web page
    shows them all; sign in with the token printed on stdout (see docs/claude-code.md).

    Example:

        memdir serve --store sqlite:///srv/memdir/memory.db --port 8765 --workers 2
    """
    from ..server import ServerConfig
    from ..server import serve as run

    options: dict[str, Any] = {"host": host, "port": port, "rate": rate, "burst": burst}
    if claude_code:
        from ..server.routers.claude_code import prepare

        config, secret, served = prepare(**options)
        click.echo(secret)
        click.echo(f"Serving {served} Claude Code memory directories on http://{host}:{port}/ ; sign in there with "
                   "the token above (shown once; a restart makes a new one).", err=True)  # fmt: skip
    else:
        config = ServerConfig(store_url=_served_url(state), **options)
    run(config, workers=workers)


@cli.group()
def token() -> None:
    """Manage the tokens that open a served store (memdir serve).

    A token opens one namespace; it is shown once and kept hashed in the store.

    Example:

        memdir --store sqlite:///srv/memdir/memory.db token create --namespace alice
    """


@contextlib.contextmanager
def _registry(state: Context) -> Iterator[TokenRegistry]:
    from ..server.tokens import TokenRegistry

    with open_store(_served_url(state)) as store:
        yield TokenRegistry(store.aux)


@token.command("create")
@click.option("--namespace", "-n", required=True, metavar="NAME", help="The namespace the token opens.")
@click.option("--label", metavar="TEXT", help="A note to recognise the token by in `memdir token list`.")
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
def token_create(state: Context, namespace: str, label: str | None, admin: bool, tenant: str | None) -> None:
    """Create a token for one namespace and print it: it is shown only this once.

    Example:

        MEMDIR_TOKEN=$(memdir --store sqlite:///srv/memdir/memory.db token create -n alice --label laptop)
    """
    from ..memstores import token_tenant

    with open_store(_served_url(state)) as store, _registry(state) as tokens:
        owner = tenant or token_tenant(store.aux, namespace)
        secret, info = tokens.create(namespace, label, tenant=owner, admin=admin)
    click.echo(secret)
    click.echo(
        f"Created token {info.id} for namespace {info.namespace!r}. Keep it now: it is not shown again.", err=True
    )


@token.command("list")
@click.option("--all", "include_revoked", is_flag=True, help="Include revoked tokens.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@_with_store
@fail_cleanly
def token_list(state: Context, include_revoked: bool, as_json: bool) -> None:
    """List the tokens (never the tokens themselves): id, namespace, label, created, revoked.

    Example:

        memdir token list --all
    """
    with _registry(state) as tokens:
        found = tokens.list(include_revoked=include_revoked)
    if as_json:
        data = [
            {"id": t.id, "namespace": t.namespace, "label": t.label, "created": iso(t.created),
             "revoked": None if t.revoked is None else iso(t.revoked), "admin": t.admin}
            for t in found
        ]  # fmt: skip
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    rows = [
        (t.id, t.namespace, t.label or "-", iso(t.created), iso(t.revoked), "admin" if t.admin else "-") for t in found
    ]
    print_rows(("Id", "Namespace", "Label", "Created", "Revoked", "Admin"), rows, stdout_is_tty())


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
