"""Background sync: rounds off the caller's path, backoff on failure, stop() cancels;
stats() says when the store last synced and what is pending."""

from __future__ import annotations

import asyncio

from pymemory import Memory
from pymemory.storage import MapKv
from pymemory.sync import LiveSync


async def test_live_sync_carries_writes_and_stops(hub: str) -> None:
    a, b = await Memory.open(MapKv()), await Memory.open(MapKv())
    live_a = await a.sync(hub, live=True)
    live_b = await b.sync(hub, live=True)
    assert isinstance(live_a, LiveSync) and live_a.running
    item = await a.add("written while live", scope="s")
    live_a.wake()
    for _ in range(100):
        await asyncio.sleep(0.1)
        live_a.wake()  # a round that failed is retried now, not after its backoff
        live_b.wake()
        if [i.id for i in await b.list()] == [item.id]:
            break
    assert [i.id for i in await b.list()] == [item.id]
    stats = (await a.stats())["sync"]
    assert stats["lastSyncMs"] and stats["pending"] == 0 and stats["live"][0]["running"]
    await live_a.stop()
    assert not live_a.running
    await a.close()
    await b.close()  # close() stops b's loop
    assert not live_b.running


async def test_live_sync_backs_off_on_failure() -> None:
    calls = 0

    async def failing():  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        from pymemory.errors import SyncError

        raise SyncError("down", retryable=True)

    loop = LiveSync(failing, interval_s=0.01, max_backoff_s=10).start()
    await asyncio.sleep(0.3)
    await loop.stop()
    assert 1 <= calls < 10 and loop.failures == calls and loop.last_error


async def test_a_swallowed_cancellation_still_ends_the_loop() -> None:
    async def swallowing():  # type: ignore[no-untyped-def]
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:  # as a library that turns it into its own error
            from pymemory.errors import SyncError

            raise SyncError("timed out", retryable=True) from None

    loop = LiveSync(swallowing, interval_s=0.01).start()
    await asyncio.sleep(0.05)
    task = loop._task
    assert task is not None
    task.cancel()
    await asyncio.wait_for(asyncio.gather(task, return_exceptions=True), 2)
    assert task.cancelled()
