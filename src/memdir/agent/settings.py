"""The agent's settings: the ``[agent]`` table of the settings files, environment variables, and options.

Precedence, highest first: options given in code or on the command line, environment variables, the project's
``memdir.toml``, the user's ``config.toml`` (see `memdir.settings` for where those live). Every key of
`AgentSettings` can be set in the ``[agent]`` table; the scalar ones also from the environment as
``MEMDIR_AGENT_<KEY>`` (``MEMDIR_AGENT_MAX_TURNS=40``), and two have short names people expect:
``MEMDIR_MODEL`` and ``MEMDIR_PROVIDER``. docs/agent.md lists them all.
"""

from __future__ import annotations

import dataclasses
import os
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import ConfigError
from ..settings import Settings, load_settings

__all__ = ["DEFAULT_MODEL", "AgentSettings", "load_agent_settings", "setting_sources"]

DEFAULT_MODEL = "claude-sonnet-5-5"
"""The default Anthropic model: the newest Sonnet the installed SDK knows, with no deprecation date."""

Provider = Literal["anthropic", "openai"]
ContextMode = Literal["native", "client", "off"]
ToolStyle = Literal["native", "simple"]

_SHORT_ENV = {"model": "MEMDIR_MODEL", "provider": "MEMDIR_PROVIDER"}
_CHOICES: dict[str, tuple[str, ...]] = {
    "provider": ("anthropic", "openai"),
    "context": ("native", "client", "off"),
    "tools": ("native", "simple"),
}
_HOOK_EVENTS = ("SessionStart", "PreCompact", "PostCompact", "Stop")


@dataclass(frozen=True)
class AgentSettings:
    """Everything that shapes an agent session. Defaults are the documented ones (docs/agent.md)."""

    provider: Provider = "anthropic"
    model: str | None = None  # None: DEFAULT_MODEL for Anthropic; required for OpenAI-compatible servers
    base_url: str | None = None  # None: the SDK's (ANTHROPIC_BASE_URL / OPENAI_BASE_URL, else the public API)
    max_turns: int = 25
    max_tokens: int = 4096
    system: str | None = None
    context: ContextMode | None = None  # None: native for Anthropic, client elsewhere
    clear_at: int = 100_000
    keep_tool_uses: int = 3
    clear_at_least: int | None = None
    exclude_tools: tuple[str, ...] = ()
    compact_at: int = 150_000
    compact_instructions: str | None = None
    keep_recent: int = 4
    backfill: bool = True
    backfill_tokens: int = 2_000
    tools: ToolStyle = "native"
    search: bool = False
    stream: bool | None = None  # None: the command decides (chat streams, run does not)
    hook_timeout: float = 30.0
    hooks: Mapping[str, tuple[Mapping[str, Any], ...]] = field(default_factory=dict)
    instructions: bool = True  # load MEMDIR.md / AGENTS.md / CLAUDE.md from the project root
    delegate: bool = True  # offer the `delegate` tool (sub-agents)
    subagent_answer_tokens: int = 2_000  # a sub-agent's answer is cut to this many tokens
    subagents: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # named sub-agents
    wrap_up: bool = True  # ask for a progress-log update before a session of long-running work ends

    @property
    def context_mode(self) -> ContextMode:
        if self.context is not None:
            return self.context
        return "native" if self.provider == "anthropic" else "client"

    @property
    def model_name(self) -> str:
        if self.model:
            return self.model
        if self.provider == "anthropic":
            return DEFAULT_MODEL
        raise ConfigError("an OpenAI-compatible provider needs a model: pass --model or set MEMDIR_MODEL")

    def replace(self, **changes: Any) -> AgentSettings:
        """A copy with ``changes`` applied (checked like any other source; None values are ignored)."""
        return _build({**_as_dict(self), **_checked(changes, "option")})


