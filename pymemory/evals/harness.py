"""Run an evaluation suite against a retriever and measure it.

    report = await run_suite("multi-turn-memory", "hybrid", HashingEmbedder())
    report.overall.recall[5], report.overall.mrr, report.categories["temporal reasoning"]

What happens:

1. A fresh :class:`~pymemory.Memory` over a :class:`~pymemory.storage.MapKv`, with a clock the
   harness controls, receives every turn of the suite through ``add_many`` with the
   turn's timestamp (one memory per turn; ``metadata.turn`` keeps the suite's turn id,
   ``metadata.speaker`` who said it). A suite of several conversations gets one Memory
   per conversation, and each question is asked of its own conversation's Memory.
2. For ``dense`` and ``hybrid`` the embedder is attached to that Memory, which embeds
   every turn's text into its vector store (the same path an app takes). ``bm25`` and
   ``hybrid`` are then ``Memory.retrieve`` itself, ``dense`` the vectors alone.
3. For each question the clock is set to the question's ``asked_at`` and the retriever's
   ``search(question, k, now_ms)`` is timed.

To score many rankings on one loaded suite (tuning), use :func:`load` once and
:func:`evaluate` per retriever.

Metrics (``k`` = 10 by default; gold = the question's gold turns):

* **Recall@n** (n = 1, 5, 10, and 20 when k >= 20): the fraction of a question's
  evidence pieces found in the top n (a piece is found when any of its turns is),
  averaged over the answerable questions. With one piece this is the hit rate;
  multi-session questions need all their pieces for full credit.
* **MRR**: the mean of 1 / (rank of the first gold turn in the top k), 0 when none is.
* **Latency**: wall time of one ``search`` call (query embedding included), p50 and p95
  in milliseconds.
* **Abstention AUROC**: questions with no gold (the abstention category) cannot be
  "recalled"; what retrieval can do is give them a low top score, so that a threshold
  lets the agent say "I don't know". The AUROC is the probability that an answerable
  question's top-1 score is higher than an unanswerable one's (ties count half): 1.0
  means some threshold separates them perfectly, 0.5 means the top score says nothing.
  It needs a retriever with ``search_scored``; a question with no result scores -inf.
  Recall and MRR are computed over answerable questions only.
* **Abstained / empty**: the share of unanswerable questions that got no result at all
  (retrieval injected nothing), against the share of answerable ones that got nothing
  (recall given up by the relevance floor).

Reports break results down per category, per match kind and per split (a suite's
``tune`` and ``heldout`` questions).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from ..errors import ValidationError
from ..memory import Memory
from ..models.embedding import Embedder, HashingEmbedder
from ..retrieval.strategies import Strategy
from ..retrieval.tokens import HeuristicTokenCounter
from ..storage import MapKv
from .retrievers import DenseRetriever, MemoryRetriever, Retriever
from .suites import Question, Suite, Turn, load_suite

__all__ = [
    "KS",
    "RETRIEVERS",
    "LoadedSuite",
    "Metrics",
    "QuestionResult",
    "Report",
    "auroc",
    "evaluate",
    "load",
    "report_rows",
    "run_suite",
]

RETRIEVERS = ("bm25", "dense", "hybrid")
KS = (1, 5, 10, 20)

RetrieverFactory = Callable[[Memory], Retriever]


class _Clock:
    def __init__(self, now: int) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


@dataclass(frozen=True)
class QuestionResult:
    id: str
    category: str
    match: str
    gold: tuple[tuple[str, ...], ...]
    ranked: tuple[str, ...]  # turn ids, best first
    scores: tuple[float, ...] | None
    rank: int | None  # 1-based rank of the first gold turn in ``ranked``
    recall: dict[int, float] | None  # n -> fraction of gold in the top n (None: abstention)
    latency_ms: float
    split: str | None = None

    @property
    def top_score(self) -> float:
        if not self.scores:
            return -math.inf
        return self.scores[0]


@dataclass(frozen=True)
class Metrics:
    n: int  # questions
    answerable: int
    recall: dict[int, float] | None  # None when no question is answerable
    mrr: float | None
    p50_ms: float
    p95_ms: float
    abstention_auroc: float | None = None
    abstained: float | None = None  # unanswerable questions with no result at all
    empty: float | None = None  # answerable questions with no result at all


@dataclass(frozen=True)
class Report:
    suite: str
    retriever: str
    embedder: str | None
    k: int
    turns: int
    turn_tokens: int
    index_ms: float  # loading the memories (and embedding them)
    overall: Metrics
    categories: dict[str, Metrics]
    by_match: dict[str, Metrics]
    results: tuple[QuestionResult, ...]
    by_split: dict[str, Metrics] = field(default_factory=dict)

    def to_dict(self, *, results: bool = False) -> dict[str, Any]:
        out = asdict(self)
        for group in ("categories", "by_match", "by_split"):
            out[group] = {name: asdict(m) for name, m in getattr(self, group).items()}
        if results:
            out["results"] = [asdict(r) for r in self.results]
        else:
            del out["results"]
        return _json_safe(out)


def _json_safe(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def auroc(positives: Sequence[float], negatives: Sequence[float]) -> float | None:
    """P(a positive scores higher than a negative), ties counting half; None if a side
    is empty. -inf is a valid (lowest) score."""
    if not positives or not negatives:
        return None
    pos = np.asarray(positives, dtype=np.float64)[:, None]
    neg = np.asarray(negatives, dtype=np.float64)[None, :]
    wins = (pos > neg).sum() + 0.5 * (pos == neg).sum()
    return float(wins / (pos.size * neg.size))


def _metrics(results: Sequence[QuestionResult], *, with_auroc: bool) -> Metrics:
    answerable = [r for r in results if r.recall is not None]
    lat = np.array([r.latency_ms for r in results], dtype=np.float64)
    recall = None
    mrr = None
    if answerable:
        ns = [n for n in KS if all(n in r.recall for r in answerable)]  # type: ignore[operator]
        recall = {n: float(np.mean([r.recall[n] for r in answerable])) for n in ns}  # type: ignore[index]
        mrr = float(np.mean([1.0 / r.rank if r.rank else 0.0 for r in answerable]))
    unanswerable = [r for r in results if r.recall is None]
    auc = None
    if with_auroc and all(r.scores is not None for r in results):
        auc = auroc([r.top_score for r in answerable], [r.top_score for r in unanswerable])
    abstained = (
        float(np.mean([not r.ranked for r in unanswerable])) if unanswerable else None
    )
    empty = float(np.mean([not r.ranked for r in answerable])) if answerable else None
    return Metrics(
        n=len(results),
        answerable=len(answerable),
        recall=recall,
        mrr=mrr,
        p50_ms=float(np.percentile(lat, 50)) if lat.size else 0.0,
        p95_ms=float(np.percentile(lat, 95)) if lat.size else 0.0,
        abstention_auroc=auc,
        abstained=abstained,
        empty=empty,
    )


def _check_k(k: object) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 10:
        raise ValidationError("k must be an int >= 10")


def _score(question: Question, ranked: list[str], k: int) -> tuple[int | None, dict | None]:
    if not question.gold:
        return None, None
    cited = set(question.gold_ids)
    rank = next((i for i, t in enumerate(ranked[:k], start=1) if t in cited), None)
    recall = {}
    for n in (n for n in KS if n <= k):
        top = set(ranked[:n])
        found = sum(not top.isdisjoint(piece) for piece in question.gold)
        recall[n] = found / len(question.gold)
    return rank, recall


@dataclass
class LoadedConversation:
    """One conversation's turns in a fresh Memory."""

    name: str
    memory: Memory
    turn_of: dict[str, str]  # memory id -> turn id


