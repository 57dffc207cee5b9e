"""Encoder stage 2 with the real SmolLM2 model: prompt, determinism, guard, Memory wiring.

These tests load ``.cache/models/smollm2`` and fail (never skip) when it is not built:
``python3 build.py setup`` builds it.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from pathlib import Path

import pytest

from pymemory import Memory
from pymemory.encoder import RuleEncoder
from pymemory.encoder.guard import Guard
from pymemory.encoder.smollm2 import (
    DEFAULT_STYLE,
    HanFilter,
    SmolLm2Refiner,
    load_smollm2_refiner,
)
from pymemory.storage import MapKv

MODELS = Path(__file__).resolve().parents[2] / ".cache" / "models" / "smollm2"
RULES = RuleEncoder()

# Inputs the production prompt refines and the guard accepts (from the dev set's runs),
# plus some it rejects; the tests only rely on "at least one is accepted".
INPUTS = [
    (
        "Can you convert the Python script from yesterday so it exports CSV instead of JSON?",
        "message",
    ),
    ("I'm vegetarian and I don't eat mushrooms either.", "user_preference"),
    ("The translation is fine but the tone is too casual for a legal document.", "user_feedback"),
    ("请把这段英文翻译成中文，语气正式一点，专有名词保留英文。", "message"),
    ("其实我不太喜欢现在的配色，太亮了，能不能换成深色主题？", "message"),
    (
        "hmm the numbers in the Q3 sheet don't add up, revenue says 1.2M but the rows sum to 1.05M",
        "message",
    ),
]


@pytest.fixture(scope="module")
def refiner() -> SmolLm2Refiner:
    missing = [
        f
        for f in ("model.onnx", "config.json", "generation.json", "tokenizer.json")
        if not (MODELS / f).is_file()
    ]
    if missing:
        pytest.fail(f"{MODELS} lacks {missing}: run python3 build.py setup", pytrace=False)
    return asyncio.run(load_smollm2_refiner(model_dir=MODELS))


def fresh(refiner: SmolLm2Refiner) -> SmolLm2Refiner:
    """A refiner sharing the loaded session, with its own stats."""
    return refiner.with_style(refiner.style)


def stage1(text: str, type: str) -> str:
    return RULES.summarize(text, type=type)


def test_prompt_is_chatml_built_by_hand(refiner):
    text = "Can you convert the Python script from yesterday so it exports CSV instead of JSON?"
    prompt = refiner.prompt(text, stage1(text, "message"), type="message")
    assert prompt.startswith("<|im_start|>system\n" + DEFAULT_STYLE.system_en + "<|im_end|>\n")
    assert prompt.endswith(
        "<|im_start|>user\n" + stage1(text, "message") + "<|im_end|>\n<|im_start|>assistant\nUser"
    )
    assert prompt.count("<|im_start|>assistant\n") == 3  # two worked examples, then ours
    ids = refiner.encode(prompt)
    assert ids[0] == refiner.generation["im_start_id"]  # no BOS in front
    assert ids.count(refiner.generation["im_start_id"]) == 7
    zh = "其实我不太喜欢现在的配色，太亮了，能不能换成深色主题？"
    prompt_zh = refiner.prompt(zh, stage1(zh, "message"), type="message")
    assert "请用 15~25 字概括以下内容的核心意图，不要添加任何解释，输出纯中文。" in prompt_zh
    assert prompt_zh.endswith("<|im_start|>assistant\n用户")


async def test_same_input_twice_gives_the_same_text(refiner):
    for text, type in (INPUTS[0], INPUTS[4]):
        first = await refiner.propose(text, stage1(text, type), type=type)
        second = await refiner.propose(text, stage1(text, type), type=type)
        assert first.raw == second.raw
        assert first.verdict == second.verdict
        assert first.generation.ids == second.generation.ids


async def test_machine_text_types_keep_stage_one_without_a_model_call(refiner):
    mine = fresh(refiner)
    text = '{"status": "ok", "city": "Beijing", "temperature_c": 23}'
    assert await mine.refine(text, stage1(text, "tool_result"), type="tool_result") is None
    assert await mine.refine("Backup finished.", "Backup finished.", type="system_event") is None
    assert (mine.stats.calls, mine.stats.skipped) == (0, 2)


async def test_every_accepted_output_passes_the_guard(refiner):
    mine = fresh(refiner)
    examples = [*DEFAULT_STYLE.examples_en, *DEFAULT_STYLE.examples_zh]
    prompt_texts = [DEFAULT_STYLE.system_en, DEFAULT_STYLE.system_zh]
    prompt_texts += [f"{e.text} {e.summary}" for e in examples]
    independent = Guard(prompt_texts=prompt_texts)
    accepted = 0
    for text, type in INPUTS:
        summary = stage1(text, type)
        result = await mine.propose(text, summary, type=type)
        if result.text is None:
            assert result.verdict.reasons  # a rejection always says why
            continue
        accepted += 1
        assert 0 < len(result.text) <= 200
        assert independent.check(text, result.text, stage1=summary).accepted
        assert "<|" not in result.text
    assert accepted >= 1
    stats = mine.stats.as_dict()
    assert stats["calls"] == len(INPUTS)
    assert stats["accepted"] == accepted and stats["rejected"] == len(INPUTS) - accepted
    assert sum(stats["reasons"].values()) >= stats["rejected"]


async def test_add_returns_before_the_model_runs_and_an_accepted_refinement_is_stored(refiner):
    mine = fresh(refiner)
    started: list[str] = []

    class Probe:
        method = mine.method

        async def refine(self, text, summary, *, type="message"):
            started.append(text)
            return await mine.refine(text, summary, type=type)

    expected = {}
    for text, type in INPUTS:
        expected[text] = await fresh(refiner).refine(text, stage1(text, type), type=type)
    assert any(expected.values())
    mem = await Memory.open(MapKv(), refiner=Probe())
    try:
        items = []
        for text, type in INPUTS:
            item = await mem.add(text, type=type)
            assert started == []  # add() returned before the model was even asked
            assert item.content_method in ("rules", "verbatim")
            items.append(item)
        await mem.refine_idle()
        assert len(started) == len(INPUTS)
        for item in items:
            stored = await mem.get(item.id)
            if expected[item.text] is None:
                assert stored.content == item.content
                assert stored.content_method == item.content_method
            else:
                assert stored.content == expected[item.text]
                assert stored.content_method == "model"
                assert stored.text == item.text
    finally:
        await mem.close()


async def test_add_latency_with_the_refiner_running_stays_close(refiner):
    """Memory.add() with the refiner working in the background vs without it, measured in
    the same test; only the ratio is asserted."""
    texts = [f"{text} (note {i})" for i in range(4) for text, _ in INPUTS]

    async def add_times(mem: Memory) -> list[float]:
        times = []
        for text in texts:
            t0 = time.perf_counter()
            await mem.add(text)
            times.append(time.perf_counter() - t0)
            await asyncio.sleep(0.01)  # let the background refiner run between adds
        return times

    plain = await Memory.open(MapKv())
    try:
        without = await add_times(plain)
    finally:
        await plain.close()
    mine = fresh(refiner)
    await mine.warm_up()  # prompt prefixes cached: the model generates while we add
    busy = await Memory.open(MapKv(), refiner=mine)
    try:
        with_refiner = await add_times(busy)
        # The model really was at work meanwhile: a refinement finished or is in flight.
        assert mine.stats.calls >= 1 or busy._work.refine.current is not None
    finally:
        await busy.close()
    ratio = statistics.median(with_refiner) / statistics.median(without)
    print(
        f"add() median {statistics.median(without) * 1e3:.3f} ms without the refiner, "
        f"{statistics.median(with_refiner) * 1e3:.3f} ms with it running ({ratio:.2f}x)"
    )
    assert ratio < 5, f"add() {ratio:.1f}x slower with the refiner running"


def test_han_filter_keeps_characters_inside_the_source(refiner):
    text = "我偏好表格形式的输出"
    han = refiner.char_filter(text, masked=False)
    enc = refiner.encode
    assert han([], enc("表格")[0])
    assert all(han(enc("表格")[:i], t) for i, t in enumerate(enc("表格")))
    outside = enc("文字")  # neither character is in the source
    assert not all(han(outside[:i], t) for i, t in enumerate(outside))
    stop = refiner.stop_ids[-1]
    partial = enc("表")[:1]
    if len(enc("表")) > 1:  # a character split over two tokens: no stop in the middle
        assert not han(partial, stop)
    assert han(enc("表格"), stop)
    assert isinstance(han, HanFilter)


def test_allowed_tokens_cover_the_source_and_the_framing(refiner):
    text = "Can you convert the script so it exports CSV?"
    allowed = refiner.allowed_ids(text, zh=False)
    assert set(refiner.encode(text)) <= allowed
    assert set(refiner.encode(" converted")) <= allowed  # an inflection of a source word
    assert set(refiner.encode("User wants")) <= allowed
    assert not set(refiner.encode(" not")) <= allowed  # the source negates nothing
    assert set(refiner.encode(" not")) <= refiner.allowed_ids("I don't want it.", zh=False)
