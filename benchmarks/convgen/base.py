# ruff: noqa: E501 (the templates and pools are data; long lines read better unwrapped)
"""The pieces a fact family builds: lines, questions, plans; and relative-time phrases."""

from __future__ import annotations

import datetime as dt
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .people import Persona

DAY = dt.timedelta(days=1)


@dataclass
class Line:
    speaker: int  # 0 or 1: which of the two friends says it
    text: str
    key: str | None = None  # evidence key, when a question cites this line


# An answer is a string, or a function of the session date-times of the cited keys.
Answer = str | Callable[[dict[str, dt.datetime]], str]


@dataclass
class Question:
    category: str
    text: str
    gold: list[list[str]]  # evidence pieces, each a list of alternative keys
    answer: Answer


@dataclass
class Plan:
    """One fact (or a fact that changes): its episodes, in order, and its questions."""

    family: str
    owner: int
    parts: list[list[Line]]
    questions: list[Question] = field(default_factory=list)
    min_gap: int = 3  # sessions between consecutive parts
    swap: str | None = None  # adversarial question about the other friend ({F})
    swap_answer: str = "Not mentioned: only the other friend talked about this."
    # Later mentions of the same thing that answer none of its questions (the pet is
    # ill, the new job is busy): topically close distractors, placed after the last part.
    followups: list[list[Line]] = field(default_factory=list)


@dataclass(frozen=True)
class When:
    """A relative-time phrase and how to turn the session date into the event date."""

    phrase: str
    resolve: Callable[[dt.date], dt.date]
    approx: bool = False

    def answer(self, at: dt.datetime) -> str:
        day = self.resolve(at.date())
        text = f"{day.day} {day.strftime('%B %Y')}"
        return f"around {text}" if self.approx else text


def _last_weekday(day: dt.date, weekday: int) -> dt.date:
    back = (day.weekday() - weekday) % 7 or 7
    return day - back * DAY


WHENS: list[When] = [
    When("yesterday", lambda d: d - DAY),
    When("last night", lambda d: d - DAY),
    When("this morning", lambda d: d),
    When("today", lambda d: d),
    When("on Saturday", lambda d: _last_weekday(d, 5)),
    When("on Sunday", lambda d: _last_weekday(d, 6)),
    When("last weekend", lambda d: _last_weekday(d, 5) - (7 * DAY if d.weekday() >= 5 else 0 * DAY)),
    When("a couple of days ago", lambda d: d - 2 * DAY, approx=True),
    When("last week", lambda d: d - 7 * DAY, approx=True),
    When("two weeks ago", lambda d: d - 14 * DAY, approx=True),
]  # fmt: skip


class Ctx:
    """Generation state for one conversation: its random source, the two friends, its split."""

    def __init__(self, rng: random.Random, people: tuple[Persona, Persona], split: str) -> None:
        self.rng = rng
        self.p = people
        self.split = split
        self.n = 0  # facts made so far (for unique keys)
        self.taken: set[str] = set()  # values already used in this conversation

    def key(self, family: str) -> str:
        self.n += 1
        return f"f{self.n:02d}.{family}"

    def pick(self, seq: Sequence[Any]) -> Any:
        """A random element not used yet in this conversation (if any is left)."""
        fresh = [x for x in seq if repr(x) not in self.taken]
        choice = self.rng.choice(fresh or list(seq))
        self.taken.add(repr(choice))
        return choice

    def any(self, seq: Sequence[Any]) -> Any:
        """A random element, repeats allowed."""
        return self.rng.choice(list(seq))

    def pool(self, pair: tuple[Sequence[Any], Sequence[Any]]) -> Any:
        """Pick from the tuning or the held-out half of a split pool."""
        return self.pick(pair[0] if self.split == "tune" else pair[1])

    def qv(self, variants: Sequence[str]) -> str:
        """A question wording: the tuning and held-out splits draw from disjoint halves."""
        if len(variants) == 1:
            return variants[0]
        half = variants[0::2] if self.split == "tune" else variants[1::2]
        return self.rng.choice(half)

    def qva(self, variants: Sequence[tuple[str, Any]]) -> tuple[str, Any]:
        """Like :meth:`qv` for wordings that each come with their own answer."""
        if len(variants) == 1:
            return variants[0]
        half = variants[0::2] if self.split == "tune" else variants[1::2]
        return self.rng.choice(half)

    def when(self) -> When:
        return self.rng.choice(WHENS)

    def chance(self, p: float) -> bool:
        return self.rng.random() < p


MONTH_NAMES = ["January", "February", "March", "April", "May", "June", "July", "August",
               "September", "October", "November", "December"]  # fmt: skip
_MONTH_MARK = re.compile(r"<M(?::([\w.]+))?([+-]\d+)>")


def month_name(at: dt.datetime, offset: int) -> str:
    """The name of the month ``offset`` months from ``at``'s month."""
    return MONTH_NAMES[(at.month - 1 + offset) % 12]


def resolve_months(text: str, at: dt.datetime, times: dict[str, dt.datetime]) -> str:
    """Replace ``<M+2>`` (two months after ``at``) and ``<M:key+2>`` (two months after the
    line cited as ``key``) by month names."""

    def sub(m: re.Match[str]) -> str:
        base = times[m.group(1)] if m.group(1) else at
        return month_name(base, int(m.group(2)))

    return _MONTH_MARK.sub(sub, text)


def a(word: str) -> str:
    """``word`` with its indefinite article."""
    return f"{'an' if word[0].lower() in 'aeiou' else 'a'} {word}"


def cap(text: str) -> str:
    return text[:1].upper() + text[1:]