@dataclass
class LoadedSuite:
    """A suite's turns in fresh Memories, one per conversation (with vectors when an
    embedder is attached)."""

    suite: Suite
    conversations: dict[str, LoadedConversation]
    clock: _Clock
    index_ms: float  # adding the turns (and embedding them)

    @property
    def memory(self) -> Memory:
        """The Memory of a one-conversation suite."""
        if len(self.conversations) != 1:
            raise ValidationError("this suite has several conversations: use .conversations")
        return next(iter(self.conversations.values())).memory

    @property
    def turn_of(self) -> dict[str, str]:
        return {k: v for c in self.conversations.values() for k, v in c.turn_of.items()}

    async def close(self) -> None:
        for c in self.conversations.values():
            await c.memory.close()


def turn_entry(turn: Turn) -> dict[str, Any]:
    """The ``add_many`` entry of one turn: its text, timestamp and where it came from."""
    metadata: dict[str, Any] = {
        "source": "eval", "turn": turn.id, "session": turn.session, "role": turn.role,
    }  # fmt: skip
    if turn.speaker is not None:
        metadata["speaker"] = turn.speaker
    return {"text": turn.text, "timestamp": turn.timestamp, "metadata": metadata}


async def load(
    suite: Suite | str, embedder: Embedder | None = None, *, dtype: str = "int8"
) -> LoadedSuite:
    """Add every turn of ``suite`` to fresh Memories over MapKv (one per conversation),
    one memory per turn with the turn's timestamp; with ``embedder``, attach it and wait
    until every turn is embedded (so retrieval is hybrid)."""
    if isinstance(suite, str):
        suite = load_suite(suite)
    clock = _Clock(max((t.timestamp for t in suite.turns), default=0))
    started = time.perf_counter()
    loaded: dict[str, LoadedConversation] = {}
    try:
        for name in suite.conversations or ("",):
            turns = [t for t in suite.turns if t.conversation == name]
            memory = await Memory.open(MapKv(), clock=clock)
            loaded[name] = LoadedConversation(name, memory, {})
            items = await memory.add_many(turn_entry(t) for t in turns)
            loaded[name].turn_of = {i.id: t.id for i, t in zip(items, turns, strict=True)}
            if embedder is not None:
                await memory.attach_embedder(embedder, vector_dtype=dtype)  # type: ignore[arg-type]
        for c in loaded.values():
            await c.memory.embed_idle()
    except BaseException:
        for c in loaded.values():
            await c.memory.close()
        raise
    return LoadedSuite(suite, loaded, clock, (time.perf_counter() - started) * 1000)


