"""The worker's ``sync`` method (what ``createAgentMemory({ sync })`` calls), in CPython
over MapKv with httpx: a round's result in its JS shape, a new encrypted device's first
pull (it must not make a key of its own), ``atOpen`` reporting an unreachable hub instead
of failing, live loops one per database and url, and bad arguments refused."""

from __future__ import annotations

import json

from pymemory import Memory
from pymemory.browser.rpc import RpcApi, Unlock
from pymemory.storage import EncryptedKv, MapKv
from pymemory.sync import sync_store

FAST = 1000
PASS = "correct horse battery"


def shared_api(stores: dict[str, MapKv]) -> RpcApi:
    """An RpcApi whose databases live in ``stores`` (each open a new handle on them)."""

    def handle(name: str) -> MapKv:
        db = stores.setdefault(name, MapKv())
        kv = MapKv()
        kv._data, kv._keys = db._data, db._keys
        return kv

    async def plain(name: str) -> MapKv:
        return handle(name)

    async def locked(name: str, unlock: Unlock) -> EncryptedKv:
        return await EncryptedKv.open(
            handle(name), passphrase=unlock.passphrase, iterations=unlock.iterations
        )

    api = RpcApi(plain, feedback_flush_s=3600)
    api.locked_kv_factory = locked
    return api


async def call(api: RpcApi, method: str, params: dict, key: dict | None = None) -> dict:
    return json.loads(await api.call("db", method, json.dumps(params), None, key))


async def test_a_round_through_the_api_and_a_plain_device(hub: str) -> None:
    api = shared_api({})
    try:
        added = await call(api, "addMemory", {"text": "Alice prefers green tea."})
        answer = await call(api, "sync", {"url": hub})
        assert answer["ok"], answer
        done = answer["result"]
        assert done["pushed"] >= 2 and done["pulled"] == 0 and done["bytesSent"] > 0
        assert set(done) >= {"conflicts", "checkpoint", "bytesReceived", "requests", "seconds"}
        other = await Memory.open(MapKv())
        await other.sync(hub)
        assert (await other.get(added["result"]["id"])).content == "Alice prefers green tea."
        await other.add("a note from the laptop", scope="user")
        await other.sync(hub)
        await other.close()
        again = (await call(api, "sync", {"url": hub}))["result"]
        assert again["pulled"] == 1 and again["pushed"] == 0
        stats = (await call(api, "stats", {}))["result"]
        assert stats["sync"]["lastSyncMs"] and stats["sync"]["lastRound"]["pulled"] == 1
    finally:
        await api.close_all()


async def test_a_new_encrypted_device_pulls_the_key_record_before_it_opens(hub: str) -> None:
    laptop = await Memory.open(await EncryptedKv.open(MapKv(), passphrase=PASS, iterations=FAST))
    item = await laptop.add("the locker code is 4711", scope="user")
    await laptop.sync(hub)
    api = shared_api({})
    key = {"id": "client-1", "passphrase": PASS, "iterations": FAST}
    try:
        answer = await call(api, "sync", {"url": hub, "atOpen": True}, key)
        assert answer["ok"] and "error" not in answer["result"], answer
        got = await call(api, "get", {"id": item.id}, key)
        assert got["result"]["text"] == "the locker code is 4711"
        await call(api, "addMemory", {"text": "from the browser"}, key)
        assert (await call(api, "sync", {"url": hub}, key))["result"]["pushed"] >= 1
        await laptop.sync(hub)
        assert len(await laptop.list()) == 2
    finally:
        await api.close_all()
        await laptop.close()


async def test_at_open_an_unreachable_hub_is_reported_and_a_new_encrypted_device_fails() -> None:
    dead = "http://127.0.0.1:9/memory"  # the discard port: nothing listens
    api = shared_api({})
    try:
        answer = await call(api, "sync", {"url": dead, "atOpen": True})
        assert answer["ok"] and answer["result"]["error"]["code"] == "sync_failed"
        assert (await call(api, "addMemory", {"text": "offline"}))["ok"]
        failed = await call(api, "sync", {"url": dead})
        assert failed["error"]["code"] == "sync_failed"
    finally:
        await api.close_all()
    stores: dict[str, MapKv] = {}
    api = shared_api(stores)
    key = {"id": "c", "passphrase": PASS, "iterations": FAST}
    try:
        answer = await call(api, "sync", {"url": dead, "atOpen": True}, key)
        assert answer["error"]["code"] == "sync_failed"
        assert not await stores["db"].scan("")  # no key of its own was made
    finally:
        await api.close_all()


async def test_live_loops_one_per_database_and_url_and_bad_arguments(hub: str) -> None:
    api = shared_api({})
    try:
        for _ in range(2):
            assert (await call(api, "sync", {"url": hub, "live": True}))["ok"]
        live = (await call(api, "stats", {}))["result"]["sync"]["live"]
        assert len(live) == 1 and live[0]["running"]
        for params, word in [
            ({}, "url"),
            ({"url": "ftp://h/db"}, "url"),
            ({"url": hub, "auth": ["a", "b"]}, "auth"),
            ({"url": hub, "live": "yes"}, "live"),
            ({"url": hub, "every": 5}, "every"),
        ]:
            answer = await call(api, "sync", params)
            assert answer["error"]["code"] == "invalid_input", params
            assert word in answer["error"]["message"], answer
        basic = await call(api, "sync", {"url": hub, "auth": {"username": "u", "password": "p"}})
        assert basic["error"]["code"] == "sync_failed", basic  # no such user on the hub
        assert "401" in basic["error"]["message"]
    finally:
        await api.close_all()


async def test_the_first_encrypted_device_on_an_empty_hub_makes_the_key(hub: str) -> None:
    api = shared_api({})
    key = {"id": "c", "passphrase": PASS, "iterations": FAST}
    try:
        first = await call(api, "sync", {"url": hub, "atOpen": True}, key)
        assert first["ok"] and first["result"].get("pushed", 0) >= 2, first  # key, schema
        await call(api, "addMemory", {"text": "first note"}, key)
        assert (await call(api, "sync", {"url": hub}, key))["result"]["pushed"] == 1
    finally:
        await api.close_all()
    fresh = MapKv()
    await sync_store(fresh, hub)
    second = await Memory.open(await EncryptedKv.open(fresh, passphrase=PASS))
    assert [m.content for m in await second.list()] == ["first note"]
    await second.close()
