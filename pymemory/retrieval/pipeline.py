"""Retrieval (seed 002 §3.3): filter -> rank -> trim, with a trace of every decision.

Rank::

    score = relevance x decay x feedback x time_match

* **relevance** comes from the query alone. With an embedder (``hybrid``): the memories
  BM25 matches and the ``depth`` nearest by embedding are the candidates, and relevance is
  their fusion (``strategies.Fusion``: by default per-query min-max, ``0.4 * bm25 / best +
  0.6 * scaled cosine``, times the query's confidence). Without one (``bm25``): the share
  of the query's BM25 weight a memory matches. Either way a candidate is then lifted
  towards a better-scoring neighbour turn (``Fusion.context``, :func:`context_lift`). An
  empty query (or one of stopwords only) makes every live item a candidate with
  relevance 1 (``recency``). Relevance is the sum of a dense, a lexical and a context
  part, all in the trace. An embedder that cannot read the query's script (MiniLM and
  Chinese) sits the query out: it is ranked by BM25, with a note.
* **relevance floor**: a candidate is cut (``below_floor``) unless its cosine reaches
  ``min_dense`` or its lexical evidence reaches ``min_lexical``: the larger of its share
  of the query's weight and of the weight of the query's question sentences (small talk
  before the question does not dilute a match), or 1 if it holds a key term of the query
  (a number, code or id that few memories hold). Nothing relevant means nothing injected.
* **decay** (per memory type), **feedback** and **time_match** (a lift for memories inside
  a span the query names: "last weekend") multiply; with their defaults they re-rank
  comparably relevant memories and cannot lift chatter above a clear answer.

Trim walks the ranking best-first; an item over the remaining token budget is condensed
to a shorter rule summary when one fits (seed 002 §2.2: the low-scoring items get
summarised again), else skipped, and trim keeps going (smaller items further down may
still fit).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from ..encoder import RuleEncoder, split_sentences
from ..item import MEMORY_TYPES, MemoryItem
from .analyzer import analyze, is_cjk
from .bm25 import Bm25Index
from .catalog import TYPE_CODE, Catalog
from .fusion import lexical_share, minmax_fusion, rrf_fusion, score_fusion
from .plan import Plan
from .strategies import HOUR_MS
from .tokens import TokenCounter
from .when import find_time_phrase

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
    "below_floor",
    "zero_weight",
    "max_items",
    "token_budget",
)


@dataclass(frozen=True)
class DenseHits:
    """The dense side of one query: the nearest catalog slots with their cosine, and a
    way to get the cosine of any other slots (NaN for an item with no vector yet)."""

    slots: np.ndarray
    cosine: np.ndarray
    cosine_of: Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class LexicalSide:
    """The BM25 side of one query, worked out ahead (while the query is being embedded);
    it holds while the catalog's ``mutations`` count is unchanged."""

    window: tuple[int, int] | None  # the time span a phrase in the query names
    terms: list[str]
    idf_mass: float
    slots: np.ndarray  # every slot scoring above zero, ascending
    scores: np.ndarray
    mutations: int
    # The lexical evidence of each slot for the relevance floor, 0..1: the larger of its
    # share of the query's weight, its share of the ask's weight (the question sentences
    # of a chatty query), and 1 where it holds one of the query's key terms.
    evidence: np.ndarray | None = None


# Sentences of a query; the ones ending in a question mark are its ask.
_SENTENCE_RE = re.compile(r"[^.!?。！？;；\n]+[.!?。！？;；\n]*")
_ASK_END = ("?", "？")
# A key term holds a digit, has at least this many characters, and is rare in the store:
# its idf at least this share of the largest idf there is (a term in one memory).
KEY_MIN_CHARS = 3
KEY_MIN_IDF = 0.5
# The context lift comes from the best this many candidates of a query.
CONTEXT_GIVERS = 256


def ask_of(query: str) -> str | None:
    """The question sentences of a query that says more than its question (the last
    sentence when none ends in a question mark); None for a one-sentence query."""
    sentences = [m.group().strip() for m in _SENTENCE_RE.finditer(query)]
    sentences = [x for x in sentences if x.rstrip(".!?。！？;；").strip()]
    if len(sentences) < 2:
        return None
    asks = [x for x in sentences if x.endswith(_ASK_END)] or sentences[-1:]
    return " ".join(asks)


