"""Helpers of the issue-37 sync tests: devices (plain or encrypted), settling rounds, a
skewed wall clock, what a device shows."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from pymemory import Memory
from pymemory.storage import EncryptedKv, KvBackend, MapKv, changes
from pymemory.sync import HttpxTransport, sync_store
from pymemory.sync.records import travels

PASS = "issue 37 passphrase"
FAST = 1000


async def device(hub: str, encrypted: bool, *, first: bool = False) -> Memory:
    """A new device of the store on ``hub``: an encrypted one pulls the key record first
    (unless it is the ``first`` device, which makes the store)."""
    inner = MapKv()
    if not encrypted:
        return await Memory.open(inner)
    if not first:
        await sync_store(inner, hub)
    return await Memory.open(await EncryptedKv.open(inner, passphrase=PASS, iterations=FAST))


def raw_of(m: Memory) -> KvBackend:
    return m.kv.inner if isinstance(m.kv, EncryptedKv) else m.kv


async def records(m: Memory) -> dict[str, bytes]:
    return {k: v for k, v in await raw_of(m).scan("") if travels(k)}


async def export(m: Memory) -> list[str]:
    return [line async for line in m.export()]


async def settle(mems: list[Memory], url: str, *, rounds: int = 8) -> list[Any]:
    """Sync each in turn until a whole pass moves nothing; every round's result."""
    results = []
    for _ in range(rounds):
        moved = 0
        for m in mems:
            done = await m.sync(url)
            results.append(done)
            moved += done.pushed + done.pulled
        if not moved:
            return results
    raise AssertionError("the devices never settled")


async def shown(m: Memory, item_id: str) -> list[tuple[str, int, bool]]:
    return [(v.item.content, v.item.version, v.conflict) for v in await m.history(item_id)]


@contextlib.contextmanager
def skewed(seconds: float, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This process's wall clock, as the change log reads it, ``seconds`` off."""
    real = changes.now_ms
    with monkeypatch.context() as patch:
        patch.setattr(changes, "now_ms", lambda: real() + int(seconds * 1000))
        yield


def quick(timeout_s: float = 5.0) -> HttpxTransport:
    return HttpxTransport(timeout_s=timeout_s)
