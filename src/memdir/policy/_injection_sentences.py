"""The sentences of a text, and which of them ask something of an assistant: the reading behind the injection
rule for a foreign directive in data (`memdir.policy.injection`).

A sentence asks when it is an imperative task ("Describe the..."), a question ("What is...?"), or a request, role
or scene set up for an assistant ("Can you...?", "Imagine you are..."). `_Reading` splits a text into sentences
and keeps those that ask; `_content_words` are the words a sentence and the text around it are compared by;
`_DATA_MARKERS` are the signs that a text is mostly data (e-mail headers, code, prices, lists). Reading is the
detector's costliest step, so `_may_ask` is a cheap necessary condition, from the hints the gates found
(`memdir.policy._injection_gates`), that lets most notes skip it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["_ASK_LITERALS", "_DATA_MARKERS", "_TASK_VERBS", "_Reading", "_content_words", "_is_request", "_may_ask"]

_I = re.IGNORECASE  # as in `memdir.policy.injection`


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_TASK_VERBS = _words(
    """analyze analyse answer assess brainstorm calculate categorize classify compare compile compose convert create
    critique define describe design detail determine develop discuss draft elaborate enumerate estimate evaluate
    explain explore express find generate give identify illustrate imagine interpret list name narrate offer outline
    paraphrase predict produce propose provide rank rate rearrange recommend recount rephrase respond reverse
    rewrite scramble share sketch solve sort state suggest summarize summarise tell translate write"""
)
_QUESTION_START = _words(
    "what how why who whom whose which when where can could would will is are do does did should may"
)
_LEAD_IN = re.compile(r"^(?:please|kindly|also|now|then|and|finally|additionally|first|next|lastly)[,\s]+", _I)
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]+")
_STOP = _words(
    """a an the and or but if then than that this these those there here of to in on at by for with from as into onto
    about over under after before between through during without within is are was were be been being am do does did
    done have has had having can could would should will shall may might must it its it's i me my we our you your
    yours he him his she her they them their what which who whom whose when where why how all any some each every no
    not nor so too very just also only own same such more most other few both up down out off again further once
    please kindly one two new use using used make made get got let like well reply respond response answer email
    e-mail message question questions information help thank thanks hi hello dear"""
)
_SENTENCE = re.compile(r"[^\n.!?]*(?:[.!?]+|\n|$)")
_DATA_MARKERS = re.compile(
    r"(?im)^(?:subject|from|to|cc|date|sent|received date|email_from|content)\s*:"
    r"|\|(?:EMAIL_FROM|RECEIVED DATE|CONTENT):|```|^\s*(?:import|from \w+ import|def |class |return |print\()"
    r"|[$€£]\s?\d[\d,.]*|\b\d{1,2}:\d{2}\b|^\s*[-*•]\s+\S|^\s*#{1,6}\s|\b(?:https?://|www\.)\S+"
    r"|(?:^|\s)(?:Hi|Hello|Dear)\s+[A-Z][a-z]+\s*[,\n]|\b(?:regards|sincerely|thanks|cheers),?\s*$"
)


@dataclass(frozen=True, slots=True)
class _Unit:
    start: int
    end: int
    text: str


def _units(text: str) -> list[_Unit]:
    """Sentences (split at ``.!?`` and line ends), with their offsets; empty ones left out."""
    units: list[_Unit] = []
    for match in _SENTENCE.finditer(text):
        raw = match.group(0)
        stripped = raw.strip()
        if len(stripped) >= 3:
            lead = len(raw) - len(raw.lstrip())
            units.append(_Unit(match.start() + lead, match.start() + lead + len(stripped), stripped))
    return units


def _content_words(text: str) -> set[str]:
    return {_stem(w.lower()) for w in _WORD.findall(text) if w.lower() not in _STOP and len(w) > 2}


def _stem(word: str) -> str:
    for suffix in ("ing", "ies", "es", "ed", "s", "ly"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _body(unit: str) -> str:
    return _LEAD_IN.sub("", unit.lstrip("-*•>#0123456789.) \t\"'"))


def _is_request(unit: str) -> bool:
    """An imperative task ("Describe the...") or a question ("What is...?"): the two shapes of a prompt."""
    words = _body(unit).split(maxsplit=4)  # the first word and whether there are 3 or 4: no more needed
    if not words:
        return False
    first = words[0].lower().strip(",:;\"'")
    if first in _TASK_VERBS and len(words) >= 3:
        return True
    return unit.endswith("?") and first in _QUESTION_START and len(words) >= 4


_ASKS = re.compile(
    r"\b(?:can|could|would|will) you\b[^?]*\?$|\b(?:i need|i'd like|i would like|i want|i'm asking) you to\b"
    r"|^(?:imagine|pretend|suppose|let's|let us)\b|^you are an?\b|\bimagine (?:you|that|a)\b",
    _I,
)


def _asks_assistant(unit: str) -> bool:
    """A sentence someone types to an assistant: a request, or a role or scene set up for it."""
    if _is_request(unit):
        return True
    lower = unit.lower()
    return ("you" in lower or "imagin" in lower or "pretend" in lower or "suppose" in lower or "let" in lower) and bool(
        _ASKS.search(_body(unit))
    )


@dataclass(frozen=True, slots=True)
class _Reading:
    """The sentences of a text, and which of them ask something of an assistant."""

    units: list[_Unit]
    asking: list[_Unit]

    @classmethod
    def of(cls, text: str) -> _Reading:
        units = _units(text)
        return cls(units, [u for u in units if _asks_assistant(u.text)])

    def asks_elsewhere(self, start: int, end: int) -> bool:
        """Whether a sentence outside ``start:end`` asks something: then the text is a prompt, not data."""
        return any(u.end <= start or u.start >= end for u in self.asking)


# What `_asks_assistant` needs besides a task verb or a "?": the literal parts of `_ASKS` (lower-cased).
_ASK_LITERALS = frozenset({"you to", "you are a", "imagin", "pretend", "suppose", "let's", "let us"})


# What may stand between a sentence's start and its first word, for `_body` and `str.split` (ASCII): white space,
# the list markers `_body` strips, and what `_is_request` strips off the word. A sentence starts after `_UNIT_END`.
_BEFORE_WORD = frozenset(" \t\r\x0b\x0c\x1c\x1d\x1e\x1f-*>#0123456789)\"',:;")
_UNIT_END = frozenset(".!?\n")
_LEAD_WORDS = _words("please kindly also now then and finally additionally first next lastly")  # `_LEAD_IN`


def _may_ask(text: str, lower: str, hits: list[tuple[str, int, int]]) -> bool:
    """Whether a sentence of ``text`` may ask something of an assistant (`_asks_assistant`): a necessary condition
    from the hints ``hits`` (`_GATES`), so that a note no sentence of which can be a request skips `_Reading`, the
    detector's costliest step. A question needs "?"; `_ASKS`, one of `_ASK_LITERALS`; a task, a task verb as its
    sentence's first word. Positions in ``lower`` are those of ``text`` for ASCII only: other text always may."""
    if "?" in text or not text.isascii():
        return True
    for hint, start, end in hits:
        if hint in _ASK_LITERALS:
            return True
        if hint in _TASK_VERBS and (end == len(lower) or not lower[end].isalpha()) and _first_word_at(lower, start):
            return True
    return False


def _first_word_at(lower: str, start: int) -> bool:
    """Whether the word at ``start`` can be its sentence's first after `_body` (which strips list markers and one
    lead-in word such as "please")."""
    i = _skip_back(lower, start)
    if i == 0 or lower[i - 1] in _UNIT_END:
        return True
    j = i
    while j > 0 and lower[j - 1].isalpha():
        j -= 1
    if lower[j:i] not in _LEAD_WORDS:
        return False
    j = _skip_back(lower, j)
    return j == 0 or lower[j - 1] in _UNIT_END


def _skip_back(lower: str, i: int) -> int:
    while i > 0 and lower[i - 1] in _BEFORE_WORD:
        i -= 1
    return i
