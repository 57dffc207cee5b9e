"""Text embedders for dense retrieval: one small protocol, a hashing baseline, a loader.

An :class:`Embedder` turns texts into unit vectors::

    vectors = await embedder.embed(["first text", "second text"])
    vectors.shape == (2, embedder.dim); vectors.dtype == np.float32
    # every row has L2 norm 1 (a text with no features at all gives a zero row)

so the cosine similarity of two texts is the dot product of their rows. ``embed`` is
async because the real model runs through onnxruntime (CPython) or onnxruntime-web (in
the browser, awaited through the JS bridge); pure-numpy embedders simply return.

:class:`HashingEmbedder` is a deterministic, dependency-free **baseline**: it hashes
character n-grams into a fixed number of buckets. It is *not* a semantic model: it knows
that "deploy" and "deployment" look alike, but not that "car" and "vehicle" mean the same
thing. Use it in tests, as an offline fallback, and as the floor a real sentence
embedding model (all-MiniLM-L6-v2, loaded with ``load_embedder("minilm")``) has to beat.

Only numpy and the standard library are used; nothing here starts a thread.
"""

from __future__ import annotations

import importlib
import inspect
import math
import re
import unicodedata
import zlib
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..errors import PymemoryError, ValidationError, shown

__all__ = [
    "EMBEDDERS",
    "Embedder",
    "EmbedderUnavailableError",
    "HashingEmbedder",
    "calibrated",
    "check_embeddings",
    "embed_queries",
    "load_embedder",
]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension."""

    name: str
    """Identifies the model and its settings (vectors of different names do not mix)."""
    dim: int
    """Length of every vector."""
    # Optional: ``multilingual = False`` says the model reads Latin-script text only;
    # retrieval then ranks queries in other scripts by BM25 alone (see :func:`reads`).
    # ``embed_queries(texts)`` embeds questions where the model reads them differently
    # from stored texts (:func:`embed_queries`); ``similarity_baseline`` is the cosine of
    # unrelated texts (:func:`calibrated`); ``dense_standout``, how far (calibrated) above
    # the query's typical cosine to the store its best memory must be for any memory to
    # pass the relevance floor on its cosine (absent: no such condition; see
    # ``retrieval.dense.DenseHits.gate``).

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        """A float32 array of shape ``(len(texts), dim)`` with L2-normalised rows."""
        ...


def reads(embedder: Embedder, text: str) -> bool:
    """Whether ``embedder`` can read ``text``: an embedder that says it is not
    ``multilingual`` (an optional attribute; absent means it is) reads text whose letters
    are mostly Latin, and nothing else (MiniLM's vectors of Chinese are noise)."""
    if getattr(embedder, "multilingual", True):
        return True
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return True
    other = sum(1 for c in letters if ord(c) > 0x24F and not 0x1E00 <= ord(c) <= 0x1EFF)
    return other * 2 <= len(letters)


async def embed_queries(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """Vectors of ``texts`` as questions: the embedder's ``embed_queries`` when it has one
    (the e5 family is trained with ``"query: "`` before a question), else ``embed``."""
    own = getattr(embedder, "embed_queries", None)
    return await (own(texts) if own is not None else embedder.embed(texts))


def calibrated(embedder: Embedder, cosine: np.ndarray) -> np.ndarray:
    """Cosines on one scale whatever the model: ``(cos - b) / (1 - b)``, where ``b`` is
    the embedder's ``similarity_baseline`` (absent: 0), about the cosine of unrelated
    texts. MiniLM's unrelated texts are near 0; e5's cosines all fall in about 0.7-0.95, so
    without this its unrelated texts would pass every floor chosen for MiniLM.
    Monotone: no order changes."""
    b = float(getattr(embedder, "similarity_baseline", 0.0) or 0.0)
    if b == 0.0:
        return cosine
    return (cosine - b) / (1.0 - b)


class EmbedderUnavailableError(PymemoryError):
    """The requested embedder cannot be loaded (unknown name, model not built or fetched)."""

    code = "embedder_unavailable"


def check_embeddings(vectors: Any, n: int, dim: int) -> np.ndarray:
    """Validate an embedder's output: ``(n, dim)``, finite; returned as C-ordered float32."""
    arr = np.ascontiguousarray(vectors, dtype=np.float32)
    if arr.shape != (n, dim):
        raise ValidationError(f"embedder returned shape {arr.shape}, expected {(n, dim)}")
    if not np.isfinite(arr).all():
        raise ValidationError("embedder returned non-finite values")
    return arr


# --- the hashing baseline -------------------------------------------------------------


# Letters, digits and combining marks; everything else separates words.
_WORD_RE = re.compile(r"(?:[^\W_]|[\u0300-\u036f])+")


def _normalize(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


@lru_cache(maxsize=1 << 16)
def _bucket(feature: str, dim: int, seed: int) -> int:
    """Signed bucket of one feature: ``+(i + 1)`` or ``-(i + 1)`` for bucket ``i``."""
    h = zlib.crc32(feature.encode("utf-8"), seed)
    index = (h >> 1) % dim
    return index + 1 if h & 1 else -(index + 1)


class HashingEmbedder:
    """Character n-gram hashing into ``dim`` buckets: a weak, lexical baseline.

    Features of a text, after NFKC normalisation and case folding:

    * every word (a run of letters and digits) as a whole, marked ``w:word``;
    * every character n-gram, ``ngram_min <= n <= ngram_max``, of each word padded with
      a space on both sides (``" deploy "`` gives ``" de"``, ``"dep"``, ..., ``"oy "``), as
      in fastText, so words sharing a stem or an affix share features;
    * CJK and other unspaced scripts need no special case: a run of ideographs is one
      "word", and its n-grams are what matters.

    Each feature is hashed with CRC-32 (seeded) to a bucket and a sign (the "hashing
    trick" with a sign bit, which keeps collisions from adding up in expectation). Counts
    are damped to ``1 + ln(count)``, whole words weigh ``word_weight``, and each row is
    L2-normalised. The output depends only on the text and the settings, on every
    platform.

    This captures spelling, not meaning: it is a baseline and a test double, not a
    semantic model.
    """

    def __init__(
        self,
        dim: int = 384,
        *,
        ngram_min: int = 3,
        ngram_max: int = 5,
        word_weight: float = 2.0,
        seed: int = 0,
    ) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int) or not 1 <= dim <= 65536:
            raise ValidationError(f"dim must be an int in 1..65536, got {shown(dim)}")
        if not (isinstance(ngram_min, int) and isinstance(ngram_max, int)):
            raise ValidationError("ngram_min and ngram_max must be ints")
        if not 1 <= ngram_min <= ngram_max <= 16:
            raise ValidationError("need 1 <= ngram_min <= ngram_max <= 16")
        if not (math.isfinite(word_weight) and word_weight >= 0):
            raise ValidationError("word_weight must be a finite number >= 0")
        self.dim = dim
        self.ngram_min = ngram_min
        self.ngram_max = ngram_max
        self.word_weight = float(word_weight)
        self.seed = int(seed) & 0xFFFFFFFF
        self.name = f"hashing-{dim}-c{ngram_min}{ngram_max}-w{self.word_weight:g}-s{self.seed}"

    def __repr__(self) -> str:
        return f"HashingEmbedder({self.name})"

    def features(self, text: str) -> Counter[str]:
        """The weighted-by-count features of ``text`` (for inspection and tests)."""
        counts: Counter[str] = Counter()
        lo, hi = self.ngram_min, self.ngram_max
        for word in _WORD_RE.findall(_normalize(text)):
            counts["w:" + word] += 1
            padded = f" {word} "
            n_chars = len(padded)
            for n in range(lo, min(hi, n_chars) + 1):
                for i in range(n_chars - n + 1):
                    counts[padded[i : i + n]] += 1
        return counts

    def embed_sync(self, texts: Sequence[str]) -> np.ndarray:
        """The same as :meth:`embed`, without the coroutine."""
        if isinstance(texts, str):
            raise ValidationError("embed() takes a sequence of texts, not a str")
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            if not isinstance(text, str):
                raise ValidationError(f"texts must be str, got {type(text).__name__}")
            counts = self.features(text)
            if not counts:
                continue
            idx = np.empty(len(counts), dtype=np.intp)  # bincount wants intp (32-bit in WASM)
            val = np.empty(len(counts), dtype=np.float64)
            for j, (feature, count) in enumerate(counts.items()):
                b = _bucket(feature, self.dim, self.seed)
                weight = 1.0 + math.log(count)
                if feature.startswith("w:"):
                    weight *= self.word_weight
                idx[j] = abs(b) - 1
                val[j] = weight if b > 0 else -weight
            vec = np.bincount(idx, weights=val, minlength=self.dim)
            norm = float(np.linalg.norm(vec))
            if norm > 0.0:
                out[row] = vec / norm
        return out

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_sync(texts)


# --- loading by name -------------------------------------------------------------------

#: Embedders ``load_embedder`` knows: name -> ``(module, factory)``. The factory is
#: called with the keyword options and may be sync or async; it returns an Embedder.
EMBEDDERS: dict[str, tuple[str, str]] = {
    "hashing": ("pymemory.models.embedding", "HashingEmbedder"),
    "minilm": ("pymemory.models", "load_minilm"),
    "multilingual-e5-small": ("pymemory.models", "load_multilingual_e5"),
}


async def load_embedder(name: str, **options: Any) -> Embedder:
    """The embedder called ``name`` (``"hashing"``, ``"minilm"`` or
    ``"multilingual-e5-small"``), ready to use.

    Models are imported lazily: asking for ``"hashing"`` never touches onnxruntime.
    ``"minilm"`` is all-MiniLM-L6-v2 (int8 ONNX) from ``pymemory.models.load_minilm``; if
    that module, its runtime or its model files are missing, this raises
    :class:`EmbedderUnavailableError` saying what to do instead of an ImportError or
    a FileNotFoundError from deep inside.
    """
    if name not in EMBEDDERS:
        raise EmbedderUnavailableError(
            f"unknown embedder {shown(name)}; choose one of {', '.join(sorted(EMBEDDERS))}"
        )
    module_name, factory_name = EMBEDDERS[name]
    hint = (
        "fetch the model first (pymemory models fetch; in a checkout, python3 build.py setup "
        "does it) and make sure onnxruntime is installed (pip install "
        "'pymemory-agent[models]'), or use --embedder hashing"
    )
    try:
        module = importlib.import_module(module_name)
        factory = getattr(module, factory_name)
    except (ImportError, AttributeError) as exc:
        raise EmbedderUnavailableError(
            f"embedder {shown(name)} is not available ({exc}); {hint}"
        ) from exc
    try:
        made = factory(**options)
        if inspect.isawaitable(made):
            made = await made
    except PymemoryError:
        raise
    except (ImportError, OSError) as exc:
        raise EmbedderUnavailableError(
            f"embedder {shown(name)} could not load: {exc}; {hint}"
        ) from exc
    if not isinstance(made, Embedder):
        raise EmbedderUnavailableError(
            f"{module_name}.{factory_name} returned {type(made).__name__}, not an Embedder"
        )
    return made
