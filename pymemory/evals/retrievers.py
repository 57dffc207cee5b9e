"""The retrievers the evaluation compares, behind one small protocol.

The harness only needs ``search(query, k, now_ms) -> ids``; each retriever here also has
``search_scored`` returning ``(id, score)`` pairs, which the harness uses to measure
abstention (how well the top score separates answerable questions from unanswerable
ones).

* :class:`MemoryRetriever` is ``Memory.retrieve`` itself, the ranking an app gets:
  relevance x decay x feedback x time match, where relevance is BM25's share of the query
  or, once an embedder is attached to the Memory, that fused with the cosine
  (``pymemory.retrieval.strategies.fusion``). The harness names it ``bm25`` or ``hybrid``
  accordingly.
* :class:`DenseRetriever` is the pure semantic signal: cosine similarity between the
  query's embedding and the stored vectors, no decay, no feedback, no filters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from ..errors import ValidationError, shown
from ..memory import Memory
from ..models.embedding import Embedder, check_embeddings, embed_queries
from ..retrieval.strategies import Strategy
from ..retrieval.vectors import VectorStore

__all__ = ["DenseRetriever", "MemoryRetriever", "Retriever", "ScoredRetriever"]

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
        raise ValidationError(f"k must be an int >= 1, got {shown(k)}")
    return k


class MemoryRetriever:
    """``Memory.retrieve`` with no token budget: what an app's prompt would get.

    ``Memory.retrieve`` reads the time from the Memory's clock, so ``now_ms`` must be what
    that clock says (the harness drives both from one clock). With an embedder attached
    (and every item embedded: ``await memory.embed_idle()``) this is hybrid retrieval.
    """

    def __init__(
        self, memory: Memory, strategy: Strategy | Mapping[str, Any] | None = None
    ) -> None:
        self.memory = memory
        self.strategy = strategy
        self.name = "bm25" if memory.embedder is None else "hybrid"

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
        vector = check_embeddings(
            await embed_queries(self.embedder, [query]), 1, self.embedder.dim
        )[0]
        return self.store.search(vector, k, self.allowed_ids)

    async def search(self, query: str, k: int, now_ms: int) -> list[str]:
        return [id for id, _ in await self.search_scored(query, k, now_ms)]
