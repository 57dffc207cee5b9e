"""Encoder stage 2: SmolLM2-135M-Instruct refines the stage-1 summary, behind a guard.

    refiner = await load_smollm2_refiner()              # CPython: .cache/models/smollm2
    mem = await Memory.open(refiner=refiner)            # refines new items in the background
    await refiner.refine(text, stage1_summary, type="message")   # -> str | None

One refinement (the same in CPython and Pyodide: model calls go through the runtime):

1. only text people wrote is refined (message, user_feedback, user_preference): on tool
   results and system events the model garbles what the rules render well, so those keep
   stage 1 without a model call;
2. the language is Chinese if the source is (:func:`~pymemory.encoder.guard.is_chinese`);
3. the ChatML prompt is built by hand: a system message with the instruction (Chinese:
   请用 15~25 字概括以下内容的核心意图，不要添加任何解释，输出纯中文。) and two worked
   examples of the memory's type as chat turns. That prefix is fixed per (language, type),
   so its KV cache is computed once and reused. Then a user turn with the stage-1 summary
   (already cut down to the sentences that carry intent) and the assistant turn, primed
   with "User" / 用户 (feedback: "User says" / 用户反馈);
4. greedy decoding (:mod:`~pymemory.models.generate`) restricted to the tokens of the source,
   a few framing words and punctuation, with every Han character kept inside the source's
   (:class:`HanFilter`) and no repeated 4-gram;
5. the output must end with the end-of-turn token (Chinese: or 。), be something the model
   itself found likely (mean token log-probability >= -0.7 under its unconstrained
   distribution: forced text is garbled text) and pass the
   :class:`~pymemory.encoder.guard.Guard`, else ``refine`` returns None and stage 1 stays.
   :attr:`SmolLm2Refiner.stats` counts outcomes and rejection reasons.

The prompt and decoding settings were picked on half of the labelled dev set
(``pymemory/evals/summaries_dev.jsonl``) and checked on the other half; see
``benchmarks/eval_summarizer.py``.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from ..models.generate import CausalLmSpec, Generation, GenerationConfig, KvCache, generate, prefill
from ..models.runtime import InferenceRuntime, InferenceSession
from ..models.token_filters import HAN_CHAR, HanFilter, incomplete_tail, token_bytes_of
from .guard import Guard, Verdict, clean_candidate, is_chinese
from .prompts import DEFAULT_STYLE, HUMAN_TYPES, Example, PromptStyle

__all__ = [
    "DEFAULT_STYLE",
    "HUMAN_TYPES",
    "Example",
    "HanFilter",
    "PromptStyle",
    "Refinement",
    "RefinerStats",
    "SmolLm2Refiner",
    "SummarizerUnavailableError",
    "find_smollm2_dir",
    "load_smollm2_refiner",
]

IM_START, IM_END = "<|im_start|>", "<|im_end|>"


class SummarizerUnavailableError(RuntimeError):
    """The SmolLM2 model files are not there (run ``python3 build.py setup``)."""


@dataclass
class Refinement:
    """One refinement: the candidates tried and the guard's verdicts."""

    raw: str
    """What the model wrote last (prime included), before cleaning."""
    verdict: Verdict
    """The verdict on ``raw``; ``verdict.text`` is what would be stored."""
    generation: Generation | None
    language: str
    ms: float
    attempts: list[Verdict] = field(default_factory=list)
    """The verdict on each candidate tried (the last one is ``verdict``)."""

    @property
    def accepted(self) -> bool:
        return self.verdict.accepted

    @property
    def text(self) -> str | None:
        return self.verdict.text if self.verdict.accepted else None


