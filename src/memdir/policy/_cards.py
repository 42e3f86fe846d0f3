"""Payment card numbers: the one secret rule with no literal part, gated and checked by hand.

A 16-digit number passes the Luhn check one time in ten, so Luhn alone would flag order numbers and tracking ids;
an issuer's prefix (IIN range) with the lengths it issues cuts that by ~100x more.
"""

from __future__ import annotations

import re

__all__ = ["card_check", "may_be_card"]


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        n = int(ch)
        if i % 2:
            n = n * 2 - 9 if n > 4 else n * 2
        total += n
    return total % 10 == 0


_CARD_PREFIX = re.compile(
    r"4\d{12}(?:\d{3}|\d{6})?"  # Visa 13/16/19
    r"|5[1-5]\d{14}|2(?:2[2-9]|[3-6]\d|7[01]|720)\d{12}"  # Mastercard
    r"|3[47]\d{13}"  # American Express
    r"|6(?:011|5\d{2}|4[4-9]\d)\d{12}(?:\d{3})?"  # Discover
    r"|35(?:2[89]|[3-8]\d)\d{12}(?:\d{3})?"  # JCB
    r"|3(?:0[0-5]|[68]\d)\d{11}"  # Diners Club
    r"|62\d{14,17}"  # UnionPay
)


def card_check(match: re.Match[str]) -> bool:
    raw = match.group(0)
    separators = set(re.sub(r"\d", "", raw))
    if len(separators) > 1:  # "4111-1111 1111 1111" is not how anyone writes a card number
        return False
    digits = re.sub(r"\D", "", raw)
    return bool(_CARD_PREFIX.fullmatch(digits)) and _luhn(digits) and len(set(digits)) > 1


# A card number's digits in ASCII text, mapped to one class each ('d' a digit, 's' a separator the expression
# allows, 'x' the rest), so that a bytes search for the expression's core finds the run or proves there is none:
# `re` looks for `\d` in a str a character at a time, five times slower than the mapping and a literal search.
_CARD_CLASSES = bytes(
    ord("d") if chr(b).isdigit() and b < 128 else ord("s") if chr(b) in " -" else ord("x") for b in range(256)
)
_CARD_RUN = re.compile(rb"d(?:s?d){12}")  # `\d(?:[ \-]?\d){12}`: what every card-number match starts with


def may_be_card(text: str) -> bool:
    """Whether the card-number expression can match ``text`` (a necessary condition, in a microsecond)."""
    if not text.isascii():  # `\d` matches other scripts' digits too: let the expression decide
        return True
    return _CARD_RUN.search(text.encode("ascii").translate(_CARD_CLASSES)) is not None
