"""Words of a summary and of its source, for the encoder tests' "no invented words" checks."""

from __future__ import annotations

import re

# Text written without spaces (Han, kana, bopomofo, CJK punctuation, full-width forms): each
# character is its own "word", because such text may be cut between any two characters.
CJK = (
    "\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3100-\u312f\u31f0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef"
    "\U00020000-\U0003134f"
)
WORD = re.compile(f"[{CJK}]|[^\\W_{CJK}]+")


def words(text: str) -> list[str]:
    """Words: runs of letters/digits split on whitespace and punctuation; one per CJK char."""
    return WORD.findall(text.replace("…", " "))


def invented_words(output: str, source: str) -> list[str]:
    """Words of ``output`` that do not occur in ``source``. A word cut short by truncation
    ("Kubern…") still occurs in the input, so the check is "is a substring of the input"."""
    return [w for w in words(output) if w not in source]
