"""A hub that fails (500s, garbage, timeouts, stopping mid-round) gives a typed error and
leaves the local store untouched; a round killed mid-way (SIGKILL) resumes with nothing
lost or duplicated."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pymemory import Memory
from pymemory.errors import SyncError
from pymemory.storage import MapKv, SqliteKv
from pymemory.sync import HttpxTransport, Response, sync_store
from pymemory.sync.records import travels


class Faulty:
    """A transport that answers ``mode`` from the ``after``-th request on."""

    def __init__(self, mode: str, after: int = 0) -> None:
        self.inner = HttpxTransport(timeout_s=2)
        self.mode, self.after, self.calls = mode, after, 0

    async def request(self, method: str, url: str, *, body, headers) -> Response:  # type: ignore[no-untyped-def]
        self.calls += 1
        if self.calls <= self.after:
            return await self.inner.request(method, url, body=body, headers=headers)
        if self.mode == "500":
            return Response(500, b'{"error":"internal"}')
        if self.mode == "garbage":
            return Response(200, b"<html>captive portal</html>")
        if self.mode == "shape":
            return Response(200, b'{"results": 3}')
        if self.mode == "timeout":
            raise SyncError("the sync server timed out (ReadTimeout)", retryable=True)
        raise AssertionError(self.mode)

    async def close(self) -> None:
        await self.inner.close()


async def snapshot(kv: MapKv) -> dict[str, bytes]:
    return dict(await kv.scan(""))


@pytest.mark.parametrize("mode", ["500", "garbage", "shape", "timeout"])
@pytest.mark.parametrize("after", [0, 1, 2, 3])  # 3: after the push landed
async def test_a_failing_hub_gives_a_typed_error_and_changes_nothing(
    hub: str, mode: str, after: int
) -> None:
    seed = await Memory.open(MapKv())
    await seed.add("on the hub already", scope="s")
    await seed.sync(hub)
    kv = MapKv()
    memory = await Memory.open(kv)
    await memory.add("local note", scope="s")
    before = {k: v for k, v in (await snapshot(kv)).items() if travels(k)}
    transport = Faulty(mode, after)
    with pytest.raises(SyncError) as caught:
        await sync_store(kv, hub, transport=transport)
    assert caught.value.code == "sync_failed"
    after_ = {k: v for k, v in (await snapshot(kv)).items() if travels(k)}
    assert after_ == before
    await transport.close()
    done = await memory.sync(hub)  # the hub back: the round completes
    assert done.pulled == 1 and len(await memory.list()) == 2
    await seed.close()
    await memory.close()


async def test_wrong_url_and_refused_credentials_are_typed(hub_root: str) -> None:
    memory = await Memory.open(MapKv())
    with pytest.raises(SyncError) as caught:
        await memory.sync("http://127.0.0.1:9/nothing-listens-here")
    assert caught.value.retryable
    from pymemory.errors import ValidationError

    with pytest.raises(ValidationError):
        await memory.sync("ftp://example.com/db")
    with pytest.raises(ValidationError):
        await memory.sync(hub_root)  # no database named
    await memory.close()


CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from pymemory.storage import SqliteKv
    from pymemory.sync import replicator, sync_store

    replicator.PUSH_BATCH = replicator.PULL_BATCH = replicator.READ_CHUNK = 20

    async def main():
        kv = await SqliteKv.open(sys.argv[1])
        print("start", flush=True)
        while True:
            await sync_store(kv, sys.argv[2])

    asyncio.run(main())
    """
)


async def test_sigkill_mid_round_resumes_without_loss_or_duplicates(
    hub: str, tmp_path: Path
) -> None:
    a_path, b_path = tmp_path / "a.db", tmp_path / "b.db"
    a = await Memory.open(a_path)
    await a.add_many([{"text": f"note number {i} about topic {i % 7}"} for i in range(400)])
    await a.close()
    for path in (a_path, b_path):  # each device's round is killed at some point
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(path), hub], stdout=subprocess.PIPE, env=env
        )
        assert child.stdout is not None and child.stdout.readline().strip() == b"start"
        await asyncio.sleep(0.8)
        child.send_signal(signal.SIGKILL)
        child.wait()
    kvs = [await SqliteKv.open(a_path), await SqliteKv.open(b_path)]
    for _ in range(3):
        for kv in kvs:
            await sync_store(kv, hub)
    recs = [{k: v for k, v in await kv.scan("") if travels(k)} for kv in kvs]
    assert recs[0] == recs[1]
    assert sum(k.startswith("mem:") for k in recs[0]) == 400
    for kv in kvs:
        await kv.close()
    b = await Memory.open(b_path)
    assert len(await b.list()) == 400
    assert (await b.sync(hub)).pushed == 0
    await b.close()
