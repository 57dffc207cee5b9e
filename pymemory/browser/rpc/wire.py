"""Memories, retrievals and stats in the JS naming (camelCase) the client reads: the
results of the JSON API (api.py)."""

from __future__ import annotations

from typing import Any

from ...item import ArchivedItem, MemoryItem
from ...retrieval.results import Candidate, Retrieval, ScoredMemory


def item_js(item: MemoryItem) -> dict[str, Any]:
    return {
        "id": item.id,
        "type": item.type,
        "timestamp": item.timestamp,
        "content": item.content,
        "text": item.text,
        "contentMethod": item.content_method,
        "scope": item.scope,
        "tags": list(item.tags),
        "ttlMs": item.ttl_ms,
        "feedback": {
            "liked": item.feedback.liked,
            "disliked": item.feedback.disliked,
            "important": item.feedback.important,
        },
        "metadata": item.metadata,
        "version": item.version,
    }


def _scores_js(x: ScoredMemory | Candidate) -> dict[str, Any]:
    """The ranking factors a scored memory and a trace row share: ``score = relevance x
    decay x feedbackWeight x timeMatch``, ``relevance = densePart + lexicalPart +
    contextPart``."""
    return {
        "score": x.score,
        "relevance": x.relevance,
        "densePart": x.dense_part,
        "lexicalPart": x.lexical_part,
        "contextPart": x.context_part,
        "bm25": x.bm25,
        "dense": x.dense,
        "decay": x.decay,
        "feedbackWeight": x.feedback_weight,
        "timeMatch": x.time_match,
        "tokens": x.tokens,
        "condensed": x.condensed,
    }


def passages_js(x: ScoredMemory | Candidate) -> list[dict[str, Any]]:
    """What of a memory's raw text went into the prompt (``inject="passages"``)."""
    return [{"start": p.start, "end": p.end, "why": p.why, "score": p.score, "text": p.text}
            for p in x.passages]  # fmt: skip


def scored_js(m: ScoredMemory) -> dict[str, Any]:
    return {"item": item_js(m.item), **_scores_js(m), "line": m.line,
            "passages": passages_js(m)}  # fmt: skip


def candidate_js(c: Candidate) -> dict[str, Any]:
    return {
        "id": c.id,
        "type": c.type,
        "timestamp": c.timestamp,
        "content": c.content,
        **_scores_js(c),
        "status": c.status,
        "passages": passages_js(c),
    }


def retrieval_js(r: Retrieval) -> dict[str, Any]:
    return {
        "query": r.query,
        "mode": r.mode,
        "memories": [scored_js(m) for m in r.memories],
        "text": r.text,
        "tokensUsed": r.tokens_used,
        "maxTokens": r.max_tokens,
        "maxItems": r.max_items,
        "tokenCounter": r.token_counter,
        "trace": None if r.trace is None else [candidate_js(c) for c in r.trace],
        "notes": list(r.notes),
        "window": None if r.window is None else list(r.window),
        "inject": r.inject,
    }


def archived_js(a: ArchivedItem) -> dict[str, Any]:
    return a.to_dict()


def stats_js(stats: dict[str, Any]) -> dict[str, Any]:
    def camel(name: str) -> str:
        head, *rest = name.split("_")
        return head + "".join(p.title() for p in rest)

    return {camel(k): v for k, v in stats.items()}
