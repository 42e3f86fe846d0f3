"""Secrets in text: API keys, private keys, tokens, passwords in URLs, card numbers.

Each rule is a regular expression for a format the issuer fixed (a prefix, a length, an alphabet), so a match is
very likely the real thing; the rules that have no such anchor ask for more (an AWS secret key needs an AWS word
near it, a card number must pass the Luhn check *and* start like a card). That keeps false positives low on what
memory files are full of: hashes, UUIDs, version strings, base64 blobs.

Token rules only match a whole token: the characters around a match must not be token characters, so a run of
base64 (an inline image, a certificate) never yields an "AKIA..." or "AIza..." found in its middle.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._hints import Gated, HintSearch
from .findings import contains_any

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = ["SECRET_RULES", "SecretMatch", "find_secrets"]

# Token characters: letters, digits and the symbols of base64 / base64url ('=' left out: it is base64's padding,
# found only at the end, and it is what stands before a key in ``API_KEY=sk-...``).
_T = r"A-Za-z0-9+/_\-"
_START = rf"(?<![{_T}])"
_END = rf"(?![{_T}])"


@dataclass(frozen=True, slots=True)
class SecretMatch:
    rule: str
    start: int
    end: int
    detail: str


@dataclass(frozen=True, slots=True)
class _Rule:
    name: str
    detail: str
    pattern: re.Pattern[str]
    accept: Callable[[re.Match[str], str], bool] | None = None  # a further check of a match
    group: str | int = 0  # the part of the match that is secret (a URL's password, not the whole URL)
    multiline: bool = False  # a match can span lines (else it lies within one line)


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        n = int(ch)
        if i % 2:
            n = n * 2 - 9 if n > 4 else n * 2
        total += n
    return total % 10 == 0


# Issuer prefixes (IIN ranges) with the lengths they issue. A 16-digit number passes Luhn one time in ten,
# so Luhn alone would flag order numbers and tracking ids; a card prefix and length cut that by ~100x more.
_CARD_PREFIX = re.compile(
    r"4\d{12}(?:\d{3}|\d{6})?"  # Visa 13/16/19
    r"|5[1-5]\d{14}|2(?:2[2-9]|[3-6]\d|7[01]|720)\d{12}"  # Mastercard
    r"|3[47]\d{13}"  # American Express
    r"|6(?:011|5\d{2}|4[4-9]\d)\d{12}(?:\d{3})?"  # Discover
    r"|35(?:2[89]|[3-8]\d)\d{12}(?:\d{3})?"  # JCB
    r"|3(?:0[0-5]|[68]\d)\d{11}"  # Diners Club
    r"|62\d{14,17}"  # UnionPay
)


def _card(match: re.Match[str], _text: str) -> bool:
    raw = match.group(0)
    separators = set(re.sub(r"\d", "", raw))
    if len(separators) > 1:  # "4111-1111 1111 1111" is not how anyone writes a card number
        return False
    digits = re.sub(r"\D", "", raw)
    return bool(_CARD_PREFIX.fullmatch(digits)) and _luhn(digits) and len(set(digits)) > 1


def _mixed(match: re.Match[str], _text: str) -> bool:
    """A random key mixes cases and digits; a hex hash (lower case and digits only) or a word does not."""
    value = match.group("secret")
    return bool(re.search(r"[a-z]", value) and re.search(r"[A-Z]", value) and re.search(r"\d", value))


def _not_placeholder(match: re.Match[str], _text: str) -> bool:
    value = match.group("secret")
    return value.lower().strip("<>[]{}*$%") not in _PLACEHOLDERS and not re.fullmatch(r"[*x.•]+|\$\{?\w+\}?", value)


_PLACEHOLDERS = frozenset(
    {"", "password", "pass", "passwd", "pwd", "secret", "pw", "token", "yourpassword", "changeme"}
)

_PEM = re.compile(
    r"-----BEGIN (?P<what>(?:RSA |EC |DSA |OPENSSH |ENCRYPTED |PGP )?PRIVATE KEY(?: BLOCK)?)-----"
    r"(?:.*?-----END (?P=what)-----|[A-Za-z0-9+/=\s\\n]*)",
    re.DOTALL,
)

SECRET_RULES: tuple[_Rule, ...] = (
    _Rule(
        "google-service-account-key",
        "the private key of a Google service account",
        re.compile(
            r'"private_key"\s*:\s*"(?P<secret>-----BEGIN PRIVATE KEY-----.*?-----END PRIVATE KEY-----(?:\\n)?)"'
        ),
        group="secret",
    ),
    _Rule("private-key", "a PEM private key", _PEM, multiline=True),
    _Rule(
        "anthropic-api-key",
        "an Anthropic API key",
        re.compile(rf"{_START}sk-ant-[a-z]{{2,8}}\d{{0,3}}-[A-Za-z0-9_\-]{{20,}}{_END}"),
    ),
    _Rule(
        "openai-api-key",
        "an OpenAI API key",
        re.compile(
            rf"{_START}sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{{40,}}"
            rf"|[A-Za-z0-9]{{20}}T3BlbkFJ[A-Za-z0-9]{{20}}|[A-Za-z0-9]{{48}}){_END}"
        ),
    ),
    _Rule(
        "aws-access-key", "an AWS access key id", re.compile(rf"{_START}(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{{16}}{_END}")
    ),
    _Rule(
        "aws-secret-key",
        "an AWS secret access key",
        # 40 base64 characters are common (a SHA-1 in hex is 40 too): only next to an AWS or secret-key word.
        re.compile(
            rf"(?i:aws|secret[ _-]?(?:access[ _-]?)?key)[^\n]{{0,40}}?{_START}(?P<secret>[A-Za-z0-9/+]{{40}}){_END}"
        ),
        _mixed,
        "secret",
    ),
    _Rule(
        "github-token",
        "a GitHub token",
        re.compile(rf"{_START}(?:gh[pousr]_[A-Za-z0-9]{{36,251}}|github_pat_[A-Za-z0-9_]{{60,255}}){_END}"),
    ),
    _Rule(
        "slack-token", "a Slack token", re.compile(rf"{_START}xox[abposr]-(?:[A-Za-z0-9]+-){{1,5}}[A-Za-z0-9]+{_END}")
    ),
    _Rule(
        "slack-webhook",
        "a Slack incoming-webhook URL",
        re.compile(r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/]{20,}"),
    ),
    _Rule("google-api-key", "a Google API key", re.compile(rf"{_START}AIza[0-9A-Za-z_\-]{{35}}{_END}")),
    _Rule("stripe-key", "a Stripe secret key", re.compile(rf"{_START}(?:sk|rk)_live_[0-9A-Za-z]{{24,}}{_END}")),
    _Rule(
        "jwt",
        "a JSON Web Token",
        re.compile(rf"{_START}eyJ[A-Za-z0-9_\-]{{8,}}\.eyJ[A-Za-z0-9_\-]{{8,}}\.[A-Za-z0-9_\-]*{_END}"),
    ),
    _Rule(
        "password-in-url",
        "a password in a URL",
        re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.\-]{1,20}://[^\s:/?#@\"'<>]+:(?P<secret>[^\s/?#@\"'<>]+)@[\w.\-\[\]]"),
        _not_placeholder,
        "secret",
    ),
    _Rule(
        "card-number",
        "a payment card number",
        # The look-behind after the first digit, not before it: a pattern that starts with a digit lets the
        # engine skip ahead to the next digit instead of trying every position (twice as fast on prose).
        re.compile(r"\d(?<![\w.\-]\d)(?:[ \-]?\d){12,18}(?![\w\-]|\.\d)"),
        _card,
    ),
)


# Every rule needs one of these strings in the text (the AWS secret key's in lower case): checking them costs
# a microsecond, running a rule's expression over a note tens. A rule without hints always runs.
_HINTS: dict[str, tuple[str, ...]] = {
    "google-service-account-key": ("private_key",),
    "private-key": ("PRIVATE KEY",),
    "anthropic-api-key": ("sk-ant-",),
    "openai-api-key": ("sk-",),
    "aws-access-key": ("AKIA", "ASIA", "ABIA", "ACCA"),
    "github-token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "slack-token": ("xox",),
    "slack-webhook": ("hooks.slack.com",),
    "google-api-key": ("AIza",),
    "stripe-key": ("_live_",),
    "jwt": ("eyJ",),
    "password-in-url": ("://",),
}
_LOWER_HINTS: dict[str, tuple[str, ...]] = {"aws-secret-key": ("aws", "secret")}
# Looked for in the lower-cased text, all at once: a hint's lower-cased form there is necessary for the hint
# itself to be in the text, which is then checked for the few rules that pass.
_GATES = HintSearch([h.lower() for hints in (*_HINTS.values(), *_LOWER_HINTS.values()) for h in hints])
_LOWERED = {rule: frozenset(h.lower() for h in hints) for rule, hints in (*_HINTS.items(), *_LOWER_HINTS.items())}


# A card number's digits in ASCII text, mapped to one class each ('d' a digit, 's' a separator the expression
# allows, 'x' the rest), so that a bytes search for the expression's core finds the run or proves there is none:
# `re` looks for `\d` in a str a character at a time, five times slower than the mapping and a literal search.
_CARD_CLASSES = bytes(
    ord("d") if chr(b).isdigit() and b < 128 else ord("s") if chr(b) in " -" else ord("x") for b in range(256)
)
_CARD_RUN = re.compile(rb"d(?:s?d){12}")  # `\d(?:[ \-]?\d){12}`: what every card-number match starts with


def _may_be_card(text: str) -> bool:
    if not text.isascii():  # `\d` matches other scripts' digits too: let the expression decide
        return True
    return _CARD_RUN.search(text.encode("ascii").translate(_CARD_CLASSES)) is not None


def _may_match(rule: _Rule, text: str, found: set[str]) -> bool:
    """Whether ``rule`` can match ``text``, which holds the hints ``found`` (`_GATES`, in ``text`` lower-cased)."""
    if rule.name == "card-number":
        return _may_be_card(text)
    lowered = _LOWERED.get(rule.name)
    if lowered is None:
        return True
    if found.isdisjoint(lowered):  # one test in C for all of a rule's hints
        return False
    return rule.name in _LOWER_HINTS or contains_any(text, _HINTS[rule.name])


# The rules (by order) that a hint found in the lower-cased text may let through; the rest are tried on every text:
# the multi-line ones (their hints are looked for in the whole text) and those gated otherwise (card numbers).
_THROUGH = Gated({o: _LOWERED[r.name] for o, r in enumerate(SECRET_RULES) if not r.multiline and r.name in _LOWERED})
_TRIED = frozenset(o for o, r in enumerate(SECRET_RULES) if r.multiline or r.name not in _LOWERED)


def _candidates(found: set[str]) -> list[int]:
    """The rules to check `_may_match` for, in order: every other rule's hints are absent."""
    return sorted(_TRIED | _THROUGH.through(found))