@dataclass
class RefinerStats:
    """Counts of refinement outcomes; ``reasons`` counts rejection codes."""

    calls: int = 0
    """Memories the model ran on."""
    skipped: int = 0
    """Memories of a type that is not refined (or blank): no model call."""
    candidates: int = 0
    """Model outputs judged (more than ``calls`` when several primes are tried)."""
    accepted: int = 0
    rejected: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    """Rejection codes over all candidates."""
    model_ms: float = 0.0

    def record(self, refinement: Refinement) -> None:
        self.calls += 1
        self.model_ms += refinement.ms
        self.candidates += max(1, len(refinement.attempts))
        if refinement.accepted:
            self.accepted += 1
        else:
            self.rejected += 1
        for verdict in refinement.attempts or [refinement.verdict]:
            self.reasons.update(set(verdict.codes))

    def as_dict(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "skipped": self.skipped,
            "candidates": self.candidates,
            "accepted": self.accepted,
            "rejected": self.rejected,
            "acceptance_rate": self.accepted / self.calls if self.calls else 0.0,
            "reasons": dict(self.reasons.most_common()),
            "model_ms": round(self.model_ms, 1),
        }


def _turn(role: str, content: str) -> str:
    return f"{IM_START}{role}\n{content}{IM_END}\n"


# Words a summary may frame the source with: their tokens are allowed when constraining.
_FRAMING_EN = (
    *("User", "user", "The", "the", "a", "an", "and", "or", "but", "to", "of", "in", "on"),
    *("for", "with", "from", "at", "by", "is", "are", "was", "were", "wants", "asks"),
    *("needs", "says", "notes", "their", "they", "it", "its", "that", "this", "about"),
    "whether",
)
_FRAMING_ZH = (
    "用户",
    "要求",
    "希望",
    "想",
    "询问",
    "反馈",
    "认为",
    "表示",
    *"的了和与及并在是对将把为被也但",
)
# Negation words: allowed only when the source negates something.
_NEGATION_EN = ("not", "no", "does", "doesn't", "don't")
_NEGATION_ZH = ("不", "没")
_NEGATION = re.compile(
    r"\b(?:not|no|never|nothing|nobody|none|without|cannot)\b|n't|[不没别无未]", re.IGNORECASE
)
_PUNCTUATION = (".", ",", ";", ":", "(", ")", "-", "'s", "/", "，", "。", "、", "；", "：")


