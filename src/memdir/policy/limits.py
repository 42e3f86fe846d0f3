"""Size and count limits (SPEC.md "Limits"; every default configurable)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from ..errors import ConfigError

__all__ = ["Limits", "limits_from_section"]

KIB = 1024
MIB = 1024 * KIB


@dataclass(frozen=True, slots=True)
class Limits:
    """What one command may do. ``None`` turns a limit off."""

    max_file_bytes: int | None = 100 * KIB  # one text file, UTF-8 bytes
    max_image_bytes: int | None = 5 * MIB  # one image shown by `view`
    max_files: int | None = 10_000  # files in one namespace
    max_total_bytes: int | None = 50 * MIB  # bytes in one namespace
    max_view_chars: int = 16_000  # a view (file or listing) longer than this is cut at a line boundary
    max_lines: int = 999_999  # a file with more lines cannot be viewed

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> Limits:
        """Build from keyword options, refusing names that are not limits (a typo must not pass silently)."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(options) - names)
        if unknown:
            raise TypeError(f"unknown memory tool option(s): {', '.join(unknown)}; limits are {sorted(names)}")
        return cls(**options)


# The limits a setting may turn off ("none"); the others bound what one view shows and always apply.
_OPTIONAL = frozenset({"max_file_bytes", "max_image_bytes", "max_files", "max_total_bytes"})


def limits_from_section(section: dict[str, Any], namespace: str) -> Limits:
    """The ``[limits]`` table of the settings for ``namespace`` (``[limits.namespaces.NAME]`` over the rest): each
    key a `Limits` field, a whole number from 1, or ``"none"`` for the namespace and file limits."""
    namespaces = section.get("namespaces", {})
    own = namespaces.get(namespace, {}) if isinstance(namespaces, dict) else None
    if not isinstance(own, dict):
        raise ConfigError("settings: [limits.namespaces] must be a table of tables")
    merged = {**{k: v for k, v in section.items() if k != "namespaces"}, **own}
    names = {f.name for f in fields(Limits)}
    unknown = sorted(set(merged) - names)
    if unknown:
        raise ConfigError(
            f"settings: unknown key(s) in [limits]: {', '.join(unknown)}; known: {', '.join(sorted(names))}"
        )
    values: dict[str, Any] = {name: _limit(name, value) for name, value in merged.items()}  # None only if optional
    return Limits(**values)


def _limit(name: str, value: object) -> int | None:
    if value == "none" and name in _OPTIONAL:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        off = ' or "none"' if name in _OPTIONAL else ""
        raise ConfigError(f"settings: limits.{name} must be a whole number from 1{off}, got {value!r}")
    return value
