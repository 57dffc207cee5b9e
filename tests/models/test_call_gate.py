"""Background inference gives way to the user's calls (models/runtime.py: CallGate).

The structure, not a timing: the real SmolLM2 refiner and the real MiniLM embedder work
in the background while calls come in, and no model step of theirs may start while a
call is in flight; the work still finishes (nothing starves).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from pymemory import Memory
from pymemory.encoder.smollm2 import load_smollm2_refiner
from pymemory.models.runtime import CALLS, CallGate, background, urgent, yield_to_calls

MODELS = Path(__file__).resolve().parents[2] / ".cache" / "models" / "smollm2"


async def test_a_step_waits_for_the_call_and_runs_when_it_ends():
    gate = CallGate(max_wait_s=5)
    await gate.turn()  # no call: no wait
    with gate.call():
        step = asyncio.ensure_future(gate.turn())
        await asyncio.sleep(0.05)
        assert not step.done()
    await asyncio.wait_for(step, 1)
    assert gate.stats() == {"steps": 2, "waited": 1, "overlapped": 0}


async def test_a_step_waits_for_a_quiet_time_after_the_last_call():
    gate = CallGate(max_wait_s=5, quiet_s=0.2)
    with gate.call():
        pass
    step = asyncio.ensure_future(gate.turn())
    await asyncio.sleep(0.05)
    with gate.call():  # the next call of a burst: the quiet time starts again after it
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.1)
    assert not step.done()
    await asyncio.wait_for(step, 1)
    await gate.turn()  # quiet since: no wait
    assert gate.stats() == {"steps": 2, "waited": 1, "overlapped": 0}


async def test_nothing_starves_under_a_call_that_never_ends():
    gate = CallGate(max_wait_s=0.05)
    with gate.call():
        for _ in range(3):
            await asyncio.wait_for(gate.turn(), 1)
    assert gate.stats() == {"steps": 3, "waited": 3, "overlapped": 3}


async def test_only_background_inference_waits():
    with CALLS.call():
        before = CALLS.stats()["steps"]
        await asyncio.wait_for(yield_to_calls(), 0.2)  # the caller's own inference
        with background(), urgent():  # the query embedding is urgent, never paused
            await asyncio.wait_for(yield_to_calls(), 0.2)
        assert CALLS.stats()["steps"] == before


class Recorder:
    """Wraps a model session: counts runs, and those that started during a call."""

    def __init__(self, session):
        self.session = session
        self.input_names = session.input_names
        self.output_names = session.output_names
        self.runs = 0
        self.during_calls = 0

    async def run(self, feeds, output_names=None):
        self.runs += 1
        self.during_calls += CALLS.in_flight > 0
        return await self.session.run(feeds, output_names)


async def calls_meanwhile(memory: Memory, busy: asyncio.Future, texts: list[str]) -> int:
    """The user's calls, one after another, until the background work is done."""
    n = 0
    while not busy.done():
        await memory.add(texts[n % len(texts)], content=f"note {n}")
        await memory.retrieve("deploy key rotation")
        await memory.list(limit=3)
        n += 1
        await asyncio.sleep(0.1)  # the user reads (longer than the gate's quiet time)
    return n


async def test_the_summarizer_generates_no_token_while_a_call_is_in_flight(tmp_path):
    if not (MODELS / "model.onnx").is_file():
        pytest.fail(f"{MODELS} lacks the model: run python3 build.py setup", pytrace=False)
    refiner = await load_smollm2_refiner(model_dir=MODELS)
    await refiner.warm_up()
    recorder = Recorder(await refiner.load())
    refiner._session = recorder
    # On SQLite a call awaits its store (a thread), so the refiner could run meanwhile.
    memory = await Memory.open(tmp_path / "memory.db", refiner=refiner)
    try:
        await memory.add_many(
            {"text": f"hmm so the deploy key for staging rotates every friday, note {i}, ok?"}
            for i in range(4)
        )
        before = dict(CALLS.stats())
        busy = asyncio.ensure_future(memory.refine_idle())
        calls = await calls_meanwhile(memory, busy, ["lunch order for friday"])
        await busy
    finally:
        await memory.close()
    assert calls > 0 and recorder.runs > 0 and refiner.stats.calls == 4  # all refined
    assert recorder.during_calls == 0
    assert CALLS.stats()["waited"] > before["waited"]  # it did give way


async def test_the_embedder_embeds_no_batch_while_a_call_is_in_flight(
    minilm, monkeypatch, tmp_path
):
    recorder = Recorder(await minilm.load())

    async def load():  # as the real one once loaded: no await between the gate and run()
        return recorder

    monkeypatch.setattr(minilm, "load", load)
    monkeypatch.setattr(minilm, "max_batch_tokens", 256)  # many small background batches
    memory = await Memory.open(tmp_path / "memory.db")
    try:
        await memory.add_many({"text": f"the staging deploy key note {i}"} for i in range(400))
        await memory.attach_embedder(minilm)
        busy = asyncio.ensure_future(memory.embed_idle())
        calls = await calls_meanwhile(memory, busy, ["lunch order for friday"])
        await busy
        assert len(memory.vectors) == len(await memory.list())  # every item embedded
    finally:
        await memory.close()
    background_runs = recorder.runs - calls  # each retrieve embeds its query, urgently
    assert calls > 0 and background_runs > 1
    assert recorder.during_calls == calls  # only the calls' own query embeddings


async def test_background_batches_are_sized_to_a_short_step(minilm, monkeypatch):
    from pymemory.models.minilm import BACKGROUND_MIN_TOKENS, BACKGROUND_STEP_MS

    monkeypatch.setattr(minilm, "slot_ms", None)
    assert minilm.background_budget() == BACKGROUND_MIN_TOKENS  # nothing timed yet
    with background():  # background batches are timed; a call's own are not
        await minilm.embed([f"the staging deploy key note {i}" for i in range(40)])
    assert minilm.slot_ms is not None and minilm.slot_ms > 0
    minilm.slot_ms = BACKGROUND_STEP_MS / 1000  # fast: about 1000 slots fit the step
    assert minilm.background_budget() == min(1000, minilm.max_batch_tokens)
    minilm.slot_ms = BACKGROUND_STEP_MS  # slow: the floor
    assert minilm.background_budget() == BACKGROUND_MIN_TOKENS
    before = minilm.slot_ms
    await minilm.embed(["a call's own embedding"])  # not background: not timed
    assert minilm.slot_ms == before