def make_retriever(
    name: str, memory: Memory, *, strategy: Strategy | Mapping[str, Any] | None = None
) -> Retriever:
    """``bm25`` and ``hybrid`` are ``Memory.retrieve`` (hybrid needs an attached embedder),
    ``dense`` the attached embedder's vectors alone."""
    if name not in RETRIEVERS:
        raise ValidationError(f"retriever must be one of {', '.join(RETRIEVERS)}, got {name!r}")
    if (name == "bm25") != (memory.embedder is None):
        state = "off" if name == "bm25" else "on"
        raise ValidationError(f"{name} retrieval needs the embedder {state}")
    if name == "dense":
        assert memory.vectors is not None and memory.embedder is not None
        return DenseRetriever(memory.vectors, memory.embedder)
    return MemoryRetriever(memory, strategy)


async def evaluate(
    loaded: LoadedSuite,
    retriever: Retriever | RetrieverFactory,
    *,
    k: int = 10,
    split: str | None = None,
) -> Report:
    """Ask every question of the loaded suite (the clock set to its ``asked_at``), each
    of its own conversation's Memory. ``retriever`` is a Retriever (one-conversation
    suites) or a factory ``(memory) -> Retriever``. ``split`` asks only that split."""
    _check_k(k)
    suite, clock = loaded.suite, loaded.clock
    if split is not None and split not in suite.splits:
        known = ", ".join(suite.splits) or "none"
        raise ValidationError(f"suite {suite.name} has no split {split!r} (splits: {known})")
    if isinstance(retriever, Retriever):
        if len(loaded.conversations) != 1:
            raise ValidationError("a suite of several conversations needs a retriever factory")
        retrievers = {name: retriever for name in loaded.conversations}
    else:
        retrievers = {name: retriever(c.memory) for name, c in loaded.conversations.items()}
    questions = [q for q in suite.questions if split is None or q.split == split]
    results = []
    name = "custom"
    for q in questions:
        r = retrievers[q.conversation]
        name = getattr(r, "name", "custom")
        turn_of = loaded.conversations[q.conversation].turn_of
        clock.now = q.asked_at
        t0 = time.perf_counter()
        if hasattr(r, "search_scored"):
            hits = await r.search_scored(q.text, k, q.asked_at)  # type: ignore[attr-defined]
            scored = True
        else:
            hits = [(id, math.nan) for id in await r.search(q.text, k, q.asked_at)]
            scored = False
        latency = (time.perf_counter() - t0) * 1000
        ranked = [turn_of.get(id, id) for id, _ in hits[:k]]
        rank, recall = _score(q, ranked, k)
        results.append(
            QuestionResult(
                id=q.id,
                category=q.category,
                match=q.match,
                gold=q.gold,
                ranked=tuple(ranked),
                scores=tuple(float(s) for _, s in hits[:k]) if scored else None,
                rank=rank,
                recall=recall,
                latency_ms=latency,
                split=q.split,
            )
        )
    counter = HeuristicTokenCounter()
    has_abstention = any(not q.gold for q in questions)
    overall = _metrics(results, with_auroc=has_abstention)
    categories = {
        c: _metrics([r for r in results if r.category == c], with_auroc=False)
        for c in suite.categories
    }
    if has_abstention:
        # One AUROC: every answerable question against the unanswerable ones.
        for c in suite.abstention:
            if c in categories:
                categories[c] = replace(categories[c], abstention_auroc=overall.abstention_auroc)
    matches = sorted({r.match for r in results if r.recall is not None})
    by_match = {
        m: _metrics([r for r in results if r.match == m and r.recall is not None], with_auroc=False)
        for m in matches
    }
    by_split = {
        sp: _metrics([r for r in results if r.split == sp], with_auroc=has_abstention)
        for sp in suite.splits
        if split is None and any(r.split == sp for r in results)
    }
    embedder = next(iter(loaded.conversations.values())).memory.embedder
    return Report(
        suite=suite.name,
        retriever=name,
        embedder=None if embedder is None else embedder.name,
        k=k,
        turns=len(suite.turns),
        turn_tokens=sum(counter.count(t.text) for t in suite.turns),
        index_ms=loaded.index_ms,
        overall=overall,
        categories=categories,
        by_match=by_match,
        results=tuple(results),
        by_split=by_split,
    )


