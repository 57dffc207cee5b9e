"""Concurrent edits of one item on offline devices: the same winner everywhere, and every
losing version kept in the item's history, flagged ``conflict``, on every device, once
(docs/sync.md, "Conflicts and deletes"). Against the real hub (pouchdb-server)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from gate import Gate, held

from pymemory import Memory, NotFoundError
from pymemory.storage import EncryptedKv, KvBackend, MapKv
from pymemory.sync import sync_store
from pymemory.sync.records import travels

ORDERS = ["abc", "cab", "bca"]


async def settle(mems: dict[str, Memory], hub: str, order: str) -> None:
    """Sync in ``order`` until a whole pass moves nothing; then once more, for nothing."""
    for _ in range(6):
        moved = 0
        for name in order:
            done = await mems[name].sync(hub)
            moved += done.pushed + done.pulled
        if not moved:
            break
    else:
        raise AssertionError("the devices never settled")
    for m in mems.values():
        again = await m.sync(hub)
        assert (again.pushed, again.pulled, again.conflicts) == (0, 0, 0)


def raw_of(m: Memory) -> KvBackend:
    return m.kv.inner if isinstance(m.kv, EncryptedKv) else m.kv


async def records(m: Memory) -> dict[str, bytes]:
    return {k: v for k, v in await raw_of(m).scan("") if travels(k)}


async def shown(m: Memory, item_id: str) -> list[tuple[str, int, bool, int, int | None]]:
    return [
        (v.item.content, v.item.version, v.conflict, v.valid_from, v.valid_to)
        for v in await m.history(item_id)
    ]


async def check_everywhere(mems: dict[str, Memory], item_id: str, edits: set[str]) -> str:
    """Same winner and the same history on every device; each edit once in it, the
    losers flagged. Returns the winner's content."""
    histories = [await shown(m, item_id) for m in mems.values()]
    assert all(h == histories[0] for h in histories), histories
    history = histories[0]
    contents = [content for content, *_ in history]
    assert len(contents) == len(set(contents)), contents  # nothing twice
    winner = history[-1]
    assert winner[2] is False and winner[4] is None
    assert {(await m.get(item_id)).content for m in mems.values()} == {winner[0]}
    assert {c for c, _, conflict, *_ in history if conflict} <= edits - {winner[0]}
    assert set(contents) >= edits
    for m in mems.values():  # nothing left put aside
        assert await raw_of(m).scan("sync:lost:") == []
    return winner[0]


@pytest.mark.parametrize("order", ORDERS)
async def test_every_loser_is_in_every_devices_history(
    hub: str, order: str, tmp_path: Path
) -> None:
    mems = {
        "a": await Memory.open(MapKv()),
        "b": await Memory.open(str(tmp_path / "b.db")),  # SqliteKv
        "c": await Memory.open(MapKv()),
    }
    shared = await mems["a"].add("The garden gate code is 1234.", scope="home")
    for m in mems.values():
        await m.sync(hub)
    edits = {f"The garden gate code is {n}, set on {name}." for n, name in enumerate("abc")}
    for n, name in enumerate("abc"):  # all offline: three edits of one version
        await mems[name].update(shared.id, content=f"The garden gate code is {n}, set on {name}.")
        await asyncio.sleep(0.005)  # each edit a few ms after the one before
    await settle(mems, hub, order)
    winner = await check_everywhere(mems, shared.id, edits)
    history = await shown(mems["a"], shared.id)
    assert {c for c, _, conflict, *_ in history if conflict} == edits - {winner}
    # the later edit wins (c edited last), on every device, whichever order they sync in
    assert winner.endswith("set on c.")
    assert history[0][:3] == ("The garden gate code is 1234.", 1, False)
    want = await records(mems["a"])
    for m in mems.values():
        assert await records(m) == want  # the same records, byte for byte
    conflict_keys = [k for k in want if k.startswith(f"hst:{shared.id}:") and "~" in k]
    assert len(conflict_keys) == 2  # one record per loser, though each device saw some
    for m in mems.values():
        await m.close()


async def test_losing_branches_keep_their_versions(hub: str) -> None:
    """Two updates on each side: the losing side's earlier version too (it met the
    winner's history record of the same version number)."""
    a, b = await Memory.open(MapKv()), await Memory.open(MapKv())
    item = await a.add("Lunch is at noon.", scope="s")
    await a.sync(hub)
    await b.sync(hub)
    for m, side in ((a, "a"), (b, "b")):
        await m.update(item.id, content=f"Lunch is at one ({side}).")
        await m.update(item.id, content=f"Lunch is at two ({side}).")
        await asyncio.sleep(0.005)  # b's edits come after a's: b's line wins
    await settle({"a": a, "b": b}, hub, "ab")
    edits = {f"Lunch is at {t} ({s})." for t in ("one", "two") for s in "ab"}
    winner = await check_everywhere({"a": a, "b": b}, item.id, edits)
    assert winner == "Lunch is at two (b)."
    history = await shown(a, item.id)
    assert [(c, conflict) for c, _, conflict, *_ in history] == [
        ("Lunch is at noon.", False),
        ("Lunch is at one (b).", False),
        ("Lunch is at one (a).", True),
        ("Lunch is at two (a).", True),
        ("Lunch is at two (b).", False),
    ]
    for *_, start, end in history[:-1]:
        assert end is not None and start <= end
    assert history[-1][3] == history[1][4]  # the line of versions is unbroken
    await a.close()
    await b.close()


