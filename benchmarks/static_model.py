"""A static embedder distilled from MiniLM (the model2vec recipe), for benchmarks/eval_static.py.

Evaluated and not kept as a product embedder (issue 14: hybrid with it does not beat BM25
alone on every suite; see docs/BENCHMARKS.md), so it lives here, beside its benchmark.

The recipe (model2vec's, written here from its description): every token of MiniLM's
WordPiece vocabulary is run through MiniLM once, alone (``[CLS] token [SEP]``), and
mean-pooled as :class:`~pymemory.models.minilm.MiniLmEmbedder` pools
(:func:`token_vectors`); :func:`distill_static` centres the vectors, reduces them by PCA
and scales each row by a weight that falls with how common the token is (SIF:
``a / (a + p)``, ``p`` the token's probability estimated from its rank by Zipf's law,
since BERT's vocabulary lists words by frequency: :func:`token_ranks`).

At embed time (:class:`StaticEmbedder`) a text is tokenised by MiniLM's pure-Python
tokenizer (no truncation), its tokens' rows are summed (the weights are in the rows) and
the sum is L2-normalised: numpy only, no ONNX runtime. A text with no known token (empty,
only spaces, only special tokens, or only words the tokenizer maps to ``[UNK]``:
characters outside the vocabulary, words over 100 characters) gives a zero row, which
matches nothing; ``[UNK]`` tokens elsewhere in a text are ignored.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from pymemory.errors import ValidationError

__all__ = ["StaticEmbedder", "distill_static", "token_ranks", "token_vectors", "zero_ids"]

#: Tokens whose rows are zeroed: they never stand for a text's words.
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
#: The first id of BERT's word list (``the``); ids below are special, unused or single
#: characters (sorted by code point, not by frequency).
FIRST_WORD_ID = 1996
#: The Zipf rank given to a non-ASCII single character (CJK ideographs are whole words).
CHAR_RANK = 2000


def token_ranks(vocab: Sequence[str], first_word_id: int = FIRST_WORD_ID) -> np.ndarray:
    """Estimated frequency rank (1 = most common) of every token of a BERT vocabulary.

    Words and ``##`` pieces from ``first_word_id`` on are listed by frequency, so their rank
    is their position. Single ASCII characters before them (punctuation, digits, letters
    such as ``a``, ``i``, ``s``) are among the commonest tokens: rank 1. Other single
    characters get :data:`CHAR_RANK`. Special and unused tokens get rank 1 too (they are
    zeroed anyway).
    """
    ranks = np.ones(len(vocab), dtype=np.float64)
    for i, token in enumerate(vocab):
        if i >= first_word_id:
            ranks[i] = i - first_word_id + 1
        elif len(token) == 1 and not token.isascii():
            ranks[i] = CHAR_RANK
    return ranks


def zero_ids(vocab: Sequence[str]) -> list[int]:
    """Ids of the special and ``[unused*]`` tokens of a BERT vocabulary."""
    return [i for i, t in enumerate(vocab) if t in SPECIAL_TOKENS or t.startswith("[unused")]


def distill_static(
    token_vectors: np.ndarray,
    ranks: np.ndarray,
    *,
    dims: int = 256,
    sif: float | None = 1e-3,
    zero_ids: Sequence[int] = (),
) -> np.ndarray:
    """The static matrix from per-token MiniLM vectors ``(vocab, hidden)``: PCA to
    ``dims`` (centred on the tokens that are not in ``zero_ids``), rows scaled by the SIF
    weight ``sif / (sif + p)`` with ``p`` proportional to ``1 / rank`` (no scaling when
    ``sif`` is None), the rows of ``zero_ids`` set to zero. float32 ``(vocab, dims)``."""
    x = np.asarray(token_vectors, dtype=np.float64)
    if x.ndim != 2 or ranks.shape != (x.shape[0],):
        raise ValidationError("token_vectors must be (vocab, hidden) and ranks (vocab,)")
    if isinstance(dims, bool) or not isinstance(dims, int) or not 1 <= dims <= x.shape[1]:
        raise ValidationError(f"dims must be an int in 1..{x.shape[1]}")
    keep = np.ones(x.shape[0], dtype=bool)
    keep[list(zero_ids)] = False
    mean = x[keep].mean(axis=0)
    centred = x - mean
    # Principal axes from the kept rows only; eigh of the covariance is exact and cheap
    # for a 384-wide hidden state.
    cov = centred[keep].T @ centred[keep] / max(int(keep.sum()) - 1, 1)
    values, vectors = np.linalg.eigh(cov)
    axes = vectors[:, np.argsort(values)[::-1][:dims]]
    out = centred @ axes
    if sif is not None:
        if not sif > 0:
            raise ValidationError("sif must be > 0 or None")
        p = 1.0 / np.asarray(ranks, dtype=np.float64)
        p /= p.sum()
        out *= (sif / (sif + p))[:, None]
    out[~keep] = 0.0
    return out.astype(np.float32)


class StaticEmbedder:
    """Sum of the tokens' rows of a distilled matrix, L2-normalised (see the module doc).

    ``matrix`` is ``(vocab, dims)`` (float16 or float32; kept as given, summed in float32),
    ``tokenizer`` anything with ``tokenize_ids(text) -> list[int]`` (the pure-Python
    tokenizer of MiniLM's tokenizer.json) whose ids index ``matrix``.
    """

    def __init__(self, matrix: np.ndarray, tokenizer: Any, *, name: str = "static") -> None:
        if not isinstance(matrix, np.ndarray) or matrix.ndim != 2 or matrix.shape[1] < 1:
            raise ValidationError("matrix must be a 2-d numpy array")
        if matrix.dtype not in (np.float16, np.float32):
            raise ValidationError(f"matrix must be float16 or float32, not {matrix.dtype}")
        if not callable(getattr(tokenizer, "tokenize_ids", None)):
            raise ValidationError("tokenizer needs tokenize_ids(text) -> list[int]")
        self.matrix = matrix
        self.tokenizer = tokenizer
        self.dim = int(matrix.shape[1])
        self.name = name

    def __repr__(self) -> str:
        return f"StaticEmbedder({self.name}, {self.matrix.shape[0]} x {self.dim})"

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """MiniLM's token ids of each text (no special tokens, no truncation)."""
        if isinstance(texts, str):
            raise ValidationError("embed() takes a sequence of texts, not a str")
        out = []
        for text in texts:
            if not isinstance(text, str):
                raise ValidationError(f"texts must be str, got {type(text).__name__}")
            out.append(self.tokenizer.tokenize_ids(text))
        return out

    def embed_ids(self, ids: Sequence[Sequence[int]]) -> np.ndarray:
        """Vectors for already tokenised texts: a float32 ``(len(ids), dim)`` array."""
        out = np.zeros((len(ids), self.dim), dtype=np.float32)
        lengths = np.fromiter((len(row) for row in ids), dtype=np.intp, count=len(ids))
        filled = np.flatnonzero(lengths)
        if filled.size == 0:
            return out
        flat = np.fromiter((i for row in ids for i in row), dtype=np.intp, count=int(lengths.sum()))
        if flat.min() < 0 or flat.max() >= self.matrix.shape[0]:
            raise ValidationError("a token id is outside the embedding matrix")
        starts = np.concatenate(([0], np.cumsum(lengths[filled])[:-1]))
        sums = np.add.reduceat(self.matrix[flat].astype(np.float32), starts, axis=0)
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        # Rows of only zeroed tokens ([UNK]) have norm 0 and stay zero.
        out[filled] = np.divide(sums, norms, out=np.zeros_like(sums), where=norms > 0)
        return out

    def embed_sync(self, texts: Sequence[str]) -> np.ndarray:
        """The same as :meth:`embed`, without the coroutine."""
        return self.embed_ids(self.token_ids(texts))

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        """A float32 ``(len(texts), dim)`` array of unit rows (zero rows: no known token)."""
        return self.embed_sync(texts)


async def token_vectors(embedder: Any, *, batch: int = 512) -> np.ndarray:
    """Every vocabulary token through MiniLM (a ``MiniLmEmbedder``) alone,
    ``[CLS] token [SEP]``, mean-pooled over the three positions as MiniLM's own path pools
    (before its L2 normalisation): float32 ``(vocab, hidden)``. About a minute on one
    CPU core."""
    cls_id = int(embedder.config.get("cls_token_id", 101))
    sep_id = int(embedder.config.get("sep_token_id", 102))
    n = int(embedder.tokenizer.vocab_size)
    out = np.zeros((n, embedder.dim), dtype=np.float32)
    for start in range(0, n, batch):
        ids = np.array([[cls_id, i, sep_id] for i in range(start, min(n, start + batch))])
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids),
                 "token_type_ids": np.zeros_like(ids)}  # fmt: skip
        out[start : start + len(ids)] = (await embedder.forward(feeds)).mean(axis=1)
    return out
