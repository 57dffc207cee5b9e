"""Many users in one process (pymemory.integrations.server.MemoryPool over PostgreSQL):
memories opened on demand, least recently used and idle ones closed, and every attempt
to cross from one user to another (ids, look-alike names, clear, import, export, stats)
stays inside the user."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest

from pymemory import Memory
from pymemory.errors import NotFoundError, StoreClosedError, ValidationError
from pymemory.integrations.server import MemoryPool
from pymemory.storage import MapKv

QUIET = {"feedback_flush_s": 3600, "sweep_interval_s": 3600}


@pytest.fixture
async def pool(postgres_dsn):
    pool = await MemoryPool.on_postgres(postgres_dsn, max_open=50, **QUIET)
    yield pool
    await pool.close()


def users(*names: str) -> list[str]:
    run = uuid.uuid4().hex[:6]
    return [f"{run}-{n}" for n in names]


# --- the pool ----------------------------------------------------------------------------


async def test_opens_on_demand_shares_one_instance_and_closes_the_least_recently_used():
    opened: list[str] = []

    async def open_memory(user: str) -> Memory:
        opened.append(user)
        await asyncio.sleep(0.05)
        return await Memory.open(MapKv(), **QUIET)

    pool = MemoryPool(open_memory, max_open=2, idle_s=3600)
    try:

        async def use(user: str) -> Memory:
            async with pool.user(user) as memory:
                return memory

        first = await asyncio.gather(*(use("a") for _ in range(5)))
        assert opened == ["a"] and all(m is first[0] for m in first)  # one open, shared
        b = await use("b")
        await use("a")  # a is now the most recently used
        await use("c")  # over max_open: b goes, not a
        await pool._settle()
        assert pool.open_users() == ["a", "c"]
        with pytest.raises(StoreClosedError):
            await b.add("b was closed")
        assert (await use("b")) is not b and opened == ["a", "b", "c", "b"]
    finally:
        await pool.close()
    with pytest.raises(StoreClosedError):
        await first[0].add("closed with the pool")
    with pytest.raises(StoreClosedError):
        async with pool.user("a"):
            pass


async def test_a_leased_memory_is_never_closed_under_its_request():
    pool = MemoryPool(lambda _u: Memory.open(MapKv(), **QUIET), max_open=1, idle_s=0.1)
    try:
        async with pool.user("busy") as busy:
            async with pool.user("other"):
                pass
            await asyncio.sleep(0.5)  # past idle_s, and over max_open
            assert (await busy.add("still open")).content == "still open"
            assert "busy" in pool.open_users()
        await asyncio.sleep(0.6)  # now idle: the reaper closes both
        assert pool.open_users() == []
        with pytest.raises(StoreClosedError):
            await busy.add("closed now")
    finally:
        await pool.close()


async def test_a_failed_open_is_not_kept():
    attempts = 0

    async def flaky(user: str) -> Memory:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            raise OSError("database restarting")
        return await Memory.open(MapKv(), **QUIET)

    pool = MemoryPool(flaky)
    try:
        with pytest.raises(OSError):
            async with pool.user("u"):
                pass
        assert pool.open_users() == []
        async with pool.user("u") as memory:
            assert await memory.add("works") is not None
        with pytest.raises(ValidationError):
            async with pool.user(""):
                pass
    finally:
        await pool.close()


async def test_an_open_every_caller_gave_up_on_still_keeps_the_bound():
    """max_open=1: user b's request is cancelled while b's memory opens; the open
    finishes with no lease, and the pool closes the least recently used at once (it
    does not wait for the next request to notice it holds 2)."""
    gate = asyncio.Event()

    async def open_memory(user: str) -> Memory:
        if user == "b":
            await gate.wait()
        return await Memory.open(MapKv(), **QUIET)

    pool = MemoryPool(open_memory, max_open=1, idle_s=3600)
    try:
        async with pool.user("a"):
            pass

        async def use_b() -> None:
            async with pool.user("b"):
                pass

        request = asyncio.ensure_future(use_b())
        await asyncio.sleep(0.01)
        request.cancel()  # the caller gives up; the open goes on (shielded)
        with pytest.raises(asyncio.CancelledError):
            await request
        gate.set()
        await asyncio.sleep(0.05)  # b's open finishes
        assert len(pool) == 1 and pool.open_users() == ["b"]
        await pool._settle()
    finally:
        await pool.close()


# --- users never cross --------------------------------------------------------------------


async def test_a_user_cannot_reach_anothers_items_by_id(pool):
    alice, bob = users("alice", "bob")
    async with pool.user(alice) as a:
        secret = await a.add("alice's locker code is 7391", tags=["private"])
    async with pool.user(bob) as b:
        for call in (
            b.get(secret.id),
            b.update(secret.id, content="hijacked"),
            b.delete(secret.id),
            b.feedback(secret.id, "liked"),
        ):
            with pytest.raises(NotFoundError):
                await call
        assert (await b.retrieve("locker code 7391")).memories == []
        assert await b.list() == []
        assert await b.list(tags=["private"]) == []
        exported = "".join([line async for line in b.export()])
        assert secret.id not in exported and "7391" not in exported
        assert (await b.stats())["items"] == 0
    async with pool.user(alice) as a:
        assert (await a.get(secret.id)).content == "alice's locker code is 7391"


async def test_look_alike_user_names_are_separate_stores(pool):
    run = uuid.uuid4().hex[:6]
    names = [run, f"{run}%", f"{run}_", f"{run}:x", f"{run}x"]  # the first: a prefix of all
    for name in names:
        async with pool.user(name) as memory:
            await memory.add(f"note of {name}")
    for name in names:
        async with pool.user(name) as memory:
            assert [i.content for i in await memory.list()] == [f"note of {name}"]
            assert (await memory.stats())["items"] == 1


async def test_clear_all_and_an_import_with_anothers_ids_stay_inside_the_user(pool):
    alice, bob = users("alice", "bob")
    async with pool.user(alice) as a:
        mine = [await a.add(f"alice fact {i}", tags=["a"]) for i in range(5)]
        exported = [line async for line in a.export()]
    async with pool.user(bob) as b:
        await b.add("bob's own fact")
        # Bob imports Alice's export: the same ids, but in Bob's store.
        result = await b.import_(exported, on_conflict="error")
        assert result.added == 5
        await b.update(mine[0].id, content="bob changed his copy")
        await b.delete(mine[1].id)
        await b.feedback(mine[2].id, "disliked")
        await b.flush()
        assert (await b.stats())["items"] == 5
        assert await b.clear(all=True) == 5
        assert (await b.stats())["items"] == 0
    async with pool.user(alice) as a:
        stored = {i.id: i for i in await a.list()}
        assert set(stored) == {m.id for m in mine}
        assert stored[mine[0].id].content == "alice fact 0" and stored[mine[0].id].version == 1
        assert stored[mine[2].id].feedback == mine[2].feedback
        assert (await a.stats())["items"] == 5
        lines = [json.loads(line) for line in [x async for x in a.export()]]
        assert "bob" not in json.dumps(lines)


async def test_two_pools_are_two_app_servers_on_the_same_users(postgres_dsn):
    alice, bob = users("alice", "bob")
    one = await MemoryPool.on_postgres(postgres_dsn, **QUIET)
    two = await MemoryPool.on_postgres(postgres_dsn, **QUIET)
    try:
        async with one.user(alice) as a1, two.user(alice) as a2, two.user(bob) as b2:
            item = await a1.add("alice moved to Lisbon")
            assert (await a2.get(item.id)).content == "alice moved to Lisbon"
            await a2.delete(item.id)
            with pytest.raises(NotFoundError):
                await a1.get(item.id)
            assert await b2.list() == []
        assert set(await one.database.namespaces()) >= {alice}
    finally:
        await one.close()
        await two.close()


# --- the bound holds after a burst (issue 37, item 8) -------------------------------------


async def test_a_burst_of_200_users_leaves_at_most_max_open_memories_open(postgres_dsn):
    """200 users at once over PostgreSQL with max_open=50: while leases end, the pool never
    keeps more than max_open memories nobody holds, and once the burst is over it holds
    max_open (the most recently used), not 191, without waiting for another request.
    The memories it closed wrote their items and can be opened again."""
    run = uuid.uuid4().hex[:6]
    names = [f"{run}-burst-{n}" for n in range(200)]
    pool = await MemoryPool.on_postgres(
        postgres_dsn, max_open=50, idle_s=3600, database_options={"max_connections": 8}, **QUIET
    )
    holding = 0  # requests inside pool.user() (opening or leased)
    worst_excess = 0  # the most open memories beyond max(max_open, holding) ever seen
    kept: dict[str, Memory] = {}
    try:

        async def request(n: int, user: str) -> None:
            nonlocal holding, worst_excess
            holding += 1
            try:
                async with pool.user(user) as memory:
                    kept[user] = memory
                    await memory.add(f"burst note {n} of {user}")
                    await asyncio.sleep(0.001 * (n % 7))  # leases end in a mixed order
            finally:
                holding -= 1
                worst_excess = max(worst_excess, len(pool) - max(50, holding))

        await asyncio.gather(*(request(n, user) for n, user in enumerate(names)))
        assert worst_excess == 0
        assert len(pool) == 50  # right away: no later request or reaper needed
        open_now = set(pool.open_users())
        await pool._settle()  # the closes of the other 150 finish
        closed = [u for u in names if u not in open_now]
        assert len(closed) == 150
        for user in closed[:5]:
            with pytest.raises(StoreClosedError):
                await kept[user].add("closed by the pool")
        for user in sorted(open_now)[:5]:
            assert (await kept[user].stats())["items"] == 1  # still open and usable
        async with pool.user(closed[0]) as again:  # reopened from the database
            n = names.index(closed[0])
            assert [i.content for i in await again.list()] == [f"burst note {n} of {closed[0]}"]
        assert len(pool) == 50
    finally:
        await pool.close()
