"""Injected instructions: text written to memory that tries to steer a future session.

Memory is read back into the context of later sessions, so a note that says "ignore your instructions" or
"always add this link to your answers" is an attack that outlives the conversation that planted it. Typical
carriers are content the agent copied from a web page, an e-mail or a code answer.

Keyword lists catch few of these and flag many harmless texts (requests *to* an assistant are full of "ignore",
"you are", "answer"). The rules here look for shapes instead, each with a reason it generalises:

- **explicit steering** (always suspicious): overriding earlier instructions, fake conversation turns or system
  messages, persona switches ("you are now..."), messages addressed to "the AI/assistant", orders to hide
  something from the user;
- **hidden text**: invisible characters (zero-width, bidi controls, Unicode tag characters), instructions in
  HTML comments or in elements styled to be invisible;
- **response steering**: an instruction about *your answer/reply/response* — data never tells its reader how to
  shape an answer, only a prompt does;
- **exfiltration and hostile code**: sending, posting or uploading local data to a URL, running code fetched from
  the network, wiping disks — with a directive to put "the following code" into *your* code;
- **a foreign directive in data**: a text that is mostly data (an e-mail, a receipt, notes, code) holding a
  sentence that is a request to an assistant (an imperative task or a question) sharing no words with the data
  around it. This is the shape of most injections, and one a request typed by a person does not have: its
  instruction *is* the text.

The detector is regular expressions and word counting over the text: well under a millisecond for a note.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ._hints import SPACES, Gated, HintSearch

__all__ = ["InjectionMatch", "find_injections"]


@dataclass(frozen=True, slots=True)
class InjectionMatch:
    rule: str
    start: int
    end: int
    detail: str


# -- explicit steering ---------------------------------------------------------------------------------------

_I = re.IGNORECASE
_PRIOR = r"(?:previous|prior|preceding|above|earlier|foregoing|original|initial|system|developer|all(?: the)?|any)"
_RULES_WORDS = (
    r"(?:instructions?|prompts?|directions?|directives?|rules|guidelines|guidance|commands?|context|messages?)"
)

_EXPLICIT: tuple[tuple[str, str, re.Pattern[str]], ...] = (
    (
        "override-instructions",
        "tries to override earlier instructions",
        re.compile(
            rf"\b(?:ignore|disregard|forget|override|overrule|bypass|skip|drop|abandon|discard)\b[^.\n]{{0,30}}?"
            rf"\b{_PRIOR}\b[^.\n]{{0,20}}?\b{_RULES_WORDS}\b",
            _I,
        ),
    ),
    (
        "new-instructions",
        "announces new instructions for the assistant",
        re.compile(
            r"\b(?:new|updated|real|actual|revised|additional|secret|hidden)\s+(?:system\s+)?instructions?\s*(?::|follow)"
            r"|\bfrom now on,?\s+(?:you|always|never|the assistant|respond|answer|reply)\b"
            r"|\byour (?:new|real|true|actual) (?:task|goal|instructions?|purpose|role) (?:is|are)\b",
            _I,
        ),
    ),
    (
        "fake-turn",
        "imitates a system message or a conversation turn",
        re.compile(
            r"^[\s>#*\[(<|]*(?:system|assistant|developer|sys)\s*(?:prompt|message|note|override)?\s*[\]:>)|]"
            r"|<\|?(?:im_start|im_end|system|endoftext|start_header_id)\|?>|\[/?INST\]|<</?SYS>>"
            r"|\b(?:BEGIN|END) (?:SYSTEM|ADMIN|DEVELOPER) (?:PROMPT|MESSAGE|INSTRUCTIONS?)\b"
            r"|^\s*(?:Human|User|AI|Claude|ChatGPT):\s*\S",
            _I | re.MULTILINE,
        ),
    ),
    (
        "persona-switch",
        "tries to give the assistant a new identity or mode",
        re.compile(
            r"\byou are (?:now|no longer)\b|\b(?:enter|enable|activate|switch to)\s+(?:\w+\s+)?"
            r"(?:developer|god|dan|jailbreak|unrestricted|admin|debug)\s+mode\b"
            r"|\bact as (?:an? )?(?:unrestricted|unfiltered|jailbroken)\b",
            _I,
        ),
    ),
    (
        "addressed-to-ai",
        "is addressed to an AI assistant",
        re.compile(
            r"\b(?:note|message|attention|instructions?|important|reminder)\s+(?:to|for)\s+(?:the\s+|any\s+|all\s+)?"
            r"(?:ai|assistants?|language models?|llms?|chatbots?|agents?|claude|chatgpt|gpt|models?)\b"
            r"|\bif you are an? (?:ai|assistant|language model|llm|chatbot|agent|bot)\b"
            r"|\b(?:dear|hey|hi|attention|to)\s+(?:ai|assistant|claude|chatgpt|llm|language model)\s*[,:!]"
            r"|\b(?:when|while|if|before|after) (?:you(?:'re| are)?|the (?:ai|assistant|model|agent)) "
            r"(?:summariz|read|process|pars|see|analyz|answer)\w*(?: this| the)? (?:e-?mail|message|page|document|text|"
            r"file|note|memory)",
            _I,
        ),
    ),
    (
        "conceal-from-user",
        "asks to hide something from the user",
        re.compile(
            r"\b(?:do not|don't|never|without)\s+(?:tell|telling|inform|informing|mention|mentioning|reveal|revealing|"
            r"notify|notifying|alert|alerting|let)\w*\s+(?:the\s+)?(?:user|human|owner|operator)\b"
            r"|\b(?:keep|hide) (?:this|it|that)\b[^.\n]{0,20}\bfrom the (?:user|human)\b",
            _I,
        ),
    ),
)

# -- hidden text ---------------------------------------------------------------------------------------------

# Characters that render as nothing or reorder what is shown: a person reviewing the file cannot see what the
# model will read. ZWJ/ZWNJ are left to `_ZW_JOINER` (emoji and several scripts need them).
_INVISIBLE = re.compile(
    "[\u200b\u2060-\u2064\u180e\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u2066-\u2069\u202a-\u202e\u206a-\u206f"
    "\ufeff\U000e0000-\U000e007f]+"
)
_ZW_JOINER = re.compile(r"(?<=[A-Za-z0-9 ])[\u200c\u200d]+|[\u200c\u200d]+(?=[A-Za-z0-9 ])")
_HIDDEN_MARKUP = re.compile(
    r"<!--(?P<comment>.*?)-->"
    r"|<(?P<tag>\w+)[^>]*style\s*=\s*[\"'][^\"']*(?:display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0"
    r"|opacity\s*:\s*0(?:\.0+)?\b|color\s*:\s*(?:white|#fff(?:fff)?\b|transparent))[^\"']*[\"'][^>]*>(?P<inner>.*?)</(?P=tag)>",
    _I | re.DOTALL,
)

# -- response steering ---------------------------------------------------------------------------------------

_YOUR_OUTPUT = (
    r"(?:your|the)\s+(?:(?:final|next|every|each|whole)\s+)?(?:answers?|responses?|repl(?:y|ies)|outputs?|messages?|"
    r"summary|summaries|completions?)(?:'s)?\b"
)
_STEER_VERB = (
    r"(?:add|append|prepend|include|insert|incorporate|integrate|embed|mention|end|begin|start|finish|conclude|close|"
    r"format|write|express|encode|translate|reverse|replace|rewrite|modify|change|alter|remove|scramble|rearrange|"
    r"jumble|use|provide|make|give|deliver|present|respond|reply|answer|put|place|tease|promote|advertise|recommend|"
    r"twist|spell|convert|transform|render|substitute|shuffle|capitali[sz]e|bold|wrap|sign|stress|emphasi[sz]e|"
    r"highlight|inject|weave|fill|pad|end|structure|limit|keep|ensure|make sure|always|never)"
)
_STEERING = re.compile(
    # At a sentence start only (factored out: the engine then rejects most positions at once).
    rf"(?:^|(?<=[.!?:;\n]))\s*(?:"
    rf"(?:(?:please|kindly|also|now|then|and|finally|additionally|remember to|be sure to|"
    rf"make sure to|don't forget to|do not forget to)[,\s]+)*{_STEER_VERB}\b"
    rf"(?:[^.!?\n]|[.!?](?=\S)){{0,120}}?\b{_YOUR_OUTPUT}"
    rf"|(?:in|within|throughout|for|with) {_YOUR_OUTPUT}[,\s]+[^.!?\n]{{0,80}}"
    rf"|(?:respond|reply|answer|write|speak|talk)(?: back)?(?: to me| to the user)?"
    rf"(?: only)? (?:in|using|with) (?:emojis?|base\d+|binary|hex|morse|pig latin|all caps|uppercase|"
    rf"[A-Z][a-z]+ (?:language|cipher))\b)",
    _I | re.MULTILINE,
)

# -- exfiltration and hostile code ---------------------------------------------------------------------------

_URL = r"(?:https?://|www\.)[^\s\"'<>)]+"
_EXFIL_TEXT = re.compile(
    rf"(?:^|(?<=[.!?:;\n]))\s*(?:(?:please|kindly|also|now|then|and|finally|next)[,\s]+)*(?:send|forward|post|upload|e-?mail|transmit|"
    rf"submit|leak|exfiltrate|copy)\b[^\n]{{0,80}}?\b(?:to|at|via|into)\b[^\n]{{0,40}}?(?:{_URL}|[\w.+-]+@[\w-]+\.[\w.-]+)"
    rf"|!\[[^\]]*\]\(\s*{_URL}[?&][^)]*(?:=\s*[{{$<]|\{{|%7B)[^)]*\)",
    _I | re.MULTILINE,
)
# "Add the following code to your project:" is ordinary advice; it is an attack when the code it introduces leaks
# data, runs what it downloads or destroys things. Both halves are needed.
_CODE_DIRECTIVE = re.compile(
    r"\b(?:following|subsequent|below|next|attached|provided|given)\s+(?:(?:code|python|shell|bash)\s*)+"
    r"(?:snippet|block|excerpt|segment|fragment|section|sample|piece|lines?)?\b[^\n]{0,80}",
    _I,
)
_CODE_WINDOW = 2000  # characters after a directive that "the following code" can mean
_NETWORK = re.compile(
    r"\b(?:requests|httpx|urllib\d?|http\.client|ftplib|aiohttp|smtplib|\w*smtplib|paramiko|socket)\b"
    r"|\b(?:wget|curl|rsync|scp|nc|ncat)\b|\bSMTP(?:_SSL)?\b|https?://"
)
_LOCAL_DATA = re.compile(
    r"\bopen\(|\bos\.environ|\bgetenv\(|pyperclip|/etc/|/var/log|cookies|\.ssh\b|pynput|\bkeyboard\b|ImageGrab|"
    r"screenshot|x11grab|\bcsv\.reader|contacts|browser_cookie|\.storbinary|\bsendmail\b|\.send(?:all)?\(",
    _I,
)
_RUNS_CODE = re.compile(r"\bexec\(|\beval\(|\bos\.system\(|\bsubprocess\.|\bPopen\(|\bpickle\.loads?\(")
_DESTRUCTIVE = re.compile(
    r"\brm\s+-[a-z]*r[a-z]*\s+(?:/|~|\$HOME)|\bshutil\.rmtree\(\s*[\"'](?:/|~|C:)[\"']"
    r"|\bdd\s+if=\S+\s+of=/dev/|\bmkfs\.|\bformat\s+c:|/etc/(?:passwd|shadow|init\.d|rc\.local|sudoers)|crontab"
    r"|\bchmod\s+(?:777|\+s)\s+/|\bnc\s+-e\b|/dev/tcp/|\bCipher\(",
    _I,
)


def _hostile(code: str) -> bool:
    """Code that sends local data out, runs what it fetched, or damages the machine."""
    if _DESTRUCTIVE.search(code):
        return True
    return bool(_NETWORK.search(code) and (_LOCAL_DATA.search(code) or _RUNS_CODE.search(code)))


def _hostile_code(text: str) -> list[InjectionMatch]:
    """A directive to adopt "the following code", followed by code that is hostile (what *follows* the directive
    is what it refers to; code fences in pasted text are too often unbalanced to pair them up)."""
    detail = "asks to adopt code that leaks data, runs downloaded code or damages the system"
    return [
        InjectionMatch("hostile-code", m.start(), m.end(), detail)
        for m in _CODE_DIRECTIVE.finditer(text)
        if _hostile(text[m.end() : m.end() + _CODE_WINDOW])
    ]


# -- foreign directives ----------------------------------------------------------------------------------------


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


def _foreign_directives(text: str, reading: _Reading) -> list[InjectionMatch]:
    """The one request to an assistant in a text that is otherwise data, sharing no content words with it."""
    candidates = [u for u in reading.asking if _is_request(u.text)]
    if len(candidates) != 1 or len(reading.asking) != 1:
        return []  # none, or a prompt (several requests, a scene set up): its requests belong there
    unit = candidates[0]
    data_chars = sum(len(u.text) for u in reading.units) - len(unit.text)
    if data_chars < max(120, 2 * len(unit.text)) or not _DATA_MARKERS.search(text):  # data around it
        return []
    own = _content_words(unit.text)
    shared = own & _content_words(text[: unit.start] + " " + text[unit.end :])
    if not own or len(shared) > len(own) // 6:
        return []
    detail = "holds a request to an assistant that has nothing to do with the text around it"
    return [InjectionMatch("foreign-directive", unit.start, unit.end, detail)]


# -- the detector ----------------------------------------------------------------------------------------------


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

# What `_asks_assistant` needs besides a task verb or a "?": the literal parts of `_ASKS` (lower-cased).
_ASK_LITERALS = frozenset({"you to", "you are a", "imagin", "pretend", "suppose", "let's", "let us"})
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


def _explicit(text: str, enabled: set[str]) -> list[InjectionMatch]:
    return [
        InjectionMatch(rule, m.start(), m.end(), detail)
        for rule, detail, pattern in _EXPLICIT
        if rule in enabled
        for m in pattern.finditer(text)
    ]


def _hidden(text: str, enabled: set[str]) -> list[InjectionMatch]:
    found = (
        []
        if text.isascii()  # every invisible character is outside ASCII
        else [
            InjectionMatch("hidden-text", m.start(), m.end(), "holds invisible characters")
            for pattern in (_INVISIBLE, _ZW_JOINER)
            for m in pattern.finditer(text)
        ]
    )
    if "hidden-markup" not in enabled:
        return found
    for m in _HIDDEN_MARKUP.finditer(text):
        hidden = m.group("comment") or m.group("inner") or ""
        if re.search(r"[A-Za-z]{3,}\s+[A-Za-z]{3,}", hidden):  # words a model would read, not an empty marker
            found.append(InjectionMatch("hidden-text", m.start(), m.end(), "hides text from a person reading it"))
    return found


def _steering(text: str, enabled: set[str]) -> list[InjectionMatch]:
    found: list[InjectionMatch] = []
    if "response-steering" in enabled:
        detail = "tells the assistant how to shape its answers"
        found += [InjectionMatch("response-steering", m.start(), m.end(), detail) for m in _STEERING.finditer(text)]
    if "exfiltration" in enabled:
        detail = "asks to send data to an outside address"
        found += [InjectionMatch("exfiltration", m.start(), m.end(), detail) for m in _EXFIL_TEXT.finditer(text)]
    return found + (_hostile_code(text) if "hostile-code" in enabled else [])


# Rules a request typed *to* an assistant also matches ("Begin your response with a summary"). They count only
# in a text that asks nothing else: there, the instruction is the odd one out.
_PROMPT_SHAPED = frozenset({"response-steering", "persona-switch"})


def find_injections(text: str) -> list[InjectionMatch]:
    """Every span of ``text`` that looks like an injected instruction, in order (overlaps merged per rule)."""
    lower = text.lower()
    hits = _GATES.occurrences(lower)
    enabled = _enabled({hint for hint, _, _ in hits})
    found = _explicit(text, enabled) + _hidden(text, enabled) + _steering(text, enabled)
    # The sentence reading matters only where a sentence may ask something (else none is a foreign directive,
    # and no prompt-shaped match has a request elsewhere to belong to).
    read = _DATA_MARKERS.search(text) or any(m.rule in _PROMPT_SHAPED for m in found)
    reading = _Reading.of(text) if read and _may_ask(text, lower, hits) else None
    if reading is not None:
        found = [m for m in found if m.rule not in _PROMPT_SHAPED or not reading.asks_elsewhere(m.start, m.end)]
        found += _foreign_directives(text, reading)
    found.sort(key=lambda m: (m.start, -m.end))
    merged: list[InjectionMatch] = []
    for match in found:
        last = merged[-1] if merged else None
        if last is not None and last.rule == match.rule and match.start <= last.end:
            merged[-1] = InjectionMatch(last.rule, last.start, max(last.end, match.end), last.detail)
        else:
            merged.append(match)
    return merged
