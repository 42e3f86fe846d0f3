"""The agent commands: ``memdir run``, ``memdir chat``, ``memdir sessions``, ``memdir init``.

A thin shell over `memdir.agent`: the options become `AgentSettings` (over the ``[agent]`` settings files and
the environment), the events the agent yields become progress lines on stderr. The agent and the SDKs are
imported inside the commands, so ``memdir --help`` does not pay for them.
"""

from __future__ import annotations

import functools
import sys
from typing import TYPE_CHECKING, Any

import click

from ..tool import MemoryTool
from ._events import drive, print_progress
from ._group import Context, cli, fail_cleanly, pass_context
from ._output import echo_json, print_rows, shown, stdout_is_tty

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..agent import Agent
    from ..agent.sessions import SessionInfo

__all__ = ["agent_options", "open_agent"]


def agent_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The options ``run`` and ``chat`` share; each overrides the same key of the ``[agent]`` settings."""
    options = [
        click.option("--model", help="Model name. [env MEMDIR_MODEL]"),
        click.option("--provider", type=click.Choice(["anthropic", "openai"]), help="Model API (default anthropic)."),
        click.option("--max-turns", type=click.IntRange(1), help="Requests allowed per prompt (default 25)."),
        click.option("--system", help="System prompt (the memory protocol is added where needed)."),
        click.option(
            "--context",
            type=click.Choice(["native", "client", "off"]),
            help="Context management: the API's (native, default for Anthropic), ours (client) or none.",
        ),
        click.option("--clear-at", type=click.IntRange(0), metavar="TOKENS", help="Clear old tool results above this."),
        click.option("--keep-tool-uses", type=click.IntRange(0), metavar="N", help="Tool results kept when clearing."),
        click.option("--compact-at", type=click.IntRange(1), metavar="TOKENS", help="Compact the history above this."),
        click.option(
            "--resume",
            is_flag=False,
            flag_value="",
            default=None,
            metavar="[SESSION]",
            help="Continue a session (the latest when no id is given).",
        ),
        click.option("--tools", type=click.Choice(["native", "simple"]), help="Memory tool style (default native)."),
        click.option("--search", is_flag=True, default=None, help="Offer the memory_search tool (memdir.search)."),
        click.option(
            "--delegate/--no-delegate", default=None, help="Offer the delegate tool (sub-agents; on by default)."
        ),
        click.option(
            "--wrap-up/--no-wrap-up",
            default=None,
            help="Ask for a progress-log update before the session ends (when memory has one; on by default).",
        ),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def open_agent(state: Context, options: dict[str, Any], *, stream: bool) -> Agent:
    """The agent the options and settings describe, over the command's store."""
    from ..agent import Agent, load_agent_settings
    from ..agent.providers import open_provider

    resume = options.pop("resume", None)
    settings = load_agent_settings(options)
    if settings.stream is None:
        settings = settings.replace(stream=stream)
    if resume is not None:  # another store's session, or none, fails before a store is created for nothing
        from ..agent.sessions import find_session, store_key

        find_session(resume, store=store_key(state.url), namespace=state.namespace)
    provider = open_provider(settings)  # a missing API key fails here too
    try:
        store = state.store(create=True)
        return Agent(
            store, settings=settings, provider=provider, close_provider=True, resume=resume, store_url=state.url
        )
    except BaseException:
        provider.close()
        raise


@cli.command("run")
@click.argument("prompt")
@agent_options
@click.option("--json", "as_json", is_flag=True, help="Print the answer, turns, token usage and session id as JSON.")
@pass_context
@fail_cleanly
def run_command(state: Context, prompt: str, as_json: bool, **options: Any) -> None:
    """Run one task with the memory-backed agent and print the answer.

    Progress (memory loaded, tool calls, context management) goes to stderr.

    Example:

        memdir run "Remember that I don't like spicy food."
    """
    agent = open_agent(state, options, stream=False)
    try:
        result = drive(agent.stream(prompt))
        if as_json:
            echo_json(result.as_json())
        else:
            click.echo(shown(result.answer) if stdout_is_tty() else result.answer)
        wrap_up(agent)
    finally:
        agent.close()


def wrap_up(agent: Agent) -> None:
    """The end of a session: the agent's progress-log update, if it wants one (progress on stderr only). A
    failure there is reported and does not undo the task's answer."""
    from ..agent import TextDelta
    from ..errors import MemdirError

    try:
        for event in agent.wrap_up():
            if not isinstance(event, TextDelta):
                print_progress(event)
    except MemdirError as exc:
        click.echo(f"[wrap-up] the progress log was not updated: {exc}", err=True)


