"""What a retrieval returns: the injected memories, the trace rows, and the prompt lines
(with the shorter summaries trim uses for a memory over the remaining budget)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ..encoder import RuleEncoder, split_sentences
from ..item import MemoryItem
from .analyzer import analyze
from .tokens import TokenCounter

# Condensing an item that does not fit: shorter rule summaries tried in turn, and at most
# this many items condensed per retrieval (each try costs a summary and a token count).
CONDENSE_CHARS = (120, 80, 50, 30)
MAX_CONDENSED = 10

# Why a candidate was not injected. "included" marks the ones that were; "no_match"
# (trace only) marks items the query's terms did not match at all.
CUT_REASONS = (
    "expired",
    "scope",
    "type",
    "time_window",
    "tag",
    "below_floor",
    "zero_weight",
    "max_items",
    "token_budget",
)


#: What ``Retrieval.text`` carries of each memory: ``"passages"`` (the default: the
#: passages of its raw text that answer the query, verbatim) or ``"summary"`` (its
#: <= 200-character ``content``, condensed further to fit).
INJECT_MODES = ("passages", "summary")


@dataclass(frozen=True)
class Passage:
    """A span of a memory's raw text that went into the prompt, and why: ``whole`` (a
    short memory), ``best`` (its best match for the query: by its words, and with an
    embedder also by how much nearer the query it is than its memory's other passages),
    ``match`` (another passage matching the query), ``meaning`` (another passage that no
    query word matches but that stands out by meaning), ``neighbour`` (next to one of
    those, for context) or ``shortened`` (the best sentence of the best passage, when the
    passage did not fit)."""

    start: int  # ``item.text[start:end]``
    end: int
    why: str
    score: float  # the share of the query's BM25 weight it matches, 0..1 (0: none)
    text: str


@dataclass(frozen=True)
class ScoredMemory:
    """An injected memory: ``score = relevance x decay x feedback_weight x time_match``,
    ``relevance = dense_part + lexical_part``."""

    item: MemoryItem
    score: float
    bm25: float
    decay: float
    feedback_weight: float
    tokens: int
    line: str
    dense: float | None = None  # cosine similarity, when dense retrieval ran
    # inject="summary": ``line`` holds a shorter summary than ``item.content``;
    # inject="passages": the best passage was cut to its best sentence to fit
    condensed: bool = False
    relevance: float = 0.0
    lexical_part: float = 0.0
    dense_part: float = 0.0
    context_part: float = 0.0
    time_match: float = 1.0
    passages: tuple[Passage, ...] = ()  # inject="passages": what of its text went in


@dataclass(frozen=True)
class Candidate:
    """One row of the debug trace (the same factors as :class:`ScoredMemory`)."""

    id: str
    type: str
    timestamp: int
    content: str
    bm25: float
    decay: float
    feedback_weight: float
    score: float
    status: str  # "included" or one of CUT_REASONS
    tokens: int | None = None
    dense: float | None = None  # cosine similarity, when dense retrieval ran
    condensed: bool = False  # included with a shorter summary to fit the budget
    relevance: float = 0.0
    lexical_part: float = 0.0
    dense_part: float = 0.0
    context_part: float = 0.0
    time_match: float = 1.0
    passages: tuple[Passage, ...] = ()


@dataclass(frozen=True)
class Retrieval:
    query: str
    mode: str  # "bm25", "hybrid" (BM25 and dense fused) or "recency" (empty query)
    memories: list[ScoredMemory]
    text: str  # the lines to inject into the prompt, best first
    tokens_used: int
    max_tokens: int
    max_items: int
    token_counter: str
    trace: list[Candidate] | None = None
    notes: tuple[str, ...] = ()  # e.g. why dense retrieval did not take part
    window: tuple[int, int] | None = None  # the time span the query names, if any
    inject: str = "passages"  # what ``text`` carries of each memory (INJECT_MODES)

    @property
    def items(self) -> list[MemoryItem]:
        return [m.item for m in self.memories]

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["memories"] = [
            {**{k: v for k, v in asdict(m).items() if k != "item"}, "item": m.item.to_dict()}
            for m in self.memories
        ]
        return out


def format_line(item: MemoryItem, content: str | None = None) -> str:
    day = dt.datetime.fromtimestamp(item.timestamp / 1000, tz=dt.UTC).date()
    return f"- [{item.type} {day.isoformat()}] {item.content if content is None else content}"


def condense(
    item: MemoryItem, budget: int, counter: TokenCounter, terms: Sequence[str] = ()
) -> tuple[str, int] | None:
    """The longest of the shorter rule summaries of ``item`` whose line fits ``budget``
    tokens, as (line, tokens); None if even the shortest does not fit. The summaries are
    made from the sentences that share a term with the query (``terms``), when any do."""
    source = item.content
    if terms and item.type != "tool_result":  # tool output is not prose
        wanted = set(terms)
        focused = [s for s in split_sentences(source) if not wanted.isdisjoint(analyze(s))]
        if focused:
            source = " ".join(focused)
    for chars in CONDENSE_CHARS:
        if chars >= len(item.content):
            continue
        line = format_line(item, RuleEncoder(chars).summarize(source, type=item.type))
        tokens = counter.count(line)
        if tokens <= budget:
            return line, tokens
    return None
