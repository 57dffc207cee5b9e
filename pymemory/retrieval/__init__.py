"""Orchestrator: filter -> rank -> trim (seed 002, layer 3).

BM25 (:mod:`.bm25` over :mod:`.analyzer` terms) and dense similarity (:mod:`.vectors`)
are fused (:mod:`.fusion`), re-ranked by decay and feedback, and trimmed to a token budget
(:mod:`.tokens`) by :mod:`.pipeline`; :mod:`.strategies` compose the filters and weights,
and :mod:`.catalog` holds the live items and their lexical index.
"""