@cli.command()
@agent_options
@pass_context
@fail_cleanly
def chat(state: Context, **options: Any) -> None:
    """Talk with the memory-backed agent; /help lists the slash commands.

    Lines come from the terminal (with history) or, piped, one prompt per line.

    Example:

        memdir chat --store ~/memory
    """
    from ._chat import Chat

    agent = open_agent(state, options, stream=True)
    try:
        Chat(agent, interactive=sys.stdin.isatty() and sys.stdout.isatty()).loop()
        wrap_up(agent)
    finally:
        agent.close()


@cli.command()
@click.argument("task")
@click.option("--feature", "features", multiple=True, metavar="TEXT", help="A feature in scope (repeatable).")
@click.option("--start", metavar="CMD", help="The start-up script (how to get the work running).")
@click.option("--test", metavar="CMD", help="The test script (how to check it end to end).")
@click.option("--template", is_flag=True, help="Write the files from these options alone, without the model.")
@click.option("--force", is_flag=True, help="Run even though memory already holds a progress log.")
@agent_options
@pass_context
@fail_cleanly
def init(
    state: Context, task: str, features: tuple[str, ...], start: str | None, test: str | None, template: bool,
    force: bool, **options: Any,
) -> None:  # fmt: skip
    """Set up long-running work: progress log, feature checklist, scripts.

    The initializer session asks the model to write /memories/progress.md (done / next),
    /memories/features.md (the scope, every feature unchecked) and /memories/scripts.md; a file it did not
    write is made from the options. Later sessions (memdir run, memdir chat) start by reading them.

    Example:

        memdir init "A todo CLI in Python" --feature "add items" --feature "list items" --test "pytest -q"
    """
    from ..agent.longrun import PROGRESS, Plan, ensure_files, initializer_prompt

    plan = Plan(task, features, start, test)
    if not force and state.store(create=True).stat(PROGRESS) is not None:
        raise click.ClickException(
            f"memory already holds {PROGRESS.virtual}: this work was set up before; continue it with memdir run "
            "or memdir chat (or pass --force)"
        )
    if not template:
        agent = open_agent(state, {**options, "wrap_up": False}, stream=False)
        try:
            click.echo(shown(drive(agent.stream(initializer_prompt(plan))).answer))
        finally:
            agent.close()
    with MemoryTool(state.store(), actor="user") as tool:
        for path in ensure_files(tool, plan):
            click.echo(f"[init] wrote {path.virtual} from the options", err=True)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@click.option("--limit", type=click.IntRange(1), default=50, show_default=True, help="How many to list.")
@click.option("--all", "every_store", is_flag=True, help="Sessions of every store and namespace, not only this one.")
@pass_context
@fail_cleanly
def sessions(state: Context, as_json: bool, limit: int, every_store: bool) -> None:
    """List the agent sessions of this store, newest first.

    Columns: id, started, turns, tokens, first prompt (with --all, also the store and namespace). A session
    belongs to the store and namespace it ran on; `memdir run --resume` continues only those.

    Example:

        memdir sessions --limit 5
    """
    from ..agent.sessions import list_sessions, store_key

    key = store_key(state.url)
    found = list_sessions() if every_store else list_sessions(store=key, namespace=state.namespace)
    found = found[:limit]
    if as_json:
        echo_json([_session_json(s) for s in found])
        return
    if not found:
        where = "any store" if every_store else f"{key} (namespace {state.namespace}); --all lists every store's"
        click.echo(f"No sessions yet for {where}.", err=True)
        return
    rows = [[s.id, s.started, str(s.turns), str(s.tokens), *_store_columns(s, every_store), _one_line(s.first_prompt)]
            for s in found]  # fmt: skip
    headers = [
        "Session",
        "Started",
        "Turns",
        "Tokens",
        *(["Store", "Namespace"] if every_store else []),
        "First prompt",
    ]
    print_rows(headers, rows, stdout_is_tty())


def _store_columns(info: SessionInfo, shown: bool) -> list[str]:
    return [info.store or "-", info.namespace or "-"] if shown else []


def _session_json(info: SessionInfo) -> dict[str, Any]:
    return {
        "id": info.id,
        "started": info.started,
        "turns": info.turns,
        "tokens": info.tokens,
        "first_prompt": info.first_prompt,
        "store": info.store,
        "namespace": info.namespace,
        "path": str(info.path),
    }


@functools.lru_cache(maxsize=256)
def _one_line(text: str, width: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"