def key_terms(index: Bm25Index, terms: Sequence[str]) -> list[str]:
    """The query terms that single out a memory however long the query: numbers, codes
    and ids (a digit, :data:`KEY_MIN_CHARS`+ characters) that few memories hold."""
    n = len(index)
    if n == 0:
        return []
    top = math.log(1.0 + (n - 0.5) / 1.5)  # the idf of a term held by one memory
    return [
        t for t in dict.fromkeys(terms)
        if len(t) >= KEY_MIN_CHARS and any(c.isdigit() for c in t)
        and index.doc_freq(t) > 0 and index.idf(t) >= KEY_MIN_IDF * top
    ]  # fmt: skip


def query_mass(index: Bm25Index, terms: Sequence[str]) -> float:
    """The query's weight, against which a memory's BM25 score is its share: the idf of
    every term, a term no memory holds included (a query about unknown things matches
    a small share), except a CJK bigram no memory holds: unsegmented text makes one at
    every word boundary ("号是", "是谁"), and those say nothing about the question."""
    return sum(
        index.idf(t) for t in terms
        if not (len(t) == 2 and is_cjk(t) and index.doc_freq(t) == 0)
    )  # fmt: skip


def lexical_side(catalog: Catalog, query: str, now_ms: int) -> LexicalSide:
    window, terms = lexical_query(query, now_ms)
    index = catalog.index
    if not terms:
        empty = np.zeros(0, np.int64)
        return LexicalSide(window, terms, 0.0, empty, np.zeros(0), catalog.mutations, None)
    slots, scores = index.scores(terms)
    idf_mass = query_mass(index, terms)
    evidence = lexical_share(scores, idf_mass)
    ask = ask_of(query)
    ask_terms = [] if ask is None else lexical_query(ask, now_ms)[1]
    if ask_terms and len(slots):
        a_slots, a_scores = index.scores(ask_terms)
        share = lexical_share(a_scores, query_mass(index, ask_terms))
        # The ask's terms are the query's (unless a time phrase was read differently).
        at = np.minimum(np.searchsorted(slots, a_slots), len(slots) - 1)
        same = slots[at] == a_slots
        evidence[at[same]] = np.maximum(evidence[at[same]], share[same])
    keys = key_terms(index, terms)
    if keys:
        k_slots, _ = index.scores(keys)
        evidence[np.searchsorted(slots, k_slots)] = 1.0
    return LexicalSide(window, terms, idf_mass, slots, scores, catalog.mutations, evidence)


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
    condensed: bool = False  # ``line`` holds a shorter summary than ``item.content``
    relevance: float = 0.0
    lexical_part: float = 0.0
    dense_part: float = 0.0
    context_part: float = 0.0
    time_match: float = 1.0


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


def decay_factor(plan: Plan, ts: np.ndarray, now_ms: int, type_code: np.ndarray) -> np.ndarray:
    """``floor + (1 - floor) * 0.5 ** (age / half_life)`` with each type's rule (a type
    without decay has an infinite half-life: factor 1)."""
    rules = [plan.decay.rule(t) for t in MEMORY_TYPES]
    half_life = np.array([np.inf if h is None else h for h, _ in rules])[type_code]
    floor = np.array([f for _, f in rules])[type_code]
    age_h = np.maximum(now_ms - ts, 0) / HOUR_MS
    return floor + (1.0 - floor) * np.exp2(-age_h / half_life)


def feedback_factor(plan: Plan, net: np.ndarray, important: np.ndarray) -> np.ndarray:
    fw = plan.feedback
    w = np.where(net > 0, fw.liked, np.where(net < 0, fw.disliked, 1.0))
    return w * np.where(important, fw.important, 1.0)


def time_match_factor(
    plan: Plan, ts: np.ndarray, window: tuple[int, int] | None
) -> np.ndarray:
    if window is None or plan.decay.query_window == 1.0:
        return np.ones(len(ts))
    inside = (ts >= window[0]) & (ts <= window[1])
    return np.where(inside, plan.decay.query_window, 1.0)


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


def lexical_query(query: str, now_ms: int) -> tuple[tuple[int, int] | None, list[str]]:
    """(the time span a phrase in ``query`` names, the BM25 terms of the rest)."""
    found = find_time_phrase(query, now_ms)
    if found is None:
        return None, analyze(query)
    window, (start, end) = found
    return window, analyze(f"{query[:start]} {query[end:]}")


