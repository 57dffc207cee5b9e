import asyncio
import json

import pytest
from helpers import T0, Clock

from pymemory.agent.assembler import MessageAssembler
from pymemory.agent.checkpoint import (
    Checkpoint,
    Checkpointer,
    InMemoryCheckpointer,
    KvCheckpointer,
    checkpoint_key,
)
from pymemory.errors import NotFoundError, ValidationError
from pymemory.storage import MapKv, SqliteKv


@pytest.fixture(params=["memory", "kv-map", "kv-sqlite"])
async def cp(request, clock, tmp_path):
    if request.param == "memory":
        yield InMemoryCheckpointer(clock=clock)
    elif request.param == "kv-map":
        yield KvCheckpointer(MapKv(), clock=clock)
    else:
        kv = await SqliteKv.open(tmp_path / "ckpt.db")
        yield KvCheckpointer(kv, clock=clock)
        await kv.close()


# --- one suite for both implementations -----------------------------------------------


async def test_is_a_checkpointer(cp):
    assert isinstance(cp, Checkpointer)


async def test_save_numbers_from_one_and_latest(cp, clock):
    assert await cp.latest("run-1") is None
    a = await cp.save("run-1", {"step": 1}, metadata={"note": "start"})
    clock.advance(5)
    b = await cp.save("run-1", {"step": 2})
    assert a == Checkpoint("run-1", 1, T0, {"step": 1}, {"note": "start"})
    assert (b.seq, b.created_at_ms, b.metadata) == (2, T0 + 5, {})
    assert await cp.latest("run-1") == b
    assert await cp.load("run-1", 1) == a


async def test_list_is_time_ordered_past_padding_boundaries(cp, clock):
    for i in range(12):
        await cp.save("r", {"i": i})
        clock.advance(1)
    listed = await cp.list("r")
    assert [c.seq for c in listed] == list(range(1, 13))
    assert [c.state["i"] for c in listed] == list(range(12))
    assert [c.created_at_ms for c in listed] == sorted(c.created_at_ms for c in listed)
    assert (await cp.latest("r")).seq == 12
    assert await cp.list("other") == []


async def test_runs_are_separate(cp):
    await cp.save("a", {"x": 1})
    await cp.save("a-b", {"x": 2})
    await cp.save("a", {"x": 3})
    await cp.save("a.b", {"x": 4})
    assert [c.state["x"] for c in await cp.list("a")] == [1, 3]
    assert (await cp.latest("a-b")).seq == 1
    assert await cp.runs() == ["a-b", "a.b", "a"]  # KV key order: "-" < "." < ":"
    assert await cp.delete_run("a") == 2
    assert await cp.latest("a") is None and await cp.list("a") == []
    assert (await cp.latest("a-b")).state == {"x": 2}
    assert sorted(await cp.runs()) == ["a-b", "a.b"]
    assert await cp.delete_run("a") == 0
    assert (await cp.save("a", {"x": 5})).seq == 1  # a deleted run starts over


async def test_load_missing(cp):
    await cp.save("r", {})
    with pytest.raises(NotFoundError):
        await cp.load("r", 2)
    with pytest.raises(NotFoundError):
        await cp.load("nope", 1)


async def test_state_is_copied_in_and_out(cp):
    state = {"messages": [{"role": "user", "content": "hi"}], "pair": (1, 2)}
    saved = await cp.save("r", state)
    state["messages"].append("later")
    saved.state["messages"].clear()
    loaded = await cp.latest("r")
    assert loaded.state == {"messages": [{"role": "user", "content": "hi"}], "pair": [1, 2]}
    loaded.state["x"] = 1
    assert "x" not in (await cp.latest("r")).state


@pytest.mark.parametrize(
    ("args", "kw"),
    [
        (("", {}), {}),
        (("a:b", {}), {}),
        (("a b", {}), {}),
        (("x" * 129, {}), {}),
        ((5, {}), {}),
        (("r", [1, 2]), {}),
        (("r", "state"), {}),
        (("r", {"x": float("nan")}), {}),
        (("r", {"x": object()}), {}),
        (("r", {1: "x"}), {}),
        (("r", {}), {"metadata": "m"}),
        (("r", {"big": "x" * (4 * 1024 * 1024)}), {}),
    ],
)
async def test_bad_saves_change_nothing(cp, args, kw):
    await cp.save("r", {"ok": True})
    with pytest.raises(ValidationError):
        await cp.save(*args, **kw)
    assert [c.state for c in await cp.list("r")] == [{"ok": True}]
    assert await cp.runs() == ["r"]


@pytest.mark.parametrize("seq", [0, -1, True, "1", 10**12])
async def test_bad_seq(cp, seq):
    with pytest.raises(ValidationError):
        await cp.load("r", seq)


async def test_concurrent_saves_get_distinct_seqs(cp):
    saved = await asyncio.gather(*(cp.save("r", {"i": i}) for i in range(10)))
    assert sorted(c.seq for c in saved) == list(range(1, 11))
    assert len(await cp.list("r")) == 10


