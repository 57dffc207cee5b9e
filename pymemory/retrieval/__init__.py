"""Orchestrator: filter -> rank -> trim (seed 002, layer 3).

BM25 (:mod:`.bm25` over :mod:`.analyzer` terms) and dense similarity (:mod:`.vectors`)
are fused into one relevance (:mod:`.fusion`), cut at a relevance floor, re-ranked by
decay, feedback and time phrases in the query (:mod:`.when`), and trimmed to a token
budget (:mod:`.tokens`) by :mod:`.pipeline`; :mod:`.strategies` compose the filters and
weights, and :mod:`.catalog` holds the live items and their lexical index.
"""
