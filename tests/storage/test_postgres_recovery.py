"""A PostgreSQL server that crashes and comes back (issue 37, item 6): while it is down
every call fails at once with a retryable ServerUnavailableError, and the very first call
after it is ready again succeeds (no pool backoff to wait out), reads, writes and a
Memory on top alike; an idle Memory is woken again by the LISTEN connection."""

from __future__ import annotations

import asyncio
import time

import pytest

from pymemory import Memory
from pymemory.storage.postgres import PostgresDatabase, ServerUnavailableError

QUIET = {"feedback_flush_s": 3600, "sweep_interval_s": 3600}
OUTAGE_S = 4.0  # a reconnect backoff of 1, 2, 4 s (psycopg_pool's, used before) misses "ready"


async def _down_for(server, seconds: float, call) -> list[float]:
    """SIGKILL the server, make ``call`` every 0.4 s for ``seconds`` (each must fail fast
    and retryable; ``call`` None: stay idle), then start it again (returns once it is
    ready). How long each failed call took."""
    server.kill()
    took: list[float] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if call is not None:
            start = time.monotonic()
            with pytest.raises(ServerUnavailableError) as caught:
                await call()
            took.append(time.monotonic() - start)
            assert caught.value.retryable is True
            assert "nothing was written" in str(caught.value).lower()
        await asyncio.sleep(0.4)
    await asyncio.to_thread(server.start)
    return took


@pytest.mark.parametrize(
    ("connect_timeout_s", "calls_while_down"),
    [(2.0, True), (10.0, True), (10.0, False)],
    ids=["timeout-2s", "default-timeout", "idle-while-down"],
)
async def test_the_first_call_after_the_server_is_back_succeeds(
    own_postgres_server, namespace, connect_timeout_s, calls_while_down
):
    server = own_postgres_server
    db = await PostgresDatabase.open(
        server.dsn(), max_connections=4, connect_timeout_s=connect_timeout_s
    )
    writer = await Memory.open(db.kv(namespace), **QUIET)
    kv = db.kv(namespace + "-raw")
    try:
        before = await writer.add("the staging database moved to port 6543")
        await asyncio.gather(*(kv.put_many([(f"k{i}", b"v")]) for i in range(4)))  # 4 conns
        took = await _down_for(
            server, OUTAGE_S, (lambda: kv.get("k0")) if calls_while_down else None
        )
        if calls_while_down:
            assert len(took) >= 5 and max(took) < 1.0, took  # refused at once, not timed out
        ready = time.monotonic()
        # The very first calls after "ready": a write, a read and a Memory add, in a row.
        await kv.put_many([("after", b"restart")])
        assert await kv.get("after") == b"restart"
        after = await writer.add("the deploy moved to Thursday")
        elapsed = time.monotonic() - ready
        assert elapsed < 1.5, f"the first calls after the restart took {elapsed:.2f} s"
        assert {i.id for i in await writer.list()} >= {before.id, after.id}
    finally:
        await writer.close()
        await db.close()


async def test_an_idle_memory_is_woken_again_after_a_restart(own_postgres_server, namespace):
    """The LISTEN connection reconnects within about a second of the server being back,
    and an idle Memory catches up on what another instance wrote meanwhile."""
    server = own_postgres_server
    dsn = server.dsn()
    idle_db = await PostgresDatabase.open(dsn, connect_timeout_s=2)
    idle = await Memory.open(idle_db.kv(namespace), **QUIET)
    changed = asyncio.Event()
    idle.listeners.append(lambda kind, _id: kind == "changed" and changed.set())
    try:
        await asyncio.sleep(0.5)  # its LISTEN is on
        await _down_for(server, OUTAGE_S, None)
        other_db = await PostgresDatabase.open(dsn)
        other = await Memory.open(other_db.kv(namespace), **QUIET)
        try:
            await asyncio.sleep(1.5)  # the listener is back (it retries at least every 1 s)
            changed.clear()
            item = await other.add("written after the restart by another server")
            # ``idle`` makes no call: only a NOTIFY on its new LISTEN connection wakes it.
            await asyncio.wait_for(changed.wait(), 5)
            assert item.id in {i.id for i in idle._catalog}
        finally:
            await other.close()
            await other_db.close()
    finally:
        await idle.close()
        await idle_db.close()
