"""The ``memdir`` command: a thin shell where each command calls one library function.

Errors reach the user in one place (`fail_cleanly`): a `MemdirError` becomes one line on stderr and exit
status 1; anything unexpected is logged with its traceback to the memdir log and reported in one line too.

The store a command gets (`Context.store`) is behind the gate (`memdir.gate`) as the local user (actor ``user``,
channel ``cli``), so the write policy, the limits and the audit log apply to every command; each command is one
entry of the audit log, named after it. A memdir server's store (``http://...``) is a thin client: the server's
gate applies.

The commands live by theme: the memory tool and the store's location here, reading and restoring files in
`_files`, archives and the doctor in `_admin`; the output helpers they share in `_output`.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import sys
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import click

from .._version import __version__
from ..config import default_store_url
from ..errors import MemdirError, StoreNotFoundError
from ..gate import Caller, GatedStore
from ..store import DEFAULT_NAMESPACE, Store, open_store, redact_url, store_exists, url_scheme
from ..tool import MemoryTool
from ._logfile import open_log

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = ["Context", "cli", "fail_cleanly", "main", "pass_context"]

P = ParamSpec("P")
R = TypeVar("R")

log = logging.getLogger("memdir.cli")


class Context:
    """What the group's options decided, shared with every command."""

    def __init__(self, store_url: str | None = None, namespace: str = DEFAULT_NAMESPACE) -> None:
        self.store_url = store_url
        self.namespace = namespace
        self._store: Store | None = None
        self._command: str | None = None
        self._calls = contextlib.ExitStack()

    @property
    def url(self) -> str:
        return self.store_url or default_store_url()

    def store(self, *, create: bool = False) -> Store:
        """The command's store, opened on first use, behind the gate as the local user (a server's store: as the
        server's gate has it). Reading commands open only a store that exists (a typo in ``--store`` is an error
        naming the URL, not a new empty store); writing commands pass ``create=True``, and a store they create is
        announced once, on stderr."""
        if self._store is None:
            url = self.url
            _needs_token(url)
            existed = self.require_store(allow_missing=create)
            backend = open_store(url, namespace=self.namespace)
            if not existed:
                click.echo(f"Created a new store at {_shown(url)}.", err=True)
            self._store = backend if backend.runs_commands else GatedStore(backend, Caller("user", channel="cli"))
            if self._command is not None and isinstance(self._store, GatedStore):
                self._calls.enter_context(self._store.call(self._command))
        return self._store

    def require_store(self, *, allow_missing: bool = False) -> bool:
        """Whether the store exists; `StoreNotFoundError` (naming the URL) when it does not, unless
        ``allow_missing``. For the commands that work on a URL rather than an open store (doctor, migrate)."""
        if store_exists(self.url):
            return True
        if allow_missing:
            return False
        hint = " (check --store or MEMDIR_STORE" if self.store_url else f" yet ({_default_reason()}"
        raise StoreNotFoundError(_shown(self.url), f"{hint}; a writing command such as `memdir write` creates it)")

    @contextlib.contextmanager
    def command(self, name: str) -> Iterator[None]:
        """Run one CLI command: the store operations it makes are one audit entry named ``name``."""
        self._command = name
        try:
            with self._calls:
                yield
        finally:
            self._command = None
            self._calls = contextlib.ExitStack()

    def close(self) -> None:
        if self._store is not None:
            self._store.close()


def _shown(url: str) -> str:
    """A store URL as the user may see it: ``~`` expanded, a password hidden."""
    return redact_url(expand_url(url))


def expand_url(url: str) -> str:
    """``~`` expanded in a directory or SQLite URL, as `open_store` reads it (other URLs as given)."""
    scheme = url_scheme(url)
    if scheme is None:
        return os.path.expanduser(url)
    if scheme in ("file", "sqlite"):
        rest = url.split(":", 1)[1]
        path = rest[2:] if rest.startswith("//") else rest
        if path.startswith("~"):
            return f"{url.split(':', 1)[0]}://{os.path.expanduser(path)}"
    return url


def _default_reason() -> str:
    from ..project import resolve_store

    return resolve_store().reason


def _needs_token(url: str) -> None:
    """A memdir server opens only with a token: say how to give one, in the CLI's words."""
    from ..store.remote import TOKEN_ENV

    if url_scheme(url) not in ("http", "https") or os.environ.get(TOKEN_ENV):
        return
    if "@" not in url.split("://", 1)[-1].split("/", 1)[0]:
        raise click.ClickException(
            f"the memdir server at {url} needs a token: set {TOKEN_ENV}=TOKEN or use a URL such as "
            "http://TOKEN@host:port (whoever runs the server makes one with `memdir token create`)"
        )


