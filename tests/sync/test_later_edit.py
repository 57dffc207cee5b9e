"""The later edit wins (issue 37): a record's clock is stamped when the edit is made, kept
through every push, pull and retry, so whichever device syncs first, the edit made last
survives on every device; the loser is in history with ``conflict=True``; the conflict is
counted once, against its item. Against the real hub (pouchdb-server)."""

from __future__ import annotations

import asyncio

import pytest
from issue37 import device, export, settle, shown, skewed

from pymemory import Memory, NotFoundError


async def two_edits(hub: str, encrypted: bool) -> tuple[Memory, Memory, str]:
    a = await device(hub, encrypted, first=True)
    item = await a.add("The boat leaves at six.", scope="s")
    await a.sync(hub)
    b = await device(hub, encrypted)
    await b.sync(hub)
    await a.update(item.id, content="The boat leaves at seven (a).")
    await asyncio.sleep(1.0)  # a second later, on the other device
    await b.update(item.id, content="The boat leaves at eight (b).")
    return a, b, item.id


@pytest.mark.parametrize("encrypted", [False, True], ids=["plain", "encrypted"])
@pytest.mark.parametrize("first", ["b", "a"], ids=["b-syncs-first", "a-syncs-first"])
async def test_the_later_edit_wins_whoever_syncs_first(
    hub: str, encrypted: bool, first: str
) -> None:
    a, b, item_id = await two_edits(hub, encrypted)
    order = [b, a] if first == "b" else [a, b]
    results = await settle(order, hub)
    for m in (a, b):
        assert (await m.get(item_id)).content == "The boat leaves at eight (b)."
        assert await shown(m, item_id) == [
            ("The boat leaves at six.", 1, False),
            ("The boat leaves at seven (a).", 2, True),  # the loser, kept and marked
            ("The boat leaves at eight (b).", 2, False),
        ]
    assert sum(r.conflicts for r in results) == 1  # one item, one conflict, counted once
    assert [r.conflicted for r in results if r.conflicts] == [[item_id]]
    decider = a if first == "b" else b  # the device whose round met the conflict
    last = (await decider.stats())["sync"]["lastRound"]
    assert last["conflictItems"] in ([item_id], [])  # [] when a later round of it ran
    assert await export(a) == await export(b)
    for m in (a, b):
        again = await m.sync(hub)
        assert (again.pushed, again.pulled, again.conflicts) == (0, 0, 0)
        await m.close()


async def test_one_conflict_is_reported_in_stats(hub: str) -> None:
    a, b, item_id = await two_edits(hub, False)
    await b.sync(hub)
    done = await a.sync(hub)  # a's round decides it (a's older edit loses)
    assert (done.conflicts, done.conflicted) == (1, [item_id])
    assert done.to_dict()["conflictItems"] == [item_id]
    sync = (await a.stats())["sync"]
    assert sync["lastRound"]["conflicts"] == 1
    assert sync["lastRound"]["conflictItems"] == [item_id]
    await a.close()
    await b.close()


@pytest.mark.parametrize("encrypted", [False, True], ids=["plain", "encrypted"])
async def test_a_clock_running_ahead_wins_until_its_edits_are_seen(
    hub: str, encrypted: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Clock skew beyond what the HLC can order (docs/sync.md): concurrent edits are
    ordered by their devices' clocks, so a device whose clock runs 10 s ahead wins
    against an edit made 1 s after its own; but an edit made after the device has SEEN
    that record wins whatever its clock says (the HLC is advanced by what it pulls)."""
    a = await device(hub, encrypted, first=True)
    item = await a.add("The meeting is on Monday.", scope="s")
    await a.sync(hub)
    b = await device(hub, encrypted)
    await b.sync(hub)
    with skewed(10.0, monkeypatch):
        await a.update(item.id, content="The meeting is on Tuesday (a, clock +10 s).")
    await asyncio.sleep(1.0)
    await b.update(item.id, content="The meeting is on Wednesday (b, 1 s later).")
    await settle([b, a], hub)
    for m in (a, b):  # a's clock says its edit was later: it wins
        assert (await m.get(item.id)).content == "The meeting is on Tuesday (a, clock +10 s)."
    await b.update(item.id, content="The meeting is on Thursday (b, after seeing a's).")
    with skewed(10.0, monkeypatch):
        await a.sync(hub)  # nothing new on a; a's clock still 10 s ahead
    await settle([b, a], hub)
    for m in (a, b):  # b's edit came after b had seen a's: it wins despite b's clock
        assert (await m.get(item.id)).content == "The meeting is on Thursday (b, after seeing a's)."
    assert await export(a) == await export(b)
    await a.close()
    await b.close()


@pytest.mark.parametrize("encrypted", [False, True], ids=["plain", "encrypted"])
@pytest.mark.parametrize("first", ["a", "b"])
async def test_a_delete_still_beats_a_later_edit_and_its_history_goes(
    hub: str, encrypted: bool, first: str
) -> None:
    """Today's documented rule for an item: a deletion beats any edit, even one made
    after it; the edit's history record goes too, on every device."""
    a = await device(hub, encrypted, first=True)
    item = await a.add("The door code is 42.", scope="s")
    await a.update(item.id, content="The door code is 43.")
    await a.sync(hub)
    b = await device(hub, encrypted)
    await b.sync(hub)
    await a.delete(item.id)
    await asyncio.sleep(0.05)
    await b.update(item.id, content="The door code is 44 (edited after the delete).")
    await settle([a, b] if first == "a" else [b, a], hub)
    await settle([a, b], hub)
    for m in (a, b):
        with pytest.raises(NotFoundError):
            await m.get(item.id)
        assert await m.kv.scan(f"hst:{item.id}:") == []
        assert await m.kv.scan(f"arc:{item.id}") == []
    assert await export(a) == await export(b)
    await a.close()
    await b.close()
