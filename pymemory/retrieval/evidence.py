"""Packing the prompt with evidence: the passages of the ranked memories that answer the
query, verbatim, within the token budget.

Passages compete for the budget by value, greedily (see :func:`pack`). The text groups
lines by day, a memory's passages under one bullet, in time order then position, each
passage once.
"""

from __future__ import annotations

import datetime as dt
import heapq
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ..item import MemoryItem
from .bm25 import Bm25Index
from .passages import (
    PassageIndex,
    Span,
    passage_units,
    strip_span,
    unit_score,
)
from .results import Passage
from .tokens import TokenCounter

#: What the passage next to a matching one is worth, as a share of its memory's value
#: (chosen on the LoCoMo tune half: docs/BENCHMARKS.md, "Evidence seen").
NEIGHBOUR_WEIGHT = 0.5
#: With an embedder, a passage's share rises by this much per unit of (calibrated) cosine
#: it has above the median of its memory's passages: the one that stands out by meaning
#: counts even where the question's words are not in it (chosen on the LoCoMo tune half:
#: docs/BENCHMARKS.md, "Passages that stand out by meaning").
MEANING_WEIGHT = 0.5
#: Stop looking after this many units in a row did not fit (the budget is about full).
MAX_MISSES = 40
GAP = "…"
#: A passage longer than this many characters per token of room left (plus
#: :data:`SURE_MARGIN`) is not counted but taken as too long (text averages under 5
#: characters a token; only runs such as long rows of ``=`` pack more, and such a passage
#: is merely left out). Counting is the packer's main cost, the more so in the browser's
#: pure-Python tokenizer.
CHARS_PER_TOKEN_MAX = 12
SURE_MARGIN = 48
#: A lead is not shortened to a sentence with less room than this left, nor after this
#: many tries in one call (each reads the passage's sentences).
MIN_SHORTENED = 12
MAX_SHORTENINGS = 4


@dataclass
class Taken:
    """One memory in the prompt: its passages (spans of ``item.text``) and why each."""

    order: int  # the how-manieth memory taken
    item: MemoryItem
    spans: dict[Span, str] = field(default_factory=dict)  # span -> why
    scores: dict[Span, float] = field(default_factory=dict)
    shortened: bool = False
    tokens: int = 0  # its block's share of the text (the day line aside)


@dataclass
class Packed:
    taken: dict[int, Taken]  # candidate position -> what of it went in
    text: str
    tokens: int
    blocks: dict[int, str]  # each memory's lines in ``text``, by :attr:`Taken.order`


@lru_cache(maxsize=4096)
def day_of(ts_ms: int) -> str:
    return dt.datetime.fromtimestamp(ts_ms / 1000, tz=dt.UTC).date().isoformat()


def _label(item: MemoryItem) -> str:
    return "- " if item.type == "message" else f"- ({item.type}) "


def _indent(text: str) -> str:
    return "\n  ".join(line.strip() for line in text.splitlines() if line.strip())


def render(taken: Sequence[Taken]) -> tuple[str, dict[int, str]]:
    """The prompt text, and each memory's block (by :attr:`Taken.order`)."""
    lines: list[str] = []
    blocks: dict[int, str] = {}
    day = None
    for t in sorted(taken, key=lambda t: (t.item.timestamp, t.order)):
        d = day_of(t.item.timestamp)
        if d != day:
            lines.append(f"[{d}]")
            day = d
        block = _label(t.item) + _join(t.item.text, sorted(t.spans))
        blocks[t.order] = block
        lines.append(block)
    return "\n".join(lines), blocks


def _join(text: str, spans: list[Span]) -> str:
    parts: list[str] = []
    prev_end = None
    for a, b in spans:
        if prev_end is not None:
            parts.append(f"\n  {GAP}\n  " if text[prev_end:a].strip() else "\n  ")
        parts.append(_indent(text[a:b]))
        prev_end = b
    return "".join(parts)