def load_agent_settings(
    options: Mapping[str, Any] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    settings: Settings | None = None,
) -> AgentSettings:
    """Merge the sources, highest first: ``options`` (None values ignored), environment, project file,
    user file. `ConfigError` names a key that is unknown or holds the wrong kind of value."""
    files = settings if settings is not None else load_settings()
    merged: dict[str, Any] = {}
    merged.update(_checked(files.user.get("agent", {}), _where(files.user_path)))
    merged.update(_checked(files.project.get("agent", {}), _where(files.project_path)))
    merged.update(_checked(_from_env(os.environ if environ is None else environ), "environment"))
    merged.update(_checked(options or {}, "option"))
    return _build(merged)


def setting_sources(settings: Settings, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Where each `AgentSettings` key's value comes from, for ``memdir config``: ``environment (VAR)``, a
    settings file's path, or ``default``. Options given on the command line are not known here."""
    env = os.environ if environ is None else environ
    found = dict.fromkeys(_FIELDS, "default")
    for values, path in ((settings.user, settings.user_path), (settings.project, settings.project_path)):
        table = values.get("agent", {})
        for key in table if isinstance(table, Mapping) else ():
            if key in found:
                found[key] = str(path)
    for key in _from_env(env):
        var = [v for v in (f"MEMDIR_AGENT_{key.upper()}", _SHORT_ENV.get(key)) if v and env.get(v)][-1]  # as _from_env
        found[key] = f"environment ({var})"
    return found


# -- checking -------------------------------------------------------------------------------------------------

_FIELDS = {f.name: f for f in dataclasses.fields(AgentSettings)}


def _where(path: object) -> str:
    return f"[agent] in {path}" if path is not None else "[agent]"


def _as_dict(value: AgentSettings) -> dict[str, Any]:
    return {name: getattr(value, name) for name in _FIELDS}


def _build(values: dict[str, Any]) -> AgentSettings:
    return AgentSettings(**values)


def _checked(raw: object, source: str) -> dict[str, Any]:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{source}: the agent settings must be a table")
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if value is None:
            continue  # an option that was not given
        if key not in _FIELDS:
            known = ", ".join(sorted(_FIELDS))
            raise ConfigError(f"{source}: unknown agent setting {key!r} (known: {known})")
        out[key] = _coerce(key, value, source)
    return out


def _coerce(key: str, value: Any, source: str) -> Any:
    if key == "hooks":
        return _hooks(value, source)
    if key == "subagents":
        return _subagents(value, source)
    kinds = _kinds(key)
    from_env = source == "environment" and isinstance(value, str)
    for kind in kinds:
        converted = _convert(kind, value, from_env)
        if converted is not _NO:
            if key in _CHOICES and converted not in _CHOICES[key]:
                break
            if isinstance(converted, int | float) and not isinstance(converted, bool) and converted < 0:
                raise ConfigError(f"{source}: agent setting {key!r} must not be negative, got {value!r}")
            return converted
    expected = " or ".join(_CHOICES.get(key, ())) or " or ".join(k.__name__ for k in kinds)
    raise ConfigError(f"{source}: agent setting {key!r} must be {expected}, got {value!r}")


_NO = object()


def _kinds(key: str) -> tuple[type, ...]:
    hint = typing.get_type_hints(AgentSettings)[key]
    args = [a for a in typing.get_args(hint) if a is not type(None)] if _is_union(hint) else [hint]
    return tuple(str if typing.get_origin(a) is Literal else (typing.get_origin(a) or a) for a in args)


def _is_union(hint: object) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType)


def _convert(kind: type, value: Any, from_env: bool) -> Any:
    if kind is bool:
        if isinstance(value, bool):
            return value
        if from_env and value.lower() in ("1", "true", "yes", "on", "0", "false", "no", "off"):
            return value.lower() in ("1", "true", "yes", "on")
        return _NO
    if kind is int or kind is float:
        if isinstance(value, bool):
            return _NO
        if isinstance(value, int) or (kind is float and isinstance(value, float)):
            return kind(value)
        if from_env:
            try:
                return kind(value.replace("_", ""))
            except ValueError:
                return _NO
        return _NO
    if kind is tuple:
        if from_env:
            return tuple(part.strip() for part in value.split(",") if part.strip())
        if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
            return tuple(value)
        return _NO
    return value if isinstance(value, str) else _NO


