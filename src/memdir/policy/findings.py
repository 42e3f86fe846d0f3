"""What a check finds in a piece of text, and what the write policy does about it.

A `Finding` names a span of the text (character offsets), its ``kind`` (``secret``, ``injection``), the
``rule`` that matched (``aws-access-key``, ``override-instructions``...), a ``detail`` for people and the
``action`` the policy takes. A finding never carries the matched text itself: findings go into tool results,
the audit log and the quarantine, and a secret must reach none of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, get_args

__all__ = ["ACTIONS", "Action", "Finding", "Kind", "check_action", "strongest"]

Action = Literal["allow", "warn", "redact", "quarantine", "block"]
Kind = Literal["secret", "injection"]
ACTIONS: tuple[Action, ...] = get_args(Action)

# Later in the tuple is stronger: a write gets the strongest action any of its findings calls for.
_RANK = {action: rank for rank, action in enumerate(ACTIONS)}


@dataclass(frozen=True, slots=True)
class Finding:
    """One match of one rule: ``span`` is ``(start, end)`` in the text that was scanned."""

    kind: Kind
    rule: str
    span: tuple[int, int]
    detail: str
    action: Action = "warn"
    line: int = 1  # 1-based line of the span's start, for people
    # The whole match that found the span, when wider than it (the key word of ``API_KEY=...``, the URL around a
    # password): what an edit must overlap or touch for the finding to count as the edit's. Not recorded: a
    # finding read back from the quarantine or the audit log is judged by its span.
    reach: tuple[int, int] | None = field(default=None, compare=False)

    @property
    def extent(self) -> tuple[int, int]:
        """The span and the match around it, together."""
        if self.reach is None:
            return self.span
        return min(self.span[0], self.reach[0]), max(self.span[1], self.reach[1])

    @property
    def label(self) -> str:
        """What a redaction leaves in place of the span: ``[REDACTED:aws-access-key]``."""
        return f"[REDACTED:{self.rule}]"

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "rule": self.rule,
            "action": self.action,
            "span": list(self.span),
            "line": self.line,
            "detail": self.detail,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Finding:
        start, end = data["span"]
        return cls(data["kind"], data["rule"], (int(start), int(end)), data["detail"], data["action"], data["line"])


def strongest(actions: list[Action]) -> Action:
    """The strongest of ``actions`` (``allow`` for none)."""
    return max(actions, key=_RANK.__getitem__, default="allow")


def check_action(value: object, where: str) -> Action:
    """``value`` as an `Action`, or ValueError naming ``where`` and the choices."""
    for action in ACTIONS:
        if value == action:
            return action
    raise ValueError(f"{where} must be one of {', '.join(ACTIONS)}, got {value!r}")


def contains_any(text: str, hints: tuple[str, ...]) -> bool:
    """Whether ``text`` holds one of ``hints``: the rules' cheap gate (a substring search costs a microsecond,
    a rule's expression over a note tens)."""
    for hint in hints:  # noqa: SIM110 (a plain loop: a generator per rule and note costs as much as the searches)
        if hint in text:
            return True
    return False
