"""Replicas converge through the hub: byte-identical records after any order of syncs;
a repeated sync does nothing; pulled items show in the memory's view."""

from __future__ import annotations

import itertools

from pymemory import Memory
from pymemory.storage import MapKv
from pymemory.sync.records import travels


async def records(kv: MapKv) -> dict[str, bytes]:
    return {k: v for k, v in await kv.scan("") if travels(k)}


async def test_two_replicas_converge_and_repeat_is_a_no_op(hub: str) -> None:
    a_kv, b_kv = MapKv(), MapKv()
    a, b = await Memory.open(a_kv), await Memory.open(b_kv)
    x = await a.add("I live in Lisbon and prefer tea.", scope="user")
    y = await b.add("The project deadline is Friday.", scope="work")
    first = await a.sync(hub)
    assert first.pushed >= 1 and first.pulled == 0
    second = await b.sync(hub)
    assert second.pulled >= 1
    await a.sync(hub)
    assert {i.id for i in await b.list()} == {x.id, y.id}  # the view sees pulled items
    assert {i.id for i in await a.list()} == {x.id, y.id}
    assert await records(a_kv) == await records(b_kv)
    for memory in (a, b):
        again = await memory.sync(hub)
        assert (again.pushed, again.pulled, again.conflicts) == (0, 0, 0)
    await a.close()
    await b.close()


async def test_any_order_of_syncs_converges(hub_root: str) -> None:
    for n, order in enumerate(itertools.permutations("abc")):
        hub = f"{hub_root}/pm-order-{n}-{id(order)}"
        kvs = {name: MapKv() for name in "abc"}
        mems = {name: await Memory.open(kv) for name, kv in kvs.items()}
        shared = await mems["a"].add("shared note about the garden", scope="s")
        await mems["a"].sync(hub)
        for name in "bc":
            await mems[name].sync(hub)
        await mems["b"].update(shared.id, content="garden note edited on b")
        await mems["c"].update(shared.id, content="garden note edited on c")
        await mems["a"].add("only on a", scope="s")
        await mems["c"].delete((await mems["c"].add("short-lived", scope="s")).id)
        for _ in range(4):  # until a whole pass moves nothing
            moved = 0
            for name in order:
                done = await mems[name].sync(hub)
                moved += done.pushed + done.pulled
            if not moved:
                break
        assert not moved
        want = await records(kvs["a"])
        assert await records(kvs["b"]) == want and await records(kvs["c"]) == want
        contents = {(await m.get(shared.id)).content for m in mems.values()}
        assert len(contents) == 1
        for m in mems.values():
            await m.close()
