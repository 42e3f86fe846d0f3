"""The injection rules' cheap gates: the strings each rule of `memdir.policy.injection` needs in a text before its
expression can match, found in one pass (`memdir.policy._hints`), and the rules they let through.
"""

from __future__ import annotations

from ._hints import SPACES, Gated, HintSearch
from ._injection_sentences import _ASK_LITERALS, _TASK_VERBS

__all__ = ["_GATES", "_HINTS", "_enabled", "_may_match"]


# Every rule needs one of these in the lower-cased text: a string, or (a tuple of groups) one string of each group
# (each derived from the literal parts of the rule's expression). Checking them costs a microsecond; running a
# rule's expression over a note tens, and the tool screens every write. The cheap tests must be *necessary*
# conditions: a rule skipped here can never have matched.
_Gate = tuple[str | tuple[tuple[str, ...], ...], ...]
_HINTS: dict[str, _Gate] = {
    "override-instructions": (
        "ignore", "disregard", "forget", "overrid", "overrul", "bypass", "skip", "drop", "abandon", "discard",
    ),
    "new-instructions": ("instruction", "from now on", "your new", "your real", "your true", "your actual"),
    "fake-turn": (
        "sys", "assistant", "developer", "<|", "im_start", "im_end", "endoftext", "header_id", "inst]", "admin",
        "human:", "user:", "ai:", "claude:", "chatgpt:",
    ),
    # "mode" alone is in every "model": the mode switch needs one of its verbs too.
    "persona-switch": (
        "you are now", "you are no longer", "act as ", (("mode",), ("enter", "enable", "activate", "switch to")),
    ),
    # "ai" only after white space (every "ai" the expression matches follows \s+ or a literal space): as a bare
    # substring it is in "email", "again", "detail". "you" only after the words the expression puts before it (a
    # bare "you" is in most notes).
    "addressed-to-ai": (
        "assistant", "model", "llm", "chatbot", "agent", "claude", "gpt",
        "when you", "while you", "if you", "before you", "after you",
        *(space + "ai" for space in SPACES),
    ),
    "conceal-from-user": ("user", "human", "owner", "operator"),
    "response-steering": (
        "answer", "respons", "respond", "repl", "output", "message", "summar", "completion", "write", "speak", "talk",
    ),
    # Sending somewhere needs a verb and an address (a URL or an e-mail address); a tracking image neither.
    "exfiltration": (
        "![",
        (
            ("http", "www.", "@"),
            ("send", "forward", "post", "upload", "mail", "transmit", "submit", "leak", "exfiltrat", "copy"),
        ),
    ),
    "hostile-code": ("code", "python", "shell", "bash"),
    "hidden-markup": ("<!--", "style"),
}  # fmt: skip

_GATES = HintSearch(
    [h for gate in _HINTS.values() for h in gate if isinstance(h, str)]
    + [h for gate in _HINTS.values() for h in gate if not isinstance(h, str) for group in h for h in group]
    + [*_TASK_VERBS, *_ASK_LITERALS]
)


# Each rule's gate as sets, tested in C: any of its single hints, or one of each group of a conjunction.
_SINGLE = {rule: frozenset(h for h in gate if isinstance(h, str)) for rule, gate in _HINTS.items()}
_BOTH = {
    rule: [tuple(frozenset(group) for group in hint) for hint in gate if not isinstance(hint, str)]
    for rule, gate in _HINTS.items()
}


def _may_match(rule: str, found: set[str]) -> bool:
    """Whether ``rule`` can match a text holding the hints ``found`` (`_GATES`, in the text lower-cased)."""
    if not found.isdisjoint(_SINGLE[rule]):
        return True
    return any(all(not found.isdisjoint(group) for group in groups) for groups in _BOTH[rule])


# `_may_match` for every rule at once: the rules each hint lets through by itself, then the few with conjunctions.
_THROUGH = Gated(_SINGLE)
_CONJOINED = tuple(rule for rule, groups in _BOTH.items() if groups)


def _enabled(found: set[str]) -> set[str]:
    """The rules whose gate passes on a text holding the hints ``found``: {r for r in rules if _may_match(r, found)}."""
    enabled = _THROUGH.through(found)
    enabled.update(rule for rule in _CONJOINED if rule not in enabled and _may_match(rule, found))
    return enabled
