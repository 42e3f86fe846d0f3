"""Dates in queries, absolute and relative to today, and what they do to a search of dated notes."""

from __future__ import annotations

import datetime as dt

import pytest

from memdir import MemoryStore
from memdir.search import search
from memdir.search._dates import Span, query_spans

TODAY = dt.date(2026, 12, 2)  # a Wednesday


def days(first: str, last: str) -> Span:
    return Span(dt.date.fromisoformat(first).toordinal(), dt.date.fromisoformat(last).toordinal())


@pytest.mark.parametrize(
    ("query", "spans"),
    [
        ("what did we decide today?", [days("2026-12-02", "2026-12-02")]),
        ("and yesterday", [days("2026-12-01", "2026-12-01")]),
        ("this week", [days("2026-11-30", "2026-12-02")]),
        ("what did we decide last week?", [days("2026-11-23", "2026-11-29")]),
        ("Last Weekend", [days("2026-11-28", "2026-11-29")]),
        ("last month", [days("2026-11-01", "2026-11-30")]),
        ("this year", [days("2026-01-01", "2026-12-02")]),
        ("last year", [days("2025-01-01", "2025-12-31")]),
        ("3 days ago", [days("2026-11-29", "2026-11-29")]),
        ("a week ago", [days("2026-11-19", "2026-11-25")]),
        ("two months ago", [days("2026-10-01", "2026-10-31")]),
        ("twelve months ago", []),  # counts go to ten in words
        ("12 months ago", [days("2025-12-01", "2025-12-31")]),
        ("in the past 10 days", [days("2026-11-22", "2026-12-02")]),
        ("the last 2 weeks", [days("2026-11-18", "2026-12-02")]),
        ("in the past week", [days("2026-11-25", "2026-12-02")]),
        ("in May 2023", [days("2023-05-01", "2023-05-31")]),  # absolute dates as before
        ("the last sentence of this note", []),
    ],
)
def test_relative_time_is_counted_from_today(query: str, spans: list[Span]) -> None:
    assert query_spans(query, TODAY) == spans


def test_a_search_for_last_weeks_decision_finds_the_note_of_last_week(monkeypatch: pytest.MonkeyPatch) -> None:
    """Dated notes (a date in the file name, the first line or a heading): the one in the span named comes first
    (a note up to a week after the span counts too: things are written down a little after they happen)."""
    monkeypatch.setattr("memdir.search._dates._today", lambda: TODAY)
    with MemoryStore() as store:
        store.write("/memories/log/2026-10-05.md", b"# 5 October 2026\nWe decided to keep SQLite for the cache.\n")
        store.write("/memories/log/2026-11-24.md", b"# 24 November 2026\nWe decided to move the cache to Redis.\n")
        store.write("/memories/log/2026-06-15.md", b"# 15 June 2026\nWe decided to rename the cache module.\n")
        found = [hit.path.virtual for hit in search(store, "what did we decide last week about the cache?", mode="fts")]
        assert found[0] == "/memories/log/2026-11-24.md"
        found = [hit.path.virtual for hit in search(store, "what did we decide two months ago?", mode="fts")]
        assert found[0] == "/memories/log/2026-10-05.md"
