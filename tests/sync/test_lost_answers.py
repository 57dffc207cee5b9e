"""Issue 37, failures 1-5, each against the real hub (pouchdb-server), plain and
encrypted: a push the hub took but whose answer was lost (dropped connection, a 500, a
truncated or short body) changes nothing of what a delete made afterwards means; a
deletion beats an archive; concurrent updates keep every version in history, in order;
a document deleted at the CouchDB level does not stop sync (the hub gets it back); a hub
trickling its answer is bounded by the request timeout."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator

import httpx
import pytest
from faultproxy import MODES, FaultProxy, Lose
from issue37 import device, export, quick, records, settle, shown

from pymemory import Memory, NotFoundError
from pymemory.errors import SyncError, SyncIntegrityError
from pymemory.sync import sync_store
from tools.sync_server import SyncServer

KINDS = [False, True]
KIND_IDS = ["plain", "encrypted"]


@pytest.fixture
def proxy(hub_root: str) -> Iterator[FaultProxy]:
    p = FaultProxy(hub_root).start()
    yield p
    p.stop()


def via(proxy: FaultProxy, hub: str) -> str:
    return proxy.url + "/" + hub.rsplit("/", 1)[1]


async def gone_everywhere(mems: list[Memory], item_id: str) -> None:
    for m in mems:
        with pytest.raises(NotFoundError):
            await m.get(item_id)
        assert item_id not in {a.id for a in await m.search_archive("", limit=100)}
        assert item_id not in {i.id for i in await m.list()}


# --- 1. a delete after a lost answer ---------------------------------------------------


@pytest.mark.parametrize("encrypted", KINDS, ids=KIND_IDS)
@pytest.mark.parametrize("mode", MODES)
async def test_a_delete_after_a_lost_answer_stays_deleted(
    hub: str, proxy: FaultProxy, mode: str, encrypted: bool
) -> None:
    url = via(proxy, hub)
    a = await device(hub, encrypted, first=True)
    kept = await a.add("The dentist is on Friday.", scope="s")
    doomed = await a.add("The old alarm code is 0000.", scope="s")
    proxy.lose = [Lose("POST", "/_bulk_docs", mode)]
    with pytest.raises(SyncError) as caught:
        await a.sync(url)
    assert caught.value.retryable
    assert proxy.spoiled and proxy.spoiled[0][2] == mode  # the hub took it; the answer lost
    async with httpx.AsyncClient() as client:
        assert (await client.get(f"{hub}/k:mem:{doomed.id}")).status_code == 200
    b = await device(hub, encrypted)
    await b.sync(url)  # b has the item from the hub
    assert (await b.get(doomed.id)).content == "The old alarm code is 0000."
    await a.delete(doomed.id)
    for m in (a, b, a, b):  # the next good rounds
        await m.sync(url)
    await gone_everywhere([a, b], doomed.id)
    for m in (a, b):
        assert [i.id for i in await m.list()] == [kept.id]
    assert await export(a) == await export(b)
    await a.close()
    await b.close()


@pytest.mark.parametrize("encrypted", KINDS, ids=KIND_IDS)
async def test_an_edit_after_a_lost_answer_goes_up_without_a_conflict(
    hub: str, proxy: FaultProxy, encrypted: bool
) -> None:
    """The path after a lost answer is the answered one: the next round finds its own
    write on the hub, records it as if the answer had come, and pushes what changed
    since over it; nothing counted as a conflict, every version in history."""
    url = via(proxy, hub)
    a = await device(hub, encrypted, first=True)
    item = await a.add("Lunch at noon.", scope="s")
    await a.sync(url)
    await a.update(item.id, content="Lunch at one.")
    proxy.lose = [Lose("POST", "/_bulk_docs", "drop")]
    with pytest.raises(SyncError):
        await a.sync(url)
    await a.update(item.id, content="Lunch at two.")
    done = await a.sync(url)
    assert done.conflicts == 0
    b = await device(hub, encrypted)
    await settle([b, a], url)
    for m in (a, b):
        assert await shown(m, item.id) == [
            ("Lunch at noon.", 1, False),
            ("Lunch at one.", 2, False),
            ("Lunch at two.", 3, False),
        ]
    await a.close()
    await b.close()


# --- 3. delete beats archive -----------------------------------------------------------


@pytest.mark.parametrize("encrypted", KINDS, ids=KIND_IDS)
@pytest.mark.parametrize("first", ["a", "b"])
async def test_a_deleted_memory_never_comes_back_archived(
    hub: str, encrypted: bool, first: str
) -> None:
    a = await device(hub, encrypted, first=True)
    item = await a.add("The storage unit is number 41.", scope="s")
    other = await a.add("Water the plants on Sunday.", scope="s")
    await a.sync(hub)
    b = await device(hub, encrypted)
    await b.sync(hub)
    await asyncio.sleep(0.01)
    await a.delete(item.id)
    assert await b.archive_older_than(0) == 2  # b archives both (it never saw the delete)
    order = [a, b] if first == "a" else [b, a]
    await settle(order, hub)
    await gone_everywhere([a, b], item.id)
    for m in (a, b):
        assert [x.id for x in await m.search_archive("", limit=10)] == [other.id]
    assert await export(a) == await export(b)
    c = await device(hub, encrypted)  # a new device sees the same
    await c.sync(hub)
    await gone_everywhere([c], item.id)
    assert await export(c) == await export(a)
    for m in (a, b, c):
        await m.close()


# --- 2. history keeps every version, in order ------------------------------------------


@pytest.mark.parametrize("encrypted", KINDS, ids=KIND_IDS)
@pytest.mark.parametrize("last", ["a", "b"])
async def test_concurrent_updates_keep_every_version_in_order(
    hub: str, encrypted: bool, last: str
) -> None:
    """A updates three times, B once (a second line of lower version numbers); whichever
    edit came last wins, and every version of both lines is in history on both devices,
    in version order, the losing line's versions marked ``conflict``."""
    a = await device(hub, encrypted, first=True)
    item = await a.add("Plan: zero.", scope="s")
    await a.sync(hub)
    b = await device(hub, encrypted)
    await b.sync(hub)
    steps = [(a, "A-one"), (a, "A-two"), (a, "A-three"), (b, "B-one")]
    if last == "a":
        steps = [steps[3], *steps[:3]]
    for m, name in steps:
        await m.update(item.id, content=f"Plan: {name}.")
        await asyncio.sleep(0.005)
    winner = f"Plan: {steps[-1][1]}."
    await settle([b, a], hub)
    first = await shown(a, item.id)
    for m in (a, b):
        history = await shown(m, item.id)
        assert history == first  # the same on every device
        contents = [c for c, _, _ in history]
        assert set(contents) == {"Plan: zero.", *(f"Plan: {t}." for _, t in steps)}, history
        assert len(contents) == len(contents)
        numbers = [v for _, v, _ in history[:-1]]
        assert numbers == sorted(numbers), history  # past versions in order, then current
        assert history[-1] == (winner, 4 if last == "a" else 2, False)
        losers = {c for c, _, conflict in history if conflict}
        line = {"Plan: B-one."} if last == "a" else {"Plan: A-one.", "Plan: A-two.", "Plan: A-three."}
        assert losers == line, history
        assert (await m.get(item.id)).content == winner
    assert await export(a) == await export(b)
    await a.close()
    await b.close()


