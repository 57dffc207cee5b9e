"""What the fact families share (:mod:`.facts_life`, :mod:`.facts_learning`,
:mod:`.facts_pastimes`)."""

from __future__ import annotations

from .base import Ctx


def pair(text_answer: tuple, gold: list[list[str]]) -> tuple:
    """(text, gold, answer) for ``Question(category, *...)`` from a ``Ctx.qva`` pick."""
    return text_answer[0], gold, text_answer[1]


def names_of(c: Ctx, o: int) -> tuple:
    me, fr = c.p[o], c.p[1 - o]
    return me, fr, o, 1 - o