def _hooks(value: Any, source: str) -> dict[str, tuple[dict[str, Any], ...]]:
    """``{event: [{command, matcher?, timeout?}, ...]}``; a bare string is one command."""
    if not isinstance(value, Mapping):
        raise ConfigError(f"{source}: agent setting 'hooks' must be a table of events")
    hooks: dict[str, tuple[dict[str, Any], ...]] = {}
    for event, entries in value.items():
        if event not in _HOOK_EVENTS:
            raise ConfigError(f"{source}: unknown hook event {event!r} (known: {', '.join(_HOOK_EVENTS)})")
        items = entries if isinstance(entries, list) else [entries]
        hooks[event] = tuple(_hook_entry(item, event, source) for item in items)
    return hooks


def _hook_entry(item: Any, event: str, source: str) -> dict[str, Any]:
    entry = {"command": item} if isinstance(item, str) else item
    if not isinstance(entry, Mapping) or not isinstance(entry.get("command"), str) or not entry["command"].strip():
        raise ConfigError(f"{source}: each {event} hook needs a `command` string")
    unknown = set(entry) - {"command", "matcher", "timeout"}
    if unknown:
        raise ConfigError(f"{source}: unknown key {sorted(unknown)[0]!r} in a {event} hook")
    timeout = entry.get("timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0):
        raise ConfigError(f"{source}: the timeout of a {event} hook must be a positive number of seconds")
    return dict(entry)


_SUBAGENT_KEYS: dict[str, type] = {
    "description": str,
    "system": str,
    "tools": list,
    "model": str,
    "memory": str,
    "max_turns": int,
}
MEMORY_SCOPES = ("user", "project", "local")


def _subagents(value: Any, source: str) -> dict[str, dict[str, Any]]:
    """``{name: {description?, system?, tools?, model?, memory?, max_turns?}}`` (``[agent.subagents.NAME]``)."""
    if not isinstance(value, Mapping):
        raise ConfigError(f"{source}: agent setting 'subagents' must be a table of sub-agents")
    agents: dict[str, dict[str, Any]] = {}
    for name, entry in value.items():
        where = f"{source}: sub-agent {name!r}"
        if not isinstance(name, str) or not name.replace("-", "").replace("_", "").isalnum() or not name.isascii():
            raise ConfigError(f"{where}: a name is letters, digits, '-' and '_'")
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{where} must be a table")
        for key, item in entry.items():
            kind = _SUBAGENT_KEYS.get(key)
            if kind is None:
                raise ConfigError(f"{where}: unknown key {key!r} (known: {', '.join(sorted(_SUBAGENT_KEYS))})")
            if not isinstance(item, kind) or (isinstance(item, bool) and kind is int):
                raise ConfigError(f"{where}: {key!r} must be a {kind.__name__}, got {item!r}")
        if "tools" in entry and not all(isinstance(t, str) for t in entry["tools"]):
            raise ConfigError(f"{where}: 'tools' must be a list of tool names")
        if entry.get("memory") not in (None, *MEMORY_SCOPES):
            raise ConfigError(f"{where}: 'memory' must be one of {', '.join(MEMORY_SCOPES)}")
        agents[name] = dict(entry)
    return agents


def _from_env(environ: Mapping[str, str]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for name in _FIELDS:
        if name in ("hooks", "subagents"):
            continue
        for var in (f"MEMDIR_AGENT_{name.upper()}", _SHORT_ENV.get(name)):
            if var and environ.get(var):
                found[name] = environ[var]
    return found
