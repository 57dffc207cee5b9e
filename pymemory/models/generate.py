"""Greedy decoding for a decoder-only ONNX model with a KV cache, in numpy.

Works on any :class:`~pymemory.models.runtime.InferenceSession` (onnxruntime in CPython,
onnxruntime-web in the browser), one ``await session.run`` per step, no threads::

    spec = CausalLmSpec.from_config(json.loads(config_json))
    out = await generate(session, spec, prompt_ids, GenerationConfig(stop_ids=(2,)),
                         decode=tokenizer.decode)
    out.text, out.ids, out.stop_reason, out.prefill_ms, out.decode_ms

The prompt is fed in chunks of ``prefill_chunk`` tokens, each with the cache of the
previous ones: dynamic int8 quantisation computes one activation scale per call, so a
long single-call prefill drifts from the float model. Decoding is greedy (deterministic).
Optional logit constraints: ``allowed_ids`` (only these tokens may be generated; used to
keep a summary inside the source's vocabulary), ``banned_ids``, and ``no_repeat_ngram``
(an n-gram of the output may not occur twice in the output; the prompt is not counted,
so copying from the source stays possible).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import shown
from .runtime import InferenceSession, yield_to_calls

__all__ = [
    "CausalLmSpec",
    "Generation",
    "GenerationConfig",
    "KvCache",
    "TokenFilter",
    "allowed_mask",
    "generate",
    "log_softmax_at",
    "next_token",
    "prefill",
]


@dataclass(frozen=True)
class CausalLmSpec:
    """The I/O layout of a decoder-only ONNX export with past key values."""

    num_layers: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    uses_position_ids: bool = True
    past_key: str = "past_key_values.{layer}.key"
    past_value: str = "past_key_values.{layer}.value"
    present_key: str = "present.{layer}.key"
    present_value: str = "present.{layer}.value"
    logits: str = "logits"

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> CausalLmSpec:
        """From a model folder's ``config.json`` (as written by the build pipeline)."""
        return cls(
            num_layers=int(config["num_layers"]),
            num_kv_heads=int(config["num_key_value_heads"]),
            head_dim=int(config["head_dim"]),
            vocab_size=int(config["vocab_size"]),
            uses_position_ids=bool(config.get("uses_position_ids", True)),
            past_key=str(config.get("past_key_template", cls.past_key)),
            past_value=str(config.get("past_value_template", cls.past_value)),
            present_key=str(config.get("present_key_template", cls.present_key)),
            present_value=str(config.get("present_value_template", cls.present_value)),
            logits=str(config.get("logits_output", cls.logits)),
        )

    def past_names(self) -> list[tuple[str, str]]:
        """(past input, present output) name pairs, layer by layer, key then value."""
        pairs = []
        for layer in range(self.num_layers):
            pairs.append((self.past_key.format(layer=layer), self.present_key.format(layer=layer)))
            pairs.append(
                (self.past_value.format(layer=layer), self.present_value.format(layer=layer))
            )
        return pairs


