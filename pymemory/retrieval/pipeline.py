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
  (a number, code or id that few memories hold); in CJK text a memory that shares one
  character with the query and no word counts a quarter (``lexical.CHAR_ONLY_EVIDENCE``).
  Beside a memory that passes so, one that shares a word with the query and scores a
  quarter of its BM25 passes too (:func:`in_company`: questions that need several
  memories). A memory passes on its cosine only if some memory stands out from the rest
  of the store by meaning for this query (``DenseHits.gate``): a question about nothing
  stored (the capital of Peru, asked of a personal-assistant store) is as close to one
  memory as to any, and gets what its words match, not the nearest. Nothing relevant
  means nothing injected.
* **decay** (per memory type), **feedback** and **time_match** (a lift for memories inside
  a span the query names: "last weekend") multiply; with their defaults they re-rank
  comparably relevant memories and cannot lift chatter above a clear answer.

Trim walks the ranking best-first; an item over the remaining token budget is condensed
to a shorter rule summary when one fits (seed 002 §2.2: the low-scoring items get
summarised again), else skipped, and trim keeps going (smaller items further down may
still fit).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from functools import lru_cache

import numpy as np

from ..item import MEMORY_TYPES
from ..models.embedding import reads
from .catalog import TYPE_CODE, Catalog
from .dense import DenseHits, DenseIndex
from .evidence import pack, passages_of
from .fusion import lexical_share, minmax_fusion, rrf_fusion, score_fusion
from .lexical import LexicalSide, lexical_side
from .plan import Plan
from .results import (
    CUT_REASONS,
    MAX_CONDENSED,
    Candidate,
    Passage,
    Retrieval,
    ScoredMemory,
    condense,
    format_line,
)
from .strategies import HOUR_MS
from .tokens import TokenCounter

# Trace rows for live items that share no term with the query (newest first, capped so a
# large store does not flood the debug panel).
NO_MATCH_TRACE_LIMIT = 100

# The floor's company rule (:func:`in_company`): a memory that shares a word with the
# query passes when its BM25 is at least this share of the best memory's that passes.
FLOOR_COMPANY = 0.25

# The context lift comes from the best this many candidates of a query.
CONTEXT_GIVERS = 256

NO_EMBEDDER = "dense retrieval off: no embedder; ranked by BM25"
UNREAD_SCRIPT = "dense retrieval off for this query: the embedder does not read its script"
NO_STANDOUT = (
    "no memory stands out by meaning (the query is about as close to all of the store): "
    "only word matches pass the relevance floor"
)


async def run(
    catalog: Catalog,
    query: str,
    plan: Plan,
    *,
    dense_index: DenseIndex | None,
    catch_up: Callable[[], Awaitable[None]],
    clock: Callable[[], int],
    max_items: int,
    max_tokens: int,
    counter: TokenCounter,
    trace: bool,
    condense_to_fit: bool,
    inject: str = "passages",
) -> Retrieval:
    """One retrieve, start to end. The query is embedded (in the browser: in the model
    worker) while this thread applies other writers' changes (``catch_up``) and scores
    BM25, so the call takes the longer of the two, not their sum; then :func:`retrieve`
    ranks and trims. An embedder that cannot read the query's script sits it out."""
    if dense_index is not None and not reads(dense_index.embedder, query):
        dense_index, no_dense = None, UNREAD_SCRIPT  # its vectors would be noise
    else:
        no_dense = NO_EMBEDDER
    embedding = None if dense_index is None else dense_index.embed_query(query)
    try:
        await catch_up()
        now = clock()
        lexical = lexical_side(catalog, query, now)
        if dense_index is None:
            dense, notes = None, (no_dense,)
        else:
            dense, notes = await dense_index.candidates(embedding, plan.fusion.depth)
    finally:
        if embedding is not None and not embedding.done():
            embedding.cancel()
        elif embedding is not None and not embedding.cancelled():
            embedding.exception()  # seen: a failure here is no "never retrieved" warning
    return retrieve(
        catalog,
        query,
        plan,
        now_ms=now,
        lexical=lexical,
        max_items=max_items,
        max_tokens=max_tokens,
        counter=counter,
        trace=trace,
        dense=dense,
        notes=notes,
        condense_to_fit=condense_to_fit,
        inject=inject,
    )


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


def time_match_factor(plan: Plan, ts: np.ndarray, window: tuple[int, int] | None) -> np.ndarray:
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