def _sentence_of(text: str, span: Span, terms: Sequence[str], index: Bm25Index) -> Span | None:
    """The best-matching sentence or line inside ``span`` (a shorter lead), if any."""
    a, b = span
    units = [(x + a, y + a) for x, y in passage_units(text[a:b], 0)]
    if len(units) < 2:
        return None
    scores = [unit_score(text[x:y], terms, index) for x, y in units]
    best = max(range(len(units)), key=lambda k: (scores[k], -k))
    return units[best]


def pack(
    candidates: Sequence[tuple[int, MemoryItem, float]],
    terms: Sequence[str],
    index: Bm25Index,
    passages: PassageIndex,
    slot_of: Mapping[str, int],
    counter: TokenCounter,
    *,
    max_items: int,
    max_tokens: int,
    shorten: bool = True,
    meaning: Callable[[int], np.ndarray | None] | None = None,
) -> Packed:
    """Fill ``max_tokens`` with passages of ``candidates`` ((position, item, score), best
    first, every one past the filters and the floor), at most ``max_items`` memories.
    ``passages`` holds the passages of the memories (by ``slot_of[item.id]``) and scores
    them; ``index``, the memory index, weighs the words of a sentence that is shortened.

    A passage's value is its memory's score relative to the best candidate's: all of it
    for a memory of one passage (it goes in whole); for a memory of several, times the
    share of the query's BM25 weight the passage matches (its passage-index BM25 score
    over the query terms' idf sum: 0..1), lifted where ``meaning`` (slot -> each
    passage's cosine to the query) says the passage stands out from its memory's others
    (:data:`MEANING_WEIGHT`), or :data:`NEIGHBOUR_WEIGHT` for the passage just before or
    after a matching one that was taken (the question before an answer, the answer after
    a question). A passage that neither matches nor stands out is not offered, except
    a memory's best (its first, when nothing tells: a memory found by meaning alone),
    worth 0. No passage is worth more than its memory, so memories are opened lazily,
    best first, while one could still beat what is queued."""
    taken: dict[int, Taken] = {}
    days: set[str] = set()
    heap: list[tuple[float, int, int, Span, str]] = []
    used = misses = 0
    tries = MAX_SHORTENINGS
    top = max((s for _, _, s in candidates), default=0.0) or 1.0
    nxt = seq = 0
    spans_of: dict[int, tuple[Span, ...]] = {}
    items: dict[int, MemoryItem] = {}
    scores_of: dict[int, dict[Span, float]] = {}
    value_of: dict[int, float] = {}
    idf_mass = passages.bm25.idf_mass(terms)
    # Where every word costs a token, a passage of more words than there is room is left
    # out without being counted (near a full budget most passages offered are such).
    words_bound = getattr(counter, "words_are_tokens", False)

    def cost(item: MemoryItem, span: Span, t: Taken | None) -> tuple[int, int]:
        """(tokens of the passage in its memory's block, of the line break before the
        block and the day line it would open)."""
        text = _indent(item.text[span[0] : span[1]])
        if t is not None:
            return counter.count(text) + 2, 0  # the line break and indent, or a gap line
        d = day_of(item.timestamp)
        day = 0 if d in days else _fixed_count(counter, f"[{d}]") + 1
        return counter.count(_label(item) + text), day + 1

    def push(v: float, pos: int, span: Span, why: str) -> None:
        nonlocal seq
        heapq.heappush(heap, (-v, seq, pos, span, why))
        seq += 1

    while (nxt < len(candidates) or heap) and used < max_tokens and misses < MAX_MISSES:
        if nxt < len(candidates) and (not heap or candidates[nxt][2] / top >= -heap[0][0]):
            pos, item, score = candidates[nxt]
            nxt += 1
            value = score / top
            slot = slot_of[item.id]
            spans = passages.spans(slot) or (strip_span(item.text, 0, len(item.text)),)
            shares = passages.shares(slot, terms, idf_mass) or [0.0]
            spans_of[pos], items[pos], value_of[pos] = spans, item, value
            scores_of[pos] = dict(zip(spans, shares, strict=True))
            if len(spans) == 1:
                push(value, pos, spans[0], "whole")
                continue
            near = None if meaning is None else meaning(slot)
            lifted, cos = _lifted(shares, near)
            best = max(range(len(spans)), key=lambda k: (lifted[k], cos[k], -k))
            for k, span in enumerate(spans):
                if k == best or lifted[k] > 0:  # the others go in as context only
                    why = "best" if k == best else "match" if shares[k] > 0 else "meaning"
                    push(value * lifted[k], pos, span, why)
            continue
        _, _, pos, span, why = heapq.heappop(heap)
        item, t = items[pos], taken.get(pos)
        if t is not None and any(a < span[1] and span[0] < b for a, b in t.spans):
            continue  # in already (or a sentence of it, shortened to fit)
        if t is None and len(taken) >= max_items:
            continue
        room = max_tokens - used
        if span[1] - span[0] > CHARS_PER_TOKEN_MAX * room + SURE_MARGIN or (
            words_bound and _more_words(item.text, span, room)
        ):
            n, day = room + 1, 0  # too long to fit: not counted
        else:
            n, day = cost(item, span, t)
        if n + day > room and t is None and shorten and room >= MIN_SHORTENED and tries:
            tries -= 1
            short = _sentence_of(item.text, span, terms, index)
            if short is not None and sum(short_cost := cost(item, short, None)) <= room:
                span, why, (n, day) = short, "shortened", short_cost
        if n + day > room:
            misses += 1
            continue
        misses = 0
        if t is None:
            t = taken[pos] = Taken(len(taken), item, scores=scores_of[pos])
            days.add(day_of(item.timestamp))
        t.spans[span] = why
        t.shortened |= why == "shortened"
        t.tokens += n
        used += n + day
        if why in ("best", "match", "meaning") and NEIGHBOUR_WEIGHT > 0:
            for nb in _neighbours(spans_of[pos], span):
                push(value_of[pos] * NEIGHBOUR_WEIGHT, pos, nb, "neighbour")
    text, blocks = render(list(taken.values()))
    exact = counter.count(text)
    while exact > max_tokens and taken:  # the estimate ran over: drop the last memory taken
        worst = max(taken, key=lambda p: taken[p].order)
        del taken[worst]
        text, blocks = render(list(taken.values()))
        exact = counter.count(text)
    return Packed(taken, text, exact, blocks)