async def test_bad_clock_is_refused(cp):
    cp._clock = lambda: 1.5
    with pytest.raises(ValidationError, match="clock"):
        await cp.save("r", {})
    assert await cp.latest("r") is None


# --- KvCheckpointer specifics ---------------------------------------------------------


async def test_key_layout(clock):
    kv = MapKv()
    cp = KvCheckpointer(kv, clock=clock)
    await cp.save("run-7", {"a": 1})
    await cp.save("run-7", {"a": 2})
    assert [k for k, _ in await kv.scan("ckpt:")] == [
        "ckpt:run-7:000000000001",
        "ckpt:run-7:000000000002",
        "ckpt:run-7:head",
    ]
    assert json.loads(await kv.get("ckpt:run-7:head")) == {"seq": 2}
    assert json.loads(await kv.get("ckpt:run-7:000000000002")) == {
        "run_id": "run-7",
        "seq": 2,
        "created_at_ms": T0,
        "state": {"a": 2},
        "metadata": {},
    }
    assert checkpoint_key("r", 42) == "ckpt:r:000000000042"
    assert await kv.get("meta:schema") is not None


async def test_save_is_one_atomic_batch(clock):
    class CountingKv(MapKv):
        def __init__(self):
            super().__init__()
            self.batches = []

        async def put_many(self, items, *, deletes=()):
            self.batches.append(sorted(k for k, _ in items))
            await super().put_many(items, deletes=deletes)

    kv = CountingKv()
    cp = KvCheckpointer(kv, clock=clock)
    await cp.save("r", {})
    await cp.save("r", {})
    assert kv.batches[-2:] == [
        ["ckpt:r:000000000001", "ckpt:r:head"],
        ["ckpt:r:000000000002", "ckpt:r:head"],
    ]


async def test_missing_or_stale_head_falls_back_to_a_scan(clock):
    kv = MapKv()
    cp = KvCheckpointer(kv, clock=clock)
    for i in range(3):
        await cp.save("r", {"i": i})
    await kv.delete_many(["ckpt:r:head"])
    assert (await cp.latest("r")).state == {"i": 2}
    await kv.put_many([("ckpt:r:head", b'{"seq": 9}')])
    assert (await cp.latest("r")).seq == 3
    assert (await cp.save("r", {"i": 3})).seq == 4


async def test_corrupt_checkpoint_is_reported(clock):
    kv = MapKv()
    cp = KvCheckpointer(kv, clock=clock)
    await cp.save("r", {})
    await kv.put_many([("ckpt:r:000000000001", b'{"run_id": "r"}')])
    with pytest.raises(ValidationError, match="unreadable"):
        await cp.latest("r")


async def test_pause_and_resume_across_a_restart(tmp_path):
    """An agent loop checkpoints each step, the process dies, a new one resumes."""
    path = tmp_path / "agent.db"

    async def run_steps(asm: MessageAssembler, state: dict, upto: int, cp: KvCheckpointer):
        while state["next_step"] < upto:
            i = state["next_step"]
            asm.add_step([{"role": "assistant", "content": f"step {i}"}])
            state = {"next_step": i + 1, "assembler": asm.export_state()}
            await cp.save("run-42", state, metadata={"status": "running"})
        return state

    # First process: three steps, then a pause awaiting human approval.
    clock = Clock()
    kv = await SqliteKv.open(path)
    cp = KvCheckpointer(kv, clock=clock)
    asm = MessageAssembler("You are an agent.")
    asm.set_scratchpad("waiting for approval")
    state = await run_steps(asm, {"next_step": 0}, 3, cp)
    state["assembler"] = asm.export_state()
    await cp.save("run-42", state, metadata={"status": "paused"})
    await kv.close()  # the process ends

    # Second process: a new store object and a new checkpointer over the same file.
    clock.advance(60_000)
    kv2 = await SqliteKv.open(path)
    cp2 = KvCheckpointer(kv2, clock=clock)
    assert await cp2.runs() == ["run-42"]
    resume = await cp2.latest("run-42")
    assert resume.seq == 4 and resume.metadata == {"status": "paused"}
    asm2 = MessageAssembler("You are an agent.")
    asm2.load_state(resume.state["assembler"])
    assert asm2.scratchpad == "waiting for approval"
    asm2.set_scratchpad(None)
    final = await run_steps(asm2, resume.state, 5, cp2)
    assert final["next_step"] == 5
    history = await cp2.list("run-42")
    assert [c.seq for c in history] == [1, 2, 3, 4, 5, 6]
    assert history[-1].created_at_ms == history[0].created_at_ms + 60_000

    # The resumed run equals one that never stopped.
    straight = MessageAssembler("You are an agent.")
    for i in range(5):
        straight.add_step([{"role": "assistant", "content": f"step {i}"}])
    assert asm2.build() == straight.build()
    await kv2.close()
