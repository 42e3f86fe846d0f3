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
The reading of a text's sentences that the last rule needs is in `memdir.policy._injection_sentences`; the cheap
gates that skip every rule a text cannot match, in `memdir.policy._injection_gates`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ._injection_gates import _GATES, _enabled
from ._injection_sentences import _DATA_MARKERS, _content_words, _is_request, _may_ask, _Reading

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
