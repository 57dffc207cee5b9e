"""Encrypted stores sync sealed bytes only: the hub never sees a canary; a replayed older
record and a value moved between keys are refused; a second device opens with the
passphrase after its first sync; plain and encrypted stores never mix."""

from __future__ import annotations

import base64
import json

import httpx
import pytest

from pymemory import Memory
from pymemory.errors import SchemaError, SyncIntegrityError, WrongKeyError
from pymemory.storage import EncryptedKv, MapKv
from pymemory.sync import sync_store

PASS = "correct horse battery"
CANARY = "zebra-canary-7781"


async def open_enc(inner: MapKv | None = None, passphrase: str = PASS) -> EncryptedKv:
    return await EncryptedKv.open(inner or MapKv(), passphrase=passphrase, iterations=1000)


async def data(kv: MapKv) -> dict[str, bytes]:
    return {k: v for k, v in await kv.scan("") if not k.startswith("sync:")}


async def hub_text(hub: str) -> str:
    async with httpx.AsyncClient() as client:
        docs = (await client.get(f"{hub}/_all_docs?include_docs=true")).json()
        feed = (await client.get(f"{hub}/_changes?include_docs=true&since=0")).json()
    return json.dumps(docs) + json.dumps(feed)


async def test_canary_never_reaches_the_hub_and_second_device_unlocks(hub: str) -> None:
    a = await Memory.open(await open_enc())
    item = await a.add(f"My locker code is {CANARY}.", scope="user", tags=[CANARY])
    await a.sync(hub)
    text = await hub_text(hub)
    assert CANARY not in text
    assert CANARY.encode() not in base64.b64decode(
        json.loads(text.split("}{")[0] + "}")["rows"][-1]["doc"].get("v", "") or b""
    )
    fresh = MapKv()  # a new device: pulls before it has the key
    first = await sync_store(fresh, hub)
    assert first.pulled >= 2 and first.pushed == 0
    with pytest.raises(WrongKeyError):
        await open_enc(fresh, "wrong passphrase")
    b = await Memory.open(await open_enc(fresh))
    assert (await b.get(item.id)).content == item.content
    await b.add("second device note", scope="user")
    await b.sync(hub)
    await a.sync(hub)
    assert len(await a.list()) == 2
    assert CANARY not in await hub_text(hub)
    await a.close()
    await b.close()


async def test_replay_and_swap_are_refused(hub: str) -> None:
    a_kv = await open_enc()
    a = await Memory.open(a_kv)
    one = await a.add("first value", scope="s")
    two = await a.add("second value", scope="s")
    await a.sync(hub)
    b_inner = MapKv()
    await sync_store(b_inner, hub)
    b = await Memory.open(await open_enc(b_inner))
    async with httpx.AsyncClient() as client:
        old = (await client.get(f"{hub}/k:mem:{one.id}")).json()
        await a.update(one.id, content="first value, edited")
        await a.sync(hub)
        await b.sync(hub)
        before = await data(b_inner)
        # the hub puts back the older revision's body (a replay)
        now = (await client.get(f"{hub}/k:mem:{one.id}")).json()
        replay = {**old, "_rev": now["_rev"]}
        assert (await client.put(f"{hub}/k:mem:{one.id}", json=replay)).status_code == 201
        with pytest.raises(SyncIntegrityError, match="older revision"):
            await b.sync(hub)
        assert await data(b_inner) == before  # nothing of the batch written
        cur = (await client.get(f"{hub}/k:mem:{one.id}")).json()
        await client.put(f"{hub}/k:mem:{one.id}", json={**now, "_rev": cur["_rev"]})
        await b.sync(hub)  # the hub repaired: the round goes through
        # the hub moves one key's record (value and seal) onto another key (a swap)
        src = (await client.get(f"{hub}/k:mem:{one.id}")).json()
        dst = (await client.get(f"{hub}/k:mem:{two.id}")).json()
        moved = {**src, "_id": dst["_id"], "_rev": dst["_rev"], "h": src["h"] + 1}
        assert (await client.put(f"{hub}/k:mem:{two.id}", json=moved)).status_code == 201
        with pytest.raises(SyncIntegrityError):
            await b.sync(hub)
        assert (await b.get(two.id)).content == two.content
    await a.close()
    await b.close()


async def test_plain_and_encrypted_never_mix(hub: str) -> None:
    plain = await Memory.open(MapKv())
    await plain.add("plain note", scope="s")
    await plain.sync(hub)
    enc = await Memory.open(await open_enc())
    with pytest.raises(SchemaError):
        await enc.sync(hub)
    other_hub = hub + "-enc"
    await enc.sync(other_hub)
    with pytest.raises(SchemaError):
        await plain.sync(other_hub)
    stranger = await Memory.open(await open_enc(passphrase="another one"))
    await stranger.add("under another key", scope="s")
    with pytest.raises(SchemaError):
        await stranger.sync(other_hub)
    for m in (plain, enc, stranger):
        await m.close()
