"""Relative-time phrases in a query ("last weekend", "two weeks ago", "in February").

``query_window(query, now_ms)`` returns the time span such a phrase points at, as
``(start_ms, end_ms)``, or None. Retrieval then lifts memories written inside that span
(a re-ranking factor, never a filter: "what did I cook last Friday?" still finds a
Thursday dinner if that is all there is). English, Chinese, Japanese and Korean; days in
UTC.

Recognised, case-insensitive (the first match in the query wins):

* ``today``, ``this morning|afternoon|evening``; ``yesterday``, ``last night``;
* ``this week`` (Monday to now), ``last week``; ``last weekend`` (the latest Saturday
  and Sunday that are over), ``this weekend`` (only when said on a weekend);
* ``last <weekday>`` and ``on <weekday>`` (the latest such day before today);
* ``<n> days|weeks|months ago`` (``n`` a number, ``a``, ``a couple of``, ``a few`` or
  one..twelve), with slack around the point: half the distance either side, at least a day;
* ``this month``, ``last month``; ``in|during <month>``, ``(the) start|beginning|middle|end
  of <month>`` (the latest such month that has begun; a third of it for start, middle, end).

Chinese (and the same words in Japanese and Korean where they are as plain):
``今天/今日/今早`` (오늘), ``昨天/昨日/昨晚`` (어제), ``前天/一昨日`` (그저께), ``本周/这周``
(今週, 이번 주), ``上周/上星期`` (先週, 지난주), ``上周三`` (the Wednesday of last week),
``上周末``, ``这个月/本月`` (今月, 이번 달), ``上个月`` (先月, 지난달), ``今年`` (올해),
``去年`` (작년), and ``N天前/N周前/N个月前`` (N日前, N일 전; N in digits or 一..十二, 两, 几).

Phrases about the future ("next week", "tonight", "tomorrow"; ``下周``, ``今晚``, ``明天``)
give no window.
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

# CJK: numbers, units and weekdays (周一 .. 周日, 星期天).
_CJK_DIGITS = {"一": 1, "两": 2, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8,
               "九": 9, "几": 3, "数": 3}  # fmt: skip
_CJK_NUM = r"\d{1,3}|[一两二三四五六七八九几数]|十[一二]?|[二三]十[一二三四五六七八九]?"
_CJK_UNIT = {
    **dict.fromkeys(["天", "日", "일"], "day"),
    **dict.fromkeys(["周", "星期", "个星期", "週間", "주"], "week"),
    **dict.fromkeys(["个月", "ヶ月", "か月", "カ月", "개월"], "month"),
}
_CJK_UNITS = "个星期|个月|星期|週間|ヶ月|か月|カ月|개월|[天日周일주]"
_CJK_WD = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}

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
    # Chinese, Japanese, Korean (no word boundaries in the script; the longer forms first).
    ("ago", re.compile(rf"({_CJK_NUM})\s*({_CJK_UNITS})\s*(?:以前|之前|前|전)")),
    ("cjk_last_weekday", re.compile(r"(?:上个?(?:周|星期|礼拜))([一二三四五六日天])")),
    ("weekend", re.compile(r"(上个?|这个?|本)(?:周末|週末)|(지난|이번)\s*주말")),
    ("week", re.compile(r"(上个?|这个?|本|先|今)(?:周|星期|礼拜|週)|(지난|이번)\s*주")),
    ("month", re.compile(r"(上个?|这个?|本|先|今)月|(지난|이번)\s*달")),
    ("year", re.compile(r"(去|今)年|(작)년|(올)해")),
    ("day_before", re.compile(r"前天|一昨日|おととい|그저께|그제")),
    ("yesterday", re.compile(r"昨[天日晚夜]|어제|어젯밤")),
    ("today", re.compile(r"今[天日早]|今朝|오늘")),
]
_LAST = {"上", "上个", "先", "지난", "去", "작"}


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
    if kind in ("weekend", "week", "month", "year"):
        said = next(g for g in m.groups() if g is not None)
        which = "last" if said in ("last", *_LAST) else "this"
    if kind == "ago":
        raw, unit = m.group(1), m.group(2)
        if raw.isdigit():
            n = int(raw)
        elif unit in _CJK_UNIT:
            n = _cjk_number(raw)
        else:
            n = _NUMBERS[raw]
        days = n * _UNIT_DAYS[_CJK_UNIT.get(unit, unit)]
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
    if kind == "cjk_last_weekday":
        monday = today - dt.timedelta(days=today.weekday() + 7)
        day = monday + dt.timedelta(days=_CJK_WD[m.group(1)])
        return _span(day, day)
    if kind == "day_before":
        day = today - dt.timedelta(days=2)
        return _span(day, day)
    if kind == "year":
        year = today.year - (which == "last")
        return _span(dt.date(year, 1, 1), min(today, dt.date(year, 12, 31)))
    if kind == "weekend":
        back = (today.weekday() - 5) % 7  # days since the latest Saturday (0 on a Saturday)
        on_weekend = back < 2
        if which == "this" and not on_weekend:
            return None  # said on a weekday, "this weekend" is the coming one
        saturday = today - dt.timedelta(days=back)
        if which == "last" and on_weekend:  # on the weekend itself, the one before
            saturday -= dt.timedelta(days=7)
        return _span(saturday, min(today, saturday + dt.timedelta(days=1)))
    if kind == "week":
        monday = today - dt.timedelta(days=today.weekday())
        if which == "this":
            return _span(monday, today)
        return _span(monday - dt.timedelta(days=7), monday - dt.timedelta(days=1))
    if kind == "month":
        first = today.replace(day=1)
        if which == "this":
            return _span(first, today)
        prev_last = first - dt.timedelta(days=1)
        return _span(prev_last.replace(day=1), prev_last)
    if kind == "yesterday":
        day = today - dt.timedelta(days=1)
        return _span(day, day)
    return _span(today, today)  # today, this morning ...


def _cjk_number(raw: str) -> int:
    """一 .. 三十九 (and 两, 几 "a few") as an int."""
    if "十" not in raw:
        return _CJK_DIGITS[raw]
    tens, _, ones = raw.partition("十")
    return (_CJK_DIGITS[tens] if tens else 1) * 10 + (_CJK_DIGITS[ones] if ones else 0)
