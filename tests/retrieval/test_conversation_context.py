"""A turn means what it means beside its neighbours: the context lift of ``fusion(context)``
(neighbours are the memories before and after one in the same scope, with no gap over
``CONTEXT_GAP_MS``), and the month and year in the indexed text."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import DAY, T0, Clock
from hypothesis import given, settings
from hypothesis import strategies as st

from pymemory import Memory
from pymemory.item import MemoryItem
from pymemory.retrieval.catalog import CONTEXT_GAP_MS, Catalog, index_text, month_words
from pymemory.retrieval.strategies import compose, fusion
from pymemory.storage import MapKv

MINUTE = 60_000


@pytest.fixture
async def memory_clock():
    clock = Clock()
    mem = await Memory.open(MapKv(), clock=clock)
    yield mem, clock
    await mem.close()


async def _add(mem, clock, text, *, scope="default", step=MINUTE):
    item = await mem.add(text, scope=scope)
    clock.advance(step)
    return item


async def test_a_weak_match_beside_a_strong_one_goes_first(memory_clock):
    mem, clock = memory_clock
    # An isolated weak match, written first, a day apart from the conversation.
    lone = await _add(mem, clock, "The garden needs watering.", step=DAY)
    strong = await _add(mem, clock, "Which adoption agency did you pick for the garden visit?")
    beside = await _add(mem, clock, "Bright Futures, and the garden tour is on Sunday.")
    r = await mem.retrieve("agency garden", trace=True)
    ids = [c.id for c in r.trace if c.status == "included"]
    assert ids[0] == strong.id and ids.index(beside.id) < ids.index(lone.id)
    rows = {c.id: c for c in r.trace}
    assert rows[beside.id].context_part > 0 and rows[lone.id].context_part == 0
    assert rows[strong.id].context_part == 0  # nobody beside it scores higher
    for c in r.trace:
        assert c.relevance == pytest.approx(c.dense_part + c.lexical_part + c.context_part)
    # context=() turns the lift off: the two weak matches tie, the newer first.
    off = await mem.retrieve("agency garden", compose(fusion(context=())), trace=True)
    assert all(c.context_part == 0 for c in off.trace)
    assert {c.id: c.relevance for c in off.trace}[beside.id] == pytest.approx(
        rows[beside.id].relevance - rows[beside.id].context_part
    )


async def test_no_lift_across_a_gap_or_a_scope(memory_clock):
    mem, clock = memory_clock
    strong = await _add(mem, clock, "Which adoption agency did you pick for the garden visit?",
                        step=CONTEXT_GAP_MS + MINUTE)  # fmt: skip
    after_gap = await _add(mem, clock, "The garden tour is on Sunday.")
    clock.now -= 30 * MINUTE
    other_scope = await _add(mem, clock, "Water the garden tomorrow.", scope="work")
    r = await mem.retrieve("agency garden", trace=True)
    rows = {c.id: c for c in r.trace}
    assert rows[strong.id].status == "included"
    assert rows[after_gap.id].context_part == 0 and rows[other_scope.id].context_part == 0


async def test_the_second_neighbour_lifts_less_than_the_first(memory_clock):
    mem, clock = memory_clock
    strong = await _add(mem, clock, "Our flight to Lisbon is TP1351 on the 3rd of May.")
    first = await _add(mem, clock, "Lovely, pack light then.")
    second = await _add(mem, clock, "Lisbon in May sounds lovely.")
    weights = (0.5, 0.4)
    r = await mem.retrieve("Lisbon flight TP1351", compose(fusion(context=weights)), trace=True)
    rows = {c.id: c for c in r.trace}
    top = rows[strong.id].relevance
    own = rows[second.id].relevance - rows[second.id].context_part
    # "second" is two turns from the strong match (its direct neighbour "first" does not
    # match at all): it moves 0.4 of the way up.
    assert rows[second.id].context_part == pytest.approx(weights[1] * (top - own))
    assert first.id not in rows or rows[first.id].status == "no_match"


async def test_a_bulk_import_of_one_timestamp_keeps_its_order(memory_clock):
    mem, clock = memory_clock
    items = await mem.add_many(
        [{"text": t, "timestamp": clock.now} for t in
         ("Noise about tea.", "Where did you go on holiday?", "Porto, for the food.",
          "More noise about tea.")]
    )  # fmt: skip
    order, pos, run = mem._catalog.context_order()  # the order the lift reads
    slots = [mem._catalog.slot_of[i.id] for i in items]
    assert [int(pos[s]) for s in slots] == sorted(int(pos[s]) for s in slots)
    assert len({int(run[pos[s]]) for s in slots}) == 1
    await mem.delete(items[1].id)
    order, pos, _ = mem._catalog.context_order()
    assert items[1].id not in [mem._catalog.id_at[s] for s in order.tolist()]


def test_the_index_holds_the_month_and_year():
    assert month_words(1_780_000_000_000) == "May 2026"
    assert month_words(1_780_000_000_000 + 40 * DAY).startswith("July")


async def test_a_month_in_the_question_finds_what_was_said_then(memory_clock):
    mem, clock = memory_clock
    march = await mem.add("Went to the pottery class with Jo.", timestamp=clock.now - 70 * DAY)
    await mem.add("Went to the climbing wall with Jo.", timestamp=clock.now - 10 * DAY)
    item = await mem.get(march.id)
    assert month_words(item.timestamp) in index_text(item)
    month, year = month_words(item.timestamp).split()
    r = await mem.retrieve(f"What did I do with Jo in {month} {year}?")
    assert r.items[0].id == march.id


def _check_order(catalog: Catalog) -> None:
    order, pos, run = catalog.context_order()
    live = catalog.live_slots()
    fresh = live[np.lexsort((live, catalog.ts[live], catalog.scope_code[live]))]
    assert order.tolist() == fresh.tolist()
    assert all(pos[s] == i for i, s in enumerate(order.tolist()))
    ts, sc = catalog.ts[order], catalog.scope_code[order]
    breaks = (sc[1:] != sc[:-1]) | (ts[1:] - ts[:-1] > CONTEXT_GAP_MS)
    assert (np.diff(run) == breaks).all()


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("aaaarrcx"), st.integers(0, 11), st.integers(0, 3)),
                max_size=80))  # fmt: skip
def test_the_kept_order_is_always_the_order_a_fresh_sort_gives(ops):
    """Adds (a), reads (r), removes (x) and changes of time or scope (c) in any mix: the
    conversation order kept between reads (new items inserted into it) equals a sort from
    scratch."""
    catalog, ids, n = Catalog(), [], 0

    def item(i: int, minute: int, scope: int) -> MemoryItem:
        return MemoryItem(f"00000000-0000-4000-8000-{i:012d}", "message",
                          T0 + minute * 20 * 60_000, "x", "x", {}, scope=f"s{scope}")  # fmt: skip

    for op, minute, scope in ops:
        if op == "a" or not ids:
            n += 1
            ids.append(item(n, minute, scope).id)
            catalog.put(item(n, minute, scope))
        elif op == "x":
            catalog.remove(ids.pop(minute % len(ids)))
        elif op == "c":
            catalog.put(item(int(ids[minute % len(ids)][-12:]), minute, scope))
        else:
            _check_order(catalog)
    _check_order(catalog)


def test_a_reused_slot_is_inserted_among_its_equals_by_slot():
    catalog = Catalog()
    items = [MemoryItem(f"00000000-0000-4000-8000-{i:012d}", "message", T0, "x", "x", {})
             for i in range(1, 5)]  # fmt: skip
    for it in items:
        catalog.put(it)
    catalog.remove(items[0].id)  # frees slot 0
    _check_order(catalog)  # rebuilt
    catalog.put(MemoryItem("00000000-0000-4000-8000-000000000009", "message", T0, "x", "x", {}))
    _check_order(catalog)  # slot 0 again: inserted first among the equal timestamps
