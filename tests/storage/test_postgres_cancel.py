"""Tasks cancelled in the middle of PostgreSQL calls (issue 37's revert): every cancelled
task ends, the connections stay counted right (none leaked, none lent twice, no waiter
left asleep), and closing a Memory, whose background tasks are cancelled mid-call, never
hangs. Each wait is bounded, so a hang fails the test instead of stalling the run.

The pool that was reverted connected inside ``asyncio.wait_for``; on Python 3.11 that
swallows a cancellation arriving as the connection is made, and the cancelled task went
on (a Memory's upkeep then slept for an hour inside ``close()``)."""

from __future__ import annotations

import asyncio
import random
import time

import pytest

from pymemory import Memory
from pymemory.errors import StoreClosedError
from pymemory.storage.postgres import PostgresDatabase, ServerUnavailableError

QUIET = {"feedback_flush_s": 3600, "sweep_interval_s": 3600}
BOUND_S = 15.0  # far above any call here; reaching it means a hang


def _check_counts(db: PostgresDatabase, max_connections: int) -> None:
    """No call is running: every open connection is idle, within the bound, and no
    waiter is left in the queue."""
    conns = db._connections
    assert conns.size == conns.idle <= max_connections, (conns.size, conns.idle)
    assert not [w for w in conns._waiters if not w.done()]


async def _connect_cost(db: PostgresDatabase, namespace: str) -> float:
    kv = db.kv(namespace)
    await kv.put_many([("k", b"v")])
    db._connections.discard_idle()
    start = time.monotonic()
    await kv.get("k")
    return time.monotonic() - start


@pytest.mark.parametrize("rounds", [250])
async def test_tasks_cancelled_mid_call_end_and_leave_the_pool_consistent(
    postgres_dsn, namespace, rounds
):
    """Three tasks make calls (a read, a write, a transact: connecting, waiting for a
    connection, inside a pipeline or COMMIT) and are cancelled at a random moment, most
    often around when a new connection is made; then each must have ended."""
    rng = random.Random(37)
    db = await PostgresDatabase.open(postgres_dsn, max_connections=2, min_connections=0)
    kv = db.kv(namespace)
    try:
        cost = await _connect_cost(db, namespace)

        async def calls(n: int) -> None:
            for _ in range(3):
                pick = rng.randrange(3)
                if pick == 0:
                    assert await kv.get("k") == b"v"
                elif pick == 1:
                    await kv.put_many([("k", b"v"), (f"n{n}", b"x")])
                else:
                    await kv.transact(["k"], lambda values, _lists: _keep(values))
            await asyncio.sleep(3600)  # a task that missed its cancellation hangs here

        for n in range(rounds):
            if n % 2 == 0:
                db._connections.discard_idle()  # the next calls connect
            tasks = [asyncio.ensure_future(calls(n)) for _ in range(3)]
            await asyncio.sleep(rng.uniform(0, 3 * cost))
            for task in tasks:
                task.cancel()
            done, pending = await asyncio.wait(tasks, timeout=BOUND_S)
            for task in pending:
                task.cancel()  # let the run go on; the test has failed
            assert not pending, f"round {n}: {len(pending)} cancelled tasks did not end"
            for task in done:
                assert task.cancelled() or task.exception() is None, task.exception()
            _check_counts(db, 2)
            assert await asyncio.wait_for(kv.get("k"), BOUND_S) == b"v"
    finally:
        await asyncio.wait_for(db.close(), BOUND_S)


def _keep(values: list[bytes | None]):
    from pymemory.storage import Writes

    return Writes(puts=[("k", values[0] or b"v")])


async def test_a_cancelled_waiter_passes_the_connection_on(postgres_dsn, namespace):
    """max_connections=1: two calls wait for the one connection; the first waiter is
    cancelled in the same instant it is handed the connection (or, when the connection
    came back unusable, its free slot): the next waiter gets it at once, not after
    connect_timeout_s."""
    db = await PostgresDatabase.open(
        postgres_dsn, max_connections=1, min_connections=0, connect_timeout_s=10
    )
    kv = db.kv(namespace)
    await kv.put_many([("k", b"v")])
    try:
        for release_conn in (True, False):
            hold = asyncio.Event()
            held = asyncio.Event()

            async def holder(kv=kv, hold=hold, held=held, release_conn=release_conn) -> None:
                async def run(conn):
                    if not release_conn:  # it goes back in a transaction: closed, the
                        await conn.execute("BEGIN")  # slot handed over instead
                    held.set()
                    await hold.wait()

                await kv.database.read("holding", run)

            first = asyncio.ensure_future(holder())
            await held.wait()
            second = asyncio.ensure_future(kv.get("k"))
            third = asyncio.ensure_future(kv.get("k"))
            await asyncio.sleep(0.05)  # both are waiting
            hold.set()
            await asyncio.sleep(0)  # the holder hands its connection to the second...
            second.cancel()  # ...which is cancelled before it runs again
            start = time.monotonic()
            assert await asyncio.wait_for(third, BOUND_S) == b"v"
            assert time.monotonic() - start < 2.0
            await asyncio.wait({first, second}, timeout=BOUND_S)
            _check_counts(db, 1)
    finally:
        await asyncio.wait_for(db.close(), BOUND_S)


