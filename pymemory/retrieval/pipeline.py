"""Retrieval (seed 002 §3.3): filter -> rank -> trim, with a trace of every decision.

Rank = BM25 relevance x time decay x feedback weight. With an empty query (or one made
only of stopwords) every live item is a candidate with relevance 1, so the ranking is
by recency and feedback. Trim walks the ranking best-first; an item over the remaining
token budget is condensed to a shorter rule summary when one fits (seed 002 §2.2: the
low-scoring items get summarised again), else skipped, and trim keeps going (smaller
items further down may still fit).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..encoder import RuleEncoder, split_sentences
from ..item import MemoryItem
from .analyzer import analyze
from .catalog import TYPE_CODE, Catalog
from .strategies import HOUR_MS, Plan
from .tokens import TokenCounter

# Trace rows for live items that share no term with the query (newest first, capped so a
# large store does not flood the debug panel).
NO_MATCH_TRACE_LIMIT = 100

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
    "zero_weight",
    "max_items",
    "token_budget",
)


@dataclass(frozen=True)
class ScoredMemory:
    item: MemoryItem
    score: float
    bm25: float
    decay: float
    feedback_weight: float
    tokens: int
    line: str
    dense: float | None = None  # cosine similarity, when dense retrieval ran
    condensed: bool = False  # ``line`` holds a shorter summary than ``item.content``


@dataclass(frozen=True)
class Candidate:
    """One row of the debug trace."""

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


@dataclass(frozen=True)
class Retrieval:
    query: str
    mode: str  # "bm25", "hybrid" (BM25 + dense fused by RRF) or "recency" (empty query)
    memories: list[ScoredMemory]
    text: str  # the lines to inject into the prompt, best first
    tokens_used: int
    max_tokens: int
    max_items: int
    token_counter: str
    trace: list[Candidate] | None = None
    notes: tuple[str, ...] = ()  # e.g. why dense retrieval did not take part

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


def decay_factor(plan: Plan, ts: np.ndarray, now_ms: int) -> np.ndarray:
    if plan.decay.half_life_hours is None:
        return np.ones(len(ts))
    age_h = np.maximum(now_ms - ts, 0) / HOUR_MS
    floor = plan.decay.floor
    return floor + (1.0 - floor) * np.exp2(-age_h / plan.decay.half_life_hours)


def feedback_factor(plan: Plan, net: np.ndarray, important: np.ndarray) -> np.ndarray:
    fw = plan.feedback
    w = np.where(net > 0, fw.liked, np.where(net < 0, fw.disliked, 1.0))
    return w * np.where(important, fw.important, 1.0)


def filter_reasons(catalog: Catalog, plan: Plan, slots: np.ndarray, now_ms: int) -> np.ndarray:
    """For each slot, 0 if it passes every filter, else 1 + index into CUT_REASONS."""
    reason = np.zeros(len(slots), dtype=np.int8)

    def cut(mask: np.ndarray, name: str) -> None:
        reason[(reason == 0) & mask] = CUT_REASONS.index(name) + 1

    cut(catalog.expires[slots] <= now_ms, "expired")
    if plan.scopes is not None:
        codes = [catalog.scope_code_of(s) for s in plan.scopes]
        cut(~np.isin(catalog.scope_code[slots], codes), "scope")
    if plan.types is not None:
        codes = [TYPE_CODE[t] for t in plan.types]
        cut(~np.isin(catalog.type_code[slots], codes), "type")
    since = plan.since(now_ms)
    ts = catalog.ts[slots]
    if since is not None:
        cut(ts < since, "time_window")
    if plan.until_ms is not None:
        cut(ts > plan.until_ms, "time_window")
    for group in plan.tags_any:
        tagged: set[int] = set().union(*(catalog.tag_slots.get(t, set()) for t in group))
        cut(~np.isin(slots, np.fromiter(tagged, dtype=np.int64, count=len(tagged))), "tag")
    for tag in plan.tags_all:
        tagged = catalog.tag_slots.get(tag, set())
        cut(~np.isin(slots, np.fromiter(tagged, dtype=np.int64, count=len(tagged))), "tag")
    return reason


def _rrf_part(score: np.ndarray, ts: np.ndarray, usable: np.ndarray, k: float) -> np.ndarray:
    """1 / (k + rank) of each usable candidate by ``score`` (ties: newer first), else 0."""
    part = np.zeros(len(score))
    idx = np.flatnonzero(usable & (score > 0))
    order = idx[np.lexsort((-ts[idx], -score[idx]))]
    part[order] = 1.0 / (k + np.arange(1, len(order) + 1))
    return part


def retrieve(
    catalog: Catalog,
    query: str,
    plan: Plan,
    *,
    now_ms: int,
    max_items: int,
    max_tokens: int,
    counter: TokenCounter,
    trace: bool = False,
    dense: tuple[np.ndarray, np.ndarray] | None = None,
    notes: tuple[str, ...] = (),
    condense_to_fit: bool = True,
) -> Retrieval:
    """Rank and trim. ``dense`` is (catalog slots, cosine) of the nearest items by
    embedding; with it the BM25 and dense rankings are fused by RRF (``plan.fusion``).
    ``condense_to_fit``: an item over the remaining budget may go in condensed."""
    terms = analyze(query)
    cosine: np.ndarray | None = None
    if dense is not None:
        mode = "hybrid"
        lex_slots, lex = catalog.index.scores(terms) if terms else (np.zeros(0, int), np.zeros(0))
        slots = np.union1d(lex_slots.astype(np.int64), dense[0].astype(np.int64))
        bm25 = np.zeros(len(slots))
        bm25[np.searchsorted(slots, lex_slots)] = lex
        cosine = np.full(len(slots), np.nan)
        cosine[np.searchsorted(slots, dense[0])] = dense[1]
    elif terms:
        mode = "bm25"
        slots, bm25 = catalog.index.scores(terms)
        slots = slots.astype(np.int64, copy=False)
    else:
        mode = "recency"
        slots = catalog.live_slots()
        bm25 = np.ones(len(slots))
    reason = filter_reasons(catalog, plan, slots, now_ms)
    ts = catalog.ts[slots]
    decay = decay_factor(plan, ts, now_ms)
    fbw = feedback_factor(plan, catalog.net_feedback[slots], catalog.important[slots])
    if cosine is None:
        score = bm25 * decay * fbw
    else:
        usable = reason == 0
        f = plan.fusion
        cos = np.nan_to_num(np.maximum(cosine, 0.0), nan=0.0)
        score = f.lexical * _rrf_part(bm25 * decay * fbw, ts, usable, f.k) + f.dense * _rrf_part(
            cos * decay * fbw, ts, usable, f.k
        )
    reason[(reason == 0) & (score <= 0)] = CUT_REASONS.index("zero_weight") + 1
    # Best first; ties go to the newer item.
    order = np.lexsort((-ts, -score))
    if not trace:
        order = order[reason[order] == 0]

    chosen: list[ScoredMemory] = []
    rows: list[Candidate] = []
    used = 0
    n_condensed = 0
    for i in order.tolist():
        item = catalog.items[catalog.id_at[slots[i]]]  # type: ignore[index]
        tokens: int | None = None
        condensed = False
        if reason[i]:
            status = CUT_REASONS[reason[i] - 1]
        elif len(chosen) >= max_items:
            status = "max_items"
            if not trace:
                break
        else:
            line = format_line(item)
            tokens = counter.count(line)
            if used + tokens > max_tokens and condense_to_fit and n_condensed < MAX_CONDENSED:
                short = condense(item, max_tokens - used, counter, terms)
                if short is not None:
                    (line, tokens), condensed = short, True
                    n_condensed += 1
            if used + tokens > max_tokens:
                status = "token_budget"
            else:
                status = "included"
                used += tokens
                chosen.append(
                    ScoredMemory(
                        item,
                        float(score[i]),
                        float(bm25[i]),
                        float(decay[i]),
                        float(fbw[i]),
                        tokens,
                        line,
                        _cos(cosine, i),
                        condensed,
                    )
                )
        if trace:
            rows.append(
                Candidate(
                    item.id,
                    item.type,
                    item.timestamp,
                    item.content,
                    float(bm25[i]),
                    float(decay[i]),
                    float(fbw[i]),
                    float(score[i]),
                    status,
                    tokens,
                    _cos(cosine, i),
                    condensed,
                )
            )
    if trace and mode in ("bm25", "hybrid"):
        rows.extend(_no_match_rows(catalog, plan, slots, now_ms))
    return Retrieval(
        query=query,
        mode=mode,
        memories=chosen,
        text="\n".join(m.line for m in chosen),
        tokens_used=used,
        max_tokens=max_tokens,
        max_items=max_items,
        token_counter=counter.name,
        trace=rows if trace else None,
        notes=notes,
    )


def _cos(cosine: np.ndarray | None, i: int) -> float | None:
    if cosine is None or np.isnan(cosine[i]):
        return None
    return float(cosine[i])


def _no_match_rows(
    catalog: Catalog, plan: Plan, matched: np.ndarray, now_ms: int
) -> list[Candidate]:
    live = catalog.live_slots()
    rest = live[~np.isin(live, matched)]
    # Newest first; items of the same millisecond: the later written (higher slot) first,
    # so the order does not depend on how fast the writes were.
    rest = rest[np.lexsort((-rest, -catalog.ts[rest]))][:NO_MATCH_TRACE_LIMIT]
    decay = decay_factor(plan, catalog.ts[rest], now_ms)
    fbw = feedback_factor(plan, catalog.net_feedback[rest], catalog.important[rest])
    rows = []
    for i, slot in enumerate(rest.tolist()):
        item = catalog.items[catalog.id_at[slot]]  # type: ignore[index]
        rows.append(
            Candidate(item.id, item.type, item.timestamp, item.content, 0.0, float(decay[i]),
                      float(fbw[i]), 0.0, "no_match")
        )  # fmt: skip
    return rows