class SmolLm2Refiner:
    """Encoder stage 2 with SmolLM2-135M-Instruct (``method = "model"``).

    ``runtime`` loads ``model_dir_or_url`` + ``config["file"]`` on first use; ``tokenizer``
    has ``encode(text, add_special_tokens=False)``, ``decode(ids)`` and ``id_to_token``;
    ``config`` and ``generation`` are the model folder's config.json and generation.json.
    Every output passes ``guard`` (by default a :class:`Guard` that knows the prompt, so
    copies of it are caught) before it is returned. Refinements run one at a time.
    ``max_prefixes`` bounds the cached prompt prefixes (each ~8-12 MB of KV cache).
    """

    method = "model"

    def __init__(
        self,
        runtime: InferenceRuntime,
        model_dir_or_url: str | os.PathLike[str],
        tokenizer: Any,
        *,
        guard: Guard | None = None,
        config: Mapping[str, Any],
        generation: Mapping[str, Any],
        style: PromptStyle = DEFAULT_STYLE,
        max_prefixes: int = 6,
    ) -> None:
        self.runtime = runtime
        self.location = os.fspath(model_dir_or_url)
        self.tokenizer = tokenizer
        self.config = dict(config)
        self.generation = dict(generation)
        self.style = style
        self.spec = CausalLmSpec.from_config(self.config)
        self.model_url = _join(self.location, str(self.config.get("file", "model.onnx")))
        examples = (*style.examples_en, *style.examples_zh)
        prompt_texts = [style.system_en, style.system_zh]
        prompt_texts += [f"{e.text} {e.summary}" for e in examples]
        self.guard = guard if guard is not None else Guard(prompt_texts=prompt_texts)
        self.stop_ids = tuple(int(i) for i in self.generation.get("stop_token_ids", (0, 2)))
        self.prefill_chunk = int(self.generation.get("prefill_chunk_tokens", 16))
        self.max_prefixes = max(1, max_prefixes)
        self.stats = RefinerStats()
        self.load_ms: float | None = None
        self._session: InferenceSession | None = None
        self._prefixes: OrderedDict[tuple[bool, str], KvCache] = OrderedDict()
        self._framing_ids: dict[tuple[bool, bool], frozenset[int]] = {}
        self._token_bytes: Callable[[int], bytes] | None = None
        self._lock: asyncio.Lock | None = None

    def __repr__(self) -> str:
        return f"SmolLm2Refiner({self.style.name}, {self.runtime.name}, {self.model_url!r})"

    # -- model and tokens ----------------------------------------------------------------

    async def load(self) -> InferenceSession:
        """Load the model session once (timed in ``load_ms``)."""
        if self._session is None:
            t0 = time.perf_counter()
            self._session = await self.runtime.load(self.model_url)
            self.load_ms = (time.perf_counter() - t0) * 1000
        return self._session

    def encode(self, text: str) -> list[int]:
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        return [int(i) for i in getattr(ids, "ids", ids)]

    def decode(self, ids: Sequence[int]) -> str:
        return str(self.tokenizer.decode(list(ids)))

    # -- prompt ----------------------------------------------------------------------------

    def prefix_text(self, zh: bool, type: str = "message") -> str:
        """The fixed part of the prompt: the system message and the worked examples."""
        parts = [_turn("system", self.style.system(zh))]
        for example in self.style.examples(zh, type):
            parts.append(_turn("user", self._user_turn(example.text, zh)))
            parts.append(_turn("assistant", example.summary))
        return "".join(parts)

    def request_text(self, text: str, summary: str, *, type: str, zh: bool) -> str:
        """The variable part: the user turn and the opening of the assistant turn."""
        shown = summary if self.style.source == "stage1" and summary.strip() else text
        ids = self.encode(shown)
        if len(ids) > self.style.max_source_tokens:
            shown = self.decode(ids[: self.style.max_source_tokens])
        return _turn("user", self._user_turn(shown, zh)) + f"{IM_START}assistant\n"

    def _user_turn(self, shown: str, zh: bool) -> str:
        return (self.style.user_zh if zh else self.style.user_en).format(text=shown.strip())

    def prompt(self, text: str, summary: str, *, type: str = "message") -> str:
        """The whole prompt of one refinement, first prime included (for inspection)."""
        zh = is_chinese(text)
        prime = self.style.primes_for(zh, type)[0]
        request = self.request_text(text, summary, type=type, zh=zh)
        return self.prefix_text(zh, type) + request + prime

    async def _prefix(self, zh: bool, type: str) -> KvCache:
        """The KV cache of :meth:`prefix_text`, computed once per (language, type)."""
        key = (zh, type if self.style.per_type else "")
        cache = self._prefixes.get(key)
        if cache is None:
            session = await self.load()
            ids = self.encode(self.prefix_text(zh, type))
            cache, _ = await prefill(session, self.spec, ids, chunk=self.prefill_chunk)
            self._prefixes[key] = cache
            while len(self._prefixes) > self.max_prefixes:
                self._prefixes.popitem(last=False)
        self._prefixes.move_to_end(key)
        return cache

    async def warm_up(self) -> float:
        """Load the model and compute every prompt prefix now; returns the time in ms."""
        t0 = time.perf_counter()
        await self.load()
        for zh in (False, True):
            for type in self.style.types:
                await self._prefix(zh, type)
        return (time.perf_counter() - t0) * 1000

    # -- constraints -----------------------------------------------------------------------

    def allowed_ids(self, text: str, zh: bool) -> frozenset[int]:
        """Tokens the model may write: the source's (its words with and without a leading
        space, capitalised, lightly inflected), framing words (negations only if the
        source negates) and punctuation."""
        ids: set[int] = set(self.encode(text))
        for word in set(re.findall(r"[A-Za-z][A-Za-z'-]*|\d", text)):
            forms = {word, word.lower(), word.capitalize()}
            if word.isalpha() and len(word) > 2:
                low = word.lower()
                forms |= {low + "s", low + "ed", low + "d", low + "ing", low[:-1] + "ied"}
            for form in forms:
                ids.update(self.encode(form))
                ids.update(self.encode(" " + form))
        negates = _NEGATION.search(text) is not None
        key = (zh, negates)
        if key not in self._framing_ids:
            framing = _FRAMING_ZH if zh else _FRAMING_EN
            if negates:
                framing = (*framing, *(_NEGATION_ZH if zh else _NEGATION_EN))
            extra: set[int] = set()
            for word in (*framing, *_PUNCTUATION):
                extra.update(self.encode(word))
                extra.update(self.encode(" " + word))
            self._framing_ids[key] = frozenset(extra)
        return frozenset(ids | self._framing_ids[key])

    def char_filter(self, text: str, *, masked: bool) -> HanFilter:
        """A filter keeping every Han character written inside the source's and the
        framing words'; ``masked``: the tokens are restricted by :meth:`allowed_ids` too."""
        if self._token_bytes is None:
            self._token_bytes = token_bytes_of(self.tokenizer)
        words = [text, *_FRAMING_ZH]
        if _NEGATION.search(text):
            words += _NEGATION_ZH
        chars = set(HAN_CHAR.findall("".join(words)))
        if not masked:
            return HanFilter(self._token_bytes, chars)
        partials = set()
        for word in words:
            data = b""
            for token in self.encode(word):
                data += self._token_bytes(token)
                partials.add(incomplete_tail(data))
        partials.discard(b"")
        return HanFilter(self._token_bytes, chars, partials)

    # -- refinement ------------------------------------------------------------------------

    async def propose(self, text: str, summary: str, *, type: str = "message") -> Refinement:
        """Run the model and the guard on one memory (never raises for bad output)."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            return await self._propose(text, summary, type)

    async def _propose(self, text: str, summary: str, type: str) -> Refinement:
        t0 = time.perf_counter()
        zh = is_chinese(text)
        language = "zh" if zh else "en"
        style = self.style
        if not text.strip() or type not in style.types:
            self.stats.skipped += 1
            return Refinement("", Verdict(False, ("skipped",), ""), None, language, 0.0)
        session = await self.load()
        prefix = await self._prefix(zh, type)
        config = GenerationConfig(
            max_new_tokens=style.max_new_tokens_zh if zh else style.max_new_tokens_en,
            stop_ids=self.stop_ids,
            prefill_chunk=self.prefill_chunk,
            no_repeat_ngram=style.no_repeat_ngram,
            allowed_ids=self.allowed_ids(text, zh) if style.constrain == "tokens" else None,
            min_new_tokens=1,
            stop_after_ids=self._stop_after(zh),
        )
        token_filter = None
        if zh and style.constrain != "none":
            token_filter = self.char_filter(text, masked=style.constrain == "tokens")
        request = self.encode(self.request_text(text, summary, type=type, zh=zh))
        primes = style.primes_for(zh, type)
        if primes != ("",):  # every candidate shares the request: prefill it once
            prefix, _ = await prefill(
                session, self.spec, request, chunk=self.prefill_chunk, cache=prefix
            )
        attempts: list[Verdict] = []
        raw, gen = "", None
        for prime in primes:
            gen = await generate(
                session,
                self.spec,
                self.encode(prime) if prime else request,
                config,
                decode=self.decode,
                prefix=prefix,
                token_filter=token_filter,
            )
            raw = prime + gen.text
            if gen.stop_reason != "stop":
                verdict = Verdict(False, (f"unfinished: {gen.stop_reason}",), raw.strip())
            elif gen.mean_logprob < style.min_mean_logprob:
                reason = f"low_confidence: mean log-probability {gen.mean_logprob:.2f}"
                verdict = Verdict(False, (reason,), clean_candidate(raw))
            else:
                verdict = self.guard.check(text, raw, stage1=summary)
            attempts.append(verdict)
            if verdict.accepted:
                break
        ms = (time.perf_counter() - t0) * 1000
        refinement = Refinement(raw, attempts[-1], gen, language, ms, attempts)
        self.stats.record(refinement)
        return refinement

    def _stop_after(self, zh: bool) -> tuple[int, ...]:
        if not zh or not self.style.stop_after_zh:
            return ()
        ids = self.encode(self.style.stop_after_zh)
        return tuple(ids) if len(ids) == 1 else ()

    async def refine(self, text: str, summary: str, *, type: str = "message") -> str | None:
        """The model's summary of ``text`` if the guard accepts it, else None."""
        return (await self.propose(text, summary, type=type)).text

    def with_style(self, style: PromptStyle) -> SmolLm2Refiner:
        """A refiner sharing this one's runtime, session and tokenizer, with another prompt
        style (its own prefixes and stats)."""
        other = SmolLm2Refiner(
            self.runtime,
            self.location,
            self.tokenizer,
            config=self.config,
            generation=self.generation,
            style=style,
            max_prefixes=self.max_prefixes,
        )
        other._session, other.load_ms = self._session, self.load_ms
        return other


