"""A pure-Python rank-based BPE, as tiktoken does it, for counting o200k_base tokens where
neither PyPI ``tiktoken`` nor JavaScript is at hand."""

from __future__ import annotations

import base64
import heapq
import re
from collections.abc import Mapping
from pathlib import Path

from .normalize import translate_regex

# o200k_base's split pattern and special tokens, as tiktoken defines them.
O200K_PAT_STR = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)  # fmt: skip
O200K_SPECIAL_TOKENS = {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}
O200K_N_RANKS = 199998
#: The o200k_base ranks shipped in the wheel (generated at build time from npm js-tiktoken
#: by ``tools/tokenizer_assets.fetch_o200k_ranks``; sha256 equal to tiktoken's own file).
O200K_RANKS_FILE = Path(__file__).with_name("o200k_base.tiktoken")

_CACHE_LIMIT = 100_000


def load_tiktoken_ranks(path: str | Path) -> dict[bytes, int]:
    """Ranks from a ``.tiktoken`` file: one ``<base64 token> <rank>`` per line."""
    ranks: dict[bytes, int] = {}
    with open(path, "rb") as f:
        for line in f:
            if line.strip():
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
    return ranks


class RankBPE:
    """Split with the pattern, then merge each piece's bytes by rank (lowest first,
    leftmost on ties). Special tokens are treated as plain text (``encode_ordinary``)."""

    def __init__(self, ranks: Mapping[bytes, int], pat_str: str = O200K_PAT_STR) -> None:
        self.ranks = dict(ranks)
        self._regex = re.compile(translate_regex(pat_str))
        self._ascii_regex = re.compile(translate_regex(pat_str, ascii_only=True))
        self._decoder: dict[int, bytes] | None = None
        self._cache: dict[str, tuple[int, ...]] = {}

    def encode_ordinary(self, text: str) -> list[int]:
        out: list[int] = []
        for piece in self._pieces(text):
            out.extend(self._encode_piece(piece))
        return out

    def count(self, text: str) -> int:
        return sum(len(self._encode_piece(piece)) for piece in self._pieces(text))

    def decode(self, ids: list[int]) -> str:
        if self._decoder is None:
            self._decoder = {rank: token for token, rank in self.ranks.items()}
        return b"".join(self._decoder[i] for i in ids).decode("utf-8", "replace")

    def _pieces(self, text: str) -> list[str]:
        if text.isascii():
            return self._ascii_regex.findall(text)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates: replaced, as tiktoken does
            text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        return self._regex.findall(text)

    def _encode_piece(self, piece: str) -> tuple[int, ...]:
        ids = self._cache.get(piece)
        if ids is None:
            data = piece.encode("utf-8")
            rank = self.ranks.get(data)
            ids = (rank,) if rank is not None else tuple(self._merge(data))
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()
            self._cache[piece] = ids
        return ids

    def _merge(self, data: bytes) -> list[int]:
        return self._merge_short(data) if len(data) < 32 else self._merge_long(data)

    def _merge_short(self, data: bytes) -> list[int]:
        """Rescan all pairs after each merge: quickest for the usual short piece."""
        ranks = self.ranks
        parts = [data[i : i + 1] for i in range(len(data))]
        while len(parts) > 1:
            best = best_at = -1
            for i in range(len(parts) - 1):
                r = ranks.get(parts[i] + parts[i + 1])
                if r is not None and (best < 0 or r < best):
                    best, best_at = r, i
            if best < 0:
                break
            parts[best_at : best_at + 2] = [parts[best_at] + parts[best_at + 1]]
        return [ranks[p] for p in parts]

    def _merge_long(self, data: bytes) -> list[int]:
        """The same merges in O(n log n): parts are byte spans in a linked list, candidate
        pairs wait in a heap keyed by (rank, start)."""
        ranks, n = self.ranks, len(data)
        nxt = list(range(1, n + 1))  # start of the next part
        prv = list(range(-1, n - 1))
        alive = [True] * n
        heap = []
        for i in range(n - 1):
            r = ranks.get(data[i : i + 2])
            if r is not None:
                heap.append((r, i, i + 2))
        heapq.heapify(heap)
        while heap:
            _, i, end = heapq.heappop(heap)
            if not alive[i] or nxt[i] >= n or nxt[nxt[i]] != end:
                continue  # stale: this pair has changed since it was pushed
            alive[nxt[i]] = False
            nxt[i] = end
            if end < n:
                prv[end] = i
                r = ranks.get(data[i : nxt[end]])
                if r is not None:
                    heapq.heappush(heap, (r, i, nxt[end]))
            p = prv[i]
            if p >= 0:
                r = ranks.get(data[p:end])
                if r is not None:
                    heapq.heappush(heap, (r, p, end))
        return [ranks[data[i : nxt[i]]] for i in range(n) if alive[i]]
