"""SqliteKv beyond the conformance suite: persistence, WAL, and a writer killed mid-batch."""

import asyncio
import os
import signal
import subprocess
import sys
import textwrap

from pymemory.storage import SqliteKv
from pymemory.storage.sqlite import prefix_upper_bound

WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from pymemory.storage import SqliteKv

    async def main(path, batch):
        kv = await SqliteKv.open(path)
        while True:
            value = bytes([batch % 256]) * 512
            items = [(f"b:{batch:06d}:{i:05d}", value) for i in range(2000)]
            await kv.put_many(items + [(f"done:{batch:06d}", b"1")])
            print(batch, flush=True)  # acknowledged
            batch += 1

    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
    """
)


async def test_persists_across_reopen(tmp_path):
    path = tmp_path / "store.db"
    kv = await SqliteKv.open(path)
    await kv.put_many([("a", b"1"), ("b", b"2")])
    await kv.close()
    kv = await SqliteKv.open(path)
    assert await kv.scan("") == [("a", b"1"), ("b", b"2")]
    mode = await kv._run(lambda: kv._conn.execute("PRAGMA journal_mode").fetchone()[0])
    assert mode == "wal"
    await kv.close()


def test_prefix_upper_bound():
    assert prefix_upper_bound("mem:") == "mem;"
    assert prefix_upper_bound("a\U0010ffff") == "b"
    assert prefix_upper_bound("\U0010ffff") is None
    assert prefix_upper_bound("") is None
    assert prefix_upper_bound("x\ud7ff") == "x\ue000"


async def test_killed_writer_leaves_no_partial_batch(tmp_path):
    """SIGKILL a writer at arbitrary moments: every batch is whole or absent, acks are kept."""
    path = tmp_path / "crash.db"
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    next_batch = 0
    for round_no in range(4):
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), str(next_batch)],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        acked: list[int] = []
        # Wait for a few acknowledgements, then kill at a moment that varies per round.
        while len(acked) < 2 + round_no:
            line = proc.stdout.readline()
            assert line, "writer died early"
            acked.append(int(line))
        await asyncio.sleep(0.013 * round_no)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        acked += [int(x) for x in proc.stdout.read().split()]
        proc.stdout.close()

        kv = await SqliteKv.open(path)
        done = {int(k.split(":")[1]) for k, _ in await kv.scan("done:")}
        counts: dict[int, int] = {}
        for key, value in await kv.scan("b:"):
            batch = int(key.split(":")[1])
            counts[batch] = counts.get(batch, 0) + 1
            assert value == bytes([batch % 256]) * 512
        await kv.close()
        assert set(acked) <= done, "an acknowledged batch was lost"
        assert set(counts) == done
        assert all(n == 2000 for n in counts.values()), "a partial batch is visible"
        next_batch = max(done) + 1  # the next round appends to the same file


async def test_peek_reads_on_the_callers_thread_and_holds_no_lock(tmp_path):
    import pytest

    path = tmp_path / "peek.db"
    kv = await SqliteKv.open(path)
    other = await SqliteKv.open(path)
    assert kv.peek("meta:x") is None
    await other.put_many([("meta:x", b"1")])
    assert kv.peek("meta:x") == b"1"  # another connection's commit, seen at once
    await kv.put_many([("meta:x", b"2")])
    assert kv.peek("meta:x") == b"2"
    # peek leaves no read transaction open: the WAL can still be truncated.
    busy = await kv._run(lambda: kv._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone())
    assert busy[0] == 0 and (tmp_path / "peek.db-wal").stat().st_size == 0
    await other.close()
    await kv.close()
    memory_kv = await SqliteKv.open(":memory:")
    with pytest.raises(BlockingIOError):
        memory_kv.peek("meta:x")
    await memory_kv.close()
