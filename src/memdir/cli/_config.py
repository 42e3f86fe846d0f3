"""``memdir config``: which settings files were read, and the values in effect (with where each comes from)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from ..policy.config import weakened_by_project
from ._group import Context, _shown, cli, fail_cleanly, pass_context
from ._output import echo_json

if TYPE_CHECKING:
    from ..settings import Settings


@cli.command("config")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@pass_context
@fail_cleanly
def config_(state: Context, as_json: bool) -> None:
    """Show the settings files read here and the values in effect.

    The project's memdir.toml wins over the user's config.toml (except that it may only make the write policy
    stricter); the environment and command-line options win over both. Tables no feature reads (a typo such as
    [polcy]) and policy a project tried to weaken are listed as warnings.

    Example:

        memdir config
    """
    from ..settings import load_settings, user_config_path

    settings = load_settings()
    report = _report(state, settings)
    if as_json:
        echo_json(report)
        return
    click.echo("Settings files (the project's values win over the user's):")
    click.echo(f"  user:     {settings.user_path or f'{user_config_path()} (not found)'}")
    click.echo(f"  project:  {settings.project_path or '(no memdir.toml here or above, up to the repository root)'}")
    auto = report["auto_memory"]
    click.echo(f"Store:        {report['store']['url']} ({report['store']['reason']})")
    click.echo(f"Namespace:    {report['namespace']}")
    click.echo(f"Auto memory:  {'on' if auto['enabled'] else 'off'} ({auto['source']})")
    for table, values in report["tables"].items():
        click.echo(f"\n[{table}]")
        for key, item in values.items():
            click.echo(f"{key} = {json.dumps(item['value'], ensure_ascii=False, default=str)}  # {item['source']}")
    for line in report["warnings"]:
        click.echo(f"Warning: {line}", err=True)


def _report(state: Context, settings: Settings) -> dict[str, Any]:
    from ..agent.settings import load_agent_settings, setting_sources
    from ..automemory import ENV, env_switch, load_auto_memory
    from ..project import resolve_store

    choice = resolve_store()
    store = (
        {"url": _shown(state.store_url), "reason": "--store or MEMDIR_STORE"}
        if state.store_url
        else {"url": _shown(choice.url), "reason": choice.reason}
    )
    agent = load_agent_settings(settings=settings)
    sources = setting_sources(settings)
    tables = {"agent": {key: {"value": _plain(getattr(agent, key)), "source": sources[key]} for key in sources}}
    for name in ("limits", "memory", "policy", "search"):
        tables[name] = _file_values(settings, name)
    switch = env_switch()
    auto = load_auto_memory(settings)
    source = f"{ENV} is set" if switch is not None else _auto_source(tables["memory"])
    return {
        "files": {"user": _path(settings.user_path), "project": _path(settings.project_path)},
        "store": store,
        "namespace": state.namespace,
        "auto_memory": {"enabled": auto.enabled, "index_upkeep": auto.index_upkeep, "source": source},
        "tables": tables,
        "warnings": settings.warnings + weakened_by_project(settings),
    }


def _file_values(settings: Settings, table: str) -> dict[str, dict[str, Any]]:
    """A table's keys as the files set them (the project's over the user's), each with its file."""
    found: dict[str, dict[str, Any]] = {}
    for values, path in ((settings.user, settings.user_path), (settings.project, settings.project_path)):
        section = values.get(table, {})
        for key, value in section.items() if isinstance(section, dict) else ():
            found[key] = {"value": _plain(value), "source": str(path)}
    return found


def _auto_source(memory: dict[str, dict[str, Any]]) -> str:
    return f"[memory] auto_memory in {memory['auto_memory']['source']}" if "auto_memory" in memory else "default"


def _plain(value: Any) -> Any:
    """A setting as JSON can show it (tuples as lists, tables as objects)."""
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "items"):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def _path(path: object) -> str | None:
    return None if path is None else str(path)