def fail_cleanly(fn: Callable[P, R]) -> Callable[P, R]:
    """Turn errors into one line on stderr and a non-zero exit, never a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except MemdirError as exc:
            # Path errors carry the tool's wording ("Error: Path ..."); click adds its own "Error: ".
            raise click.ClickException(str(exc).removeprefix("Error: ")) from exc
        except (click.ClickException, click.exceptions.Exit, click.Abort, KeyboardInterrupt):
            raise
        except Exception as exc:
            log.exception("memdir: unexpected error")
            raise click.ClickException(f"internal error ({type(exc).__name__}); see the memdir log") from exc

    return wrapper


_pass_state = click.make_pass_decorator(Context)


def _command_name(ctx: click.Context) -> str:
    """``review approve`` for ``memdir review approve 3``: the command path below the group."""
    names: list[str] = []
    while ctx.parent is not None:
        names.append(ctx.info_name or "?")
        ctx = ctx.parent
    return " ".join(reversed(names)) or "memdir"


def _override(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """A subcommand's own --store/--namespace wins over the group's (``memdir mcp --store URL`` reads as
    people write it; ``memdir --store URL mcp`` works too)."""
    if value is not None:
        setattr(ctx.ensure_object(Context), str(param.name), value)


def pass_context(fn: Callable[..., R]) -> Callable[..., R]:
    """Pass the shared `Context` (running the command as one audit entry) and accept ``--store``/``--namespace``
    after the subcommand as well."""

    @functools.wraps(fn)
    def in_command(state: Context, *args: Any, **kwargs: Any) -> R:
        with state.command(_command_name(click.get_current_context())):
            return fn(state, *args, **kwargs)

    wrapped = _pass_state(in_command)
    wrapped = click.option(
        "--namespace",
        "-n",
        "namespace",
        metavar="NAME",
        expose_value=False,
        callback=_override,
        help="Namespace (tenant) inside the store.",
    )(wrapped)
    return click.option(
        "--store",
        "store_url",
        metavar="URL",
        expose_value=False,
        callback=_override,
        help="Store URL (overrides MEMDIR_STORE and the group's --store).",
    )(wrapped)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="memdir")
@click.option(
    "--store",
    "store_url",
    envvar="MEMDIR_STORE",
    metavar="URL",
    help="Store to use: a directory path, file:PATH, sqlite:PATH, postgresql://..., http(s)://TOKEN@HOST:PORT "
    "(a memdir server) or memory:. Reading commands need an existing store; writing ones create it. "
    "[env MEMDIR_STORE; default: the git repository's own store in the user data dir; see `memdir where`]",
)
@click.option(
    "--namespace",
    "-n",
    envvar="MEMDIR_NAMESPACE",
    default=DEFAULT_NAMESPACE,
    show_default=True,
    help="Namespace (tenant) inside the store. [env MEMDIR_NAMESPACE]",
)
@click.pass_context
def cli(ctx: click.Context, store_url: str | None, namespace: str) -> None:
    """memdir: persistent, secure, versioned memory for LLM agents.

    Paths are the model's virtual paths: /memories, /memories/notes.md, ...

    Example:

        memdir tool '{"command": "view", "path": "/memories"}'
    """
    ctx.call_on_close(open_log())
    state = Context(store_url, namespace)
    ctx.obj = state
    ctx.call_on_close(state.close)
    if ctx.invoked_subcommand != "config":  # `memdir config` shows them in its own report
        _warn_about_settings()


def _warn_about_settings() -> None:
    """Settings that do nothing (an unknown table such as ``[polcy]``), once per command, on stderr. A file that
    cannot be read is reported by the feature that needs it, in its own words."""
    from ..settings import load_settings

    try:
        warnings = load_settings().warnings
    except MemdirError:
        return
    for line in warnings:
        click.echo(f"Warning: {line}", err=True)


@cli.command()
@click.argument("command_json", metavar="JSON")
@click.option("--actor", default="user", show_default=True, help="Actor recorded on the versions this writes.")
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
    click.echo(result.text)
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
    click.echo(_shown(url))  # ~ expanded, as it is opened; a PostgreSQL URL's password never printed
    try:
        exists = "" if store_exists(url) else "; it does not exist yet: a writing command creates it"
    except MemdirError:  # a database that cannot be reached now: `where` still says which one it is
        exists = ""
    click.echo(f"({reason}{exists})", err=True)


def main() -> None:
    cli(prog_name="memdir")


# The commands register themselves on `cli` when imported (they need `cli` and the helpers above first).
from . import _admin, _agent, _claude, _config, _edit, _files, _safety, _search, _serve, _sync, _transfer  # noqa: E402, F401
