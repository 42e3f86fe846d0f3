"""The ``memdir`` command group and what every command shares: `Context` (the store the command works on, behind
the gate), `pass_context` and `fail_cleanly` (errors reach the user in one place: a `MemdirError` becomes one line
on stderr and exit status 1; anything unexpected is logged with its traceback to the memdir log and reported in one
line too). The commands' modules import this one, never the package: the package imports them."""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import os
from typing import IO, TYPE_CHECKING, Any, ParamSpec, TypeVar

import click

from .._version import __version__
from ..config import default_store_url
from ..errors import MemdirError, StoreNotFoundError
from ..gate import Caller, GatedStore
from ..store import DEFAULT_NAMESPACE, Store, check_url, open_store, redact_url, store_exists, url_scheme
from ._logfile import open_log
from ._output import shown

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = ["Context", "checked_store_url", "cli", "expand_url", "fail_cleanly", "pass_context"]

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
        if self._store is None:
            return
        store = self._store
        if isinstance(store, GatedStore):
            store.flush()
            # The audit log must not fail the command it records, and must not fail in silence either.
            missing = store.unaudited()
            if missing is not None:
                click.echo(
                    f"Warning: the audit log could not record this command: {shown(missing, cell=True)}", err=True
                )
        store.close()


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
            raise click.ClickException(exc.reason) from exc
        except (click.ClickException, click.exceptions.Exit, click.Abort, KeyboardInterrupt):
            raise
        except BrokenPipeError:
            # Our stdout's reader has gone (`memdir history | head -1` once head has its line): not an error. Only
            # our own output streams raise it raw (a store translates its sockets' errors); `memdir.cli.main` ends
            # the command quietly.
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
        setattr(ctx.ensure_object(Context), str(param.name), checked_store_url(ctx, param, value))


def checked_store_url(_ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A --store URL no backend can open is an error before any command runs, whichever command it is: an empty
    one too (it is not a way to ask for the default store), and a ``sqlite:`` without a path."""
    if value is None or param.name != "store_url":
        return value
    try:
        check_url(value)
    except MemdirError as exc:
        raise click.ClickException(exc.reason) from exc
    return value


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


class _VerbatimExamples(click.Command):
    """Help whose indented paragraphs (the examples) are printed as written: click rewraps every paragraph, which
    ran a two-line example into one line broken mid-command."""

    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        if self.help is None:
            return super().format_help_text(ctx, formatter)
        text = inspect.cleandoc(self.help).partition("\f")[0]
        formatter.write_paragraph()
        with formatter.indentation():
            formatter.write_text("\n\n".join(map(_verbatim, text.split("\n\n"))))


def _verbatim(paragraph: str) -> str:
    """``\\b`` on a line of its own before a paragraph is click's mark for "do not rewrap"."""
    return "\b\n" + paragraph if paragraph.startswith((" ", "\t")) else paragraph


class _Command(_VerbatimExamples):
    """Every ``memdir`` command (`_Group.command_class`)."""


class _Group(click.Group, _VerbatimExamples):
    """The ``memdir`` group: an error from any command (click's own usage errors included) is shown on one line,
    with control characters escaped, whatever input it quotes. Its own options are parsed in `make_context`, a
    command's (and a subgroup's) inside `invoke`: both are covered. Its commands and subgroups are of its kind
    and `_Command`: their examples keep their lines."""

    command_class = _Command
    group_class = type

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        with _one_line():
            return super().make_context(info_name, args, parent, **extra)

    def invoke(self, ctx: click.Context) -> Any:
        with _one_line():
            return super().invoke(ctx)


class _UsageError(click.UsageError):
    """A usage error on one line, ``Error: MESSAGE (see 'memdir CMD --help')``, instead of click's four (the
    usage, a hint, a blank line, the error). The exit status stays 2."""

    def show(self, file: IO[Any] | None = None) -> None:
        where = self.ctx.command_path if self.ctx is not None else "memdir"
        click.echo(f"Error: {self.format_message()} (see '{where} --help')", file=file, err=True)


@contextlib.contextmanager
def _one_line() -> Iterator[None]:
    try:
        yield
    except (_UsageError, click.exceptions.NoArgsIsHelpError):
        raise  # already one line; a group named without a command prints its help, as `memdir` alone does
    except click.UsageError as exc:
        message = shown(exc.format_message(), cell=True).removesuffix(".")
        raise _UsageError(message, exc.ctx) from exc
    except click.ClickException as exc:
        # The message only (click declares it final): the exception keeps its class and exit status.
        exc.__dict__["message"] = shown(exc.message, cell=True)
        raise


@click.group("memdir", cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="memdir")
@click.option(
    "--store",
    "store_url",
    envvar="MEMDIR_STORE",
    metavar="URL",
    callback=checked_store_url,
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
    """Settings that do nothing (an unknown table such as ``[polcy]``, a project's policy weaker than the user's),
    once per command, on stderr. A file that cannot be read is reported by the feature that needs it, in its own
    words."""
    from ..policy.config import weakened_by_project
    from ..settings import load_settings

    try:
        settings = load_settings()
        warnings = settings.warnings + weakened_by_project(settings)
    except MemdirError:
        return
    for line in warnings:
        click.echo(f"Warning: {line}", err=True)