async def test_encrypted_devices_keep_the_loser(hub: str) -> None:
    a = await Memory.open(await EncryptedKv.open(MapKv(), passphrase="pw", iterations=1000))
    item = await a.add("The spare key is under the blue pot.", scope="home")
    await a.sync(hub)
    inner = MapKv()
    await sync_store(inner, hub)
    b = await Memory.open(await EncryptedKv.open(inner, passphrase="pw", iterations=1000))
    await a.update(item.id, content="The spare key is with the neighbour (a).")
    await asyncio.sleep(0.005)  # b's edit is the later one: it wins
    await b.update(item.id, content="The spare key is in the mailbox (b).")
    mems = {"a": a, "b": b}
    await settle(mems, hub, "ab")
    edits = {"The spare key is with the neighbour (a).", "The spare key is in the mailbox (b)."}
    assert await check_everywhere(mems, item.id, edits) == "The spare key is in the mailbox (b)."
    keys = [set(await records(m)) for m in mems.values()]
    assert keys[0] == keys[1]
    assert sum("~" in k for k in keys[0]) == 1
    await a.close()
    await b.close()


async def test_two_devices_keeping_one_loser_keep_it_once(hub: str) -> None:
    """b and c both decide against a's edit before either pushes: both keep it, under the
    one key its content gives, and the histories still converge."""
    mems = {name: await Memory.open(MapKv()) for name in "abc"}
    item = await mems["a"].add("Meet at the station.", scope="s")
    for m in mems.values():
        await m.sync(hub)
    for name in "abc":  # a edits first: both b and c beat it
        await mems[name].update(item.id, content=f"Meet at the {name} cafe.")
        await asyncio.sleep(0.005)
    await mems["a"].sync(hub)
    gate = Gate("_bulk_docs", nth=2)  # b's round stops before pushing its win
    mems["b"].syncs.transport = lambda: gate
    b_round = asyncio.create_task(mems["b"].sync(hub))
    await held(gate, b_round)
    await mems["c"].sync(hub)  # c keeps a's edit as well, and wins for now
    gate.open()
    await b_round
    mems["b"].syncs.transport = None
    kept = [k for k, _ in await mems["b"].kv.scan(f"hst:{item.id}:") if "~" in k]
    assert kept and kept == [
        k for k, _ in await mems["c"].kv.scan(f"hst:{item.id}:") if "~" in k and k in kept
    ]
    await settle(mems, hub, "abc")
    edits = {f"Meet at the {name} cafe." for name in "abc"}
    await check_everywhere(mems, item.id, edits)
    for m in mems.values():
        assert sum("~" in k for k in await records(m)) == 2
        await m.close()


async def test_export_carries_the_losers(hub: str) -> None:
    a, b = await Memory.open(MapKv()), await Memory.open(MapKv())
    item = await a.add("The boat leaves at six.", scope="s")
    await a.sync(hub)
    await b.sync(hub)
    await a.update(item.id, content="The boat leaves at seven.")
    await b.update(item.id, content="The boat leaves at eight.")
    await settle({"a": a, "b": b}, hub, "ab")
    lines = [line async for line in b.export()]
    assert sum('"conflict":true' in line for line in lines) == 1
    copy = await Memory.open(MapKv())
    await copy.import_(lines)
    assert await shown(copy, item.id) == await shown(b, item.id)
    assert [line async for line in copy.export()] == lines
    for m in (a, b, copy):
        await m.close()


async def test_a_delete_still_beats_an_edit_and_keeps_nothing(hub: str) -> None:
    a, b = await Memory.open(MapKv()), await Memory.open(MapKv())
    item = await a.add("Temporary door code 42.", scope="s")
    await a.update(item.id, content="Temporary door code 43.")
    await a.sync(hub)
    await b.sync(hub)
    await a.delete(item.id)
    await b.update(item.id, content="Temporary door code 44.")
    await settle({"a": a, "b": b}, hub, "ba")
    for m in (a, b):
        with pytest.raises(NotFoundError):
            await m.history(item.id)
        assert not [k for k, _ in await m.kv.scan("hst:") if "~" in k]
        assert await m.kv.scan("sync:lost:") == []
        await m.close()
