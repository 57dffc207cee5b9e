"""A memory's raw text as passages: what the prompt gets.

A passage is a span of the raw text (character offsets, so it is quoted verbatim): the
lines of a transcript or the sentences of prose, grouped in order up to
:data:`PASSAGE_TOKENS` estimated tokens. A short memory is one passage. Passages are
derived data, a pure function of the text: never stored or synced apart from their
memory, so forgetting a memory erases them with it.

At retrieve time :func:`score_passages` weighs each passage of a chosen memory against
the query's terms (BM25 with the store's idf), so the prompt gets the passage that
answers the query rather than the memory's 200-character summary.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

from .analyzer import analyze
from .bm25 import Bm25Index
from .tokens import HeuristicTokenCounter

#: The size passages are grouped up to, in estimated tokens (chosen on the LoCoMo tune
#: half from 24 to 240: docs/BENCHMARKS.md, "Evidence seen"). A passage of a transcript
#: is a few turns, so the answer after a question comes with it.
PASSAGE_TOKENS = 100
#: A text of at most this many estimated tokens is one passage, however many lines.
SHORT_TOKENS = PASSAGE_TOKENS

# A sentence ends at . ! ? (then a space) or at a CJK full stop, exclamation or question
# mark (no space follows those); closing quotes and brackets stay with their sentence.
_SENTENCE_END = re.compile(r"(?:[.!?]+[\"')\]”’]*\s+)|(?:[。！？!?；;…]+[\"')\]」』”’）]*\s*)")
_ESTIMATE = HeuristicTokenCounter()

#: Texts up to this long keep their analysed passages in memory between retrieves.
CACHE_CHARS = 20_000

Span = tuple[int, int]


def estimate_tokens(text: str) -> int:
    """A cheap token estimate (:class:`~.tokens.HeuristicTokenCounter`): passages are
    sized before the exact counter prices what goes into the prompt."""
    return _ESTIMATE.count(text)


def passage_units(text: str, longer_than: int = PASSAGE_TOKENS) -> list[Span]:
    """Lines, and the sentences of a line over ``longer_than`` estimated tokens, as spans
    (stripped)."""
    out: list[Span] = []
    pos = 0
    for line in text.splitlines(keepends=True):
        start, end = pos, pos + len(line.rstrip("\r\n"))
        pos += len(line)
        if not text[start:end].strip():
            continue
        if estimate_tokens(text[start:end]) <= longer_than:
            out.append(_strip(text, start, end))
            continue
        cut = start
        for m in _SENTENCE_END.finditer(text, start, end):
            if m.end() > cut and text[cut : m.end()].strip():
                out.append(_strip(text, cut, m.end()))
                cut = m.end()
        if text[cut:end].strip():
            out.append(_strip(text, cut, end))
    return [s for s in out if s[1] > s[0]]


def _strip(text: str, start: int, end: int) -> Span:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


@lru_cache(maxsize=1024)
def split_passages(text: str) -> tuple[Span, ...]:
    """The passages of ``text`` as (start, end) character spans, in order: consecutive
    lines or sentences grouped while the group stays within :data:`PASSAGE_TOKENS`
    (a longer sentence is a passage of its own). One span for a short text."""
    if estimate_tokens(text) <= SHORT_TOKENS:
        return (_strip(text, 0, len(text)),)
    spans: list[Span] = []
    start = end = size = 0
    for a, b in passage_units(text):
        n = estimate_tokens(text[a:b])
        if spans or size:
            if size + n <= PASSAGE_TOKENS:
                end, size = b, size + n
                continue
            spans.append((start, end))
        start, end, size = a, b, n
    if size:
        spans.append((start, end))
    return tuple(spans) or (_strip(text, 0, len(text)),)


def _terms(text: str) -> tuple[Counter[str], ...]:
    return tuple(Counter(analyze(text[a:b])) for a, b in split_passages(text))


_cached_terms = lru_cache(maxsize=256)(_terms)


def _passage_terms(text: str) -> tuple[Counter[str], ...]:
    """Each passage's analysed terms; kept for the last 256 texts of up to
    :data:`CACHE_CHARS` characters (a bound on what the cache holds, some MB)."""
    return _cached_terms(text) if len(text) <= CACHE_CHARS else _terms(text)


def score_passages(
    text: str, terms: Sequence[str], index: Bm25Index, k1: float = 1.2, b: float = 0.75
) -> list[float]:
    """Each passage's BM25 score for the query ``terms`` (the store's idf; lengths
    normalised by the memory's own mean passage length): 0 where no term matches."""
    wanted = set(terms)
    if not wanted:
        return [0.0] * len(split_passages(text))
    counts = _passage_terms(text)
    lengths = [sum(c.values()) for c in counts]
    avg = max(sum(lengths) / max(len(lengths), 1), 1.0)
    idf = {t: index.idf(t) for t in wanted}
    out = []
    for c, n in zip(counts, lengths, strict=True):
        norm = k1 * (1.0 - b + b * n / avg)
        out.append(sum(idf[t] * c[t] * (k1 + 1) / (c[t] + norm) for t in wanted if c[t]))
    return out
