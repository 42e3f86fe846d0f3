"""The text shapes the model reads: human sizes and numbered lines (SPEC.md "view"); and whether a string is text
at all (`is_text`)."""

from __future__ import annotations

__all__ = ["human_size", "is_text", "number_lines", "split_lines"]

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