def relevance_of(
    plan: Plan,
    mode: str,
    bm25: np.ndarray,
    idf_mass: float,
    cosine: np.ndarray | None,
    ts: np.ndarray,
    evidence: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(relevance, dense part, lexical part, passes the floor) of each candidate.
    ``evidence``: each candidate's lexical evidence for the floor (``LexicalSide``), by
    default its share of the query's BM25 weight."""
    n = len(bm25)
    if mode == "recency":
        return np.ones(n), np.zeros(n), np.ones(n), np.ones(n, dtype=bool)
    share = lexical_share(bm25, idf_mass)
    f, floor = plan.fusion, plan.floor
    if evidence is None:
        evidence = share
    lexical_ok = (bm25 > 0) & (evidence >= floor.min_lexical)
    if mode == "bm25":
        dense_part, lexical_part = np.zeros(n), share
        passes = floor.off | lexical_ok
    else:
        assert cosine is not None
        if f.method == "rrf":
            dense_part, lexical_part = rrf_fusion(
                cosine, bm25, ts, lexical=f.lexical, dense=f.dense, k=f.k
            )
        elif f.method == "minmax":
            dense_part, lexical_part = minmax_fusion(
                cosine, bm25, share, lexical=f.lexical, dense=f.dense
            )
        else:
            dense_part, lexical_part = score_fusion(
                cosine, share, lexical=f.lexical, dense=f.dense, power=f.power
            )
        cos = np.nan_to_num(cosine, nan=-1.0)
        passes = floor.off | (cos >= floor.min_dense) | lexical_ok
    return dense_part + lexical_part, dense_part, lexical_part, np.asarray(passes)


def context_lift(
    catalog: Catalog, slots: np.ndarray, relevance: np.ndarray, weights: Sequence[float]
) -> np.ndarray:
    """How much each candidate gains from its neighbours (``Fusion.context``): it moves
    ``weights[d - 1]`` of the way up to the better of the two memories ``d`` places
    before and after it in its conversation (``Catalog.context_order``); the best such
    move counts. The givers are the query's best :data:`CONTEXT_GIVERS` candidates (a
    lift never goes past its giver, so weaker givers cannot move anything into the
    results); memories that are not candidates give nothing. ``slots`` is ascending."""
    lift = np.zeros(len(slots))
    if not weights or len(slots) == 0:
        return lift
    order, pos, run = catalog.context_order()
    givers = np.arange(len(slots))
    if len(slots) > CONTEXT_GIVERS:
        givers = np.argpartition(-relevance, CONTEXT_GIVERS)[:CONTEXT_GIVERS]
    gp = pos[slots[givers]]
    givers, gp = givers[gp >= 0], gp[gp >= 0][None, :]
    offsets, w = _context_offsets(tuple(weights))
    # Every (distance, side) of every giver at once: the positions it lifts.
    target = gp + offsets
    inside = (target >= 0) & (target < len(order))
    target = np.where(inside, target, gp)
    inside &= run[target] == run[gp]
    # Which candidate sits at each target position (``slots`` is ascending).
    target_slot = order[target]
    receiver = np.minimum(np.searchsorted(slots, target_slot), len(slots) - 1)
    ok = inside & (slots[receiver] == target_slot)
    r = receiver[ok]
    gain = (w * (relevance[givers][None, :] - relevance[receiver]))[ok]
    np.maximum.at(lift, r, np.maximum(gain, 0.0))
    return lift


@lru_cache(maxsize=64)
def _context_offsets(weights: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(-1, 1, -2, 2, ...) as a column, and each offset's weight as a column."""
    d = np.repeat(np.arange(1, len(weights) + 1), 2)
    offsets = (d * np.tile([-1, 1], len(weights)))[:, None]
    return offsets, np.repeat(np.asarray(weights, dtype=np.float64), 2)[:, None]


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
    dense: DenseHits | None = None,
    notes: tuple[str, ...] = (),
    condense_to_fit: bool = True,
    lexical: LexicalSide | None = None,
) -> Retrieval:
    """Rank and trim. ``dense`` is the nearest items by embedding (and the cosine of any
    other); with it BM25 and dense are fused (``plan.fusion``). ``condense_to_fit``: an
    item over the remaining budget may go in condensed. A time phrase in the query
    ("last Friday") sets ``window`` and is left out of the BM25 terms. ``lexical``: the
    BM25 side from :func:`lexical_side` at ``now_ms``, used if the catalog has not changed
    since."""
    if lexical is None or lexical.mutations != catalog.mutations:
        lexical = lexical_side(catalog, query, now_ms)
    window, terms, idf_mass = lexical.window, lexical.terms, lexical.idf_mass
    cosine: np.ndarray | None = None
    if dense is not None:
        mode = "hybrid"
        lex_slots, lex = lexical.slots, lexical.scores
        slots = np.union1d(lex_slots.astype(np.int64), dense.slots.astype(np.int64))
        bm25 = np.zeros(len(slots))
        bm25[np.searchsorted(slots, lex_slots)] = lex
        cosine = np.full(len(slots), np.nan)
        cosine[np.searchsorted(slots, dense.slots)] = dense.cosine
        unknown = np.isnan(cosine)
        if unknown.any():  # lexical matches beyond the dense depth: their own cosine
            cosine[unknown] = dense.cosine_of(slots[unknown])
    elif terms:
        mode = "bm25"
        slots, bm25 = lexical.slots.astype(np.int64, copy=False), lexical.scores
    else:
        mode = "recency"
        slots = catalog.live_slots()
        bm25 = np.zeros(len(slots))
    reason = filter_reasons(catalog, plan, slots, now_ms)
    ts = catalog.ts[slots]
    if mode == "recency":
        window = None
    evidence = None
    if mode != "recency" and lexical.evidence is not None:
        evidence = np.zeros(len(slots))
        evidence[np.searchsorted(slots, lexical.slots)] = lexical.evidence
    relevance, dense_part, lexical_part, passes = relevance_of(
        plan, mode, bm25, idf_mass, cosine, ts, evidence
    )
    context_part = np.zeros(len(slots))
    if mode != "recency":
        context_part = context_lift(catalog, slots, relevance, plan.fusion.context)
        relevance = relevance + context_part
    decay = decay_factor(plan, ts, now_ms, catalog.type_code[slots])
    fbw = feedback_factor(plan, catalog.net_feedback[slots], catalog.important[slots])
    tmatch = time_match_factor(plan, ts, window)
    score = relevance * decay * fbw * tmatch
    reason[(reason == 0) & ~passes] = CUT_REASONS.index("below_floor") + 1
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
        factors = {
            "relevance": float(relevance[i]),
            "lexical_part": float(lexical_part[i]),
            "dense_part": float(dense_part[i]),
            "context_part": float(context_part[i]),
            "time_match": float(tmatch[i]),
        }
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
                        **factors,
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
                    **factors,
                )
            )
    if trace and mode in ("bm25", "hybrid"):
        rows.extend(_no_match_rows(catalog, plan, slots, now_ms, window))
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
        window=window,
    )


