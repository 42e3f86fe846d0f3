"""The text shapes the model reads: human sizes and numbered lines (SPEC.md "view"); whether a string is text at
all (`is_text`); and text made safe to show on a terminal or in a one-line result (`shown`)."""

from __future__ import annotations

import re

__all__ = ["human_size", "is_text", "number_lines", "shown", "split_lines"]

_UNITS = ("K", "M", "G", "T")
LINE_NUMBER_WIDTH = 6


def human_size(size: int) -> str:
    """``{n}B`` below 1024 bytes; above, one decimal and a unit: ``1.0K``, ``5.5K``, ``1.2M``, ``2.0G``."""
    if size < 1024:
        return f"{size}B"
    value = float(size)
    for unit in _UNITS:
        value /= 1024
        # Move up a unit when rounding would print 1024.0 of this one.
        if round(value, 1) < 1024 or unit == _UNITS[-1]:
            return f"{value:.1f}{unit}"
    raise AssertionError("unreachable")


def split_lines(text: str) -> list[str]:
    """Lines split on LF (a CR stays part of its line); a final newline does not make an extra empty line."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def number_lines(lines: list[str], first: int) -> list[str]:
    """``{n:>6}\\t{line}`` for each line, numbered from ``first``."""
    return [f"{n:>{LINE_NUMBER_WIDTH}}\t{line}" for n, line in enumerate(lines, start=first)]


def is_text(text: str) -> bool:
    """Whether ``text`` can be stored as UTF-8: JSON's ``"\\ud800"`` and an invalid byte in a command-line argument
    decode to an unpaired surrogate, which no file, database or answer can hold."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# What a terminal would act on instead of showing: C0 controls but tab and newline (an escape sequence can move the
# cursor, erase lines, set the window title or the clipboard), DEL, C1 controls, and the bidirectional controls that
# reorder a line as shown ("Trojan Source"). Memory holds what a model wrote, and a model can be led to write
# anything: a held write shown for review must read on screen as it will be stored.
_ACTED_ON = "\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"  # DEL, C1, bidirectional controls
_UNSAFE = re.compile(f"[\x00-\x08\x0b-\x1f{_ACTED_ON}]")  # and C0 but tab and newline
_UNSAFE_CELL = re.compile(f"[\x00-\x1f{_ACTED_ON}]")  # and every C0 control


def shown(text: str, *, cell: bool = False) -> str:
    """``text`` safe to print: what a terminal would act on escaped as ``\\x1b``, ``\\u202e``... Tabs and line
    breaks are kept, unless ``cell`` (a table cell, a tab-separated field, a one-line message: no tab, no break)."""
    unsafe = _UNSAFE_CELL if cell else _UNSAFE
    if unsafe.search(text) is None:
        return text
    return unsafe.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)
