"""The ``[policy]`` settings: write-policy actions, expiry rules and history retention, per namespace.

```toml
[policy]
secrets = "redact"                 # allow | warn | redact | quarantine | block
injection = "warn"
untrusted_injection = "quarantine" # for content whose source is marked untrusted (default: as `injection`)
keep_versions = "90d"              # `memdir gc --apply` prunes versions superseded longer ago (default: keep all)

[policy.ttl]                       # files not read or written for this long expire (`memdir gc`)
"scratch/**" = "7d"                # globs relative to /memories: `*` within a name, `**` across directories
"inbox/*.md" = "30d"

[policy.namespaces.work]           # a namespace's own values win over the ones above
injection = "quarantine"
[policy.namespaces.work.ttl]
"drafts/**" = "1d"                 # a namespace's rules are tried before the general ones
```

Durations are a number and a unit (``s``, ``m``, ``h``, ``d``, ``w``), or a number of seconds. The first TTL
rule whose glob matches a file applies.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..settings import load_settings
from .findings import check_action, strongest
from .pipeline import WritePolicy

if TYPE_CHECKING:
    from ..paths import MemoryPath
    from ..settings import Settings
    from .findings import Action

__all__ = ["PolicyConfig", "TtlRule", "load_policy", "parse_duration", "policy_from_section"]

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*", re.IGNORECASE)
_KEYS = frozenset({"secrets", "injection", "untrusted_injection", "keep_versions", "ttl", "namespaces"})


def parse_duration(value: object, where: str = "duration") -> float:
    """Seconds in ``"7d"``, ``"12h"``, ``"30m"``, ``"2w"``, ``"90s"`` or a plain number of seconds."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    match = _DURATION.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise ConfigError(f'settings: {where} must be a duration such as "7d", "12h" or "30m", got {value!r}')
    return float(match.group(1)) * _UNITS[(match.group(2) or "s").lower()]


@dataclass(frozen=True, slots=True)
class TtlRule:
    """Files matching ``pattern`` expire ``seconds`` after they were last read or written."""

    pattern: str
    seconds: float

    @property
    def parts(self) -> tuple[str, ...]:
        text = self.pattern.strip()
        for prefix in ("/memories/", "memories/", "/"):
            text = text.removeprefix(prefix)
        return tuple(p for p in text.split("/") if p)

    def matches(self, path: MemoryPath) -> bool:
        return _glob(self.parts, path.parts)