def _cos(cosine: np.ndarray | None, i: int) -> float | None:
    if cosine is None or np.isnan(cosine[i]):
        return None
    return float(cosine[i])


def _no_match_rows(
    catalog: Catalog, plan: Plan, matched: np.ndarray, now_ms: int,
    window: tuple[int, int] | None,
) -> list[Candidate]:  # fmt: skip
    live = catalog.live_slots()
    rest = live[~np.isin(live, matched)]
    # Newest first; items of the same millisecond: the later written (higher slot) first,
    # so the order does not depend on how fast the writes were.
    rest = rest[np.lexsort((-rest, -catalog.ts[rest]))][:NO_MATCH_TRACE_LIMIT]
    ts = catalog.ts[rest]
    decay = decay_factor(plan, ts, now_ms, catalog.type_code[rest])
    fbw = feedback_factor(plan, catalog.net_feedback[rest], catalog.important[rest])
    tmatch = time_match_factor(plan, ts, window)
    rows = []
    for i, slot in enumerate(rest.tolist()):
        item = catalog.items[catalog.id_at[slot]]  # type: ignore[index]
        rows.append(
            Candidate(item.id, item.type, item.timestamp, item.content, 0.0, float(decay[i]),
                      float(fbw[i]), 0.0, "no_match", time_match=float(tmatch[i]))
        )  # fmt: skip
    return rows
