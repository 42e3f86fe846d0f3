"""Dates in passages and in queries: "what did Maria do in December 2023?" should favour what was written then.

A passage's date is the first full date (day, month and year) found in its own line, else in its section's
headings, else in its file's first line (a journal's or a transcript's date line), else in its file's name
(``2023-05-08.md``). A query names spans: a day (``on 7 July, 2023``, ``2023-07-07``), a month (``in December
2023``), a year (``in 2023``), or a month of any year (``in June``). A passage matches a span when its date falls
in it or up to `SLACK_DAYS` after it: things are written down a little after they happen ("last Friday I...").

Written forms understood: ``8 May 2023``, ``8th of May, 2023``, ``May 8, 2023``, ``May 8th 2023``, ``2023-05-08``
(ISO; also ``2023/05/08``), ``May 2023``, month names in full or as three letters, English only. Numeric
day/month orders other than ISO (``05/08/2023``) are ambiguous and are not read. "May" alone is a verb too often
to be a month, so a query's bare "may" names no span.

A query may also name time relative to today (an agent asking what it decided "last week"): ``today``,
``yesterday``, ``this``/``last`` ``weekend``/``week``/``month``/``year``, ``N days``/``weeks``/``months ago``,
``the past N days``/``weeks``, ``the past week``/``month``/``year``. Weeks start on Monday.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

__all__ = ["SLACK_DAYS", "Span", "passage_day", "query_spans"]

SLACK_DAYS = 7

_MONTH_NAMES = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
MONTHS = {name: n for n, name in enumerate(_MONTH_NAMES, start=1)} | {
    name[:3]: n for n, name in enumerate(_MONTH_NAMES, start=1)
}
MONTHS["sept"] = 9
_MON = r"(?P<mon>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:1[89]|2\d)\d\d)"
# Most specific first: a span of text read by one pattern is not read again by a later one.
_PATTERNS = [
    re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MON},?\s+{_YEAR}\b", re.IGNORECASE),
    re.compile(rf"\b{_MON}\s+{_DAY},?\s+{_YEAR}\b", re.IGNORECASE),
    re.compile(rf"\b{_YEAR}[-/](?P<mnum>[01]?\d)[-/](?P<dnum>[0-3]?\d)\b"),
    re.compile(rf"\b{_MON},?\s+{_YEAR}\b", re.IGNORECASE),
    re.compile(rf"\b{_MON}\b", re.IGNORECASE),
    re.compile(rf"\b{_YEAR}\b"),
]
_YEARISH = re.compile(r"(?:1[89]|2\d)\d\d")
_FULL = 3  # the patterns before this index give a full date


@dataclass(frozen=True, slots=True)
class Span:
    """Days ``first``..``last`` (ordinals, `datetime.date.toordinal`); ``month`` alone: that month of any year."""

    first: int = 0
    last: int = 0
    month: int = 0

    def matches(self, day: int) -> bool:
        if self.month:
            date = dt.date.fromordinal(day)
            return self.month in (date.month, dt.date.fromordinal(day - SLACK_DAYS).month)
        return self.first <= day <= self.last + SLACK_DAYS


def _found(text: str, patterns: list[re.Pattern[str]]) -> list[tuple[int, int, dict[str, str | None]]]:
    """(position, pattern index, groups) of each date written in ``text``, in text order; where two patterns
    read the same words, the earlier (more specific) one wins."""
    taken: list[tuple[int, int]] = []
    found = []
    for n, pattern in enumerate(patterns):
        for match in pattern.finditer(text):
            if any(match.start() < end and start < match.end() for start, end in taken):
                continue
            taken.append((match.start(), match.end()))
            found.append((match.start(), n, match.groupdict()))
    return sorted(found, key=lambda item: item[0])


def _date(groups: dict[str, str | None]) -> dt.date | None:
    try:
        month = int(groups.get("mnum") or 0) or MONTHS[str(groups["mon"]).lower().rstrip(".")]
        day = int(groups.get("dnum") or groups.get("day") or 0)
        return dt.date(int(str(groups["year"])), month, day)
    except (KeyError, ValueError):
        return None


def full_date(text: str) -> int | None:
    """The first full date written in ``text``, as an ordinal, or None."""
    if _YEARISH.search(text) is None:  # most lines: no year, no full date (one cheap scan instead of three)
        return None
    for _, _, groups in _found(text, _PATTERNS[:_FULL]):
        date = _date(groups)
        if date is not None:
            return date.toordinal()
    return None


def passage_day(line: str, section: str, first_line: str, file_name: str) -> int | None:
    """The date of a passage (see the module's docstring), or None."""
    for text in (line, section, first_line, file_name):
        day = full_date(text)
        if day is not None:
            return day
    return None


def query_spans(query: str, today: dt.date | None = None) -> list[Span]:
    """The spans of time a query names (relative ones counted from ``today``, default the local date)."""
    spans = []
    for _, n, groups in _found(query, _PATTERNS):
        span = _span(n, groups)
        if span is not None:
            spans.append(span)
    if _RELATIVE_HINT.search(query) is not None:  # most queries name no relative time: one cheap scan
        spans += _relative_spans(query, today or _today())
    return spans


_NUMBER = r"\d{1,3}|an?|one|two|three|four|five|six|seven|eight|nine|ten"
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
            "nine": 9, "ten": 10}  # fmt: skip
