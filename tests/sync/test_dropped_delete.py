"""An encrypted store's deletes cannot be dropped unnoticed: each device's sealed
deletion manifest lists the item tombstones it pushed, and a device that finds one the hub
no longer serves (an older revision written back, the delete document deleted) refuses
the round before writing anything it pulled (issue 27)."""

from __future__ import annotations

import httpx
import pytest

from pymemory import Memory
from pymemory.errors import SyncIntegrityError
from pymemory.storage import EncryptedKv, MapKv
from pymemory.sync import sync_store

PASS = "correct horse battery"


async def open_enc(inner: MapKv) -> EncryptedKv:
    return await EncryptedKv.open(inner, passphrase=PASS, iterations=1000)


async def data(kv: MapKv) -> dict[str, bytes]:
    return {k: v for k, v in await kv.scan("") if not k.startswith("sync:")}


async def test_a_withheld_tombstone_is_refused(hub: str) -> None:
    a = await Memory.open(await open_enc(MapKv()))
    doomed = await a.add("to be forgotten", scope="s")
    kept = await a.add("stays", scope="s")
    await a.sync(hub)
    b_inner = MapKv()
    await sync_store(b_inner, hub)
    b = await Memory.open(await open_enc(b_inner))
    await b.sync(hub)
    url = f"{hub}/k:mem:{doomed.id}"
    async with httpx.AsyncClient() as client:
        live = (await client.get(url)).json()
        await a.delete(doomed.id)
        await a.sync(hub)
        tomb = (await client.get(url)).json()
        assert tomb.get("del") is True
        manifests = (await client.get(f'{hub}/_all_docs?startkey="m:"&endkey="m:\ufff0"')).json()
        assert len(manifests["rows"]) == 1  # a's, sealed
        # 1. the hub writes the older (live, genuinely sealed) revision back over the delete
        back = {**live, "_rev": tomb["_rev"]}
        assert (await client.put(url, json=back)).status_code == 201
        before = await data(b_inner)
        with pytest.raises(SyncIntegrityError, match="withholds the deletion"):
            await b.sync(hub)
        assert await data(b_inner) == before  # nothing pulled was written
        assert (await b.get(doomed.id)).content == "to be forgotten"
        # 2. the hub deletes the delete document (CouchDB-level), so the feed skips it
        cur = (await client.get(url)).json()
        assert (await client.delete(url, params={"rev": cur["_rev"]})).status_code == 200
        with pytest.raises(SyncIntegrityError, match="withholds the deletion"):
            await b.sync(hub)
        assert await data(b_inner) == before
        # the hub repaired: the tombstone is served again and the round goes through
        repaired = {k: v for k, v in tomb.items() if k != "_rev"}
        assert (await client.put(url, json=repaired)).status_code == 201
    await b.sync(hub)
    assert [i.id for i in await b.list()] == [kept.id]
    await b.sync(hub)  # the manifest is checked; nothing owed any more
    await a.close()
    await b.close()


async def test_a_dropped_or_replayed_manifest_is_refused(hub: str) -> None:
    a = await Memory.open(await open_enc(MapKv()))
    one = await a.add("one", scope="s")
    two = await a.add("two", scope="s")
    await a.sync(hub)
    b_inner = MapKv()
    await sync_store(b_inner, hub)
    b = await Memory.open(await open_enc(b_inner))
    await a.delete(one.id)
    await a.sync(hub)
    await b.sync(hub)  # b checks a's manifest
    mid = f"{hub}/m:" + (await a.kv.inner.get("sync:device")).decode().split('"')[3]
    async with httpx.AsyncClient() as client:
        old = (await client.get(mid)).json()
        await a.delete(two.id)
        await a.sync(hub)
        await b.sync(hub)
        assert await b.list() == []
        now = (await client.get(mid)).json()
        assert (await client.put(mid, json={**old, "_rev": now["_rev"]})).status_code == 201
        with pytest.raises(SyncIntegrityError, match="older deletion manifest"):
            await b.sync(hub)
        cur = (await client.get(mid)).json()
        assert (await client.delete(mid, params={"rev": cur["_rev"]})).status_code == 200
        with pytest.raises(SyncIntegrityError, match="dropped device"):
            await b.sync(hub)
    await a.close()
    await b.close()