# --- 4. a document deleted at the hub --------------------------------------------------


@pytest.mark.parametrize("encrypted", KINDS, ids=KIND_IDS)
async def test_a_document_deleted_at_the_hub_does_not_stop_sync(
    hub: str, encrypted: bool, caplog: pytest.LogCaptureFixture
) -> None:
    a = await device(hub, encrypted, first=True)
    lost = await a.add("The wifi password is on the fridge.", scope="s")
    await a.add("Bins go out on Tuesday.", scope="s")
    await a.sync(hub)
    b = await device(hub, encrypted)
    await b.sync(hub)
    doc = f"{hub}/k:mem:{lost.id}"
    async with httpx.AsyncClient() as client:
        original = (await client.get(doc)).json()
        rev = original["_rev"]
        assert (await client.delete(doc, params={"rev": rev})).status_code == 200  # an operator
        c = await device(hub, encrypted)  # c's first round never sees the record
        caplog.set_level(logging.WARNING, "pymemory")
        await c.sync(hub)
        assert "which this device never had" in caplog.text
        await b.add("Rounds go on.", scope="s")
        for m in (b, a, c):
            await m.sync(hub)  # no SyncError: b pushes the record again as it was
        back = (await client.get(doc)).json()
        assert {k: back[k] for k in ("h", "d", "v")} == {k: original[k] for k in ("h", "d", "v")}
    await settle([a, b, c], hub)
    for m in (a, b, c):
        assert (await m.get(lost.id)).content == "The wifi password is on the fridge."
        assert len(await m.list()) == 3
    assert await records(a) == await records(b) == await records(c)
    for m in (a, b, c):
        await m.close()