def _lifted(shares: list[float], near: np.ndarray | None) -> tuple[list[float], list[float]]:
    """Each passage's share lifted by meaning (:data:`MEANING_WEIGHT`, capped at 1), and its
    cosine (-inf: none; it breaks ties). Without cosines the shares are as they were."""
    cos = [-np.inf] * len(shares)
    if near is None or not np.isfinite(near).any():
        return shares, cos
    cos[: len(near)] = np.nan_to_num(near, nan=-np.inf).tolist()
    mid = float(np.median(near[np.isfinite(near)]))
    lift = [MEANING_WEIGHT * max(0.0, c - mid) for c in cos]
    return [min(1.0, s + x) for s, x in zip(shares, lift, strict=True)], cos


def _more_words(text: str, span: Span, room: int) -> bool:
    """Whether ``text[span]`` holds more than ``room`` whitespace-separated words."""
    a, b = span
    if room >= b - a:  # no more words than characters (and any budget, however large)
        return False
    return len(text[a:b].split(None, room)) > room


@lru_cache(maxsize=1024)
def _fixed_count(counter: TokenCounter, text: str) -> int:
    """The token count of a label or a day line (few distinct ones)."""
    return counter.count(text)


def _neighbours(spans: Sequence[Span], span: Span) -> list[Span]:
    k = spans.index(span) if span in spans else -1
    return [spans[j] for j in (k - 1, k + 1) if k >= 0 and 0 <= j < len(spans)]


def passages_of(t: Taken) -> tuple[Passage, ...]:
    """What of a taken memory went in, in text order."""
    return tuple(Passage(a, b, why, round(t.scores.get((a, b), 0.0), 4), t.item.text[a:b])
                 for (a, b), why in sorted(t.spans.items()))  # fmt: skip
