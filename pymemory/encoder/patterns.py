"""How the rule tables are written: regexes compiled on first use, word sets from one string."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any


class LazyPattern:
    """A regex compiled on its first use, not at import: compiling the encoder's patterns
    was most of its modules' import time, paid by every boot of the browser worker before
    any text is encoded. After the first use its methods are the compiled pattern's own."""

    _METHODS = ("search", "match", "fullmatch", "sub", "subn", "finditer", "findall", "split")

    def __init__(self, build: Callable[[], re.Pattern[str]]) -> None:
        self._build = build

    def __getattr__(self, name: str) -> Any:  # the methods only until the first use
        pattern = self.__dict__.get("_pattern")
        if pattern is None:
            pattern = self._pattern = self._build()
            for method in self._METHODS:
                setattr(self, method, getattr(pattern, method))
        return getattr(pattern, name)


def lazy_compile(pattern: str, flags: int = 0) -> Any:
    """``re.compile(pattern, flags)`` on first use (see :class:`LazyPattern`)."""
    return LazyPattern(lambda: re.compile(pattern, flags))


def word_set(words: str) -> frozenset[str]:
    """A table of cue words written as one space-separated string."""
    return frozenset(words.split())
