"""Token counting for budgets: one protocol, a heuristic counter, and exact counters
(tiktoken's o200k_base; any tokenizer.json)."""

from __future__ import annotations

import functools
import logging
import os
import re
from collections.abc import Callable, Mapping
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ..models.tokenizers import Tokenizer


@runtime_checkable
class TokenCounter(Protocol):
    name: str
    # Optional: ``words_are_tokens = True`` promises every whitespace-separated word costs
    # at least one token, so the prompt packer may skip counting what cannot fit.

    def count(self, text: str) -> int:
        """How many tokens ``text`` costs in the target model's prompt."""
        ...


_CJK = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_PIECES = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+|[^\w\s]", re.UNICODE)


class HeuristicTokenCounter:
    """A rough estimate for when no tokenizer is loaded: a CJK character or a symbol is a
    token, and a word costs one token per 4 characters (rounded up). Over mixed text it
    lands near o200k_base (0.97x on the test corpus) but single strings can be off by 2x
    either way; budgets use ``TiktokenCounter`` when the ranks are available.
    """

    name = "heuristic"
    #: Every whitespace-separated word costs at least one token (a lower bound callers
    #: may use to skip counting; absent on a counter: no such promise).
    words_are_tokens = True

    def count(self, text: str) -> int:
        total = 0
        for piece in _PIECES.findall(text):
            total += 1 if len(piece) == 1 else (len(piece) + 3) // 4
        return total


class TiktokenCounter:
    """Exact o200k_base counts (tiktoken's ``len(encode_ordinary(text))``) from a local
    ``o200k_base.tiktoken`` ranks file: no download at run time.

    ``backend="auto"`` uses PyPI ``tiktoken`` when it imports and the pure-Python BPE
    otherwise (as in Pyodide); both give the same counts. Special-token text such as
    ``<|endoftext|>`` counts as plain text.
    """

    name = "o200k_base"
    words_are_tokens = True  # o200k's pre-tokenizer never puts two words in one piece

    def __init__(
        self,
        ranks: str | PathLike[str] | Mapping[bytes, int],
        *,
        backend: Literal["auto", "tiktoken", "python"] = "auto",
    ) -> None:
        from ..models.tokenizers.tiktoken_bpe import (
            O200K_PAT_STR,
            O200K_SPECIAL_TOKENS,
            RankBPE,
            load_tiktoken_ranks,
        )

        if backend not in ("auto", "tiktoken", "python"):
            raise ValueError(f"backend must be 'auto', 'tiktoken' or 'python', not {backend!r}")
        table = dict(ranks) if isinstance(ranks, Mapping) else load_tiktoken_ranks(ranks)
        self.encode: Callable[[str], list[int]]  # text -> o200k_base ids
        if backend != "python":
            try:
                import tiktoken
            except ImportError:
                if backend == "tiktoken":
                    raise
            else:
                enc = tiktoken.Encoding(
                    "o200k_base",
                    pat_str=O200K_PAT_STR,
                    mergeable_ranks=table,
                    special_tokens=O200K_SPECIAL_TOKENS,
                )
                self.backend = "tiktoken"
                self.encode = enc.encode_ordinary
                self._count: Callable[[str], int] = lambda text: len(enc.encode_ordinary(text))
                return
        bpe = RankBPE(table, O200K_PAT_STR)
        self.backend = "python"
        self.encode = bpe.encode_ordinary
        self._count = bpe.count

    def count(self, text: str) -> int:
        return self._count(text)


class TokenizerCounter:
    """Counts with a loaded tokenizer.json (:func:`pymemory.models.tokenizers.load_tokenizer`),
    without the special tokens its post-processor would add: e.g. the summarizer's own
    tokens."""

    def __init__(self, tokenizer: Tokenizer, name: str) -> None:
        self.name = name
        self._tokenizer = tokenizer

    def count(self, text: str) -> int:
        return len(self._tokenizer.tokenize_ids(text))


RANKS_ENV = "PYMEMORY_O200K_RANKS"

log = logging.getLogger("pymemory")


def o200k_ranks_path() -> Path | None:
    """Where the o200k_base ranks are: ``$PYMEMORY_O200K_RANKS`` if set, else the file the
    wheel ships (``pymemory/models/tokenizers/o200k_base.tiktoken``; in a checkout
    ``python3 build.py setup`` writes it); None if there is none. A set variable that names
    no file is an error, not a reason to look elsewhere."""
    from ..models.tokenizers.tiktoken_bpe import O200K_RANKS_FILE

    env = os.environ.get(RANKS_ENV)
    if env:
        path = Path(env).expanduser()
        if not path.is_file():
            raise FileNotFoundError(f"{RANKS_ENV}={env} is not a file (an o200k_base.tiktoken)")
        return path
    return O200K_RANKS_FILE if O200K_RANKS_FILE.is_file() else None


@functools.cache
def default_token_counter() -> TokenCounter:
    """Exact o200k_base counts from the packaged ranks (or ``$PYMEMORY_O200K_RANKS``). Only
    if there are none, the heuristic estimate, with a logged warning: ``stats()``'s
    ``token_counter`` then says ``heuristic``. One shared instance (counters are stateless;
    loading the ranks takes a moment)."""
    path = o200k_ranks_path()
    if path is None:
        log.warning(
            "exact o200k_base token counting is unavailable: this pymemory has no "
            "o200k_base.tiktoken (a checkout needs `python3 build.py setup`; an install from "
            "the wheel has it). Token budgets use a heuristic estimate, which can be off by 2x "
            "on one string; stats()['token_counter'] is 'heuristic'. Set %s to an "
            "o200k_base.tiktoken file, or pass token_counter=.",
            RANKS_ENV,
        )
        return HeuristicTokenCounter()
    return TiktokenCounter(path)
