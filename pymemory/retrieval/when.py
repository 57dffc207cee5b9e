"""Relative-time phrases in a query ("last weekend", "two weeks ago", "in February").

``query_window(query, now_ms)`` returns the time span such a phrase points at, as
``(start_ms, end_ms)``, or None. Retrieval then lifts memories written inside that span
(a re-ranking factor, never a filter: "what did I cook last Friday?" still finds a
Thursday dinner if that is all there is). English only, days in UTC.

Recognised, case-insensitive (the first match in the query wins):

* ``today``, ``this morning|afternoon|evening``; ``yesterday``, ``last night``;
* ``this week`` (Monday to now), ``last week``; ``last weekend`` (the latest Saturday
  and Sunday that are over), ``this weekend`` (only when said on a weekend);
* ``last <weekday>`` and ``on <weekday>`` (the latest such day before today);
* ``<n> days|weeks|months ago`` (``n`` a number, ``a``, ``a couple of``, ``a few`` or
  one..twelve), with slack around the point: half the distance either side, at least a day;
* ``this month``, ``last month``; ``in|during <month>``, ``(the) start|beginning|middle|end
  of <month>`` (the latest such month that has begun; a third of it for start, middle, end).

Phrases about the future ("next week", "tonight", "tomorrow") give no window.
"""

from __future__ import annotations

import datetime as dt
import re

__all__ = ["find_time_phrase", "query_window"]

DAY_MS = 86_400_000
_UTC = dt.UTC

_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august",
           "september", "october", "november", "december"]  # fmt: skip
_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "a couple of": 2, "a few": 3, "couple of": 2, "few": 3,
}  # fmt: skip
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30}

_WD = "|".join(_WEEKDAYS)
_MO = "|".join(_MONTHS)
_NUM = "|".join([r"\d{1,3}", *sorted(_NUMBERS, key=len, reverse=True)])
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("ago", re.compile(rf"\b({_NUM})\s+(day|week|month)s?\s+ago\b")),
    ("part_of_month", re.compile(rf"\b(start|beginning|middle|end)\s+of\s+({_MO})\b")),
    ("in_month", re.compile(rf"\b(?:in|during)\s+({_MO})\b")),
    ("last_weekday", re.compile(rf"\b(?:last|on)\s+({_WD})\b")),
    ("weekend", re.compile(r"\b(this|last)\s+weekend\b")),
    ("week", re.compile(r"\b(this|last)\s+week\b")),
    ("month", re.compile(r"\b(this|last)\s+month\b")),
    ("yesterday", re.compile(r"\b(yesterday|last\s+night)\b")),
    ("today", re.compile(r"\b(today|this\s+(?:morning|afternoon|evening))\b")),
]


def _day_start(day: dt.date) -> int:
    return int(dt.datetime(day.year, day.month, day.day, tzinfo=_UTC).timestamp() * 1000)


def _span(first: dt.date, last: dt.date) -> tuple[int, int]:
    """From the start of ``first`` to the end of ``last`` (UTC days), in epoch ms."""
    return _day_start(first), _day_start(last) + DAY_MS - 1


def _month_span(today: dt.date, month: int, part: str | None) -> tuple[int, int]:
    year = today.year if month <= today.month else today.year - 1
    first = dt.date(year, month, 1)
    nxt = dt.date(year + (month == 12), month % 12 + 1, 1)
    last = nxt - dt.timedelta(days=1)
    if part in ("start", "beginning"):
        last = first + dt.timedelta(days=9)
    elif part == "middle":
        first, last = first + dt.timedelta(days=10), first + dt.timedelta(days=19)
    elif part == "end":
        first = first + dt.timedelta(days=20)
    return _span(first, last)


def query_window(query: str, now_ms: int) -> tuple[int, int] | None:
    """The ``(start_ms, end_ms)`` a relative-time phrase in ``query`` points at, or None."""
    found = find_time_phrase(query, now_ms)
    return None if found is None else found[0]


def find_time_phrase(
    query: str, now_ms: int
) -> tuple[tuple[int, int] | None, tuple[int, int]] | None:
    """``(window or None, (start, end) of the phrase in query)`` for the first time phrase,
    or None when there is none. A phrase about the future has no window but is still a
    time phrase (its words are not content words)."""
    text = query.lower()
    best: tuple[int, str, re.Match[str]] | None = None
    for kind, pattern in _PATTERNS:
        m = pattern.search(text)
        if m is not None and (best is None or m.start() < best[0]):
            best = (m.start(), kind, m)
    if best is None:
        return None
    _, kind, m = best
    return _window(kind, m, now_ms), m.span()


def _window(kind: str, m: re.Match[str], now_ms: int) -> tuple[int, int] | None:
    today = dt.datetime.fromtimestamp(now_ms / 1000, tz=_UTC).date()
    if kind == "ago":
        raw = m.group(1)
        n = int(raw) if raw.isdigit() else _NUMBERS[raw]
        days = n * _UNIT_DAYS[m.group(2)]
        slack = max(1, days // 2)
        point = today - dt.timedelta(days=days)
        return _span(point - dt.timedelta(days=slack), min(today, point + dt.timedelta(days=slack)))
    if kind == "part_of_month":
        return _month_span(today, _MONTHS.index(m.group(2)) + 1, m.group(1))
    if kind == "in_month":
        return _month_span(today, _MONTHS.index(m.group(1)) + 1, None)
    if kind == "last_weekday":
        back = (today.weekday() - _WEEKDAYS.index(m.group(1))) % 7 or 7
        day = today - dt.timedelta(days=back)
        return _span(day, day)
    if kind == "weekend":
        back = (today.weekday() - 5) % 7  # days since the latest Saturday (0 on a Saturday)
        on_weekend = back < 2
        if m.group(1) == "this" and not on_weekend:
            return None  # said on a weekday, "this weekend" is the coming one
        saturday = today - dt.timedelta(days=back)
        if m.group(1) == "last" and on_weekend:  # on the weekend itself, the one before
            saturday -= dt.timedelta(days=7)
        return _span(saturday, min(today, saturday + dt.timedelta(days=1)))
    if kind == "week":
        monday = today - dt.timedelta(days=today.weekday())
        if m.group(1) == "this":
            return _span(monday, today)
        return _span(monday - dt.timedelta(days=7), monday - dt.timedelta(days=1))
    if kind == "month":
        first = today.replace(day=1)
        if m.group(1) == "this":
            return _span(first, today)
        prev_last = first - dt.timedelta(days=1)
        return _span(prev_last.replace(day=1), prev_last)
    if kind == "yesterday":
        day = today - dt.timedelta(days=1)
        return _span(day, day)
    return _span(today, today)  # today, this morning ...
