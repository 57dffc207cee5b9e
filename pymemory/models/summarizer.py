"""Encoder stage 2: SmolLM2-135M-Instruct refines the stage-1 summary, behind a guard.

    refiner = await load_smollm2_refiner()              # CPython: .cache/models/smollm2
    mem = await Memory.open(refiner=refiner)            # refines new items in the background
    await refiner.refine(text, stage1_summary, type="message")   # -> str | None

How one refinement runs (the same in CPython and Pyodide, model calls through the runtime):

1. the language is Chinese if the source is (:func:`~pymemory.models.guard.is_chinese`);
2. the prompt is built by hand in ChatML: a system message with the instruction (the
   Chinese one is 请用 15~25 字概括以下内容的核心意图...) and a few worked examples as chat
   turns; this prefix is fixed per language, so its KV cache is computed once and reused;
   then a user turn with the stage-1 summary (already cut to the sentences that matter)
   and the assistant turn, primed with the summary's first word ("User" / 用户) for text
   people wrote;
3. greedy decoding (:mod:`~pymemory.models.generate`), optionally restricted to the tokens
   of the source, the framing words and punctuation;
4. the output must end with the end-of-turn token (else "unfinished") and pass the
   :class:`~pymemory.models.guard.Guard`; otherwise ``refine`` returns None and stage 1
   stays. :attr:`SmolLm2Refiner.stats` counts the outcomes and the rejection reasons.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from ..inference.runtime import InferenceRuntime, InferenceSession
from .generate import CausalLmSpec, Generation, GenerationConfig, KvCache, generate, prefill
from .guard import Guard, Verdict, is_chinese

__all__ = [
    "DEFAULT_STYLE",
    "PromptStyle",
    "Refinement",
    "RefinerStats",
    "SmolLm2Refiner",
    "find_smollm2_dir",
    "load_smollm2_refiner",
]

HUMAN_TYPES = ("message", "user_feedback", "user_preference")
IM_START, IM_END = "<|im_start|>", "<|im_end|>"


@dataclass(frozen=True)
class Example:
    """A worked example shown to the model: a memory of ``type`` and its summary."""

    type: str
    text: str
    summary: str


@dataclass(frozen=True)
class PromptStyle:
    """Everything that shapes the prompt and the decoding; one per evaluated variant."""

    name: str
    system_en: str
    system_zh: str
    examples_en: tuple[Example, ...] = ()
    examples_zh: tuple[Example, ...] = ()
    source: str = "stage1"
    """What the user turn shows: ``"stage1"`` (the stage-1 summary) or ``"text"``."""
    primes_en: tuple[tuple[str, tuple[str, ...]], ...] = (
        ("message", ("User", "User wants", "User asks")),
        ("user_feedback", ("User says", "User")),
        ("user_preference", ("User", "User wants", "User prefers")),
    )
    primes_zh: tuple[tuple[str, tuple[str, ...]], ...] = (
        ("message", ("用户", "用户想", "用户询问")),
        ("user_feedback", ("用户反馈", "用户认为")),
        ("user_preference", ("用户", "用户希望", "用户偏好")),
    )
    """Per type, the words the answer is started with ("primed"); each is one candidate."""
    max_candidates: int = 1
    """How many primes to try, in order, until the guard accepts one (0: no priming)."""
    constrain: str = "none"
    """``"none"``; ``"chars"``: every Han character written must be in the source (or a
    framing word); ``"tokens"``: that, and only tokens of the source, framing words and
    punctuation may be written."""
    per_type: bool = True
    """Show only the examples of the memory's type (one cached prefix per type)."""
    types: tuple[str, ...] = HUMAN_TYPES
    """The memory types refined; others keep stage 1 without a model call (machine text
    such as tool results is summarised well by the rules, and the model only garbles it)."""
    user_en: str = "{text}"
    user_zh: str = "{text}"
    """How the user turn shows the text (``{text}``), e.g. with an instruction."""
    tag_type: bool = False
    """Show the memory's type in the user turn ("[tool_result] ...")."""
    max_source_tokens: int = 256
    max_new_tokens_en: int = 48
    max_new_tokens_zh: int = 64
    no_repeat_ngram: int = 0

    def system(self, zh: bool) -> str:
        return self.system_zh if zh else self.system_en

    def examples(self, zh: bool, type: str) -> tuple[Example, ...]:
        """The examples shown for a memory of ``type``: those of that type if
        ``per_type`` (all of them when there are none), else all."""
        every = self.examples_zh if zh else self.examples_en
        if not self.per_type:
            return every
        return tuple(e for e in every if e.type == type) or every

    def primes_for(self, zh: bool, type: str) -> tuple[str, ...]:
        """The primes to try for a memory of ``type`` ("" alone: no priming)."""
        table = dict(self.primes_zh if zh else self.primes_en)
        primes = table.get(type, ())[: self.max_candidates]
        return primes or ("",)


