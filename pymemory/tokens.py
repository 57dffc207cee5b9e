"""Token counting for budgets: one protocol, a heuristic counter (exact ones plug in later)."""

from __future__ import annotations

import re
from typing import Protocol, runtime_checkable


@runtime_checkable
class TokenCounter(Protocol):
    name: str

    def count(self, text: str) -> int:
        """How many tokens ``text`` costs in the target model's prompt."""
        ...


_CJK = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_PIECES = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+|[^\w\s]", re.UNICODE)


class HeuristicTokenCounter:
    """An estimate that errs high: a CJK character or a symbol is a token, and a word
    costs one token per 4 characters (rounded up), as in common BPE vocabularies.
    """

    name = "heuristic"

    def count(self, text: str) -> int:
        total = 0
        for piece in _PIECES.findall(text):
            total += 1 if len(piece) == 1 else (len(piece) + 3) // 4
        return total
