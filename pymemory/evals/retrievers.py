"""Three retrievers behind one small protocol: lexical (BM25), dense, and hybrid (RRF).

The evaluation harness only needs ``search(query, k, now_ms) -> ids``. Each retriever
here also has ``search_scored`` returning ``(id, score)`` pairs, which the harness uses to
measure abstention (how well the top score separates answerable questions from
unanswerable ones).

:class:`HybridRetriever` is the ranking the orchestrator is meant to adopt::

    lexical = Memory's ranking, BM25 x decay x feedback, top ``depth`` (filters applied)
    dense   = max(cosine, 0) x decay x feedback over the vector store's top ``depth``
              (ids no longer live, or failing the filters, are dropped)
    score   = RRF(lexical, dense; k = rrf_k, weights)

Why decay and feedback go *into* each ranking rather than multiply the fused score
(``weighting="after_fusion"``, also available): RRF scores are compressed (with k = 60,
rank 1 scores 1/61 and rank 100 scores 1/160, a factor of 2.6), while the default decay
ranges over 0.2..1 (a factor of 5) within a few weeks. Multiplying the fused score by
decay therefore ranks any recent, weakly related memory above an old, exact answer. On
the shipped multi-turn-memory suite that ordering drops Recall@5 below either retriever
alone; weighting each ranking first keeps the behaviour of Memory's current ranking on
the lexical side and lets fusion do what it is good at.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from ..embedding import Embedder, check_embeddings
from ..errors import NotFoundError, ValidationError
from ..fusion import DEFAULT_K, rrf
from ..item import MemoryItem
from ..memory import Memory
from ..orchestrator import decay_factor, feedback_factor
from ..strategies import (
    Plan,
    Strategy,
    coerce,
    compile_strategy,
    compose,
    feedback_weight,
    time_decay,
)
from ..vectors import VectorStore

__all__ = [
    "WEIGHTINGS",
    "Bm25Retriever",
    "DenseRetriever",
    "HybridRetriever",
    "Retriever",
    "ScoredRetriever",
    "passes_filters",
]

#: Unlimited token budget for retrieval by rank only.
NO_BUDGET = 10**9
#: Where HybridRetriever applies time decay and feedback (see its docstring).
WEIGHTINGS = ("per_ranking", "after_fusion")


@runtime_checkable
class Retriever(Protocol):
    """Anything that ranks memories for a query at a given time."""

    name: str

    async def search(self, query: str, k: int, now_ms: int) -> list[str]:
        """Ids of the ``k`` best memories for ``query`` at ``now_ms``, best first."""
        ...


@runtime_checkable
class ScoredRetriever(Retriever, Protocol):
    async def search_scored(self, query: str, k: int, now_ms: int) -> list[tuple[str, float]]:
        """Like ``search``, with each id's final score (higher is better)."""
        ...


def _check_k(k: object) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValidationError(f"k must be an int >= 1, got {k!r}")
    return k


async def embed_one(embedder: Embedder, text: str) -> np.ndarray:
    """One text's vector, checked."""
    return check_embeddings(await embedder.embed([text]), 1, embedder.dim)[0]


def passes_filters(plan: Plan, item: MemoryItem, now_ms: int) -> bool:
    """Whether ``item`` passes the plan's filters (scope, type, tags, time window).

    The same rules as ``orchestrator.filter_reasons``, for one item; used for dense
    candidates, which do not come through Memory's filtered lexical path."""
    if plan.scopes is not None and item.scope not in plan.scopes:
        return False
    if plan.types is not None and item.type not in plan.types:
        return False
    since = plan.since(now_ms)
    if since is not None and item.timestamp < since:
        return False
    if plan.until_ms is not None and item.timestamp > plan.until_ms:
        return False
    tags = set(item.tags)
    if any(tags.isdisjoint(group) for group in plan.tags_any):
        return False
    return plan.tags_all <= tags


class Bm25Retriever:
    """Memory's own ranking: BM25 x time decay x feedback weight (``Memory.retrieve``).

    ``Memory.retrieve`` reads the time from the Memory's clock, so ``now_ms`` must be what
    that clock says (the harness drives both from one clock).
    """

    name = "bm25"

    def __init__(
        self, memory: Memory, strategy: Strategy | Mapping[str, Any] | None = None
    ) -> None:
        self.memory = memory
        self.strategy = strategy

    async def search_scored(self, query: str, k: int, now_ms: int) -> list[tuple[str, float]]:
        k = _check_k(k)
        r = await self.memory.retrieve(query, self.strategy, max_items=k, max_tokens=NO_BUDGET)
        return [(m.item.id, m.score) for m in r.memories]

    async def search(self, query: str, k: int, now_ms: int) -> list[str]:
        return [id for id, _ in await self.search_scored(query, k, now_ms)]


class DenseRetriever:
    """Cosine similarity between the query's embedding and the stored vectors, alone.

    No time decay and no feedback: this is the pure semantic signal. ``allowed_ids``
    (optional) restricts every search to those ids.
    """

    name = "dense"

    def __init__(
        self,
        store: VectorStore,
        embedder: Embedder,
        *,
        allowed_ids: Sequence[str] | None = None,
    ) -> None:
        if store.dim != embedder.dim:
            raise ValidationError(f"store dim {store.dim} != embedder dim {embedder.dim}")
        self.store = store
        self.embedder = embedder
        self.allowed_ids = allowed_ids

    async def search_scored(self, query: str, k: int, now_ms: int) -> list[tuple[str, float]]:
        k = _check_k(k)
        return self.store.search(await embed_one(self.embedder, query), k, self.allowed_ids)

    async def search(self, query: str, k: int, now_ms: int) -> list[str]:
        return [id for id, _ in await self.search_scored(query, k, now_ms)]