_EXAMPLES_EN = (
    Example(
        "message",
        "Hi, could you move my meeting with Dana from Monday to Wednesday afternoon? Monday "
        "is packed.",
        "User wants the meeting with Dana moved from Monday to Wednesday afternoon.",
    ),
    Example(
        "message",
        "I've been thinking about the blog redesign. Let's keep the current fonts but make "
        "the header a darker green.",
        "User wants to keep the current blog fonts but make the header a darker green.",
    ),
    Example(
        "user_feedback",
        "Great answer, but the second code sample has a typo in the import line.",
        "User says the answer is great but the second code sample has a typo in the import "
        "line.",
    ),
    Example(
        "user_feedback",
        "This recipe was way too salty, I'd use half the soy sauce next time.",
        "User says the recipe was too salty and would use half the soy sauce next time.",
    ),
    Example(
        "user_preference",
        "Please always reply in British English and keep answers under five sentences.",
        "User wants replies in British English and answers under five sentences.",
    ),
    Example(
        "user_preference",
        "I'm a morning person, so schedule my workouts before 8am.",
        "User is a morning person and wants workouts scheduled before 8am.",
    ),
)
_EXAMPLES_ZH = (
    Example(
        "message",
        "周五的分享会能不能改到下周一下午？我周五要请假。",
        "用户想把周五的分享会改到下周一下午",
    ),
    Example(
        "message",
        "我打算下个月开始学吉他，想找一个周末上课的老师。",
        "用户下个月开始学吉他，想找周末上课的老师",
    ),
    Example(
        "user_feedback",
        "这个回答挺好的，不过第二段代码的导入语句有个拼写错误。",
        "用户认为回答挺好，但第二段代码的导入语句有拼写错误",
    ),
    Example(
        "user_feedback",
        "菜谱太咸了，下次酱油减半。",
        "用户反馈菜谱太咸，下次酱油减半",
    ),
    Example(
        "user_preference",
        "以后给我发的报告都用 PDF 格式，别用 Word。",
        "用户希望报告都用 PDF 格式，不用 Word",
    ),
    Example(
        "user_preference",
        "我习惯早上锻炼，健身尽量安排在八点以前。",
        "用户习惯早上锻炼，希望健身安排在八点以前",
    ),
)

DEFAULT_STYLE = PromptStyle(
    name="fewshot-stage1-prime",
    system_en=(
        "Summarize the user's text in one short sentence. Keep names, numbers and dates. "
        "Do not add anything that is not in the text."
    ),
    system_zh="请用 15~25 字概括以下内容的核心意图，不要添加任何解释，输出纯中文。",
    examples_en=_EXAMPLES_EN,
    examples_zh=_EXAMPLES_ZH,
)


@dataclass
class Refinement:
    """One refinement attempt, for inspection and evaluation."""

    raw: str
    """What the model wrote (with the prime), before cleaning."""
    verdict: Verdict
    generation: Generation | None
    language: str
    ms: float
    attempts: list[Verdict] = field(default_factory=list)
    """The guard's verdict on each candidate tried (the last one is ``verdict``)."""

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
    """Model runs (skipped memories not counted)."""
    skipped: int = 0
    """Memories of a type that is not refined, or blank."""
    candidates: int = 0
    """Model outputs judged (several per call when more than one prime is tried)."""
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


