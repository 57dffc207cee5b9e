"""A hub stopped mid-round (issue #27, docs/sync.md): pouchdb-server, run by the test over
a data folder, is SIGKILLed while a round is between two batches of its push or two pages
of its pull. The round fails with a retryable SyncError, the device's records are as they
were (or, mid-pull, hold the whole pages applied before); the server restarted on the
same port and folder, the next rounds converge, and the hub holds every record once."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from gate import Gate, held

import pymemory.sync.replicator as replicator
from pymemory import Memory
from pymemory.errors import SyncError
from pymemory.storage import EncryptedKv, KvBackend, SqliteKv
from pymemory.sync import sync_store
from pymemory.sync.records import DOC_PREFIX, SCHEMA_RECORD, STORE_DOC, travels
from tools.sync_server import SyncServer

N = 600  # items: two batches of the push, two pages of the pull (PUSH_BATCH = PULL_BATCH)
EDITED = 5  # of them updated once (history records travel too)
PASS = "correct horse battery"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[SyncServer]:
    """A hub of its own that keeps its databases on disk, so that it survives a kill."""
    hub = SyncServer().start(data_dir=tmp_path / "hub")
    try:
        yield hub
    finally:
        hub.stop()


@dataclass
class Device:
    memory: Memory
    raw: KvBackend  # the store below any encryption: what travels, byte for byte
    kv: KvBackend  # what to close

    @classmethod
    async def open(cls, path: Path, encrypted: bool) -> Device:
        raw: KvBackend = await SqliteKv.open(path)
        kv = await EncryptedKv.open(raw, passphrase=PASS, iterations=1000) if encrypted else raw
        return cls(await Memory.open(kv), raw, kv)

    async def records(self) -> dict[str, bytes]:
        return {k: v for k, v in await self.raw.scan("") if travels(k)}

    async def export(self) -> list[str]:
        return [line async for line in self.memory.export()]

    async def close(self) -> None:
        await self.memory.close()
        await self.kv.close()


async def fill(a: Device) -> None:
    items = await a.memory.add_many(
        [{"text": f"note number {i} about topic {i % 7}"} for i in range(N)]
    )
    for item in items[:EDITED]:
        await a.memory.update(item.id, content=f"{item.content}, edited")


async def converged(
    a: Device, b: Device, url: str, records: dict[str, bytes], export: list[str]
) -> None:
    """B holds A's records and export, another sync is a no-op on both, and the hub
    holds every record once; then both close."""
    assert await b.records() == records
    assert await b.export() == export
    assert len(await b.memory.list()) == N
    assert (await b.memory.stats())["sync"]["pending"] == 0  # pulled records never go back
    for device in (a, b):
        done = await device.memory.sync(url)
        assert (done.pushed, done.pulled, done.conflicts) == (0, 0, 0)
    await check_hub(url, records)
    await a.close()
    await b.close()


async def round_now(memory: Memory) -> dict[str, Any]:
    found = (await memory.stats())["sync"]["round"]
    assert isinstance(found, dict)
    return found


async def killed_mid_round(server: SyncServer, gate: Gate, task: asyncio.Task[Any]) -> SyncError:
    """SIGKILL the hub while ``gate`` holds a request of the round ``task``; the error the
    round then fails with (in bounded time, not a hang)."""
    server.kill()
    gate.open()
    with pytest.raises(SyncError) as caught:
        await asyncio.wait_for(task, 20)
    assert caught.value.code == "sync_failed" and caught.value.retryable is True
    return caught.value


def restart(server: SyncServer) -> None:
    assert server.data_dir is not None
    port = server.port
    server.start(port, data_dir=server.data_dir)
    assert server.port == port


async def hub_docs(url: str) -> list[dict[str, Any]]:
    """Every document on the hub, checked to be there once: one leaf revision each (no
    conflicts), in the feed once."""
    async with httpx.AsyncClient() as client:
        rows = (await client.get(f"{url}/_all_docs?include_docs=true&conflicts=true")).json()
        feed = (await client.get(f"{url}/_changes?style=all_docs&since=0")).json()
    docs = [row["doc"] for row in rows["rows"]]
    ids = [doc["_id"] for doc in docs]
    assert len(ids) == len(set(ids)) == rows["total_rows"]
    assert sorted(r["id"] for r in feed["results"]) == sorted(ids)
    assert all(len(r["changes"]) == 1 for r in feed["results"])
    assert not [doc["_id"] for doc in docs if "_conflicts" in doc]
    return docs


async def check_hub(url: str, want: dict[str, bytes]) -> None:
    """The hub holds exactly ``want``'s keys (and its store record), each written once."""
    docs = await hub_docs(url)
    assert sorted(d["_id"] for d in docs) == sorted([STORE_DOC] + [DOC_PREFIX + k for k in want])
    twice = [d["_id"] for d in docs if d["_id"] != STORE_DOC and not d["_rev"].startswith("1-")]
    assert twice == []


