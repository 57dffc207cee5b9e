"""Search of the archive, loaded from the store on demand (archived items are out of
retrieval, so they have no index of their own)."""

from __future__ import annotations

from ..item import ArchivedItem, loads
from ..storage import KvBackend, iter_prefix, schema
from .analyzer import analyze
from .bm25 import Bm25Index


async def search_archive(kv: KvBackend, query: str, limit: int) -> list[ArchivedItem]:
    """BM25 over archived contents; an empty query lists the newest first."""
    archived = [ArchivedItem.from_dict(loads(raw)) async for _, raw in iter_prefix(kv, schema.ARC)]
    terms = analyze(query)
    if not terms:
        archived.sort(key=lambda a: (a.timestamp, a.id), reverse=True)
        return archived[:limit]
    index = Bm25Index()
    for slot, a in enumerate(archived):
        index.add(slot, analyze(a.content))
    return [archived[slot] for slot, _ in index.top_k(terms, limit)]