# Words a summary may frame the source with; their tokens are allowed when constraining.
_FRAMING_EN = tuple(
    "User user The the a an and or but to of in on for with from at by is are was were "
    "wants asks needs says notes their they it its that this about whether".split()
)
_FRAMING_ZH = ("用户", "要求", "希望", "想", "询问", "反馈", "认为", "表示") + tuple(
    "的了和与及并在是对将把为被也但"
)
_NEGATION_EN = ("not", "no", "does", "doesn't", "don't")
_NEGATION_ZH = ("不", "没")
_NEGATION = re.compile(
    r"\b(?:not|no|never|nothing|nobody|none|without|cannot)\b|n't|[不没别无未]", re.IGNORECASE
)
_PUNCTUATION = (".", ",", ";", ":", "(", ")", "-", "'s", "/", "，", "。", "、", "；", "：")
_HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def _token_bytes_of(tokenizer: Any) -> Callable[[int], bytes]:
    """``id -> the bytes it stands for`` for a byte-level BPE tokenizer."""
    from ..tokenizers.bytelevel_bpe import unicode_to_bytes

    table = unicode_to_bytes()
    cache: dict[int, bytes] = {}

    def token_bytes(token: int) -> bytes:
        found = cache.get(token)
        if found is None:
            piece = tokenizer.id_to_token(token) or ""
            if all(c in table for c in piece):
                found = bytes(table[c] for c in piece)
            else:
                found = piece.encode("utf-8")
            cache[token] = found
        return found

    return token_bytes


class HanFilter:
    """A :data:`~pymemory.models.generate.TokenFilter`: every Han character the output
    completes must be in ``chars``, and a trailing partial UTF-8 sequence must be able to
    become one of them (byte-level BPE splits a character over several tokens)."""

    def __init__(self, token_bytes: Callable[[int], bytes], chars: Iterable[str]) -> None:
        self.token_bytes = token_bytes
        self.chars = frozenset(chars)
        self.prefixes = frozenset(
            c.encode()[:k] for c in self.chars for k in range(1, len(c.encode()))
        )

    def __call__(self, output: Sequence[int], token: int) -> bool:
        pending = _pending(b"".join(self.token_bytes(t) for t in output[-4:]))
        return self._valid(pending + self.token_bytes(token))

    def _valid(self, data: bytes) -> bool:
        i = 0
        while i < len(data):
            lead = data[i]
            if lead >> 6 == 2 or lead >= 0xF8:
                return False  # a continuation byte where a character should start
            size = 1 if lead < 0x80 else 2 if lead >> 5 == 6 else 3 if lead >> 4 == 14 else 4
            if i + size > len(data):
                return data[i:] in self.prefixes
            try:
                char = data[i : i + size].decode("utf-8")
            except UnicodeDecodeError:
                return False
            if _HAN.fullmatch(char) and char not in self.chars:
                return False
            i += size
        return True


def _pending(data: bytes) -> bytes:
    """The incomplete UTF-8 character at the end of ``data`` (b"" if it ends cleanly)."""
    for back in range(1, min(4, len(data)) + 1):
        lead = data[-back]
        if lead >> 6 != 2:  # a lead byte (or ASCII)
            size = 1 if lead < 0x80 else 2 if lead >> 5 == 6 else 3 if lead >> 4 == 14 else 4
            return data[-back:] if size > back else b""
    return b""


