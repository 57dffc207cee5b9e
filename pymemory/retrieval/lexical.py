"""The BM25 side of a query: its terms (with the time phrase read apart), the weight a
memory's score is a share of, and the lexical evidence the relevance floor reads (the ask
of a chatty query, the key terms that single out a memory)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .analyzer import analyze, is_cjk
from .bm25 import Bm25Index
from .catalog import Catalog
from .fusion import lexical_share
from .when import find_time_phrase


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


def lexical_query(query: str, now_ms: int) -> tuple[tuple[int, int] | None, list[str]]:
    """(the time span a phrase in ``query`` names, the BM25 terms of the rest)."""
    found = find_time_phrase(query, now_ms)
    if found is None:
        return None, analyze(query)
    window, (start, end) = found
    return window, analyze(f"{query[:start]} {query[end:]}")
