"""all-MiniLM-L6-v2 (int8 ONNX) as an :class:`~pymemory.models.embedding.Embedder`.

Three separate, testable steps (as in transformers.js), the same in CPython and Pyodide:

1. tokenise with the pure-Python tokenizer (``pymemory.models.tokenizers``): ``[CLS] ... [SEP]``,
   truncated to ``max_length`` (256, the model's limit) keeping the final ``[SEP]``, no
   padding;
2. run the model through an :class:`~pymemory.models.runtime.InferenceRuntime` (onnxruntime in
   CPython, onnxruntime-web in the browser) on batches of similar length: the texts of a
   call are sorted by token count and cut into batches of at most ``batch_size`` rows
   and ``max_batch_tokens`` padded token slots (:meth:`MiniLmEmbedder.plan_batches`), each
   padded to its longest row with the attention mask marking the real tokens; the input
   arrays of one call are views of one buffer, reused from batch to batch;
3. mean-pool ``last_hidden_state`` over the mask and L2-normalise, in numpy.

    embedder = await load_minilm()                      # CPython: .cache/models/minilm
    vectors = await embedder.embed(["How do I reset my password?"])   # (1, 384) float32
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import numpy as np

from ..errors import ValidationError
from .embedding import EmbedderUnavailableError
from .local import find_model_dir, missing_model_message
from .runtime import (
    BACKGROUND,
    PRIORITY,
    URGENT,
    InferenceRuntime,
    InferenceSession,
    yield_to_calls,
)

__all__ = [
    "LOCAL_EMBEDDERS", "MINILM_DEFAULTS", "MiniLmEmbedder", "find_model_dir",
    "load_local_embedder", "load_minilm", "load_multilingual_e5",
]  # fmt: skip

#: What ``config.json`` of the MiniLM build says; used where a key is missing.
MINILM_DEFAULTS: dict[str, Any] = {
    "model": "all-MiniLM-L6-v2",
    "file": "model.onnx",
    "tokenizer": "tokenizer.json",
    "quantization": "int8",
    "dims": 384,
    "max_length": 256,
    "pad_token_id": 0,
    "output": "last_hidden_state",
}


def _join(location: str, name: str) -> str:
    """``name`` inside ``location``: a folder path, or a URL (``http://.../minilm/``)."""
    if "://" in location:
        return urljoin(location if location.endswith("/") else location + "/", name)
    return os.path.join(location, name)


def _ids_of(encoded: Any) -> list[int]:
    """Accept ``list[int]`` (pymemory.models.tokenizers) or an ``Encoding`` with ``.ids`` (Rust)."""
    ids = getattr(encoded, "ids", encoded)
    return [int(i) for i in ids]


#: How long one background embedding batch should take: a user's call that meets one
#: shares the cores with it (a 512-slot batch took 455 ms in the browser on 2 vCPUs,
#: 25 ms in CPython). Batches are sized from the measured time per padded token slot.
BACKGROUND_STEP_MS = 50.0
#: Padded token slots of a background batch before any has been timed, and the fewest.
BACKGROUND_MIN_TOKENS = 64


class MiniLmEmbedder:
    """Sentence embeddings from all-MiniLM-L6-v2: mean pooling over the mask, L2-normalised.

    ``runtime`` loads the model (``model_dir_or_url`` + ``config["file"]``) on the first
    :meth:`embed` (or an explicit :meth:`load`); the session is reused afterwards.
    ``tokenizer`` needs ``encode(text) -> list[int]`` adding ``[CLS]``/``[SEP]``; its own
    padding, if any, is switched off. Texts are embedded shortest first in batches of at
    most ``batch_size`` texts and ``max_batch_tokens`` padded token slots, so short texts
    go in large batches and long ones in small batches, with little padding either way
    (the vectors do not depend on the batching).

    The same class runs every local encoder of this shape (:data:`LOCAL_EMBEDDERS`);
    ``config.json`` says what differs: ``query_prefix`` / ``passage_prefix`` (the e5
    family reads ``"query: "`` before a question and ``"passage: "`` before a stored
    text), ``multilingual`` (MiniLM reads Latin-script text only) and
    ``similarity_baseline`` (see :func:`~pymemory.models.embedding.calibrated`).
    """

    def __init__(
        self,
        runtime: InferenceRuntime,
        model_dir_or_url: str | os.PathLike[str],
        tokenizer: Any,
        *,
        config: Mapping[str, Any] | None = None,
        max_length: int | None = None,
        batch_size: int = 64,
        max_batch_tokens: int = 4096,
    ) -> None:
        cfg = {**MINILM_DEFAULTS, **(config or {})}
        model_max = int(cfg["max_length"])
        if max_length is None:
            max_length = model_max
        if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 2:
            raise ValidationError("max_length must be an int >= 2")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValidationError("batch_size must be an int >= 1")
        if (
            isinstance(max_batch_tokens, bool)
            or not isinstance(max_batch_tokens, int)
            or max_batch_tokens < 1
        ):
            raise ValidationError("max_batch_tokens must be an int >= 1")
        self.runtime = runtime
        self.location = os.fspath(model_dir_or_url)
        self.tokenizer = tokenizer
        if getattr(tokenizer, "padding", None) is not None and hasattr(tokenizer, "no_padding"):
            tokenizer.no_padding()
        self.config = cfg
        self.dim = int(cfg["dims"])
        self.max_length = min(max_length, model_max)
        self.batch_size = batch_size
        self.max_batch_tokens = max_batch_tokens
        self.pad_id = int(cfg["pad_token_id"])
        outputs = cfg.get("outputs")
        self.output_name = str(outputs[0]["name"] if outputs else cfg["output"])
        self.model_url = _join(self.location, str(cfg["file"]))
        self.name = f"{cfg['model']}-{cfg['quantization']}-mean-l2-{self.max_length}"
        self.query_prefix = str(cfg.get("query_prefix", ""))
        self.passage_prefix = str(cfg.get("passage_prefix", ""))
        self.multilingual = bool(cfg.get("multilingual", False))
        self.similarity_baseline = float(cfg.get("similarity_baseline", 0.0))
        standout = cfg.get("dense_standout")
        self.dense_standout = None if standout is None else float(standout)
        self.load_ms: float | None = None
        #: Measured ms per padded token slot of background batches (None: none timed yet).
        self.slot_ms: float | None = None
        self._session: InferenceSession | None = None
        self._lock: asyncio.Lock | None = None

    def __repr__(self) -> str:
        return f"MiniLmEmbedder({self.name}, {self.runtime.name}, {self.model_url!r})"

    # -- step 1: tokens ---------------------------------------------------------------------

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids per text: ``[CLS] ... [SEP]``, at most ``max_length`` (the last token,
        ``[SEP]``, is kept when truncating, as the Rust tokenizers do)."""
        if isinstance(texts, str):
            raise ValidationError("embed() takes a sequence of texts, not a str")
        out: list[list[int]] = []
        for text in texts:
            if not isinstance(text, str):
                raise ValidationError(f"texts must be str, got {type(text).__name__}")
            ids = _ids_of(self.tokenizer.encode(text))
            if len(ids) > self.max_length:
                ids = [*ids[: self.max_length - 1], ids[-1]]
            out.append(ids)
        return out

    def batch_inputs(self, ids: Sequence[Sequence[int]]) -> dict[str, np.ndarray]:
        """``input_ids``, ``attention_mask`` and ``token_type_ids`` (int64, ``(n, longest)``),
        right-padded with the pad id."""
        if not ids:
            raise ValidationError("an empty batch")
        longest = max(len(row) for row in ids)
        input_ids = np.full((len(ids), longest), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(ids), longest), dtype=np.int64)
        for i, row in enumerate(ids):
            input_ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        return {
            "input_ids": input_ids,
            "attention_mask": mask,
            "token_type_ids": np.zeros_like(input_ids),
        }

    # -- step 2: the model ------------------------------------------------------------------

    async def load(self) -> InferenceSession:
        """Load the model session once (timed in ``load_ms``)."""
        if self._session is not None:
            return self._session
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._session is None:
                t0 = time.perf_counter()
                session = await self.runtime.load(self.model_url)
                missing = {"input_ids", "attention_mask"} - set(session.input_names)
                if missing or self.output_name not in session.output_names:
                    raise EmbedderUnavailableError(
                        f"{self.model_url} is not a BERT-style encoder: inputs "
                        f"{session.input_names}, outputs {session.output_names}"
                    )
                self.load_ms = (time.perf_counter() - t0) * 1000
                self._session = session
        return self._session

    async def forward(self, feeds: Mapping[str, np.ndarray]) -> np.ndarray:
        """``last_hidden_state`` (float32, ``(n, seq, dim)``) for a batch of inputs."""
        session = await self.load()
        wanted = {k: v for k, v in feeds.items() if k in session.input_names}
        out = await session.run(wanted, [self.output_name])
        hidden = np.asarray(out[self.output_name], dtype=np.float32)
        n, seq = feeds["input_ids"].shape
        if hidden.shape != (n, seq, self.dim):
            want = (n, seq, self.dim)
            raise ValidationError(f"{self.output_name} has shape {hidden.shape}, not {want}")
        return hidden

    # -- step 3: pooling --------------------------------------------------------------------

    @staticmethod
    def pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Mean over the tokens where ``mask`` is 1, then L2-normalised rows (float32)."""
        weights = mask.astype(np.float64)[..., None]
        summed = (hidden.astype(np.float64) * weights).sum(axis=1)
        mean = summed / np.maximum(weights.sum(axis=1), 1.0)
        norms = np.linalg.norm(mean, axis=1, keepdims=True)
        return (mean / np.maximum(norms, 1e-12)).astype(np.float32)

    # -- the Embedder protocol --------------------------------------------------------------

    def plan_batches(
        self, lengths: Sequence[int], max_tokens: int | None = None
    ) -> list[list[int]]:
        """Indices into ``lengths`` grouped into batches, shortest first: a batch grows
        while it has fewer than ``batch_size`` rows and its padded size (rows x the
        longest) stays within ``max_batch_tokens`` (a single longer text is a batch)."""
        order = sorted(range(len(lengths)), key=lengths.__getitem__)
        batches: list[list[int]] = []
        current: list[int] = []
        for i in order:
            # Sorted ascending: lengths[i] is the longest of the batch if i joins it.
            if current and (
                len(current) >= self.batch_size
                or (len(current) + 1) * lengths[i] > (max_tokens or self.max_batch_tokens)
            ):
                batches.append(current)
                current = []
            current.append(i)
        if current:
            batches.append(current)
        return batches

    async def embed_ids(self, ids: Sequence[Sequence[int]]) -> np.ndarray:
        """Vectors for already tokenised texts (rows of :meth:`tokenize`)."""
        out = np.zeros((len(ids), self.dim), dtype=np.float32)
        lengths = [len(row) for row in ids]
        # Background embedding takes small batches: each is one step between the gate's
        # checks, so a user's call waits for at most one short batch.
        background = BACKGROUND.get() and PRIORITY.get() < URGENT
        batches = self.plan_batches(lengths, self.background_budget() if background else None)
        if not batches:
            return out
        # One buffer per input for the whole call; each batch uses a C-ordered view of
        # its front (rows x longest), so no batch allocates (the await below finishes
        # with a view before the next batch refills it).
        slots = max(len(b) * lengths[b[-1]] for b in batches)
        id_buf = np.empty(slots, dtype=np.int64)
        mask_buf = np.empty(slots, dtype=np.int64)
        type_buf = np.zeros(slots, dtype=np.int64)
        for rows in batches:
            longest = lengths[rows[-1]]
            size = len(rows) * longest
            input_ids = id_buf[:size].reshape(len(rows), longest)
            mask = mask_buf[:size].reshape(len(rows), longest)
            input_ids.fill(self.pad_id)
            mask.fill(0)
            for j, i in enumerate(rows):
                n = lengths[i]
                input_ids[j, :n] = ids[i]
                mask[j, :n] = 1
            feeds = {
                "input_ids": input_ids,
                "attention_mask": mask,
                "token_type_ids": type_buf[:size].reshape(len(rows), longest),
            }
            await yield_to_calls()  # background embedding pauses between batches for a call
            t0 = time.perf_counter()
            hidden = await self.forward(feeds)
            if background:
                self._timed(size, (time.perf_counter() - t0) * 1000)
            out[rows] = self.pool(hidden, mask)
        return out

    def background_budget(self) -> int:
        """Padded token slots of one background batch: about :data:`BACKGROUND_STEP_MS`
        at the measured speed (at least :data:`BACKGROUND_MIN_TOKENS`)."""
        if self.slot_ms is None:
            return min(self.max_batch_tokens, BACKGROUND_MIN_TOKENS)
        fits = int(BACKGROUND_STEP_MS / self.slot_ms)
        return min(self.max_batch_tokens, max(BACKGROUND_MIN_TOKENS, fits))

    def _timed(self, slots: int, ms: float) -> None:
        rate = ms / max(slots, 1)
        self.slot_ms = rate if self.slot_ms is None else 0.7 * self.slot_ms + 0.3 * rate

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        """A float32 ``(len(texts), dim)`` array of unit rows, for texts to be found."""
        return await self.embed_ids(self.tokenize(self._prefixed(self.passage_prefix, texts)))

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """As :meth:`embed`, for texts that look for others (questions)."""
        return await self.embed_ids(self.tokenize(self._prefixed(self.query_prefix, texts)))

    @staticmethod
    def _prefixed(prefix: str, texts: Sequence[str]) -> Sequence[str]:
        if not prefix or isinstance(texts, str):
            return texts  # tokenize() refuses a bare str
        return [prefix + t if isinstance(t, str) else t for t in texts]


# --- loading ---------------------------------------------------------------------------


async def _read(runtime: Any, location: str) -> bytes:
    reader = getattr(runtime, "read_bytes", None)
    if reader is not None:
        return bytes(await reader(location))
    return await asyncio.to_thread(Path(location).read_bytes)


#: The local encoders a user can name (the JS ``models`` option, ``load_embedder``, the
#: CLI's ``--embedder``), each in the models folder under its name, and what this library
#: knows of it beyond its ``config.json`` (chosen by measurement: docs/models.md).
LOCAL_EMBEDDERS: dict[str, dict[str, Any]] = {
    "minilm": {"label": "all-MiniLM-L6-v2 embedder", "multilingual": False, "dense_standout": 0.2},
    "multilingual-e5-small": {
        "label": "multilingual-e5-small embedder",
        "multilingual": True,
        "similarity_baseline": 0.72,
        "dense_standout": 0.1,
    },
}


async def load_minilm(
    runtime: InferenceRuntime | None = None,
    model_dir: str | os.PathLike[str] | None = None,
    **options: Any,
) -> MiniLmEmbedder:
    """all-MiniLM-L6-v2 (English): :func:`load_local_embedder` ``("minilm", ...)``."""
    return await load_local_embedder("minilm", runtime, model_dir, **options)


async def load_multilingual_e5(
    runtime: InferenceRuntime | None = None,
    model_dir: str | os.PathLike[str] | None = None,
    **options: Any,
) -> MiniLmEmbedder:
    """multilingual-e5-small (reads Chinese, Japanese, Korean and Latin-script languages):
    :func:`load_local_embedder` ``("multilingual-e5-small", ...)``."""
    return await load_local_embedder("multilingual-e5-small", runtime, model_dir, **options)


async def load_local_embedder(
    name: str = "minilm",
    runtime: InferenceRuntime | None = None,
    model_dir: str | os.PathLike[str] | None = None,
    *,
    max_length: int | None = None,
    batch_size: int = 64,
    max_batch_tokens: int = 4096,
    intra_op_threads: int | None = None,
    preload: bool = True,
) -> MiniLmEmbedder:
    """The local encoder ``name`` (a key of :data:`LOCAL_EMBEDDERS`), ready.

    In CPython the defaults do: ``runtime`` is a new ``OrtRuntime(intra_op_threads=...)``
    and ``model_dir`` is found by :func:`find_model_dir`. In the browser pass the
    ``OrtWebRuntime`` and the model folder's URL. ``config.json`` and ``tokenizer.json``
    are read through the runtime (``runtime.read_bytes``, when it has one) and the model
    session is created now unless ``preload`` is false.
    """
    known = LOCAL_EMBEDDERS.get(name)
    if known is None:
        raise EmbedderUnavailableError(
            f"no local embedder {name!r}; choose one of {', '.join(LOCAL_EMBEDDERS)}"
        )
    if runtime is None:
        from .ort import OrtRuntime

        runtime = OrtRuntime(intra_op_threads=intra_op_threads)
    if model_dir is None:
        found = find_model_dir(name)
        if found is None:
            raise EmbedderUnavailableError(missing_model_message(name, known["label"]))
        model_dir = found
    location = os.fspath(model_dir)
    from .tokenizers import load_tokenizer

    config = json.loads(await _read(runtime, _join(location, "config.json")))
    tokenizer_file = config.get("tokenizer", "tokenizer.json")
    tokenizer = load_tokenizer(json.loads(await _read(runtime, _join(location, tokenizer_file))))
    facts = {k: v for k, v in known.items() if k != "label"}
    embedder = MiniLmEmbedder(
        runtime,
        location,
        tokenizer,
        config={**config, **facts},
        max_length=max_length,
        batch_size=batch_size,
        max_batch_tokens=max_batch_tokens,
    )
    if preload:
        await embedder.load()
    return embedder