class SmolLm2Refiner:
    """Encoder stage 2 with SmolLM2-135M-Instruct (``method = "model"``).

    ``runtime`` loads ``model_dir_or_url`` + ``config["file"]`` on first use; ``tokenizer``
    has ``encode(text, add_special_tokens=False)`` and ``decode(ids)``. ``config`` and
    ``generation`` are the folder's config.json and generation.json. Every output passes
    ``guard`` (a default :class:`Guard` that also knows the prompt) before it is returned.
    Refinements run one at a time (``Memory`` queues them anyway).
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
    ) -> None:
        self.runtime = runtime
        self.location = os.fspath(model_dir_or_url)
        self.tokenizer = tokenizer
        self.config = dict(config)
        self.generation = dict(generation)
        self.style = style
        self.spec = CausalLmSpec.from_config(self.config)
        self.model_url = _join(self.location, str(self.config.get("file", "model.onnx")))
        prompt_texts = [style.system_en, style.system_zh]
        examples = (*style.examples_en, *style.examples_zh)
        prompt_texts += [e.text + " " + e.summary for e in examples]
        self.guard = guard if guard is not None else Guard(prompt_texts=prompt_texts)
        self.stop_ids = tuple(int(i) for i in self.generation.get("stop_token_ids", (0, 2)))
        self.prefill_chunk = int(self.generation.get("prefill_chunk_tokens", 16))
        self.stats = RefinerStats()
        self.load_ms: float | None = None
        self._session: InferenceSession | None = None
        self._prefixes: dict[tuple[bool, str], KvCache] = {}
        self._lock: asyncio.Lock | None = None
        self._framing_ids: dict[tuple[bool, bool], frozenset[int]] = {}
        self._token_bytes: Callable[[int], bytes] | None = None

    def __repr__(self) -> str:
        return f"SmolLm2Refiner({self.style.name}, {self.runtime.name}, {self.model_url!r})"

    # -- model ------------------------------------------------------------------------------

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

    # -- prompt -----------------------------------------------------------------------------

    def prefix_text(self, zh: bool, type: str = "message") -> str:
        """The fixed part of the prompt: system message and worked examples."""
        parts = [_turn("system", self.style.system(zh))]
        for example in self.style.examples(zh, type):
            parts.append(_turn("user", self._user_turn(example.text, example.type, zh)))
            parts.append(_turn("assistant", example.summary))
        return "".join(parts)

    def request_text(self, text: str, summary: str, *, type: str, zh: bool) -> str:
        """The variable part: the user turn and the opening of the assistant turn."""
        shown = summary if self.style.source == "stage1" and summary.strip() else text
        ids = self.encode(shown)
        if len(ids) > self.style.max_source_tokens:
            shown = self.decode(ids[: self.style.max_source_tokens])
        return _turn("user", self._user_turn(shown, type, zh)) + f"{IM_START}assistant\n"

    def _user_turn(self, shown: str, type: str, zh: bool) -> str:
        shown = f"[{type}] {shown.strip()}" if self.style.tag_type else shown.strip()
        return (self.style.user_zh if zh else self.style.user_en).format(text=shown)

    def prompt(self, text: str, summary: str, *, type: str = "message") -> str:
        """The whole prompt for one refinement (for inspection)."""
        zh = is_chinese(text)
        prime = self.style.primes_for(zh, type)[0]
        return self.prefix_text(zh, type) + self.request_text(text, summary, type=type, zh=zh) + prime

    async def _prefix(self, zh: bool, type: str) -> KvCache:
        """The KV cache of :meth:`prefix_text`, computed once per (language, type)."""
        key = (zh, type if self.style.per_type else "")
        cache = self._prefixes.get(key)
        if cache is None:
            session = await self.load()
            ids = self.encode(self.prefix_text(zh, type))
            cache, _ = await prefill(session, self.spec, ids, chunk=self.prefill_chunk)
            self._prefixes[key] = cache
        return cache

    def allowed_ids(self, text: str, zh: bool) -> frozenset[int]:
        """Tokens the model may write when constrained: the source's (words with and
        without a leading space, capitalised, lightly inflected), framing words and
        punctuation."""
        ids: set[int] = set(self.encode(text))
        words = set(re.findall(r"[A-Za-z][A-Za-z'-]*|\d", text))
        for word in words:
            forms = {word, word.lower(), word.capitalize()}
            if word.isalpha() and len(word) > 2:
                low = word.lower()
                forms |= {low + "s", low + "ed", low + "d", low + "ing", low[:-1] + "ied"}
            for form in forms:
                ids.update(self.encode(form))
                ids.update(self.encode(" " + form))
        negations = _NEGATION.search(text) is not None
        key = (zh, negations)
        if key not in self._framing_ids:
            extra: set[int] = set()
            framing = _FRAMING_ZH if zh else _FRAMING_EN
            if negations:
                framing = framing + (_NEGATION_ZH if zh else _NEGATION_EN)
            for word in (*framing, *_PUNCTUATION):
                extra.update(self.encode(word))
                extra.update(self.encode(" " + word))
            self._framing_ids[key] = frozenset(extra)
        return frozenset(ids | self._framing_ids[key])

    def char_filter(self, text: str) -> HanFilter:
        """The token filter keeping every Han character written inside the source's (and
        the framing words')."""
        if self._token_bytes is None:
            self._token_bytes = _token_bytes_of(self.tokenizer)
        chars = set(_HAN.findall(text)) | set("".join(_FRAMING_ZH))
        if _NEGATION.search(text):
            chars |= set("".join(_NEGATION_ZH))
        return HanFilter(self._token_bytes, chars)

    # -- refinement -------------------------------------------------------------------------

    async def propose(self, text: str, summary: str, *, type: str = "message") -> Refinement:
        """Run the model and the guard on one memory; never raises for bad output."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            t0 = time.perf_counter()
            zh = is_chinese(text)
            language = "zh" if zh else "en"
            if not text.strip() or type not in self.style.types:
                self.stats.skipped += 1
                verdict = Verdict(False, ("skipped",), "")
                return Refinement("", verdict, None, language, 0.0)
            session = await self.load()
            prefix = await self._prefix(zh, type)
            request = self.request_text(text, summary, type=type, zh=zh)
            style = self.style
            config = GenerationConfig(
                max_new_tokens=style.max_new_tokens_zh if zh else style.max_new_tokens_en,
                stop_ids=self.stop_ids,
                prefill_chunk=self.prefill_chunk,
                no_repeat_ngram=style.no_repeat_ngram,
                allowed_ids=self.allowed_ids(text, zh) if style.constrain == "tokens" else None,
                min_new_tokens=1,
            )
            token_filter = self.char_filter(text) if zh and style.constrain != "none" else None
            primes = style.primes_for(zh, type)
            request_ids = self.encode(request)
            if primes != ("",):  # the request is shared by every candidate: prefill it once
                prefix, _ = await prefill(
                    session, self.spec, request_ids, chunk=self.prefill_chunk, cache=prefix
                )
            attempts: list[Verdict] = []
            for prime in primes:
                gen = await generate(
                    session,
                    self.spec,
                    self.encode(prime) if prime else request_ids,
                    config,
                    decode=self.decode,
                    prefix=prefix,
                    token_filter=token_filter,
                )
                raw = prime + gen.text
                if gen.stop_reason != "stop":
                    verdict = Verdict(False, (f"unfinished: {gen.stop_reason}",), raw.strip())
                else:
                    verdict = self.guard.check(text, raw, stage1=summary)
                attempts.append(verdict)
                if verdict.accepted:
                    break
            ms = (time.perf_counter() - t0) * 1000
            refinement = Refinement(raw, verdict, gen, language, ms, attempts)
            self.stats.record(refinement)
            return refinement

    async def refine(self, text: str, summary: str, *, type: str = "message") -> str | None:
        """The model's summary of ``text`` if the guard accepts it, else None."""
        return (await self.propose(text, summary, type=type)).text

    def with_style(self, style: PromptStyle) -> SmolLm2Refiner:
        """A refiner sharing this one's runtime, model session and tokenizer, with another
        prompt style (and fresh stats)."""
        other = SmolLm2Refiner(
            self.runtime,
            self.location,
            self.tokenizer,
            config=self.config,
            generation=self.generation,
            style=style,
        )
        other._session = self._session
        other.load_ms = self.load_ms
        return other