async def page_keys(url: str, limit: int) -> list[str]:
    """The keys of the first ``limit`` rows of the hub's feed: the pull's first page."""
    async with httpx.AsyncClient() as client:
        feed = (await client.get(f"{url}/_changes?style=main_only&limit={limit}&since=0")).json()
    assert len(feed["results"]) == limit
    ids = [row["id"] for row in feed["results"]]
    return [i[len(DOC_PREFIX) :] for i in ids if i.startswith(DOC_PREFIX)]


@pytest.mark.parametrize(
    ("encrypted", "lost"), [(False, "request"), (False, "answer"), (True, "request")]
)
async def test_hub_killed_mid_push(
    server: SyncServer, tmp_path: Path, encrypted: bool, lost: str
) -> None:
    url = f"{server.url}/pm-push"
    a = await Device.open(tmp_path / "a.db", encrypted)
    await fill(a)
    records, export = await a.records(), await a.export()
    assert len(records) == N + EDITED + 1 + encrypted  # items, history, schema (and key)

    gate = Gate("_bulk_docs", nth=2, lose_answer=lost == "answer")
    a.memory.syncs.transport = lambda: gate
    task = asyncio.create_task(a.memory.sync(url))
    await held(gate, task)
    first = replicator.PUSH_BATCH
    assert (await round_now(a.memory))["pushed"] == first  # the first batch is on the hub
    await killed_mid_round(server, gate, task)
    assert await a.records() == records and await a.export() == export
    assert (await a.memory.stats())["sync"]["round"] is None

    restart(server)
    landed = len(records) if lost == "answer" else first  # kept on disk through the kill
    assert len(await hub_docs(url)) == 1 + landed
    a.memory.syncs.transport = None
    again = await a.memory.sync(url)
    # a batch the hub took without telling is found there and adopted, not written again
    assert (again.pushed, again.pulled, again.conflicts) == (len(records) - landed, 0, 0)
    assert await a.records() == records and await a.export() == export
    await check_hub(url, records)

    if encrypted:  # a new device of an encrypted store: pull first, then unlock
        fresh = await SqliteKv.open(tmp_path / "b.db")
        assert (await sync_store(fresh, url)).pulled == len(records)
        kv = await EncryptedKv.open(fresh, passphrase=PASS, iterations=1000)
        b = Device(await Memory.open(kv), fresh, kv)
    else:
        b = await Device.open(tmp_path / "b.db", encrypted)
        assert (await b.memory.sync(url)).pulled == len(records) - 1  # its schema record: same
    await converged(a, b, url, records, export)


async def test_hub_killed_mid_pull(server: SyncServer, tmp_path: Path) -> None:
    url = f"{server.url}/pm-pull"
    a = await Device.open(tmp_path / "a.db", encrypted=False)
    await fill(a)
    await a.memory.sync(url)
    records, export = await a.records(), await a.export()

    b = await Device.open(tmp_path / "b.db", encrypted=False)
    own = await b.records()
    assert list(own) == [SCHEMA_RECORD] and own[SCHEMA_RECORD] == records[SCHEMA_RECORD]
    gate = Gate("_changes", nth=2)  # the feed's second page
    b.memory.syncs.transport = lambda: gate
    task = asyncio.create_task(b.memory.sync(url))
    await held(gate, task)
    mid = await round_now(b.memory)
    assert mid["phase"] == "pull" and mid["pushed"] == 0
    await killed_mid_round(server, gate, task)

    # what B holds is the first page, whole, as A wrote it: and B reads it
    got = await b.records()
    assert all(records[k] == v for k, v in got.items())
    restart(server)
    page = await page_keys(url, replicator.PULL_BATCH)
    assert set(got) == set(page) | {SCHEMA_RECORD}
    pulled = len(set(page) - {SCHEMA_RECORD})
    assert mid["pulled"] == pulled
    in_page = sum(k.startswith("mem:") for k in page)
    assert 0 < in_page < N
    assert len(await b.memory.list()) == in_page
    await b.close()
    b = await Device.open(tmp_path / "b.db", encrypted=False)
    assert len(await b.memory.list()) == in_page
    assert await b.records() == got
    partial = await b.export()  # the first page's items, as on A
    assert set(partial) <= set(export)
    assert sum('"kind":"memory"' in line for line in partial) == in_page

    again = await b.memory.sync(url)  # resumes after the applied page
    assert (again.pushed, again.pulled, again.conflicts) == (0, len(records) - 1 - pulled, 0)
    await converged(a, b, url, records, export)
