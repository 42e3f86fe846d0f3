"""JSON with the position of every value, so a settings file can be edited where it changes and nowhere else.

`parse` gives a `Node` tree over the text (offsets into it); `insert_member` / `append_item` return the text with
one more member or item in the indentation the file already uses, `remove_member` / `remove_item` the text
without one (its separating comma and the whitespace before it go too). Every byte outside the edit is kept.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Node", "append_item", "insert_member", "parse", "remove_item", "remove_member"]

_SPACE = re.compile(r"[ \t\n\r]*")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)  # the text was checked by `json.loads` first
_SCALAR = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null")


@dataclass
class Node:
    """A value in the text: ``text[start:end]``; an object's ``members`` ((key, key offset, value)) or an
    array's ``items``."""

    start: int
    end: int
    kind: str  # "object", "array", "string", "scalar"
    members: list[tuple[str, int, Node]] = field(default_factory=list)
    items: list[Node] = field(default_factory=list)

    def get(self, key: str) -> Node | None:
        return next((value for name, _, value in self.members if name == key), None)


def parse(text: str) -> Node:
    """The tree of ``text``; ValueError (from `json`) when it is not one JSON value."""
    json.loads(text)  # the standard parser's verdict and message first
    node, end = _value(text, _skip(text, 0))
    if _skip(text, end) != len(text):
        raise ValueError("extra data after the JSON value")
    return node


def _skip(text: str, pos: int) -> int:
    match = _SPACE.match(text, pos)
    return match.end() if match else pos


def _value(text: str, pos: int) -> tuple[Node, int]:
    char = text[pos]
    if char == "{":
        return _object(text, pos)
    if char == "[":
        return _array(text, pos)
    if char == '"':
        end = _string_end(text, pos)
        return Node(pos, end, "string"), end
    match = _SCALAR.match(text, pos)
    if match is None:
        raise ValueError(f"unexpected {char!r} at offset {pos}")
    return Node(pos, match.end(), "scalar"), match.end()


def _string_end(text: str, pos: int) -> int:
    match = _STRING.match(text, pos)
    if match is None:
        raise ValueError(f"unterminated string at offset {pos}")
    return match.end()


def _object(text: str, pos: int) -> tuple[Node, int]:
    node = Node(pos, pos, "object")
    pos = _skip(text, pos + 1)
    while text[pos] != "}":
        after = _string_end(text, pos)
        key = json.loads(text[pos:after])
        value, end = _value(text, _skip(text, _skip(text, after) + 1))  # past the colon
        node.members.append((key, pos, value))
        pos = _skip(text, end)
        if text[pos] == ",":
            pos = _skip(text, pos + 1)
    node.end = pos + 1
    return node, node.end


def _array(text: str, pos: int) -> tuple[Node, int]:
    node = Node(pos, pos, "array")
    pos = _skip(text, pos + 1)
    while text[pos] != "]":
        item, end = _value(text, pos)
        node.items.append(item)
        pos = _skip(text, end)
        if text[pos] == ",":
            pos = _skip(text, pos + 1)
    node.end = pos + 1
    return node, node.end


def _line_indent(text: str, pos: int) -> str:
    start = text.rfind("\n", 0, pos) + 1
    line = text[start:pos]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _style(text: str, container: Node, first: int | None) -> tuple[str, str] | None:
    """(indentation of the container's entries, one indentation step) in a pretty-printed file; None when the
    container is written on one line."""
    outer = _line_indent(text, container.start)
    if first is not None:
        if "\n" not in text[container.start : first]:
            return None
        inner = _line_indent(text, first)
        return inner, inner[len(outer) :] or "  "
    if "\n" not in text:
        return None
    step = _first_step(text) or "  "
    return outer + step, step


def _first_step(text: str) -> str:
    """The indentation of the file's first indented line: the step it is written with."""
    for line in text.split("\n")[1:]:
        stripped = line.lstrip(" \t")
        if stripped and len(stripped) < len(line):
            return line[: len(line) - len(stripped)]
    return ""


def newline_of(text: str) -> str:
    """The line ending the file is written with (its first line's): what added lines end with, so a CRLF file
    stays CRLF."""
    end = text.find("\n")
    return "\r\n" if end > 0 and text[end - 1] == "\r" else "\n"


def _render(value: Any, style: tuple[str, str] | None, newline: str) -> str:
    if style is None:
        return json.dumps(value, ensure_ascii=False)
    inner, step = style
    indent = len(step) if step.strip(" ") == "" else step
    text = json.dumps(value, ensure_ascii=False, indent=indent)
    return text.replace("\n", newline + inner)


def _insert(text: str, container: Node, entry: str, style: tuple[str, str] | None, last_end: int | None) -> str:
    newline = newline_of(text)
    if last_end is not None:
        if style is None:
            return text[:last_end] + ", " + entry + text[last_end:]
        return text[:last_end] + "," + newline + style[0] + entry + text[last_end:]
    close = container.end - 1
    if style is None:
        return text[: container.start + 1] + entry + text[close:]
    outer = _line_indent(text, container.start)
    return text[: container.start + 1] + newline + style[0] + entry + newline + outer + text[close:]


def insert_member(text: str, obj: Node, key: str, value: Any) -> str:
    """``text`` with ``"key": value`` added as the last member of ``obj``."""
    first = obj.members[0][1] if obj.members else None
    style = _style(text, obj, first)
    entry = json.dumps(key, ensure_ascii=False) + ": " + _render(value, style, newline_of(text))
    return _insert(text, obj, entry, style, obj.members[-1][2].end if obj.members else None)


def append_item(text: str, array: Node, value: Any) -> str:
    """``text`` with ``value`` added as the last item of ``array``."""
    first = array.items[0].start if array.items else None
    style = _style(text, array, first)
    entry = _render(value, style, newline_of(text))
    return _insert(text, array, entry, style, array.items[-1].end if array.items else None)


def _cut(text: str, spans: list[tuple[int, int]], index: int, container: Node) -> str:
    """``text`` without the entry ``spans[index]`` and one separator next to it."""
    start, end = spans[index]
    if index > 0:
        start = spans[index - 1][1]  # from the end of the one before: its comma goes
    elif len(spans) > 1:
        end = spans[1][0]  # up to the next one: this entry's comma goes
    else:
        start, end = container.start + 1, container.end - 1  # the last one: the container is left empty
    return text[:start] + text[end:]


def remove_member(text: str, obj: Node, key: str) -> str:
    spans = [(offset, value.end) for _, offset, value in obj.members]
    index = next(i for i, (name, _, _) in enumerate(obj.members) if name == key)
    return _cut(text, spans, index, obj)


def remove_item(text: str, array: Node, index: int) -> str:
    return _cut(text, [(item.start, item.end) for item in array.items], index, array)