@dataclass(frozen=True)
class GenerationConfig:
    """How to decode. All fields keep decoding deterministic."""

    max_new_tokens: int = 64
    stop_ids: tuple[int, ...] = ()
    prefill_chunk: int = 16
    no_repeat_ngram: int = 0
    """0: off. n > 0: a token completing an n-gram already in the output is banned."""
    allowed_ids: frozenset[int] | None = None
    """If set, only these tokens (and ``stop_ids``) may be generated."""
    banned_ids: frozenset[int] = frozenset()
    min_new_tokens: int = 0
    """Stop tokens are banned until this many tokens have been generated."""
    stop_after_ids: tuple[int, ...] = ()
    """Tokens that end the output once written (kept in it), e.g. a sentence end."""

    def __post_init__(self) -> None:
        for name in ("max_new_tokens", "prefill_chunk"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {shown(value)}")
        for name in ("no_repeat_ngram", "min_new_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be an int >= 0, got {shown(value)}")


@dataclass
class Generation:
    """The result of :func:`generate`: new token ids (without the stop token), text, timing."""

    ids: list[int]
    text: str
    stop_reason: str
    """``"stop"`` (a stop token), ``"length"`` (max_new_tokens) or ``"empty"`` (no token
    allowed)."""
    prompt_tokens: int
    prefill_ms: float
    decode_ms: float
    steps: int = 0
    step_ms: list[float] = field(default_factory=list, repr=False)
    logprobs: list[float] = field(default_factory=list, repr=False)
    """Per chosen token (the stop token included): its log-probability under the model's
    unconstrained distribution. Low values mean the constraints overrode the model."""
    overridden: int = 0
    """Steps where the chosen token was not the model's unconstrained first choice."""

    @property
    def mean_logprob(self) -> float:
        return sum(self.logprobs) / len(self.logprobs) if self.logprobs else 0.0

    @property
    def min_logprob(self) -> float:
        return min(self.logprobs) if self.logprobs else 0.0

    @property
    def total_ms(self) -> float:
        return self.prefill_ms + self.decode_ms


def _banned_by_ngrams(output: Sequence[int], n: int) -> set[int]:
    """Tokens that would repeat an n-gram of ``output`` (no-repeat-ngram blocking)."""
    if n <= 0 or len(output) < n:
        return set()
    if n == 1:
        return set(output)
    prefix = tuple(output[len(output) - n + 1 :])
    banned = set()
    for i in range(len(output) - n + 1):
        if tuple(output[i : i + n - 1]) == prefix:
            banned.add(output[i + n - 1])
    return banned


TokenFilter = Callable[[Sequence[int], int], bool]
"""``(output so far, candidate token) -> allowed?``: a constraint that depends on state."""
FILTER_TRIES = 512  # how many of the best tokens a TokenFilter is offered per step


def next_token(
    logits: np.ndarray,
    output: Sequence[int],
    config: GenerationConfig,
    mask: np.ndarray | None = None,
    token_filter: TokenFilter | None = None,
) -> int | None:
    """The greedy choice from one position's ``logits`` (``(vocab,)``) under ``config``'s
    constraints; ``mask`` is a precomputed boolean ``(vocab,)`` of allowed tokens, and
    ``token_filter`` is offered the best remaining tokens in order, stop tokens included
    (the first it accepts wins). If the filter accepts none of them, the no-repeat-ngram
    ban is lifted for that step (it must not strand a half-written character). None if
    no token is allowed."""
    scores = np.asarray(logits, dtype=np.float32).copy()
    if mask is not None:
        scores[~mask] = -np.inf
    banned = set(config.banned_ids)
    if len(output) < config.min_new_tokens:
        banned |= set(config.stop_ids)
    _ban(scores, banned)
    repeats = _banned_by_ngrams(output, config.no_repeat_ngram)
    if token_filter is None:
        _ban(scores, repeats)
        best = int(np.argmax(scores))
        return best if np.isfinite(scores[best]) else None
    for lifted in (False, True):
        candidate_scores = scores if lifted else _ban(scores.copy(), repeats)
        token = _first_accepted(candidate_scores, output, token_filter)
        if token is not None or not repeats:
            return token
    return None


def _ban(scores: np.ndarray, tokens: set[int]) -> np.ndarray:
    for token in tokens:
        if 0 <= token < scores.shape[0]:
            scores[token] = -np.inf
    return scores


def _first_accepted(
    scores: np.ndarray, output: Sequence[int], token_filter: TokenFilter
) -> int | None:
    tries = min(FILTER_TRIES, scores.shape[0])
    top = np.argpartition(-scores, tries - 1)[:tries]
    for token in top[np.argsort(-scores[top], kind="stable")]:
        if not np.isfinite(scores[token]):
            break
        if token_filter(output, int(token)):
            return int(token)
    return None


def allowed_mask(
    vocab_size: int, allowed: Iterable[int] | None, always: Iterable[int] = ()
) -> np.ndarray | None:
    """A boolean vocabulary mask of ``allowed`` + ``always`` tokens (None: no constraint)."""
    if allowed is None:
        return None
    mask = np.zeros(vocab_size, dtype=bool)
    ids = [i for i in (*allowed, *always) if 0 <= i < vocab_size]
    mask[ids] = True
    return mask


class KvCache:
    """The past key values of one sequence (``length`` tokens), fed back into every step.

    Steps replace the arrays rather than writing into them, so :meth:`copy` is cheap and a
    cached prompt prefix (see :func:`prefill`) can be shared by any number of generations.
    """

    def __init__(self, spec: CausalLmSpec) -> None:
        self.spec = spec
        self.length = 0
        empty = np.zeros((1, spec.num_kv_heads, 0, spec.head_dim), dtype=np.float32)
        self.values: dict[str, np.ndarray] = {past: empty for past, _ in spec.past_names()}
        self.ids: list[int] = []

    def copy(self) -> KvCache:
        other = KvCache(self.spec)
        other.length = self.length
        other.values = dict(self.values)
        other.ids = list(self.ids)
        return other

    @property
    def nbytes(self) -> int:
        return sum(v.nbytes for v in self.values.values())

    def feeds(self, ids: Sequence[int]) -> dict[str, np.ndarray]:
        n = len(ids)
        feeds: dict[str, np.ndarray] = {
            "input_ids": np.asarray([ids], dtype=np.int64),
            "attention_mask": np.ones((1, self.length + n), dtype=np.int64),
        }
        if self.spec.uses_position_ids:
            feeds["position_ids"] = np.arange(self.length, self.length + n, dtype=np.int64)[None]
        feeds.update(self.values)
        return feeds

    def update(self, outputs: Mapping[str, np.ndarray], ids: Sequence[int]) -> None:
        for past, present in self.spec.past_names():
            self.values[past] = np.asarray(outputs[present], dtype=np.float32)
        self.length += len(ids)
        self.ids.extend(int(i) for i in ids)


async def _step(
    session: InferenceSession, spec: CausalLmSpec, cache: KvCache, ids: Sequence[int]
) -> np.ndarray:
    """Run ``ids`` through the model on top of ``cache``; the last position's logits."""
    names = [spec.logits] + [present for _, present in spec.past_names()]
    await yield_to_calls()  # background generation pauses between steps for a user's call
    outputs = await session.run(cache.feeds(ids), names)
    cache.update(outputs, ids)
    logits = np.asarray(outputs[spec.logits])
    return logits.reshape(-1, logits.shape[-1])[-1]


async def prefill(
    session: InferenceSession,
    spec: CausalLmSpec,
    ids: Sequence[int],
    *,
    chunk: int = 16,
    cache: KvCache | None = None,
) -> tuple[KvCache, np.ndarray]:
    """Feed ``ids`` in chunks of ``chunk`` tokens on top of ``cache`` (a copy of it; a new
    cache if None). Returns the cache and the logits after the last token."""
    if not ids:
        raise ValueError("prefill() needs at least one token")
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise ValueError(f"chunk must be an int >= 1, got {shown(chunk)}")
    state = cache.copy() if cache is not None else KvCache(spec)
    logits = np.empty(0)
    for start in range(0, len(ids), chunk):
        logits = await _step(session, spec, state, [int(i) for i in ids[start : start + chunk]])
    return state, logits


async def generate(
    session: InferenceSession,
    spec: CausalLmSpec,
    prompt_ids: Sequence[int],
    config: GenerationConfig = GenerationConfig(),
    *,
    decode: Callable[[list[int]], str] | None = None,
    prefix: KvCache | None = None,
    token_filter: TokenFilter | None = None,
) -> Generation:
    """Greedy continuation of ``prompt_ids``; ``decode`` turns the new ids into text.

    ``prefix``: the cache of tokens that come before ``prompt_ids`` (from :func:`prefill`;
    left unchanged), e.g. a fixed system prompt and few-shot examples computed once.
    ``token_filter``: a stateful constraint (see :func:`next_token`).
    """
    prompt = [int(i) for i in prompt_ids]
    if not prompt:
        raise ValueError("generate() needs a non-empty prompt")
    mask = allowed_mask(spec.vocab_size, config.allowed_ids, config.stop_ids)
    t0 = time.perf_counter()
    cache, logits = await prefill(session, spec, prompt, chunk=config.prefill_chunk, cache=prefix)
    prefill_ms = (time.perf_counter() - t0) * 1000
    output: list[int] = []
    step_ms: list[float] = []
    reason = "length"
    t1 = time.perf_counter()
    logprobs: list[float] = []
    overridden = 0
    for step in range(config.max_new_tokens):
        token = next_token(logits, output, config, mask, token_filter)
        if token is None:
            reason = "empty"
            break
        logprobs.append(log_softmax_at(logits, token))
        overridden += token != int(np.argmax(logits))
        if token in config.stop_ids:
            reason = "stop"
            break
        output.append(token)
        if token in config.stop_after_ids:
            reason = "stop"
            break
        if step + 1 == config.max_new_tokens:
            break  # no need to run the model for a token nobody will read
        ts = time.perf_counter()
        logits = await _step(session, spec, cache, [token])
        step_ms.append((time.perf_counter() - ts) * 1000)
    decode_ms = (time.perf_counter() - t1) * 1000
    text = decode(output) if decode is not None else ""
    return Generation(
        ids=output,
        text=text,
        stop_reason=reason,
        prompt_tokens=len(prompt) + (prefix.length if prefix is not None else 0),
        prefill_ms=prefill_ms,
        decode_ms=decode_ms,
        steps=len(step_ms),
        step_ms=step_ms,
        logprobs=logprobs,
        overridden=overridden,
    )


def log_softmax_at(logits: np.ndarray, token: int) -> float:
    """``log p(token)`` under the unconstrained distribution of ``logits``."""
    values = np.asarray(logits, dtype=np.float64)
    top = float(values.max())
    return float(values[token] - top - np.log(np.exp(values - top).sum()))
