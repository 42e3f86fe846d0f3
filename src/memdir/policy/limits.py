"""Size and count limits (SPEC.md "Limits"; every default configurable)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

__all__ = ["Limits"]

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