async def run_suite(
    suite: Suite | str,
    retriever: str | RetrieverFactory = "hybrid",
    embedder: Embedder | None = None,
    *,
    k: int = 10,
    strategy: Strategy | Mapping[str, Any] | None = None,
    dtype: str = "int8",
    split: str | None = None,
) -> Report:
    """Load ``suite`` into fresh Memories, ask every question (of ``split``), and measure.

    ``retriever`` is ``"bm25"``, ``"dense"``, ``"hybrid"``, or a factory
    ``(memory) -> Retriever`` (to evaluate a new ranking). ``embedder`` (default: a
    :class:`HashingEmbedder`) is attached to the Memory for dense and hybrid retrieval
    and for factories; ``strategy`` is passed to ``Memory.retrieve``; ``dtype`` is the
    vector store's.
    """
    if isinstance(retriever, str) and retriever not in RETRIEVERS:
        raise ValidationError(f"retriever must be one of {', '.join(RETRIEVERS)}")
    _check_k(k)
    if retriever == "bm25":
        embedder = None
    elif embedder is None:
        embedder = HashingEmbedder()
    loaded = await load(suite, embedder, dtype=dtype)
    try:
        if isinstance(retriever, str):
            name = retriever
            factory: RetrieverFactory = lambda m: make_retriever(name, m, strategy=strategy)  # noqa: E731
        else:
            factory = retriever
        return await evaluate(loaded, factory, k=k, split=split)
    finally:
        await loaded.close()


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


REPORT_HEADERS = (
    "retriever", "group", "n", "R@1", "R@5", "R@10", "R@20", "MRR", "p50 ms", "p95 ms", "AUROC",
    "abstain",
)  # fmt: skip


def report_rows(report: Report) -> list[list[str]]:
    """Table rows (see :data:`REPORT_HEADERS`): each category, each match kind, each
    split, overall. ``abstain`` is the share of unanswerable questions that got nothing."""

    def row(group: str, m: Metrics) -> list[str]:
        r = m.recall or {}
        return [
            report.retriever,
            group,
            str(m.n),
            _fmt(r.get(1)),
            _fmt(r.get(5)),
            _fmt(r.get(10)),
            _fmt(r.get(20)),
            _fmt(m.mrr),
            _fmt(m.p50_ms, 2),
            _fmt(m.p95_ms, 2),
            _fmt(m.abstention_auroc),
            _fmt(m.abstained),
        ]

    rows = [row(name, m) for name, m in report.categories.items()]
    rows += [row(f"match: {name}", m) for name, m in report.by_match.items()]
    rows += [row(f"split: {name}", m) for name, m in report.by_split.items()]
    rows.append(row("overall", report.overall))
    return rows