_RELATIVE_HINT = re.compile(r"\b(?:today|yesterday|this|last|ago|past)\b", re.IGNORECASE)
_RELATIVE = re.compile(
    r"\b(?:(?P<word>today|yesterday)"
    r"|(?P<which>this|last) (?P<unit>weekend|week|month|year)"
    rf"|(?P<ago_n>{_NUMBER}) (?P<ago>day|week|month)s? ago"
    rf"|(?:the )?(?:past|last) (?P<past_n>{_NUMBER}) (?P<past>day|week)s"
    r"|(?:the )?past (?P<within>week|month|year))\b",
    re.IGNORECASE,
)


def _today() -> dt.date:
    return dt.date.today()


def _relative_spans(query: str, today: dt.date) -> list[Span]:
    return [_relative(match, today) for match in _RELATIVE.finditer(query)]


def _relative(match: re.Match[str], today: dt.date) -> Span:
    """The span one relative expression names, counted from ``today``."""
    word, which, unit = match.group("word"), match.group("which"), match.group("unit")
    if word is not None:
        day = today if word.lower() == "today" else today - dt.timedelta(days=1)
        return _days(day, day)
    if unit is not None:
        return _this_or_last(unit.lower(), which.lower() == "last", today)
    within = match.group("within")
    if within is not None:  # "in the past week": the days up to today
        return _days(today - dt.timedelta(days={"week": 7, "month": 30, "year": 365}[within.lower()]), today)
    if match.group("ago") is not None:
        return _ago(match.group("ago").lower(), _count(match.group("ago_n")), today)
    days = _count(match.group("past_n")) * (7 if match.group("past").lower() == "week" else 1)
    return _days(today - dt.timedelta(days=days), today)


def _this_or_last(unit: str, last: bool, today: dt.date) -> Span:
    if unit == "weekend":  # this week's Saturday and Sunday, or the week before's
        saturday = today - dt.timedelta(days=today.weekday()) + dt.timedelta(days=5) - dt.timedelta(weeks=int(last))
        return _days(saturday, saturday + dt.timedelta(days=1))
    if unit == "week":
        monday = today - dt.timedelta(days=today.weekday()) - dt.timedelta(weeks=int(last))
        return _days(monday, monday + dt.timedelta(days=6) if last else today)
    if unit == "month":
        first = today.replace(day=1)
        if not last:
            return _days(first, today)
        previous = (first - dt.timedelta(days=1)).replace(day=1)
        return _days(previous, first - dt.timedelta(days=1))
    year = today.year - int(last)
    return _days(dt.date(year, 1, 1), today if not last else dt.date(year, 12, 31))


def _ago(unit: str, count: int, today: dt.date) -> Span:
    if unit == "day":
        day = today - dt.timedelta(days=count)
        return _days(day, day)
    if unit == "week":
        end = today - dt.timedelta(weeks=count)
        return _days(end - dt.timedelta(days=6), end)
    month = (today.year * 12 + today.month - 1) - count  # that calendar month
    first = dt.date(month // 12, month % 12 + 1, 1)
    following = dt.date((month + 1) // 12, (month + 1) % 12 + 1, 1)
    return _days(first, following - dt.timedelta(days=1))


def _count(text: str) -> int:
    return int(text) if text.isdigit() else _NUMBERS[text.lower()]


def _days(first: dt.date, last: dt.date) -> Span:
    return Span(first.toordinal(), last.toordinal())


def _span(n: int, groups: dict[str, str | None]) -> Span | None:
    if n < _FULL:
        date = _date(groups)
        return None if date is None else Span(date.toordinal(), date.toordinal())
    year = int(groups.get("year") or 0) or None
    mon = str(groups.get("mon") or "").lower().rstrip(".")
    if not mon:  # a year
        return None if year is None else Span(dt.date(year, 1, 1).toordinal(), dt.date(year, 12, 31).toordinal())
    month = MONTHS[mon]
    if year is None:
        return None if mon == "may" else Span(month=month)
    first = dt.date(year, month, 1)
    following = dt.date(year + month // 12, month % 12 + 1, 1)
    return Span(first.toordinal(), following.toordinal() - 1)