def _matches(text: str, lines: tuple[int, int] | None) -> Iterator[tuple[int, SecretMatch]]:
    lo, hi = lines if lines is not None else (0, len(text))
    part = text[lo:hi]
    found = _GATES.found(part.lower())
    for order in _candidates(found):
        rule = SECRET_RULES[order]
        if rule.multiline:  # read in the whole text, its hints looked for directly
            hints = _HINTS.get(rule.name)
            scope, offset, gate = text, 0, hints is None or contains_any(text, hints)
        else:
            scope, offset, gate = part, lo, _may_match(rule, part, found)
        if not gate:
            continue
        for match in rule.pattern.finditer(scope):
            if rule.accept is None or rule.accept(match, scope):
                start, end = match.span(rule.group)
                yield order, SecretMatch(rule.name, offset + start, offset + end, rule.detail)


def find_secrets(text: str, lines: tuple[int, int] | None = None) -> list[SecretMatch]:
    """Every secret in ``text``, in order, without overlaps: of overlapping matches, the one starting first wins,
    then the longest, then the rule listed first (a service account's key is named as such, not as a PEM key).

    ``lines`` (start, end offsets at line boundaries): look only there, except for the rules whose matches can
    span lines (PEM keys), which read the whole text: an edit inside a key block completes the whole block."""
    found: list[SecretMatch] = []
    ranked = sorted(_matches(text, lines), key=lambda item: (item[1].start, item[1].start - item[1].end, item[0]))
    for _, match in ranked:
        if found and match.start < found[-1].end:
            continue
        found.append(match)
    return found
