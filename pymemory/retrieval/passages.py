"""A memory's raw text as passages: what the prompt gets.

A passage is a span of the raw text (character offsets, so it is quoted verbatim): the
lines of a transcript or the sentences of prose, grouped in order up to
:data:`PASSAGE_TOKENS` estimated tokens. A short memory is one passage. Passages are
derived data, a function of the text: indexed when their memory is put
(:class:`PassageIndex`, BM25 over passages, saved in the index snapshot), never stored or
synced apart from their memory, so forgetting a memory erases them with it.

At retrieve time the passage index weighs each passage of a chosen memory against the
query's terms, so the prompt gets the passage that answers the query rather than the
memory's 200-character summary.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from . import bm25_state
from .analyzer import analyze
from .bm25 import Bm25Index
from .tokens import HeuristicTokenCounter

#: The size passages are grouped up to, in estimated tokens (chosen on the LoCoMo tune
#: half from 24 to 240: docs/BENCHMARKS.md, "Evidence seen"). A passage of a transcript
#: is a few turns, so the answer after a question comes with it.
PASSAGE_TOKENS = 100
#: A text of at most this many estimated tokens is one passage, however many lines.
SHORT_TOKENS = PASSAGE_TOKENS

# A sentence ends at . ! ? (then a space) or at a CJK full stop, exclamation or question
# mark (no space follows those); closing quotes and brackets stay with their sentence.
_SENTENCE_END = re.compile(r"(?:[.!?]+[\"')\]”’]*\s+)|(?:[。！？!?；;…]+[\"')\]」』”’）]*\s*)")
_ESTIMATE = HeuristicTokenCounter()

Span = tuple[int, int]


def estimate_tokens(text: str) -> int:
    """A cheap token estimate (:class:`~.tokens.HeuristicTokenCounter`): passages are
    sized before the exact counter prices what goes into the prompt."""
    return _ESTIMATE.count(text)


def passage_units(text: str, longer_than: int = PASSAGE_TOKENS) -> list[Span]:
    """Lines, and the sentences of a line over ``longer_than`` estimated tokens, as spans
    (stripped)."""
    out: list[Span] = []
    pos = 0
    for line in text.splitlines(keepends=True):
        start, end = pos, pos + len(line.rstrip("\r\n"))
        pos += len(line)
        if not text[start:end].strip():
            continue
        if estimate_tokens(text[start:end]) <= longer_than:
            out.append(strip_span(text, start, end))
            continue
        cut = start
        for m in _SENTENCE_END.finditer(text, start, end):
            if m.end() > cut and text[cut : m.end()].strip():
                out.append(strip_span(text, cut, m.end()))
                cut = m.end()
        if text[cut:end].strip():
            out.append(strip_span(text, cut, end))
    return [s for s in out if s[1] > s[0]]


def strip_span(text: str, start: int, end: int) -> Span:
    """``text[start:end]`` without its leading and trailing white space, as a span."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


@lru_cache(maxsize=1024)
def split_passages(text: str) -> tuple[Span, ...]:
    """The passages of ``text`` as (start, end) character spans, in order: consecutive
    lines or sentences grouped while the group stays within :data:`PASSAGE_TOKENS`
    (a longer sentence is a passage of its own). One span for a short text."""
    if estimate_tokens(text) <= SHORT_TOKENS:
        return (strip_span(text, 0, len(text)),)
    spans: list[Span] = []
    start = end = size = 0
    for a, b in passage_units(text):
        n = estimate_tokens(text[a:b])
        if spans or size:
            if size + n <= PASSAGE_TOKENS:
                end, size = b, size + n
                continue
            spans.append((start, end))
        start, end, size = a, b, n
    if size:
        spans.append((start, end))
    return tuple(spans) or (strip_span(text, 0, len(text)),)


def unit_score(text: str, terms: Sequence[str], index: Bm25Index) -> float:
    """How much of the query a short text (a sentence) holds: the idf of the distinct
    query terms it contains."""
    have = set(analyze(text))
    return sum(index.idf(t) for t in set(terms) if t in have)