class HybridRetriever:
    """BM25 and dense rankings fused by RRF, weighed by time decay and feedback.

    ``strategy`` is a Memory strategy: its filters apply to both sides, its decay and
    feedback parameters weigh the candidates (default: Memory's default strategy).
    ``weights`` are the RRF weights of (lexical, dense); ``depth`` is how many candidates
    each side contributes. ``weighting`` says where decay and feedback apply:

    ``"per_ranking"`` (default)
        Each side is ranked by its own score times decay times feedback (the lexical
        side is exactly ``Memory.retrieve``'s ranking; the dense side is
        ``max(cosine, 0) x decay x feedback``), then the two rankings are fused and the
        RRF score is the final score.
    ``"after_fusion"``
        Each side is ranked by its raw score, the rankings are fused, and the RRF score
        is multiplied by decay and feedback. RRF scores span a narrow range (1/61 for
        rank 1 against 1/160 for rank 100 with k = 60), so a decay factor ranging over
        0.2..1 swamps relevance: measured on the shipped suites this ranks recent
        noise above old answers (see the module docstring).
    """

    name = "hybrid"

    def __init__(
        self,
        memory: Memory,
        store: VectorStore,
        embedder: Embedder,
        *,
        rrf_k: float = DEFAULT_K,
        weights: tuple[float, float] = (1.0, 1.0),
        depth: int = 100,
        strategy: Strategy | Mapping[str, Any] | None = None,
        weighting: Literal["per_ranking", "after_fusion"] = "per_ranking",
    ) -> None:
        if store.dim != embedder.dim:
            raise ValidationError(f"store dim {store.dim} != embedder dim {embedder.dim}")
        if weighting not in WEIGHTINGS:
            raise ValidationError(f"weighting must be one of {', '.join(WEIGHTINGS)}")
        rrf([[], []], rrf_k, weights)  # validates rrf_k and the two weights
        self.memory = memory
        self.store = store
        self.embedder = embedder
        self.rrf_k = rrf_k
        self.weights = tuple(weights)
        self.depth = _check_k(depth)
        self.weighting = weighting
        base = coerce(strategy)
        self.plan = compile_strategy(base)
        if weighting == "per_ranking":
            self._lexical: Strategy = base
        else:  # rank by BM25 alone; decay and feedback come after fusion
            self._lexical = compose(base, time_decay(None), feedback_weight(1.0, 1.0, 1.0))

    def _factors(self, items: Sequence[MemoryItem], now_ms: int) -> np.ndarray:
        """Time decay x feedback weight of each item, by the strategy's parameters."""
        ts = np.array([i.timestamp for i in items], dtype=np.int64)
        net = np.array([i.feedback.net for i in items], dtype=np.int64)
        important = np.array([i.feedback.important for i in items], dtype=bool)
        return decay_factor(self.plan, ts, now_ms) * feedback_factor(self.plan, net, important)

    async def _live(self, ids: Sequence[str], now_ms: int) -> dict[str, MemoryItem]:
        """The items of ``ids`` still live and passing the strategy's filters."""
        out = {}
        for id in ids:
            try:
                item = await self.memory.get(id)
            except NotFoundError:  # deleted, expired or archived since it was embedded
                continue
            if passes_filters(self.plan, item, now_ms):
                out[id] = item
        return out

    async def rankings(self, query: str, now_ms: int) -> tuple[list[str], list[str]]:
        """The lexical and the dense ranking (ids, best first) that get fused."""
        r = await self.memory.retrieve(
            query, self._lexical, max_items=self.depth, max_tokens=NO_BUDGET
        )
        lexical = [m.item.id for m in r.memories] if r.mode == "bm25" else []
        hits = self.store.search(await embed_one(self.embedder, query), self.depth)
        live = await self._live([id for id, _ in hits], now_ms)
        hits = [(id, score) for id, score in hits if id in live]
        if self.weighting == "after_fusion" or not hits:
            return lexical, [id for id, _ in hits]
        items = [live[id] for id, _ in hits]
        weighted = np.maximum([s for _, s in hits], 0.0) * self._factors(items, now_ms)
        order = sorted(
            range(len(items)), key=lambda j: (-weighted[j], -items[j].timestamp, items[j].id)
        )
        return lexical, [items[j].id for j in order if weighted[j] > 0]

    async def search_scored(self, query: str, k: int, now_ms: int) -> list[tuple[str, float]]:
        k = _check_k(k)
        lexical, dense = await self.rankings(query, now_ms)
        fused = rrf([lexical, dense], self.rrf_k, self.weights)
        if self.weighting == "per_ranking":
            return fused[:k]
        live = await self._live([id for id, _ in fused], now_ms)
        items = [live[id] for id, _ in fused if id in live]
        if not items:
            return []
        final = np.array([s for id, s in fused if id in live]) * self._factors(items, now_ms)
        # Best first; ties go to the newer item, then to the smaller id.
        order = sorted(
            range(len(items)), key=lambda j: (-final[j], -items[j].timestamp, items[j].id)
        )
        return [(items[j].id, float(final[j])) for j in order[:k] if final[j] > 0]

    async def search(self, query: str, k: int, now_ms: int) -> list[str]:
        return [id for id, _ in await self.search_scored(query, k, now_ms)]
