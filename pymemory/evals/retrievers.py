"""Three retrievers behind one small protocol: lexical (BM25), dense, and hybrid (RRF).

The evaluation harness only needs ``search(query, k, now_ms) -> ids``. Each retriever
here also has ``search_scored`` returning ``(id, score)`` pairs, which the harness uses to
measure abstention (how well the top score separates answerable questions from
unanswerable ones).

:class:`HybridRetriever` is the ranking the orchestrator is meant to adopt::

    lexical = BM25 top ``depth`` (Memory's index; filters applied; no decay, no feedback)
    dense   = cosine top ``depth`` (the vector store; ids no longer live are dropped)
    fused   = RRF(lexical, dense; k = rrf_k, weights)
    score   = fused x time decay x feedback weight        (the strategy's own factors)

Decay and feedback are applied once, after fusion, with the orchestrator's own
``decay_factor`` / ``feedback_factor`` and the strategy's parameters; applying them
before fusion as well would count them twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..embedding import Embedder, check_embeddings
from ..errors import NotFoundError, ValidationError
from ..fusion import DEFAULT_K, rrf
from ..memory import Memory
from ..orchestrator import decay_factor, feedback_factor
from ..item import MemoryItem
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
    "Bm25Retriever",
    "DenseRetriever",
    "HybridRetriever",
    "Retriever",
    "ScoredRetriever",
    "passes_filters",
]

#: Unlimited token budget for retrieval by rank only.
NO_BUDGET = 10**9


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
    """BM25 and dense rankings fused by RRF, then times time decay and feedback weight.

    ``strategy`` is a Memory strategy: its filters restrict the lexical candidates and
    its decay and feedback parameters weigh the fused score (default: Memory's default
    strategy). ``weights`` are the RRF weights of (lexical, dense); ``depth`` is how many
    candidates each side contributes.
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
    ) -> None:
        if store.dim != embedder.dim:
            raise ValidationError(f"store dim {store.dim} != embedder dim {embedder.dim}")
        self.memory = memory
        self.store = store
        self.embedder = embedder
        self.rrf_k = rrf_k
        self.weights = tuple(weights)
        self.depth = _check_k(depth)
        base = coerce(strategy)
        self.plan = compile_strategy(base)
        # The lexical side ranks by BM25 alone: decay and feedback come after fusion.
        self._lexical = compose(base, time_decay(None), feedback_weight(1.0, 1.0, 1.0))
        rrf([], rrf_k, [])  # validate rrf_k early
        if len(self.weights) != 2:
            raise ValidationError("weights are (lexical, dense)")

    async def rankings(self, query: str) -> tuple[list[str], list[str]]:
        """The lexical and the dense ranking (ids, best first) that get fused."""
        r = await self.memory.retrieve(
            query, self._lexical, max_items=self.depth, max_tokens=NO_BUDGET
        )
        lexical = [m.item.id for m in r.memories] if r.mode == "bm25" else []
        hits = self.store.search(await embed_one(self.embedder, query), self.depth)
        return lexical, [id for id, _ in hits]

    async def search_scored(self, query: str, k: int, now_ms: int) -> list[tuple[str, float]]:
        k = _check_k(k)
        lexical, dense = await self.rankings(query)
        fused = rrf([lexical, dense], self.rrf_k, self.weights)
        items = []
        scores = []
        for id, score in fused:
            try:
                item = await self.memory.get(id)
            except NotFoundError:  # deleted, expired or archived since it was embedded
                continue
            if not passes_filters(self.plan, item, now_ms):  # dense hits skip the filters
                continue
            items.append(item)
            scores.append(score)
        if not items:
            return []
        ts = np.array([i.timestamp for i in items], dtype=np.int64)
        net = np.array([i.feedback.net for i in items], dtype=np.int64)
        important = np.array([i.feedback.important for i in items], dtype=bool)
        final = (
            np.asarray(scores)
            * decay_factor(self.plan, ts, now_ms)
            * feedback_factor(self.plan, net, important)
        )
        # Best first; ties go to the newer item, then to the smaller id.
        order = sorted(range(len(items)), key=lambda j: (-final[j], -ts[j], items[j].id))
        return [(items[j].id, float(final[j])) for j in order[:k] if final[j] > 0]

    async def search(self, query: str, k: int, now_ms: int) -> list[str]:
        return [id for id, _ in await self.search_scored(query, k, now_ms)]
