"""The sync property run (issue 37), shared by tests/sync/test_sync_property.py (CI) and
benchmarks/bench_sync_property.py (more interleavings).

One interleaving, from a seed: three devices (all plain or all encrypted) of one store
on a real pouchdb-server behind a :class:`~faultproxy.FaultProxy`, and a random sequence
of adds, updates, deletes, archives, clears and sync rounds, some of whose answers are
lost (a dropped connection, a 500, a truncated or short body, on the push or the pull),
with the hub killed and restarted now and then. Time is simulated: each step is 10 s
after the one before, and each device's clock is off by up to :data:`SKEW_MS` either way
(within the bound under which "edited last" is well defined: less than half a step).
Then every device syncs until nothing moves, and:

- every device has the same export;
- a live item's content is the one edited last (by true time), on every device;
- no deleted item (delete or clear, acknowledged by the call returning) is anywhere,
  live or archived; during the run, never again on the device that deleted it;
- every version a live item ever had is in its history on every device, past versions
  in version order.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from faultproxy import MODES, FaultProxy, Lose

from pymemory import Memory, NotFoundError
from pymemory.errors import SyncError
from pymemory.storage import EncryptedKv, MapKv, changes
from pymemory.sync import sync_store

STEP_MS = 10_000
SKEW_MS = 3_000
BASE_MS = 1_800_000_000_000
PASS = "property passphrase"


@dataclass
class Item:
    edits: list[tuple[int, str]] = field(default_factory=list)  # (true time, content)
    deleted: bool = False
    archived: bool = False


@dataclass
class Stats:
    ops: dict[str, int] = field(default_factory=dict)
    lost: int = 0
    restarts: int = 0

    def count(self, name: str) -> None:
        self.ops[name] = self.ops.get(name, 0) + 1


class World:
    """One interleaving's devices, simulated time and model of what must hold."""

    def __init__(
        self, seed: int, proxy: FaultProxy, url: str, direct: str, restart: Callable[[], None]
    ) -> None:
        self.rng = random.Random(seed)
        self.proxy, self.restart = proxy, restart
        self.url = direct  # the hub itself; ``faulty`` (through the proxy) for lost answers
        self.faulty = url
        self.encrypted = seed % 2 == 1
        self.step = 0
        self.skews = [self.rng.randint(-SKEW_MS, SKEW_MS) for _ in range(3)]
        self.current = 0  # the device acting now (whose clock the change log reads)
        self.devices: list[Memory] = []
        self.items: dict[str, Item] = {}
        self.deleted_on: list[set[str]] = [set(), set(), set()]
        self.stats = Stats()
        self.made = 0
        self.trail: list[str] = []  # what was done, for a failure's message

    def now(self, device: int) -> int:
        return BASE_MS + self.step * STEP_MS + self.skews[device]

    def wall(self) -> int:  # changes.now_ms, patched for the run
        return self.now(self.current)

    async def open(self) -> None:
        for n in range(3):
            inner = MapKv()
            if self.encrypted:
                if n:
                    self.current = n
                    await sync_store(inner, self.url)
                kv: Any = await EncryptedKv.open(inner, passphrase=PASS, iterations=1000)
            else:
                kv = inner
            memory = await Memory.open(kv, clock=lambda n=n: self.now(n))
            self.devices.append(memory)
            if n == 0 and self.encrypted:
                await memory.sync(self.url)  # the store's key record, for the others

    async def close(self) -> None:
        for m in self.devices:
            await m.close()

    # --- operations --------------------------------------------------------------------

    async def live_on(self, d: int) -> list[str]:
        return sorted(i.id for i in await self.devices[d].list())

    async def op(self) -> None:
        self.step += 1
        d = self.current = self.rng.randrange(3)
        m = self.devices[d]
        roll = self.rng.random()
        t = BASE_MS + self.step * STEP_MS
        if roll < 0.16:
            self.made += 1
            text = f"note {self.made} from device {d}"
            scope = self.rng.choice(["s1", "s2"])
            item = await m.add(text, scope=scope)
            self.items[item.id] = Item([(t, item.content)])
            self.note(f"{d} add {item.id[:8]} {scope}")
            self.stats.count("add")
        elif roll < 0.45:
            live = await self.live_on(d)
            if live:
                target = self.rng.choice(live)
                content = f"edit {self.step} of {target[:8]} on device {d}"
                await m.update(target, content=content)
                self.items[target].edits.append((t, content))
                self.note(f"{d} update {target[:8]}")
                self.stats.count("update")
        elif roll < 0.52:
            live = await self.live_on(d)
            if live:
                target = self.rng.choice(live)
                await m.delete(target)
                self.mark_deleted(d, [target])
                self.note(f"{d} delete {target[:8]}")
                self.stats.count("delete")
        elif roll < 0.545:
            live = await self.live_on(d)
            await m.archive_older_than(0)
            for target in live:
                self.items[target].archived = True
            self.note(f"{d} archive {[x[:8] for x in live]}")
            self.stats.count("archive")
        elif roll < 0.56:
            live = [i.id for i in await m.list() if i.scope == "s2"]
            await m.clear(scope="s2")
            self.mark_deleted(d, live)
            self.note(f"{d} clear {[x[:8] for x in live]}")
            self.stats.count("clear")
        elif roll < 0.568:
            self.restart()
            self.stats.restarts += 1
            self.note("hub restart")
        else:
            await self.sync(d)
        await self.check_own_deletes(d)

    def mark_deleted(self, d: int, ids: list[str]) -> None:
        for target in ids:
            self.items[target].deleted = True
            self.deleted_on[d].add(target)

    async def sync(self, d: int) -> None:
        rule = None
        if self.rng.random() < 0.25:
            path = self.rng.choice(["/_bulk_docs", "/_bulk_docs", "/_changes"])
            method = "POST" if path == "/_bulk_docs" else "GET"
            rule = Lose(method, path, self.rng.choice(MODES))
            self.proxy.lose = [rule]
        try:
            done = await self.devices[d].sync(self.url if rule is None else self.faulty)
            self.stats.count("sync")
            self.note(f"{d} sync +{done.pushed} -{done.pulled} c{done.conflicts}")
        except SyncError as exc:
            if rule is None or not rule.hits or not exc.retryable:
                raise
            self.stats.lost += 1
            self.note(f"{d} sync LOST {rule.method} {rule.path} {rule.mode}")
        finally:
            self.proxy.lose = []

    async def check_own_deletes(self, d: int) -> None:
        m = self.devices[d]
        live = set(await self.live_on(d))
        archived = {a.id for a in await m.search_archive("", limit=10_000)}
        back = self.deleted_on[d] & (live | archived)
        assert not back, f"device {d}: deleted items came back: {sorted(back)}{self.told()}"

    def note(self, what: str) -> None:
        self.trail.append(f"step {self.step}: {what}")

    def told(self) -> str:
        return "\n" + "\n".join(self.trail[-40:])

    # --- the end -----------------------------------------------------------------------

    async def settle(self) -> None:
        for _ in range(10):
            moved = 0
            for d in range(3):
                self.step += 1
                self.current = d
                done = await self.devices[d].sync(self.url)
                moved += done.pushed + done.pulled
            if not moved:
                return
        raise AssertionError("the devices never settled")

    async def check(self) -> None:
        exports = [[line async for line in m.export()] for m in self.devices]
        assert exports[0] == exports[1] == exports[2], "the devices' exports differ"
        for d, m in enumerate(self.devices):
            live = {i.id: i for i in await m.list()}
            archived = {a.id for a in await m.search_archive("", limit=10_000)}
            for item_id, item in self.items.items():
                where = f"device {d}, item {item_id}"
                where += self.told()
                if item.deleted:
                    assert item_id not in live and item_id not in archived, where
                    try:
                        await m.get(item_id)
                    except NotFoundError:
                        pass
                    else:
                        raise AssertionError(f"{where}: a deleted item is back")
                elif item.archived:
                    assert item_id not in live and item_id in archived, where
                else:
                    latest = max(item.edits)[1]
                    assert live[item_id].content == latest, (where, live[item_id].content, latest)
                    history = await m.history(item_id)
                    contents = {v.item.content for v in history}
                    missing = {c for _, c in item.edits} - contents
                    assert not missing, (where, missing)
                    numbers = [v.item.version for v in history[:-1]]
                    assert numbers == sorted(numbers), (where, numbers)


async def run(
    seed: int,
    proxy: FaultProxy,
    db: str,
    restart: Callable[[], None],
    *,
    ops: int = 24,
) -> Stats:
    """One interleaving (the module docstring) on the database ``db`` of the hub behind
    ``proxy``; its counts. AssertionError if a property fails."""
    direct = f"http://{proxy.upstream[0]}:{proxy.upstream[1]}/{db}"
    world = World(seed, proxy, f"{proxy.url}/{db}", direct, restart)
    real = changes.now_ms
    changes.now_ms = world.wall  # type: ignore[assignment]
    try:
        await world.open()
        for _ in range(ops):
            await world.op()
        await world.settle()
        await world.check()
        return world.stats
    finally:
        changes.now_ms = real  # type: ignore[assignment]
        await world.close()