class PassageIndex:
    """BM25 over the passages of every memory of two or more passages, kept beside the
    memory index (a memory of one passage is its own passage: the memory index scores
    it). Built from the raw text when a memory is put, dropped with it, and saved in the
    index snapshot; never stored or synced apart from its memory.

    Passage slots are allocated per memory: ``owner[p]`` is the memory slot of passage
    slot ``p`` (-1 for a free one), ``start[p]``/``end[p]`` its span."""

    def __init__(self) -> None:
        self.bm25 = Bm25Index()
        self.of_memory: dict[int, np.ndarray] = {}  # memory slot -> passage slots, in order
        self.owner = np.full(1024, -1, dtype=np.int64)
        self.start = np.zeros(1024, dtype=np.int64)
        self.end = np.zeros(1024, dtype=np.int64)
        self._free: list[int] = []
        self._next = 0

    def __len__(self) -> int:
        return len(self.bm25)

    def _take(self) -> int:
        if self._free:
            return self._free.pop()
        p = self._next
        self._next += 1
        if p >= len(self.owner):
            n = 2 * len(self.owner)
            self.owner = np.concatenate([self.owner, np.full(n - len(self.owner), -1, np.int64)])
            self.start = np.resize(self.start, n)
            self.end = np.resize(self.end, n)
        return p

    def put(self, slot: int, text: str) -> None:
        """Index the passages of ``text`` as memory ``slot``'s (replacing any)."""
        self.remove(slot)
        spans = split_passages(text)
        if len(spans) < 2:
            return
        slots = np.array([self._take() for _ in spans], dtype=np.int64)
        for p, (a, b) in zip(slots.tolist(), spans, strict=True):
            self.owner[p], self.start[p], self.end[p] = slot, a, b
            self.bm25.add(p, analyze(text[a:b]))
        self.of_memory[slot] = slots

    def remove(self, slot: int) -> None:
        slots = self.of_memory.pop(slot, None)
        if slots is None:
            return
        for p in slots.tolist():
            self.bm25.remove(p)
            self.owner[p] = -1
            self._free.append(p)

    def spans(self, slot: int) -> tuple[Span, ...] | None:
        """Memory ``slot``'s passages, or None when it is one passage."""
        slots = self.of_memory.get(slot)
        if slots is None:
            return None
        return tuple(zip(self.start[slots].tolist(), self.end[slots].tolist(), strict=True))

    def shares(self, slot: int, terms: Sequence[str], idf_mass: float) -> list[float] | None:
        """Each of memory ``slot``'s passages' BM25 score as a share of ``idf_mass``
        (0..1), in text order; None when it is one passage."""
        slots = self.of_memory.get(slot)
        if slots is None:
            return None
        if idf_mass <= 0:
            return [0.0] * len(slots)
        return [min(x / idf_mass, 1.0) for x in self.bm25.scores_of(terms, slots).tolist()]

    # --- snapshots

    def to_state(
        self, steps: Callable[[int], Iterator[range]]
    ) -> Iterator[tuple[dict[str, Any], dict[str, np.ndarray], list[str]] | None]:
        """Like :func:`.bm25_state.to_arrays`, with the passages' owners and spans."""
        state = None
        for state in bm25_state.to_arrays(self.bm25, steps):
            if state is None:
                yield None
        assert state is not None
        meta, arrays, terms = state
        n = self._next
        arrays = {**arrays, "owner": self.owner[:n].copy(), "start": self.start[:n].copy(),
                  "end": self.end[:n].copy()}  # fmt: skip
        yield meta, arrays, terms

    @classmethod
    def from_state(
        cls, meta: dict[str, Any], arrays: dict[str, np.ndarray], terms: list[str]
    ) -> PassageIndex:
        out = cls()
        out.bm25 = bm25_state.from_arrays(meta, arrays, terms)
        owner = arrays["owner"]
        n = out._next = len(owner)
        cap = max(1024, n)
        out.owner = np.full(cap, -1, np.int64)
        out.owner[:n] = owner
        out.start = np.zeros(cap, np.int64)
        out.start[:n] = arrays["start"]
        out.end = np.zeros(cap, np.int64)
        out.end[:n] = arrays["end"]
        live = np.flatnonzero(owner >= 0)
        out._free = np.flatnonzero(owner < 0).tolist()[::-1]
        order = live[np.lexsort((out.start[live], owner[live]))]
        if len(order):
            cuts = np.flatnonzero(np.diff(owner[order])) + 1
            for group in np.split(order, cuts):
                out.of_memory[int(owner[group[0]])] = group
        return out