def _glob(pattern: tuple[str, ...], parts: tuple[str, ...]) -> bool:
    """``**`` matches any number of segments (none included); other segments match one name (fnmatch)."""
    if not pattern:
        return not parts
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(_glob(rest, parts[i:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatch.fnmatchcase(parts[0], head) and _glob(rest, parts[1:])


@dataclass(frozen=True, slots=True)
class PolicyConfig:
    """Everything ``[policy]`` says for one namespace."""

    write: WritePolicy = field(default_factory=WritePolicy)
    ttl: tuple[TtlRule, ...] = ()
    keep_versions: float | None = None  # seconds; None keeps every version

    def ttl_for(self, path: MemoryPath) -> TtlRule | None:
        return next((rule for rule in self.ttl if rule.matches(path)), None)


def policy_from_section(section: dict[str, Any], namespace: str) -> PolicyConfig:
    """Build the config of ``namespace`` from a ``[policy]`` table; `ConfigError` names what is wrong."""
    _check_keys(section, "[policy]")
    namespaces = section.get("namespaces", {})
    if not isinstance(namespaces, dict):
        raise ConfigError("settings: [policy.namespaces] must be a table of tables")
    own = namespaces.get(namespace, {})
    if not isinstance(own, dict):
        raise ConfigError(f"settings: [policy.namespaces.{namespace}] must be a table")
    _check_keys(own, f"[policy.namespaces.{namespace}]", nested=False)
    merged = {**section, **own}
    try:
        write = WritePolicy(
            secrets=check_action(merged.get("secrets", "redact"), "policy.secrets"),
            injection=check_action(merged.get("injection", "warn"), "policy.injection"),
            untrusted_injection=(
                None
                if merged.get("untrusted_injection") is None
                else check_action(merged["untrusted_injection"], "policy.untrusted_injection")
            ),
        )
    except ValueError as exc:
        raise ConfigError(f"settings: {exc}") from exc
    keep = merged.get("keep_versions")
    return PolicyConfig(
        write=write,
        ttl=_ttl_rules(own.get("ttl", {}), namespace) + _ttl_rules(section.get("ttl", {}), None),
        keep_versions=None if keep is None else parse_duration(keep, "policy.keep_versions"),
    )


def load_policy(namespace: str = "default", settings: Settings | None = None) -> PolicyConfig:
    """The policy the user's and the project's settings give ``namespace`` (the defaults when they say nothing).
    A project's file may make the write policy stricter, never weaker than the user's own (or the defaults): a
    cloned repository must not turn off the redaction of what memory collects while one works in it
    (`weakened_by_project` says what was set aside)."""
    settings = settings or load_settings()
    config = policy_from_section(settings.section("policy"), namespace)
    if not settings.project.get("policy"):
        return config
    own = policy_from_section(_table(settings.user), namespace).write
    return dataclasses.replace(config, write=_no_weaker(config.write, own))


def weakened_by_project(settings: Settings) -> list[str]:
    """One line per action a project's ``[policy]`` sets weaker than the user's own (or the defaults): it is set
    aside (`load_policy`), and these lines say so (``memdir`` prints them as warnings)."""
    project = _table(settings.project)
    if not project:  # most projects set no policy: nothing to compare
        return []
    namespaces = project.get("namespaces", {})
    tables = {"default": project} | (
        {name: table for name, table in namespaces.items() if isinstance(table, dict)}
        if isinstance(namespaces, dict)
        else {}
    )
    lines: list[str] = []
    for namespace, table in tables.items():
        asked = policy_from_section(_table(settings.merged), namespace).write
        own = policy_from_section(_table(settings.user), namespace).write
        where = "[policy]" if table is project else f"[policy.namespaces.{namespace}]"
        for key, wanted, kept in _actions(asked, own):
            if wanted != kept and key in table:
                lines.append(
                    f"{settings.project_path}: {where} {key} = {wanted!r} is weaker than your own setting "
                    f"({kept!r}); a project may only make the policy stricter, so it is ignored"
                )
    return lines


def _table(values: dict[str, Any]) -> dict[str, Any]:
    table = values.get("policy", {})
    return table if isinstance(table, dict) else {}


def _effective_untrusted(policy: WritePolicy) -> Action:
    return policy.untrusted_injection or policy.injection


def _actions(asked: WritePolicy, own: WritePolicy) -> list[tuple[str, Action, Action]]:
    """(key, the action asked for, the action kept) for each action of the write policy."""
    kept = _no_weaker(asked, own)
    return [
        ("secrets", asked.secrets, kept.secrets),
        ("injection", asked.injection, kept.injection),
        ("untrusted_injection", _effective_untrusted(asked), _effective_untrusted(kept)),
    ]


def _no_weaker(asked: WritePolicy, own: WritePolicy) -> WritePolicy:
    """``asked`` with each action at least as strict as in ``own``."""
    injection = strongest([asked.injection, own.injection])
    untrusted = strongest([_effective_untrusted(asked), _effective_untrusted(own)])
    return WritePolicy(
        secrets=strongest([asked.secrets, own.secrets]),
        injection=injection,
        untrusted_injection=None if untrusted == injection else untrusted,
    )


def _check_keys(table: dict[str, Any], where: str, *, nested: bool = True) -> None:
    allowed = _KEYS if nested else _KEYS - {"namespaces"}
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise ConfigError(
            f"settings: unknown key(s) in {where}: {', '.join(unknown)}; known: {', '.join(sorted(allowed))}"
        )


def _ttl_rules(table: object, namespace: str | None) -> tuple[TtlRule, ...]:
    where = "policy.ttl" if namespace is None else f"policy.namespaces.{namespace}.ttl"
    if not isinstance(table, dict):
        raise ConfigError(f"settings: [{where}] must be a table of glob = duration")
    return tuple(TtlRule(str(glob), parse_duration(value, f'{where}."{glob}"')) for glob, value in table.items())