# --- loading ---------------------------------------------------------------------------


def _join(location: str, name: str) -> str:
    if "://" in location:
        return urljoin(location if location.endswith("/") else location + "/", name)
    return os.path.join(location, name)


def find_smollm2_dir() -> Path | None:
    """``<models>/smollm2`` with a model.onnx, found as :mod:`pymemory.models.local` says
    (``$PYMEMORY_MODELS``, a checkout's ``.cache/models``, the user's models folder)."""
    from ..models.local import find_model_dir

    return find_model_dir("smollm2")


async def _read(runtime: Any, location: str) -> bytes:
    reader = getattr(runtime, "read_bytes", None)
    if reader is not None:
        return bytes(await reader(location))
    return Path(location).read_bytes()


async def load_smollm2_refiner(
    runtime: InferenceRuntime | None = None,
    model_dir: str | os.PathLike[str] | None = None,
    *,
    guard: Guard | None = None,
    style: PromptStyle = DEFAULT_STYLE,
    intra_op_threads: int | None = None,
    preload: bool = True,
) -> SmolLm2Refiner:
    """A ready :class:`SmolLm2Refiner`.

    In CPython the defaults do: ``runtime`` is a new ``OrtRuntime`` and ``model_dir`` is
    found by :func:`find_smollm2_dir` (SummarizerUnavailableError if it is not built). In
    the browser pass the ``OrtWebRuntime`` and the model folder's URL. config.json,
    generation.json and tokenizer.json are read through the runtime (``read_bytes``, when
    it has one); the session is created now unless ``preload`` is false.
    """
    if runtime is None:
        from ..models.ort import OrtRuntime

        runtime = OrtRuntime(intra_op_threads=intra_op_threads)
    if model_dir is None:
        found = find_smollm2_dir()
        if found is None:
            from ..models.local import missing_model_message

            raise SummarizerUnavailableError(missing_model_message("smollm2", "SmolLM2 summarizer"))
        model_dir = found
    location = os.fspath(model_dir)
    from ..models.tokenizers import load_tokenizer

    config = json.loads(await _read(runtime, _join(location, "config.json")))
    generation = json.loads(await _read(runtime, _join(location, "generation.json")))
    tokenizer = load_tokenizer(json.loads(await _read(runtime, _join(location, "tokenizer.json"))))
    refiner = SmolLm2Refiner(
        runtime, location, tokenizer, guard=guard, config=config, generation=generation, style=style
    )
    if preload:
        await refiner.load()
    return refiner
