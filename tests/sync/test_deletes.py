"""Deletes, clear, forget by scope and TTL expiry travel as content-free tombstones; a
device offline the whole time does not bring anything back; a delete beats an edit."""

from __future__ import annotations

import json

import httpx

from pymemory import Memory
from pymemory.storage import MapKv


async def test_forgets_propagate_and_offline_device_does_not_resurrect(hub: str) -> None:
    clock = [1_790_000_000_000]
    a = await Memory.open(MapKv(), clock=lambda: clock[0])
    b = await Memory.open(MapKv(), clock=lambda: clock[0])
    offline = await Memory.open(MapKv(), clock=lambda: clock[0])
    doomed = await a.add("secret canary-delete in the delete test", scope="gone")
    cleared = await a.add("cleared by tag", scope="keep", tags=["tmp"])
    ttl = await a.add("expires soon", scope="keep", ttl_ms=1000)
    kept = await a.add("stays everywhere", scope="keep")
    for m in (a, b, offline):
        await m.sync(hub)
    await offline.update(doomed.id, content="edited while offline")  # loses to the delete
    await b.clear(scope="gone")
    await b.clear(tags=["tmp"])
    clock[0] += 5000
    assert await b.sweep() == 1
    await b.sync(hub)
    await a.sync(hub)
    assert [i.id for i in await a.list()] == [kept.id]
    for _ in range(2):
        await offline.sync(hub)
        await a.sync(hub)
        await b.sync(hub)
    for m in (a, b, offline):
        assert [i.id for i in await m.list()] == [kept.id], "nothing deleted comes back"
        assert await m.kv.get(f"mem:{doomed.id}") is None
    async with httpx.AsyncClient() as client:
        feed = (await client.get(f"{hub}/_all_docs?include_docs=true")).json()
    docs = {row["id"]: row["doc"] for row in feed["rows"]}
    for gone in (doomed, cleared, ttl):
        tomb = docs[f"k:mem:{gone.id}"]
        assert tomb.get("del") is True and "v" not in tomb  # no content in a tombstone
    assert "canary-delete" not in json.dumps(docs)
    for m in (a, b, offline):
        await m.close()
