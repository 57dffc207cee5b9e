"""Compressing the units: filler removal, then selection, joining and truncation to fit."""

from __future__ import annotations

import re
from typing import NamedTuple

from .base import ELLIPSIS
from .cues import (
    FILLER_EN,
    FILLER_ZH,
    HEDGE,
    HEDGE_THAT,
    MAX_WORD_CHARS,
    NEGATIONS_EN,
    PLEASANTRY_PREFIX,
    PLEASANTRY_SUFFIX,
    is_word_char,
)
from .sentences import CLAUSE_PUNCTUATION, GLUE_AFTER, collapse_whitespace, is_cjk


class Candidate(NamedTuple):
    """A unit kept for the summary: its position, its (compressed) text, its intent score,
    and whether it was glued to the unit before it."""

    index: int
    text: str
    score: int
    glued: bool


# --------------------------------------------------------------------------------------
# Filler removal
# --------------------------------------------------------------------------------------


def strip_filler(text: str) -> str:
    """Drop the pleasantry around a unit's content and the filler inside it."""
    result = PLEASANTRY_SUFFIX.sub("", text, count=1) or text
    for _ in range(4):  # again: dropping one can expose another ("Basically, I think that")
        trimmed = PLEASANTRY_PREFIX.sub("", result, count=1)
        trimmed = HEDGE_THAT.sub("", trimmed, count=1) or trimmed
        trimmed = HEDGE.sub("", trimmed, count=1) or trimmed
        trimmed = _drop_fillers(FILLER_ZH, _drop_fillers(FILLER_EN, trimmed))
        if not trimmed.strip() or trimmed == result:
            break
        result = trimmed
    return collapse_whitespace(result) or text


def _drop_fillers(pattern: re.Pattern[str], text: str) -> str:
    """``text`` without the matches of ``pattern``, except where dropping one would change
    the meaning ("not just", "isn't actually") or fuse two words ("abc其实def")."""
    parts: list[str] = []
    before = ""  # the last character kept so far
    kept_until = 0
    for match in pattern.finditer(text):
        parts.append(text[kept_until : match.start()])
        before = parts[-1][-1:] or before
        after = text[match.end() : match.end() + 1]
        if _would_fuse_chars(before, after) or _after_negation(text, match.start()):
            parts.append(match.group())
            before = match.group()[-1]
        kept_until = match.end()
    parts.append(text[kept_until:])
    return "".join(parts)


def _would_fuse_chars(before: str, after: str) -> bool:
    return is_word_char(before) and is_word_char(after) and not (is_cjk(before) or is_cjk(after))


def _after_negation(text: str, start: int) -> bool:
    word = _previous_word(text, start).lower().strip(".,;:!?\"'()")
    return word in NEGATIONS_EN or word.endswith(("n't", "n’t", "不", "没"))


def _previous_word(text: str, start: int) -> str:
    """The (end of the) word before ``start``: at most MAX_WORD_CHARS, to stay linear."""
    end = start
    while end > 0 and text[end - 1].isspace():
        end -= 1
    begin = end
    while begin > max(0, end - MAX_WORD_CHARS) and not text[begin - 1].isspace():
        begin -= 1
    return text[begin:end]


# --------------------------------------------------------------------------------------
# Selection, joining and truncation
# --------------------------------------------------------------------------------------


def select_candidates(candidates: list[Candidate], max_chars: int, total: int) -> list[Candidate]:
    """The candidates to keep, in input order.

    All of them if they fit. Otherwise those carrying intent, best score first (earlier
    first on ties) while they fit; if even the best one does not fit it is kept alone, to be
    truncated. If none carries intent, all of them: the first sentences survive truncation.
    """
    if len(join_candidates(candidates, total)) <= max_chars:
        return candidates
    seen: set[str] = set()
    scored = []
    for candidate in candidates:  # repeated lines (logs) are kept once
        if candidate.score > 0 and candidate.text not in seen:
            scored.append(candidate)
            seen.add(candidate.text)
    if not scored:
        return candidates
    chosen: list[Candidate] = []
    used = 0
    for candidate in sorted(scored, key=lambda c: (-c.score, c.index)):
        cost = len(candidate.text) + (1 if chosen else 0)
        if used + cost <= max_chars:
            chosen.append(candidate)
            used += cost
        elif not chosen:
            return [candidate]
    return sorted(chosen, key=lambda c: c.index)


def join_candidates(chosen: list[Candidate], total: int) -> str:
    """Kept units in order: as they were joined in the input when they were neighbours,
    else with a space (none after CJK punctuation). A unit whose successor (of ``total``
    units) was left out loses a dangling comma, semicolon or colon."""
    parts: list[str] = []
    for i, candidate in enumerate(chosen):
        text = candidate.text
        followed = i + 1 < len(chosen) and chosen[i + 1].index == candidate.index + 1
        if not followed and candidate.index + 1 < total:
            text = text.rstrip(CLAUSE_PUNCTUATION).rstrip() or text
        if parts:
            if candidate.index == chosen[i - 1].index + 1:
                glued = candidate.glued and not _would_fuse(parts[-1], text)
            else:
                glued = parts[-1][-1] in GLUE_AFTER
            parts.append("" if glued else " ")
        parts.append(text)
    return "".join(parts)


def _would_fuse(left: str, right: str) -> bool:
    """Whether writing ``right`` straight after ``left`` would run two words together
    (a unit can lose its closing punctuation to compression: "ok, thanks。")."""
    return _would_fuse_chars(left[-1], right[0])


def truncate(text: str, max_chars: int) -> str:
    """``text`` if it fits, else its head cut on a word (or CJK character) boundary + "…"."""
    if len(text) <= max_chars:
        return text
    room = max_chars - len(ELLIPSIS)
    if room <= 0:
        return ELLIPSIS[:max_chars]
    cut = _cut_point(text, room)
    head = text[:cut].rstrip().rstrip(",;:，；：、-–—(（[")
    if not head:
        head = text[:room].rstrip() or text[:room]
    return head + ELLIPSIS


def _cut_point(text: str, room: int) -> int:
    """The last word boundary at or before ``room``; ``room`` itself (mid-word) if the last
    boundary would throw away more than half of the room."""
    for i in range(room, room // 2, -1):
        if _is_boundary(text, i):
            return i
    return room


def _is_boundary(text: str, i: int) -> bool:
    before, after = text[i - 1], text[i]
    return before.isspace() or after.isspace() or is_cjk(before) or is_cjk(after)