# --- loading ---------------------------------------------------------------------------


def _join(location: str, name: str) -> str:
    if "://" in location:
        return urljoin(location if location.endswith("/") else location + "/", name)
    return os.path.join(location, name)


def find_smollm2_dir() -> Path | None:
    """``<models>/smollm2`` with a model.onnx: ``$PYMEMORY_MODELS``, then ``.cache/models``
    in the current folder or above it, then beside this checkout."""
    from .embedder import find_model_dir

    return find_model_dir("smollm2")


async def _read(runtime: Any, location: str) -> bytes:
    reader = getattr(runtime, "read_bytes", None)
    if reader is not None:
        return bytes(await reader(location))
    return await asyncio.to_thread(Path(location).read_bytes)


class SummarizerUnavailableError(RuntimeError):
    """The SmolLM2 model files are not there (run ``python3 build.py setup``)."""


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
    found by :func:`find_smollm2_dir`. In the browser pass the ``OrtWebRuntime`` and the
    model folder's URL. config.json, generation.json and tokenizer.json are read through
    the runtime (``read_bytes``, when it has one); the session is created now unless
    ``preload`` is false.
    """
    if runtime is None:
        from ..inference.ort import OrtRuntime

        runtime = OrtRuntime(intra_op_threads=intra_op_threads)
    if model_dir is None:
        found = find_smollm2_dir()
        if found is None:
            raise SummarizerUnavailableError(
                "the SmolLM2 model is not built: no .cache/models/smollm2/model.onnx found (run "
                "python3 build.py setup, or set PYMEMORY_MODELS to the models folder)"
            )
        model_dir = found
    location = os.fspath(model_dir)
    from ..tokenizers import load_tokenizer

    config = json.loads(await _read(runtime, _join(location, "config.json")))
    generation = json.loads(await _read(runtime, _join(location, "generation.json")))
    tokenizer = load_tokenizer(json.loads(await _read(runtime, _join(location, "tokenizer.json"))))
    refiner = SmolLm2Refiner(
        runtime,
        location,
        tokenizer,
        guard=guard,
        config=config,
        generation=generation,
        style=style,
    )
    if preload:
        await refiner.load()
    return refiner


__all__ += ["Example", "SummarizerUnavailableError"]
_ = replace  # dataclasses.replace is re-exported for building style variants