def relevance_of(
    plan: Plan,
    mode: str,
    bm25: np.ndarray,
    idf_mass: float,
    cosine: np.ndarray | None,
    ts: np.ndarray,
    evidence: np.ndarray | None = None,
    words: np.ndarray | None = None,
    meaning: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(relevance, dense part, lexical part, passes the floor) of each candidate.
    ``evidence``: each candidate's lexical evidence for the floor (``LexicalSide``), by
    default its share of the query's BM25 weight; ``words``: whether it shares a word
    with the query (default: any match), for the company rule (:func:`in_company`);
    ``meaning``: whether a cosine may pass the floor (:func:`stands_out`)."""
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
        passes = lexical_ok
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
        passes = ((cos >= floor.min_dense) & meaning) | lexical_ok
    passes = floor.off | passes | in_company(bm25, lexical_ok, bm25 > 0 if words is None else words)
    return dense_part + lexical_part, dense_part, lexical_part, np.asarray(passes)


def stands_out(dense: DenseHits, cosine: np.ndarray) -> bool:
    """Whether the query's best cosine reaches ``dense.gate`` (its typical cosine to the
    store plus the embedder's ``dense_standout``); True without a gate (a small store,
    an embedder that sets none)."""
    if dense.gate is None:
        return True
    cos = np.nan_to_num(cosine, nan=-1.0)
    return bool(len(cos)) and float(cos.max()) >= dense.gate


def in_company(bm25: np.ndarray, lexical_ok: np.ndarray, words: np.ndarray) -> np.ndarray:
    """The floor's company rule: a question that needs several memories ("write the
    minutes", "how much in all") gets the weaker matches beside its best one. Once a
    memory passes the floor on its lexical evidence, every memory that shares a word
    with the query (``words``) and scores at least :data:`FLOOR_COMPANY` of the best such
    memory's BM25 passes too. A query nothing passes for still gets nothing."""
    if not lexical_ok.any():
        return np.zeros(len(bm25), dtype=bool)
    best = float(bm25[lexical_ok].max())
    return words & (bm25 > 0) & (bm25 >= FLOOR_COMPANY * best)


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
    inject: str = "passages",
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
    meaning = dense is None or cosine is None or stands_out(dense, cosine)
    if not meaning and not plan.floor.off:
        notes = (*notes, NO_STANDOUT)
    reason = filter_reasons(catalog, plan, slots, now_ms)
    ts = catalog.ts[slots]
    if mode == "recency":
        window = None
    evidence = words = None
    if mode != "recency" and lexical.evidence is not None:
        at = np.searchsorted(slots, lexical.slots)
        evidence = np.zeros(len(slots))
        evidence[at] = lexical.evidence
        if lexical.words is not None:
            words = np.zeros(len(slots), dtype=bool)
            words[at] = lexical.words
    relevance, dense_part, lexical_part, passes = relevance_of(
        plan, mode, bm25, idf_mass, cosine, ts, evidence, words, meaning
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

    packed = None
    if inject == "passages":
        # The best ``max_items`` memories past the filters and the floor; their passages
        # compete for the token budget.
        eligible = order[reason[order] == 0][:max_items].tolist()
        packed = pack(
            [(i, catalog.items[catalog.id_at[slots[i]]], float(score[i])) for i in eligible],
            terms, catalog.index, catalog.passages, catalog.slot_of, counter, max_items=max_items,
            max_tokens=max_tokens, shorten=condense_to_fit,
            meaning=None if dense is None else dense.passage_cosine,
        )  # fmt: skip
    chosen: list[ScoredMemory] = []
    rows: list[Candidate] = []
    used = 0
    n_condensed = 0
    # Without a trace only the memories packed are listed, and they are among the first
    # ``max_items`` (a broad query at 100k items matches tens of thousands).
    walk = order[:max_items] if packed is not None and not trace else order
    for i in walk.tolist():
        if packed is not None and not trace and i not in packed.taken:
            if len(chosen) == len(packed.taken):
                break  # every memory that went in is listed: the rest need not be read
            continue
        item = catalog.items[catalog.id_at[slots[i]]]  # type: ignore[index]
        tokens: int | None = None
        condensed = False
        passages: tuple[Passage, ...] = ()
        factors = {
            "relevance": float(relevance[i]),
            "lexical_part": float(lexical_part[i]),
            "dense_part": float(dense_part[i]),
            "context_part": float(context_part[i]),
            "time_match": float(tmatch[i]),
        }
        line = ""
        if reason[i]:
            status = CUT_REASONS[reason[i] - 1]
        elif packed is not None:
            t = packed.taken.get(i)
            if t is None:
                status = "max_items" if len(packed.taken) >= max_items else "token_budget"
            else:
                status, condensed, line = "included", t.shortened, packed.blocks[t.order]
                tokens = t.tokens  # its block's share of ``text`` (the day line aside)
                passages = passages_of(t)
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
            status = "token_budget" if used + tokens > max_tokens else "included"
            used += tokens if status == "included" else 0
        if status == "included":
            chosen.append(
                ScoredMemory(
                    item, float(score[i]), float(bm25[i]), float(decay[i]), float(fbw[i]),
                    tokens or 0, line, _cos(cosine, i), condensed, **factors, passages=passages,
                )
            )  # fmt: skip
        if trace:
            rows.append(
                Candidate(
                    item.id, item.type, item.timestamp, item.content, float(bm25[i]),
                    float(decay[i]), float(fbw[i]), float(score[i]), status, tokens,
                    _cos(cosine, i), condensed, **factors, passages=passages,
                )
            )  # fmt: skip
    if trace and mode in ("bm25", "hybrid"):
        rows.extend(_no_match_rows(catalog, plan, slots, now_ms, window))
    return Retrieval(
        query=query,
        mode=mode,
        memories=chosen,
        text=packed.text if packed is not None else "\n".join(m.line for m in chosen),
        tokens_used=packed.tokens if packed is not None else used,
        max_tokens=max_tokens,
        max_items=max_items,
        token_counter=counter.name,
        trace=rows if trace else None,
        notes=notes,
        window=window,
        inject=inject,
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
