"""stats()["sync"]["pending"] counts local commits waiting to be pushed, never records a
round pulled (issue 27)."""

from __future__ import annotations

from pymemory import Memory
from pymemory.storage import EncryptedKv, MapKv
from pymemory.sync import sync_store


async def test_pulled_records_are_not_pending(hub: str) -> None:
    a, b = await Memory.open(MapKv()), await Memory.open(MapKv())
    for text in ("one", "two", "three"):
        await a.add(text, scope="s")
    await a.sync(hub)
    await b.sync(hub)
    assert len(await b.list()) == 3
    assert (await b.stats())["sync"]["pending"] == 0
    await b.add("b's own", scope="s")
    assert (await b.stats())["sync"]["pending"] == 1
    await b.sync(hub)
    assert (await b.stats())["sync"]["pending"] == 0
    done = await a.sync(hub)
    assert done.pulled == 1 and (await a.stats())["sync"]["pending"] == 0
    await a.close()
    await b.close()


async def test_pulled_records_are_not_pending_encrypted(hub: str) -> None:
    a = await Memory.open(await EncryptedKv.open(MapKv(), passphrase="p", iterations=1000))
    await a.add("sealed", scope="s")
    await a.sync(hub)
    inner = MapKv()
    await sync_store(inner, hub)
    b = await Memory.open(await EncryptedKv.open(inner, passphrase="p", iterations=1000))
    await b.sync(hub)
    await a.add("another", scope="s")
    await a.sync(hub)
    assert (await b.sync(hub)).pulled == 1
    assert (await b.stats())["sync"]["pending"] == 0
    await a.close()
    await b.close()
