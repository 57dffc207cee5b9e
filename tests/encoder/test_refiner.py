"""Encoder stage 2 in Memory: background, one at a time, cancelled on delete, guarded."""

import asyncio

from pymemory import Memory
from pymemory.storage import MapKv


class ScriptedRefiner:
    """A collaborator standing in for the model: returns what the test tells it to."""

    method = "model"

    def __init__(self, outputs=None, delay=0.0, fail=False):
        self.outputs = outputs or {}
        self.delay = delay
        self.fail = fail
        self.seen: list[str] = []
        self.running = 0
        self.max_running = 0
        self.started = asyncio.Event()
        self.cancelled = 0

    async def refine(self, text, summary, *, type="message"):
        self.seen.append(text)
        self.running += 1
        self.max_running = max(self.max_running, self.running)
        self.started.set()
        try:
            await asyncio.sleep(self.delay)
            if self.fail:
                raise RuntimeError("model crashed")
            return self.outputs.get(text)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        finally:
            self.running -= 1


async def test_add_returns_before_refinement_and_content_is_replaced():
    refiner = ScriptedRefiner(
        {"Please book a table for two on Friday night": "Book table for two, Friday"}, delay=0.05
    )
    mem = await Memory.open(MapKv(), refiner=refiner)
    item = await mem.add("Please book a table for two on Friday night")
    assert item.content_method in ("rules", "verbatim")  # add() did not wait
    await mem.refine_idle()
    refined = await mem.get(item.id)
    assert refined.content == "Book table for two, Friday"
    assert refined.content_method == "model"
    assert refined.text == item.text
    assert (await mem.retrieve("table friday")).items[0].id == item.id
    await mem.close()


async def test_one_at_a_time_and_none_keeps_stage_one():
    refiner = ScriptedRefiner({}, delay=0.01)
    mem = await Memory.open(MapKv(), refiner=refiner)
    items = await mem.add_many([{"text": f"note {i}"} for i in range(5)])
    await mem.refine_idle()
    assert refiner.max_running == 1
    assert refiner.seen == [f"note {i}" for i in range(5)]
    assert [(await mem.get(i.id)).content_method for i in items] == ["verbatim"] * 5
    given = await mem.add("raw text here", content="my own summary")
    await mem.refine_idle()
    assert len(refiner.seen) == 5  # given content is never refined
    assert (await mem.get(given.id)).content == "my own summary"
    await mem.close()


async def test_delete_cancels_the_running_refinement():
    refiner = ScriptedRefiner({"slow one": "refined"}, delay=5)
    mem = await Memory.open(MapKv(), refiner=refiner)
    item = await mem.add("slow one")
    await asyncio.wait_for(refiner.started.wait(), 1)
    await mem.delete(item.id)
    await asyncio.wait_for(mem.refine_idle(), 1)
    assert refiner.cancelled == 1
    assert await mem.kv.get("mem:" + item.id) is None  # not resurrected
    await mem.close()


async def test_user_edit_wins_and_failures_are_logged_not_raised(caplog):
    refiner = ScriptedRefiner({"edit me please": "model text"}, delay=0.05)
    mem = await Memory.open(MapKv(), refiner=refiner)
    item = await mem.add("edit me please")
    await mem.update(item.id, content="user fixed it")
    await mem.refine_idle()
    assert (await mem.get(item.id)).content == "user fixed it"
    refiner.fail = True
    other = await mem.add("this one crashes the model")
    await mem.refine_idle()
    assert (await mem.get(other.id)).content_method == "verbatim"
    assert "background refinement" in caplog.text
    await mem.close()


async def test_invalid_refiner_output_is_rejected():
    refiner = ScriptedRefiner({"short input": "x" * 300})
    mem = await Memory.open(MapKv(), refiner=refiner)
    item = await mem.add("short input")
    await mem.refine_idle()
    assert (await mem.get(item.id)).content == "short input"
    await mem.close()


async def test_close_stops_a_running_refinement():
    refiner = ScriptedRefiner({"long job": "done"}, delay=10)
    mem = await Memory.open(MapKv(), refiner=refiner)
    await mem.add("long job")
    await asyncio.wait_for(refiner.started.wait(), 1)
    await asyncio.wait_for(mem.close(), 2)


async def test_listeners_hear_about_background_refinements():
    refiner = ScriptedRefiner({"tell me when done": "done summary"})
    mem = await Memory.open(MapKv(), refiner=refiner)
    heard = []
    mem.listeners.append(lambda kind, item_id: heard.append((kind, item_id)))
    mem.listeners.append(lambda kind, item_id: 1 / 0)  # a broken listener is only logged
    item = await mem.add("tell me when done")
    await mem.refine_idle()
    assert heard == [("refined", item.id)]
    await mem.close()
