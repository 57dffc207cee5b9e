"""Issue 17: a full disk loses nothing. The reserve refuses writes before the disk's limit
(QuotaExceededError, store unchanged) while deletes, clear, sweep and export keep working;
a disk that fills anyway gives a typed error and leaves the file intact. The SQLite tests
run on a real small filesystem (a tmpfs mounted for the test: CI runs as root)."""

from __future__ import annotations

import asyncio
import os
import random
import sqlite3
import subprocess
from pathlib import Path

import pytest

from pymemory import Memory, QuotaExceededError, SqliteKv, StorageError
from pymemory.storage.room import FREEING_BYTES_PER_DELETE, RoomGuard, RoomReading, frees_room


def test_quota_exceeded_is_a_storage_error_with_its_own_code():
    assert issubclass(QuotaExceededError, StorageError)
    assert QuotaExceededError.code == "quota_exceeded"


def guard(available: int, reserve: int) -> RoomGuard:
    async def measure() -> RoomReading:
        return RoomReading(available=available)

    g = RoomGuard(reserve, measure, write_factor=2)
    asyncio.run(g.refresh(force=True))
    return g


def test_a_write_that_would_cross_the_reserve_is_refused():
    g = guard(available=1_000_000, reserve=600_000)
    g.check([("k", b"x" * 100_000)], [])  # 200 kB counted: leaves 800 kB
    with pytest.raises(QuotaExceededError, match="reserve"):
        g.check([("k", b"x" * 250_000)], [])  # 500 kB counted: leaves 500 kB


def test_what_was_written_since_the_reading_counts_against_the_room():
    g = guard(available=1_000_000, reserve=600_000)
    g.wrote([("k", b"x" * 150_000)])
    assert g.available == 1_000_000 - 2 * 150_001
    with pytest.raises(QuotaExceededError):
        g.check([("k", b"x" * 100_000)], [])


def test_a_freeing_batch_may_use_the_reserve_and_a_disguised_write_may_not():
    g = guard(available=100, reserve=600_000)
    bookkeeping = [("log:1", b"x" * 300)]
    g.check(bookkeeping, ["mem:a", "vec:a", "arc:a"])  # a delete with its change-log entry
    g.check([], ["mem:a"])
    big = [("mem:b", b"x" * (FREEING_BYTES_PER_DELETE * 2 + 1))]
    assert not frees_room(big, ["mem:a", "mem:c"])
    with pytest.raises(QuotaExceededError):
        g.check(big, ["mem:a", "mem:c"])


def test_an_unknown_room_or_a_zero_reserve_lets_writes_through():
    async def unknown() -> None:
        return None

    g = RoomGuard(10**6, unknown)
    asyncio.run(g.refresh())
    g.check([("k", b"x" * 10**7)], [])
    guard(available=0, reserve=0).check([("k", b"x" * 10**7)], [])


@pytest.mark.parametrize("bad", [True, -1, 1.5, "1", 2**60])
def test_a_bad_reserve_is_refused(bad, tmp_path):
    with pytest.raises(ValueError):
        asyncio.run(SqliteKv.open(tmp_path / "s.db", reserve_bytes=bad))


# --- a real small filesystem -------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path):
    if os.geteuid() != 0:
        pytest.fail("mounting a tmpfs needs root (CI runs as root)", pytrace=False)
    mnt = tmp_path / "disk"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=12m", "tmpfs", str(mnt)], check=True)
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=True)


def text(i: int) -> str:
    rnd = random.Random(i)  # ~40 kB of words that do not compress into nothing
    return f"memory {i}: " + " ".join(f"w{rnd.randrange(10**6)}" for _ in range(5000))


async def fill(memory: Memory) -> tuple[list[str], Exception]:
    acked: list[str] = []
    for i in range(10_000):
        try:
            acked.append((await memory.add(text(i))).id)
        except StorageError as exc:
            return acked, exc
    raise AssertionError("the 12 MB disk never filled")


def stored_ids(path: Path) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        rows = conn.execute("SELECT key FROM kv WHERE key LIKE 'mem:%'").fetchall()
    finally:
        conn.close()
    return {k[4:] for (k,) in rows}


def test_sqlite_on_a_full_disk_refuses_at_the_reserve_and_can_still_free_room(small_disk):
    path = small_disk / "store.db"

    async def run() -> None:
        kv = await SqliteKv.open(path, reserve_bytes=4 * 1024 * 1024)
        memory = await Memory.open(kv)
        acked, exc = await fill(memory)
        assert isinstance(exc, QuotaExceededError) and exc.code == "quota_exceeded"
        assert len(acked) > 100
        before = [line async for line in memory.export()]
        with pytest.raises(QuotaExceededError):
            await memory.add(text(99_999))
        assert [line async for line in memory.export()] == before  # store unchanged
        room = (await memory.stats())["storage"]
        assert room["reserve_bytes"] == 4 * 1024 * 1024 and room["available_bytes"] is not None
        await memory.close()
        await kv.close()
        assert stored_ids(path) == set(acked)  # after a restart, every acknowledged one

        kv = await SqliteKv.open(path, reserve_bytes=4 * 1024 * 1024)
        memory = await Memory.open(kv)
        await memory.delete(acked[0])
        assert len([line async for line in memory.export()]) == len(before) - 1
        assert await memory.clear(all=True) == len(acked) - 1  # the whole store, at the limit
        await memory.add("there is room again")
        await memory.close()
        await kv.close()

    asyncio.run(run())


def test_sqlite_full_without_a_reserve_is_typed_and_leaves_the_file_intact(small_disk):
    path = small_disk / "store.db"

    async def run() -> None:
        kv = await SqliteKv.open(path, reserve_bytes=0)
        memory = await Memory.open(kv)
        try:
            acked, exc = await fill(memory)
            assert isinstance(exc, QuotaExceededError) and "disk is full" in str(exc)
        finally:
            await memory.close()
            await kv.close()
        assert stored_ids(path) == set(acked)
        # A full disk may refuse even a delete (its write-ahead log needs room): once the
        # disk has room again, deletes work on the same file.
        subprocess.run(["mount", "-o", "remount,size=24m", str(small_disk)], check=True)
        kv = await SqliteKv.open(path, reserve_bytes=0)
        memory = await Memory.open(kv)
        await memory.delete(acked[0])
        await memory.delete(acked[1])
        await memory.close()
        await kv.close()
        assert stored_ids(path) == set(acked[2:])

    asyncio.run(run())


def test_a_huge_write_is_refused_before_it_touches_the_file(small_disk):
    path = small_disk / "store.db"

    async def run() -> None:
        kv = await SqliteKv.open(path, reserve_bytes=4 * 1024 * 1024)
        with pytest.raises(QuotaExceededError):
            await kv.put_many([(f"k{i}", os.urandom(1024 * 1024)) for i in range(12)])
        assert await kv.scan("") == []
        await kv.put_many([("small", b"fits")])
        assert await kv.get("small") == b"fits"
        await kv.close()

    asyncio.run(run())


def test_a_memory_store_reports_no_room_and_never_refuses():
    async def run() -> None:
        memory = await Memory.open()
        assert (await memory.stats())["storage"] is None
        await memory.close()

    asyncio.run(run())
