"""Byte-level BPE (GPT-2 style, as in HF ``tokenizers``): the ByteLevel pre-tokenizer,
the BPE model with ranked merges, and the ByteLevel decoder."""

from __future__ import annotations

import functools
import heapq
import re
from collections.abc import Iterable, Mapping, Sequence

from .normalize import translate_regex

_CACHE_LIMIT = 100_000

# What HF ByteLevel splits with (`use_regex`), in the Rust library's regex syntax.
GPT2_PATTERN = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"


@functools.cache
def bytes_to_unicode() -> tuple[str, ...]:
    """GPT-2's reversible map from the 256 byte values to printable characters."""
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    table: dict[int, str] = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(0x100 + extra)
            extra += 1
    return tuple(table[b] for b in range(256))


@functools.cache
def unicode_to_bytes() -> dict[str, int]:
    return {c: b for b, c in enumerate(bytes_to_unicode())}


@functools.cache
def gpt2_split_regex(ascii_only: bool = False) -> re.Pattern[str]:
    """The GPT-2 pre-tokenization regex, with Unicode classes spelled out for ``re``."""
    return re.compile(translate_regex(GPT2_PATTERN, ascii_only))


class ByteLevelPreTokenizer:
    """HF ``ByteLevel`` pre-tokenizer: optional GPT-2 regex split, then each UTF-8 byte
    becomes its printable stand-in."""

    def __init__(self, *, add_prefix_space: bool = False, use_regex: bool = True) -> None:
        self.add_prefix_space = add_prefix_space
        self.use_regex = use_regex
        self._regex = gpt2_split_regex()
        self._ascii_regex = gpt2_split_regex(ascii_only=True)
        # byte value (as a Latin-1 code point) -> its stand-in, for str.translate
        self._table = dict(enumerate(bytes_to_unicode()))

    def split(self, text: str) -> list[str]:
        if self.add_prefix_space and not text.startswith(" "):
            text = " " + text
        if not self.use_regex:
            pieces = [text]
        else:
            pieces = (self._ascii_regex if text.isascii() else self._regex).findall(text)
        return [self.to_bytelevel(p) for p in pieces]

    def to_bytelevel(self, piece: str) -> str:
        if piece.isascii() and piece.isalnum():
            return piece  # these bytes map to themselves
        return piece.encode("utf-8", "surrogatepass").decode("latin-1").translate(self._table)


def decode_bytelevel(tokens: Iterable[str]) -> str:
    """HF ``ByteLevel`` decoder: stand-ins back to bytes, then lossy UTF-8."""
    table = unicode_to_bytes()
    data = bytearray()
    for token in tokens:
        try:
            data += bytes([table[ch] for ch in token])
        except KeyError:  # a token with other characters (an added token) stays as it is
            data += token.encode("utf-8")
    return data.decode("utf-8", "replace")


