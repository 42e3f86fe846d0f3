"""Text memdir did not write, made safe to put inside one of its own wrapper tags (`prompts.WRAPPER_TAGS`).

The agent frames what it loads for the model in tags: ``<memory-backfill>`` (reference material, not
instructions), ``<project-instructions>`` ("Follow them"), ``<session-context>``, ``<conversation-summary>``,
``<transcript>``. The model reads the tags as the application's framing, so a memory note, a hook's output or a
summary that holds ``</memory-backfill>`` followed by a ``<project-instructions>`` block of its own would leave
the "not instructions" wrapper and pass itself off as the project's rules. `quoted` turns every such tag inside
the text into one that is not a tag; `fill` puts quoted values into a prompt template. Every wrapper goes
through one of the two.

A tag is found as the model would read it: any case, white space after ``<`` and around ``/``, attributes, a
missing ``>``, and under every disguise the write policy undoes (a full-width ``<``, ``&lt;``, ``%3C``, ``\\u003c``,
look-alike letters, zero-width characters: `memdir.policy._disguise`).
"""

from __future__ import annotations

import re

# The write policy's reading of disguised text: a second copy of its tables here would drift from the gate's.
from ..policy import undisguised
from .prompts import WRAPPER_TAGS

__all__ = ["fill", "quoted"]

# ``<``, white space, an optional ``/``, a wrapper's name (not the start of a longer name), then what is left of
# the tag on its line up to ``>`` if there is one: ``</ Memory-Backfill >``, ``<project-instructions x="y">``,
# ``<transcript`` at the end of a line. Not across lines, so a stray ``<transcript`` cannot swallow a paragraph.
_TAG = re.compile(
    r"<\s*/?\s*(?:" + "|".join(map(re.escape, WRAPPER_TAGS)) + r")(?![\w-])(?:[^<>\n]*>)?",
    re.IGNORECASE,
)


def quoted(text: str) -> str:
    """``text`` with each of memdir's wrapper tags in it shown in square brackets: ``</memory-backfill>`` becomes
    ``[/memory-backfill]``. Text without one is returned as it is."""
    view = undisguised(text)
    plain = text if view is None else view.text
    if _TAG.search(plain) is None:  # the common case: nothing to change
        return text
    parts: list[str] = []
    cursor = 0
    for match in _TAG.finditer(plain):
        start, end = match.span() if view is None else view.span(*match.span())
        start = max(start, cursor)  # an encoded run can hold two tags: spans of one group of characters overlap
        parts += [text[cursor:start], _bracketed(match.group())]
        cursor = max(end, start)
    parts.append(text[cursor:])
    return "".join(parts)


def _bracketed(tag: str) -> str:
    """A tag as the model read it, in square brackets. Why brackets rather than ``&lt;`` or an inserted marker:
    the words stay as they were (a note *about* the tags still reads right), ASCII brackets are no disguise of
    ``<`` that a model, or the policy's reading, would undo (``&lt;`` is one), and no wrapper is ever written so."""
    inner = tag[1:-1] if tag.endswith(">") else tag[1:]
    return f"[{inner}]"


def fill(template: str, **fields: str) -> str:
    """``template`` formatted with every field `quoted`: each value put into a wrapper is text memdir did not
    write (a file, a hook's output, a transcript) or, where it did (an event's name), holds no tag to change."""
    return template.format(**{name: quoted(value) for name, value in fields.items()})
