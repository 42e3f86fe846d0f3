"""What `memdir doctor` finds: `Finding`, and the `Report` that collects them and runs the repairs."""

from __future__ import annotations

import dataclasses
import sqlite3
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from ..errors import MemdirError

if TYPE_CHECKING:
    from collections.abc import Callable


__all__ = ["Finding", "Report", "Severity"]

Severity = Literal["info", "warning", "error"]


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing found. ``where`` is relative to the store; ``repaired`` says what a repair did (None: nothing).
    ``info`` findings are not problems."""

    severity: Severity
    where: str
    problem: str
    repaired: str | None = None

    @property
    def remains(self) -> bool:
        return self.severity != "info" and self.repaired is None


@dataclass(slots=True)
class Report:
    url: str
    kind: str
    findings: list[Finding] = field(default_factory=list)

    def add(self, severity: Severity, where: str, problem: str, repaired: str | None = None) -> int:
        """Record a finding; its index, for `repaired`."""
        self.findings.append(Finding(severity, where, problem, repaired))
        return len(self.findings) - 1

    def repaired(self, index: int, action: Callable[[], str | None]) -> None:
        """Run the repair of finding ``index`` and record what it did. A repair that fails becomes a finding
        of its own (the problem then remains)."""
        try:
            done = action()
        except (MemdirError, OSError, sqlite3.Error) as exc:
            self.add("error", self.findings[index].where, f"the repair failed: {reason(exc)}")
            return
        if done is not None:
            self.findings[index] = dataclasses.replace(self.findings[index], repaired=done)

    @property
    def problems(self) -> list[Finding]:
        return [f for f in self.findings if f.severity != "info"]

    @property
    def ok(self) -> bool:
        """True when no problem remains (after the repairs, if any were made)."""
        return not any(f.remains for f in self.findings)


def reason(exc: BaseException) -> str:
    if isinstance(exc, OSError):
        return (exc.strerror or type(exc).__name__).lower()
    return str(exc).removeprefix("Error: ")
