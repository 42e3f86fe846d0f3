"""The model's arguments: checked for presence and type, with messages that say what was wrong."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal, TypeGuard

__all__ = ["COMMANDS", "Args", "Command", "Refusal", "check_range", "decode", "encodable", "occurrences"]

Command = Literal["view", "create", "str_replace", "insert", "delete", "rename"]
COMMANDS: tuple[Command, ...] = ("view", "create", "str_replace", "insert", "delete", "rename")


class Refusal(Exception):
    """A command refused with a finished message (internal: becomes an error result)."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


class Args:
    """The model's arguments, checked for presence and type with messages that say what was wrong."""

    def __init__(self, command: Command, values: Mapping[str, Any]) -> None:
        self.command = command
        self._values = values

    @classmethod
    def of(cls, raw: Mapping[str, Any] | object) -> Args:
        if type(raw) is not dict and not isinstance(raw, Mapping):  # the common case without an ABC check
            raise Refusal("Error: The memory tool expects a JSON object with a `command` field.")
        command = raw.get("command")
        if command in COMMANDS:
            return cls(command, raw)
        choices = ", ".join(COMMANDS)
        if command is None:
            raise Refusal(f"Error: Missing required parameter `command`. Use one of: {choices}.")
        shown = command if isinstance(command, str) else json.dumps(command, default=str)
        raise Refusal(f"Error: Unknown command `{shown[:100]}`. Use one of: {choices}.")

    @property
    def values(self) -> Mapping[str, Any]:
        return self._values

    def raw(self, name: str) -> object:
        return self._values.get(name)

    def text(self, name: str, *, default: str | None = None) -> str:
        value = self._values.get(name)
        if value is None:
            if default is not None:
                return default
            raise Refusal(f"Error: Missing required parameter `{name}` for command `{self.command}`.")
        if not isinstance(value, str):
            raise Refusal(
                f"Error: Parameter `{name}` of command `{self.command}` must be a string, got {_kind(value)}."
            )
        return value

    def integer(self, name: str) -> int:
        value = self._values.get(name)
        if value is None:
            raise Refusal(f"Error: Missing required parameter `{name}` for command `{self.command}`.")
        if isinstance(value, bool) or not isinstance(value, int):
            raise Refusal(
                f"Error: Parameter `{name}` of command `{self.command}` must be an integer, got {_kind(value)}."
            )
        return value


def _kind(value: object) -> str:
    names = {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "an array",
        dict: "an object",
    }
    return next((text for typ, text in names.items() if isinstance(value, typ)), "an unsupported value")


def encodable(text: str, what: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise Refusal(
            f"Error: Parameter `{what}` is not valid UTF-8 text (it contains an unpaired surrogate). "
            "Nothing was written."
        ) from None


def decode(path: str, content: bytes) -> str:
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Refusal(
            f"Error: The file {path} is not valid UTF-8 text (invalid byte at offset {exc.start:,}), so it "
            "cannot be shown or edited as text. Its bytes are unchanged."
        ) from None


def check_range(path: str, view_range: object, n_lines: int) -> tuple[int, int]:
    """``[start, end]`` or ``[start, -1]`` within the file; an ``end`` past the last line reads to the end."""
    if isinstance(view_range, list | tuple) and len(view_range) == 2:
        start, end = view_range[0], view_range[1]
        if _is_int(start) and _is_int(end):
            end = n_lines if end == -1 else min(end, n_lines)
            if 1 <= start <= n_lines and start <= end:
                return start, end
    shown = json.dumps(view_range, default=str)[:100]
    if n_lines == 0:
        raise Refusal(f"Error: Invalid `view_range` parameter: {shown}. The file {path} is empty.")
    # The bound stated is the one applied: an end past the last line is accepted (it reads to the end).
    lines = f"{n_lines:,} line{'' if n_lines == 1 else 's'}"
    raise Refusal(
        f"Error: Invalid `view_range` parameter: {shown}. It should be two integers [start, end] with "
        f"1 <= start <= {n_lines:,} and start <= end, or [start, -1] to read to the end; {path} has {lines}."
    )


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def occurrences(text: str, needle: str) -> list[int]:
    """Start offsets of ``needle``, overlapping ones included (``aa`` occurs twice in ``aaa``: ambiguous)."""
    found: list[int] = []
    start = text.find(needle)
    while start != -1:
        found.append(start)
        if len(found) > 1000:
            break
        start = text.find(needle, start + 1)
    return found