async def test_a_tampered_record_is_still_refused(hub: str) -> None:
    a = await device(hub, True, first=True)
    item = await a.add("The locker code is 7.", scope="s")
    await a.sync(hub)
    b = await device(hub, True)
    await b.sync(hub)
    await a.update(item.id, content="The locker code is 8.")
    await a.sync(hub)
    doc = f"{hub}/k:mem:{item.id}"
    async with httpx.AsyncClient() as client:
        now = (await client.get(doc)).json()
        assert (await client.put(doc, json={**now, "h": now["h"] + 1})).status_code == 201
    with pytest.raises(SyncIntegrityError):
        await b.sync(hub)
    assert (await b.get(item.id)).content == "The locker code is 7."
    await a.close()
    await b.close()


# --- 5. a whole-request deadline -------------------------------------------------------


@pytest.mark.parametrize("encrypted", KINDS, ids=KIND_IDS)
async def test_a_trickling_hub_is_bounded_by_the_timeout(
    hub: str, proxy: FaultProxy, encrypted: bool
) -> None:
    """27 bytes, one a second: each read comes well within the timeout, the request does
    not (before: 27 s for a 3 s timeout; 81 s at one byte every 3 s)."""
    a = await device(hub, encrypted, first=True)
    await a.add("Anything.", scope="s")
    proxy.lose = [Lose("GET", "/pm-", "trickle", every_s=1.0)]
    transport = quick(3.0)
    began = time.monotonic()
    with pytest.raises(SyncError, match="timed out") as caught:
        await sync_store(a.kv, via(proxy, hub), transport=transport)
    took = time.monotonic() - began
    await transport.close()
    assert caught.value.retryable
    assert 2.9 <= took < 5.0, took
    assert proxy.spoiled == [("GET", proxy.spoiled[0][1], "trickle")]
    done = await a.sync(via(proxy, hub))  # the next round goes through
    assert done.pushed >= 1
    await a.close()


@pytest.mark.parametrize("encrypted", KINDS, ids=KIND_IDS)
async def test_a_hub_that_lost_everything_gets_the_store_back(encrypted: bool) -> None:
    """An in-memory hub restarted empty (same URL): the devices' next rounds push the
    whole store to it again, clocks kept, and a new device gets all of it."""
    server = SyncServer().start()  # in memory: a restart loses every document
    try:
        url = f"{server.url}/pm-lost-{encrypted}"
        a = await device(url, encrypted, first=True)
        items = [await a.add(f"note {i} before the hub lost it", scope="s") for i in range(3)]
        await a.update(items[0].id, content="note 0, edited before the hub lost it")
        await a.sync(url)
        b = await device(url, encrypted)
        await b.sync(url)
        await b.delete(items[2].id)
        await b.sync(url)
        await a.sync(url)
        before = await records(a)
        port = server.port
        server.kill()
        server.start(port)
        await b.add("a note made after the hub lost everything", scope="s")
        await settle([b, a], url)
        c = await device(url, encrypted)
        await settle([c, a, b], url)
        assert await export(a) == await export(b) == await export(c)
        assert {k: v for k, v in (await records(c)).items() if k in before} == before
        assert len(await c.list()) == 3  # items 0, 1 and b's new one; 2 stays deleted
        with pytest.raises(NotFoundError):
            await c.get(items[2].id)
        assert await shown(c, items[0].id) == [
            ("note 0 before the hub lost it", 1, False),
            ("note 0, edited before the hub lost it", 2, False),
        ]
        for m in (a, b, c):
            await m.close()
    finally:
        server.stop()


@pytest.mark.parametrize("encrypted", KINDS, ids=KIND_IDS)
async def test_an_update_after_a_lower_winner_keeps_the_losing_line(hub: str, encrypted: bool) -> None:
    """B's one later update beats A's two; then C updates the winner, whose history record
    takes a version number A's losing line used: A's version stays in history."""
    a = await device(hub, encrypted, first=True)
    item = await a.add("Plan: zero.", scope="s")
    await a.sync(hub)
    b, c = await device(hub, encrypted), await device(hub, encrypted)
    for m in (b, c):
        await m.sync(hub)
    await a.update(item.id, content="Plan: A-one.")
    await a.update(item.id, content="Plan: A-two.")
    await a.sync(hub)
    await asyncio.sleep(0.005)
    await b.update(item.id, content="Plan: B-one.")  # version 2, the later edit
    await settle([b, a, c], hub)
    await c.update(item.id, content="Plan: C-after.")  # writes the record of version 2
    await settle([c, a, b], hub)
    want = {"Plan: zero.", "Plan: A-one.", "Plan: A-two.", "Plan: B-one.", "Plan: C-after."}
    for m in (a, b, c):
        history = await shown(m, item.id)
        assert {text for text, _, _ in history} == want, history
        assert history[-1] == ("Plan: C-after.", 3, False)
    assert await export(a) == await export(b) == await export(c)
    for m in (a, b, c):
        await m.close()
