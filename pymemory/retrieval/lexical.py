"""The BM25 side of a query: its terms (with the time phrase read apart), the weight a
memory's score is a share of, and the lexical evidence the relevance floor reads (the ask
of a chatty query, the key terms that single out a memory)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .analyzer import CJK_STOP_CHARS, analyze, is_cjk
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
    # of a chatty query), and 1 where it holds one of the query's key terms; a memory
    # that shares no word with the query, only single CJK characters, at a discount
    # (:data:`CHAR_ONLY_EVIDENCE`).
    evidence: np.ndarray | None = None
    # Whether each slot shares a word with the query (:func:`word_terms`, or
    # :data:`CHARS_AS_WORD` content characters): who may pass in company (pipeline).
    words: np.ndarray | None = None


# Sentences of a query; the ones ending in a question mark are its ask.
_SENTENCE_RE = re.compile(r"[^.!?。！？;；\n]+[.!?。！？;；\n]*")
_ASK_END = ("?", "？")
# A key term holds a digit, has at least this many characters, and is rare in the store:
# its idf at least this share of the largest idf there is (a term in one memory).
KEY_MIN_CHARS = 3
KEY_MIN_IDF = 0.5
# Chinese, Japanese and Korean are indexed as characters and character pairs. A memory
# that shares only one content character with the query (里 of 家里 with 哪里, 话 of 电话
# with 笑话) has not matched a word of it: its evidence counts at this share (in full
# inside the span a time phrase of the query names), and one that shares only function
# characters (一, 多, 帮我) not at all. This many content characters count as a word
# (果 and 吃 of 水果 ... 吃 with 吃了芒果).
CHAR_ONLY_EVIDENCE = 0.25
CHARS_AS_WORD = 2
# Characters that make a CJK pair (or a lone character) a function word rather than
# content: pronouns, demonstratives and question words (帮我, 这个, 多少, 哪里).
_FUNCTION_CHARS = frozenset(CJK_STOP_CHARS | set("我你他她它们这那个些一么什多少哪谁怎几啥"))


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


def word_terms(terms: Sequence[str]) -> list[str]:
    """The query terms that are words: every term outside CJK scripts, and the CJK
    character pairs without a function character (``权限``, not ``帮我`` or ``的首``)."""
    return [
        t for t in dict.fromkeys(terms)
        if not is_cjk(t) or (len(t) == 2 and not _FUNCTION_CHARS.intersection(t))
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


def best_passage_lift(
    catalog: Catalog,
    terms: Sequence[str],
    slots: np.ndarray,
    scores: np.ndarray,
    idf_mass: float,
) -> np.ndarray:
    """A long memory is found by its best passage: its BM25 score is at least its best
    passage's share of the query's weight (in the passage index) times ``idf_mass``, so
    the length of the rest of it does not bury a passage that answers (a document among
    chat turns). On LoCoMo's tune half, sessions stored whole, it changes evidence seen
    by less than 0.01 (docs/BENCHMARKS.md)."""
    passages = catalog.passages
    if not len(passages) or not len(slots):
        return scores
    p_slots, p_scores = passages.bm25.scores(terms)
    if not len(p_slots):
        return scores
    owners = passages.owner[p_slots]
    best = np.zeros(len(slots))
    np.maximum.at(best, np.searchsorted(slots, owners), p_scores)
    lifted = best * idf_mass / max(passages.bm25.idf_mass(terms), 1e-9)
    return np.maximum(scores, lifted)


def lexical_side(catalog: Catalog, query: str, now_ms: int) -> LexicalSide:
    window, terms = lexical_query(query, now_ms)
    index = catalog.index
    if not terms:
        empty = np.zeros(0, np.int64)
        return LexicalSide(window, terms, 0.0, empty, np.zeros(0), catalog.mutations, None)
    slots, scores = index.scores(terms)
    idf_mass = query_mass(index, terms)
    scores = best_passage_lift(catalog, terms, slots, scores, idf_mass)
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
    words_of_query = word_terms(terms)
    if len(words_of_query) == len(set(terms)):  # every term a word: every match shares one
        words = np.ones(len(slots), dtype=bool)
    else:
        words = np.isin(slots, index.scores(words_of_query)[0], assume_unique=True)
    chars = np.zeros(len(slots), dtype=np.int64)
    for t in dict.fromkeys(terms):
        if len(t) == 1 and is_cjk(t) and t not in _FUNCTION_CHARS:
            chars += np.isin(slots, index.scores([t])[0], assume_unique=True)
    words |= chars >= CHARS_AS_WORD
    weak = ~words
    if window is not None:  # the query points at that span: a shared character will do
        ts = catalog.ts[slots]
        weak &= (ts < window[0]) | (ts > window[1]) | (chars == 0)
    evidence = evidence * np.where(weak, np.where(chars > 0, CHAR_ONLY_EVIDENCE, 0.0), 1.0)
    keys = key_terms(index, terms)
    if keys:
        k_slots, _ = index.scores(keys)
        evidence[np.searchsorted(slots, k_slots)] = 1.0
    return LexicalSide(window, terms, idf_mass, slots, scores, catalog.mutations, evidence, words)


def lexical_query(query: str, now_ms: int) -> tuple[tuple[int, int] | None, list[str]]:
    """(the time span a phrase in ``query`` names, the BM25 terms of the rest)."""
    found = find_time_phrase(query, now_ms)
    if found is None:
        return None, analyze(query)
    window, (start, end) = found
    return window, analyze(f"{query[:start]} {query[end:]}")