class BPE:
    """The HF ``BPE`` model: start from single characters and apply the lowest-ranked
    merge first (leftmost on ties) until none applies.

    A character missing from the vocabulary becomes ``unk_token`` (fused with its unknown
    neighbours when ``fuse_unk``), or ``<0xXX>`` byte tokens with ``byte_fallback``, or is
    dropped when there is no ``unk_token``: all as the Rust library does.
    """

    def __init__(
        self,
        vocab: Mapping[str, int],
        merges: Sequence[str | Sequence[str]],
        *,
        unk_token: str | None = None,
        fuse_unk: bool = False,
        byte_fallback: bool = False,
        ignore_merges: bool = False,
    ) -> None:
        self.vocab = dict(vocab)
        self.unk_id = self.vocab.get(unk_token) if unk_token is not None else None
        if unk_token is not None and self.unk_id is None:
            raise ValueError(f"BPE: the unknown token {unk_token!r} is not in the vocabulary")
        self.fuse_unk = fuse_unk
        self.byte_fallback = byte_fallback
        self.ignore_merges = ignore_merges
        # (left id, right id) -> (rank, merged id)
        self.merges: dict[tuple[int, int], tuple[int, int]] = {}
        for rank, merge in enumerate(merges):
            left, right = merge.split(" ", 1) if isinstance(merge, str) else merge
            try:
                pair = (self.vocab[left], self.vocab[right])
                # A repeated pair keeps its last rank, as in the Rust library.
                self.merges[pair] = (rank, self.vocab[left + right])
            except KeyError as exc:
                raise ValueError(f"BPE: merge {rank} uses {exc.args[0]!r}, not in vocab") from None
        self._cache: dict[str, tuple[int, ...]] = {}

    def tokenize(self, word: str) -> tuple[int, ...]:
        ids = self._cache.get(word)
        if ids is None:
            ids = self._tokenize(word)
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()
            self._cache[word] = ids
        return ids

    def _tokenize(self, word: str) -> tuple[int, ...]:
        if self.ignore_merges and word in self.vocab:
            return (self.vocab[word],)
        symbols = self._symbols(word)
        if len(symbols) < 2:
            return tuple(symbols)
        return tuple(merge_symbols(symbols, self.merges))

    def _symbols(self, word: str) -> list[int]:
        vocab, out = self.vocab, []
        unk: list[int] | None = None  # a pending unknown token, as [id, byte length]
        for ch in word:
            found = vocab.get(ch)
            if found is not None:
                if unk is not None:
                    out.append(unk[0])
                    unk = None
                out.append(found)
                continue
            if self.byte_fallback:
                fallback = [vocab.get(f"<0x{b:02X}>") for b in ch.encode("utf-8")]
                if all(f is not None for f in fallback):
                    out.extend(fallback)  # type: ignore[arg-type]
                    continue
            if self.unk_id is not None:
                if unk is not None and not self.fuse_unk:
                    out.append(unk[0])
                    unk = None
                if unk is None:
                    unk = [self.unk_id]
        if unk is not None:
            out.append(unk[0])
        return out


def merge_symbols(
    symbols: list[int], merges: Mapping[tuple[int, int], tuple[int, int]]
) -> list[int]:
    """Apply ranked merges to a list of ids: lowest rank first, leftmost on ties."""
    n = len(symbols)
    if n < 24:
        return _merge_short(symbols, merges)
    ids = list(symbols)
    nxt = list(range(1, n + 1))
    prv = list(range(-1, n - 1))
    alive = [True] * n
    heap = []
    for i in range(n - 1):
        m = merges.get((ids[i], ids[i + 1]))
        if m is not None:
            heap.append((m[0], i, m[1]))
    heapq.heapify(heap)
    while heap:
        rank, i, new_id = heapq.heappop(heap)
        j = nxt[i] if alive[i] else n
        if j >= n:
            continue
        m = merges.get((ids[i], ids[j]))
        if m is None or m[1] != new_id or m[0] != rank:
            continue  # stale: one side changed since this entry was pushed
        ids[i] = new_id
        alive[j] = False
        k = nxt[j]
        nxt[i] = k
        if k < n:
            prv[k] = i
            m = merges.get((new_id, ids[k]))
            if m is not None:
                heapq.heappush(heap, (m[0], i, m[1]))
        p = prv[i]
        if p >= 0:
            m = merges.get((ids[p], new_id))
            if m is not None:
                heapq.heappush(heap, (m[0], p, m[1]))
    return [ids[i] for i in range(n) if alive[i]]


def _merge_short(ids: list[int], merges: Mapping[tuple[int, int], tuple[int, int]]) -> list[int]:
    ids = list(ids)
    while len(ids) > 1:
        best = None
        best_at = -1
        for i in range(len(ids) - 1):
            m = merges.get((ids[i], ids[i + 1]))
            if m is not None and (best is None or m[0] < best[0]):
                best, best_at = m, i
        if best is None:
            break
        ids[best_at : best_at + 2] = [best[1]]
    return ids