@pytest.mark.parametrize("rounds", [6])
async def test_closing_memories_cancelled_mid_call_never_hangs(postgres_dsn, namespace, rounds):
    """The reverted pool's hang: a Memory is closed while its background tasks (upkeep:
    flush and catch-up at start, the change watch, snapshots) are in the middle of
    calls, often while they connect; close, reopen, again. Each close is bounded."""
    rng = random.Random(8)
    for n in range(rounds):
        db = await PostgresDatabase.open(postgres_dsn, max_connections=6, min_connections=0)
        try:
            await db.kv(namespace).put_many([(f"x:{n}", b"v")])
            memory = await Memory.open(db.kv(namespace), **QUIET)
            await memory.add_many(
                [{"text": f"fact {i} about cheese, round {n}"} for i in range(300)]
            )
            await asyncio.wait_for(memory.close(), BOUND_S)
            for _ in range(8):  # opened and closed at once: its first upkeep round runs
                db._connections.discard_idle()
                again = await Memory.open(db.kv(namespace), **QUIET)
                await asyncio.sleep(rng.uniform(0, 0.02))
                await asyncio.wait_for(again.close(), BOUND_S)
                _check_counts(db, 6)
            again = await Memory.open(db.kv(namespace), **QUIET)
            assert (await again.stats())["items"] == 300 * (n + 1)
            await asyncio.wait_for(again.close(), BOUND_S)
        finally:
            await asyncio.wait_for(db.close(), BOUND_S)


async def test_calls_after_close_fail_and_calls_during_close_end(postgres_dsn, namespace):
    """Closing the database while calls wait for a connection wakes them (StoreClosed),
    and a connection in use when it closed is closed as its call ends."""
    db = await PostgresDatabase.open(postgres_dsn, max_connections=1, min_connections=0)
    kv = db.kv(namespace)
    await kv.put_many([("k", b"v")])
    hold = asyncio.Event()
    held = asyncio.Event()

    async def run(conn):
        held.set()
        await hold.wait()
        return "done"

    first = asyncio.ensure_future(db.read("holding", run))
    await held.wait()
    waiting = asyncio.ensure_future(kv.get("k"))
    await asyncio.sleep(0.05)
    await asyncio.wait_for(db.close(), BOUND_S)
    with pytest.raises(StoreClosedError):
        await asyncio.wait_for(waiting, BOUND_S)
    hold.set()
    assert await asyncio.wait_for(first, BOUND_S) == "done"
    assert db._connections.size == 0
    with pytest.raises(StoreClosedError):
        await kv.get("k")


async def test_a_frozen_server_is_cut_off_within_the_calls_bound(own_postgres_server, namespace):
    """A server that stops answering (its processes stopped, the socket open) does not
    hang a call: past its bound (statements x statement_timeout_ms + connect_timeout_s)
    the connection is cut and the call fails, retryable, nothing written."""
    import os
    import signal

    server = own_postgres_server
    db = await PostgresDatabase.open(
        server.dsn(), max_connections=2, statement_timeout_ms=500, connect_timeout_s=2
    )
    kv = db.kv(namespace)
    await kv.put_many([("k", b"v")])
    pids = [int(p) for p in server.psql(
        "SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend'"
        " AND pid <> pg_backend_pid()"
    ).split()]  # fmt: skip
    try:
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        start = time.monotonic()
        with pytest.raises(ServerUnavailableError) as caught:
            await asyncio.wait_for(kv.get("k"), BOUND_S)
        took = time.monotonic() - start
        assert caught.value.retryable is True
        assert "did not answer within 2.5 s" in str(caught.value)
        assert 2.4 < took < 6.0, took
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)
    assert await asyncio.wait_for(kv.get("k"), BOUND_S) == b"v"  # a new connection
    await asyncio.wait_for(db.close(), BOUND_S)
