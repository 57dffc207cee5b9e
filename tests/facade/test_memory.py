"""The Memory facade: CRUD, retrieval, feedback, clear, TTL, archive, export/import."""

import asyncio
import json

import pytest
from helpers import DAY, HOUR, T0, Clock

from pymemory import (
    ConflictError,
    ImportFormatError,
    Memory,
    NotFoundError,
    StoreClosedError,
    ValidationError,
    by_scope,
    by_tag,
    by_type,
    compose,
    feedback_weight,
    time_decay,
    time_window,
)
from pymemory.retrieval.results import format_line
from pymemory.retrieval.strategies import DECAY_BY_TYPE, FEEDBACK_LIKED
from pymemory.storage import MapKv, SqliteKv


async def test_add_get_update_delete(memory):
    item = await memory.add("I prefer answers as tables.", type="user_preference", tags=["format"])
    assert item.type == "user_preference"
    assert item.timestamp == T0
    assert item.text == "I prefer answers as tables."
    assert item.content and len(item.content) <= 200
    assert await memory.get(item.id) == item

    updated = await memory.update(item.id, tags=["format", "ui"], metadata={"source": "settings"})
    assert updated.tags == ("format", "ui")
    assert updated.metadata["source"] == "settings"
    assert updated.content == item.content

    await memory.delete(item.id)
    with pytest.raises(NotFoundError):
        await memory.get(item.id)
    with pytest.raises(NotFoundError):
        await memory.delete(item.id)


async def test_long_text_is_summarised_and_kept(memory):
    text = ("We reviewed the quarterly plan in detail. " * 12) + "Please export the report as CSV."
    item = await memory.add(text)
    assert len(text) > 200
    assert len(item.content) <= 200
    assert item.text == text
    assert item.content_method == "rules"


async def test_given_content_is_used(memory):
    item = await memory.add("long raw text " * 30, content="Short summary.")
    assert item.content == "Short summary."
    assert item.content_method == "given"
    with pytest.raises(ValidationError):
        await memory.add(content="x" * 201)


async def test_update_text_resummarises(memory):
    item = await memory.add("Please book a table for two.")
    new = await memory.update(item.id, text="Please cancel the booking for Friday.")
    assert new.text == "Please cancel the booking for Friday."
    assert "cancel" in new.content
    result = await memory.retrieve("cancel booking")
    assert result.items == [new]
    assert (await memory.retrieve("table for two")).items == []


async def test_list_filters(memory, clock):
    a = await memory.add("alpha", scope="conversation", tags=["x"])
    clock.advance(1000)
    b = await memory.add("beta", scope="user", type="user_preference", tags=["y"])
    clock.advance(1000)
    c = await memory.add("gamma", scope="conversation", type="tool_result", tags=["x", "y"])
    assert [i.id for i in await memory.list()] == [c.id, b.id, a.id]
    assert [i.id for i in await memory.list(scope="conversation")] == [c.id, a.id]
    assert [i.id for i in await memory.list(type=["user_preference", "tool_result"])] == [
        c.id,
        b.id,
    ]
    assert [i.id for i in await memory.list(tags=["y"])] == [c.id, b.id]
    assert [i.id for i in await memory.list(since_ms=T0 + 500, until_ms=T0 + 1500)] == [b.id]
    assert [i.id for i in await memory.list(limit=1)] == [c.id]


async def test_retrieve_ranks_by_relevance(memory):
    await memory.add("The user's dog is called Biscuit.")
    target = await memory.add("Export the sales report as CSV every Monday.")
    await memory.add("The meeting moved to Thursday afternoon.")
    result = await memory.retrieve("csv export of the report")
    assert result.mode == "bm25"
    assert result.items[0] == target
    assert len(result.items) == 1
    assert target.content in result.text
    assert result.tokens_used == memory.token_counter.count(result.text)


async def test_retrieve_chinese(memory):
    await memory.add("用户确认了3个权限角色，下周二上线。", tags=["meeting"])
    await memory.add("北京天气23度多云。", type="tool_result")
    result = await memory.retrieve("权限角色什么时候上线")
    assert result.items and "权限" in result.items[0].content


async def test_empty_query_ranks_by_recency(memory, clock):
    old = await memory.add("first note")
    clock.advance(DAY)
    new = await memory.add("second note")
    result = await memory.retrieve("", max_items=5)
    assert result.mode == "recency"
    assert result.items == [new, old]


async def test_decay_ranks_old_lower_but_keeps_it(memory, clock):
    old = await memory.add("deploy checklist for the api server", type="tool_result")
    old_msg = await memory.add("deploy checklist for the api server")
    clock.advance(60 * DAY)
    new = await memory.add("deploy checklist for the api server", type="tool_result")
    result = await memory.retrieve("deploy checklist", trace=True)
    rows = {c.id: c for c in result.trace}
    # Tool results go stale: the old one sinks to its type's floor but stays retrievable.
    _, floor = DECAY_BY_TYPE["tool_result"]
    assert rows[old.id].decay == pytest.approx(floor, abs=0.01)
    assert rows[old.id].decay < rows[new.id].decay
    assert [i.id for i in result.items].index(new.id) < [i.id for i in result.items].index(old.id)
    # What was said (a message) does not fade by default.
    assert rows[old_msg.id].decay == 1.0 and DECAY_BY_TYPE["message"] == (None, 1.0)
    uniform = await memory.retrieve("deploy checklist", time_decay(24, floor=0.3), trace=True)
    assert {c.id: round(c.decay, 2) for c in uniform.trace}[old_msg.id] == 0.3
    no_decay = await memory.retrieve("deploy checklist", time_decay(None), trace=True)
    assert {c.decay for c in no_decay.trace} == {1.0}


async def test_feedback_weight_and_batching(memory):
    a = await memory.add("use tabs for indentation")
    b = await memory.add("use spaces for indentation")
    await memory.feedback(b.id, "liked")
    result = await memory.retrieve("indentation", trace=True)
    assert result.items[0].id == b.id
    assert {c.id: c.feedback_weight for c in result.trace} == {a.id: 1.0, b.id: FEEDBACK_LIKED}
    # Queued, not yet in the store.
    raw = json.loads(await memory.kv.get("mem:" + b.id))
    assert raw["feedback"]["liked"] == 0
    assert (await memory.stats())["pending_feedback"] == 1
    assert await memory.flush() == 1
    raw = json.loads(await memory.kv.get("mem:" + b.id))
    assert raw["feedback"]["liked"] == 1
    await memory.feedback(a.id, "important")
    await memory.feedback(a.id, "liked")
    result = await memory.retrieve("indentation", feedback_weight(liked=2, important=10))
    assert result.items[0].id == a.id
    with pytest.raises(ValidationError):
        await memory.feedback(a.id, "love")
    with pytest.raises(NotFoundError):
        await memory.feedback("00000000-0000-4000-8000-000000000000", "liked")


async def test_feedback_flushed_in_background_and_on_close(tmp_path):
    path = tmp_path / "fb.db"
    mem = await Memory.open(path, feedback_flush_s=0.05)
    item = await mem.add("remember the milk")
    await mem.feedback(item.id, "liked")
    for _ in range(100):
        if (await mem.stats())["pending_feedback"] == 0:
            break
        await asyncio.sleep(0.01)
    raw = json.loads(await mem.kv.get("mem:" + item.id))
    assert raw["feedback"]["liked"] == 1
    await mem.feedback(item.id, "important")
    await mem.close()
    mem = await Memory.open(path, feedback_flush_s=3600)
    assert (await mem.get(item.id)).feedback.important
    await mem.close()


async def test_disliked_weight_zero_cuts(memory):
    a = await memory.add("lunch at noon")
    await memory.feedback(a.id, "disliked")
    result = await memory.retrieve("lunch", feedback_weight(disliked=0), trace=True)
    assert result.items == []
    assert result.trace[0].status == "zero_weight"


async def test_strategies_filter_and_trace_reasons(memory, clock):
    old = await memory.add("project x kickoff notes", tags=["project_x"], scope="user")
    clock.advance(10 * DAY)
    pref = await memory.add(
        "project x prefers weekly updates", type="user_preference", scope="user"
    )
    tagged = await memory.add("project x budget approved", tags=["project_x", "finance"])
    strategy = compose(time_window(hours=72), by_tag("project_x"))
    result = await memory.retrieve("project x", strategy, trace=True)
    assert result.items == [tagged]
    status = {c.id: c.status for c in result.trace}
    assert status == {old.id: "time_window", pref.id: "tag", tagged.id: "included"}
    assert (await memory.retrieve("project x", by_type("user_preference"))).items == [pref]
    assert {i.id for i in (await memory.retrieve("project x", by_scope("user"))).items} == {
        old.id,
        pref.id,
    }
    both = await memory.retrieve("project", by_tag(["project_x", "finance"], match="all"))
    assert both.items == [tagged]


async def test_strategy_from_dict(memory):
    await memory.add("alpha beta", tags=["keep"])
    await memory.add("alpha gamma")
    spec = {"kind": "compose", "strategies": [{"kind": "by_tag", "tags": ["keep"]}]}
    result = await memory.retrieve("alpha", spec)
    assert [i.tags for i in result.items] == [("keep",)]


async def test_max_items_and_token_budget(memory):
    for i in range(8):
        await memory.add(f"note {i} about the garden " + "word " * (i * 5))
    result = await memory.retrieve("garden", max_items=3, trace=True)
    assert len(result.items) == 3
    assert sum(c.status == "max_items" for c in result.trace) == 5
    small = await memory.retrieve("garden", max_items=8, max_tokens=40, trace=True)
    assert small.tokens_used <= 40
    assert any(c.status == "token_budget" for c in small.trace)
    # Greedy but not blocked: a smaller item after a skipped one still gets in.
    statuses = [c.status for c in small.trace]
    first_cut = statuses.index("token_budget")
    assert "included" in statuses[first_cut:] or small.tokens_used > 0


async def test_an_item_over_the_budget_goes_in_condensed(memory):
    long = await memory.add(
        "The quarterly garden budget review covered three points. We agreed to replace the "
        "old hoses before May. The compost bins move behind the shed next weekend. Tom will "
        "order seeds for the tomatoes."
    )
    short = await memory.add("the garden budget is tight this quarter")
    full = await memory.retrieve("quarterly garden budget review", max_tokens=1000)
    assert [m.item.id for m in full.memories] == [long.id, short.id]
    assert not any(m.condensed for m in full.memories)
    budget = full.memories[0].tokens - 10  # the long line no longer fits whole
    tight = await memory.retrieve("quarterly garden budget review", max_tokens=budget, trace=True)
    first = tight.memories[0]
    assert first.item.id == long.id and first.condensed
    assert first.tokens <= budget and len(first.line) < len(format_line(long))
    assert "budget review" in first.line  # the sentence the query matched is kept
    assert tight.tokens_used <= budget
    assert {c.id: c.condensed for c in tight.trace if c.status == "included"}[long.id]
    assert (await memory.get(long.id)).content == long.content  # the store is unchanged
    strict = await memory.retrieve("quarterly garden budget review", max_tokens=budget,
                                   condense=False)  # fmt: skip
    assert long.id not in {m.item.id for m in strict.memories}
    with pytest.raises(ValidationError):
        await memory.retrieve("garden", condense="yes")


async def test_ttl_hides_then_sweep_purges(memory, clock):
    temp = await memory.add("current IP is 192.168.1.100", type="tool_result", ttl_ms=60_000)
    keep = await memory.add("IP allow-list policy")
    assert {i.id for i in (await memory.retrieve("IP")).items} == {temp.id, keep.id}
    clock.advance(60_000)
    result = await memory.retrieve("IP", trace=True)
    assert result.items == [keep]
    assert {c.id: c.status for c in result.trace}[temp.id] == "expired"
    assert [i.id for i in await memory.list()] == [keep.id]
    with pytest.raises(NotFoundError):
        await memory.get(temp.id)
    assert (await memory.stats())["expired_pending_sweep"] == 1
    assert await memory.kv.get("mem:" + temp.id) is not None
    assert await memory.sweep() == 1
    assert await memory.kv.get("mem:" + temp.id) is None


async def test_clear_by_scope_tag_time(memory, clock):
    a = await memory.add("keep me", scope="user")
    start = clock.now + 1
    clock.advance(1000)
    b = await memory.add("forget me", scope="conversation", tags=["t"])
    c = await memory.add("forget me too", scope="conversation")
    assert await memory.clear(scope="conversation", tags=["t"]) == 1
    assert {i.id for i in await memory.list()} == {a.id, c.id}
    assert await memory.clear(scope="conversation", since_ms=start) == 1
    assert [i.id for i in await memory.list()] == [a.id]
    with pytest.raises(ValidationError):
        await memory.clear()
    assert await memory.kv.get("mem:" + b.id) is None


async def test_clear_all_includes_archive(memory, clock):
    await memory.add("old")
    clock.advance(40 * DAY)
    await memory.add("new")
    assert await memory.archive_older_than(30) == 1
    assert await memory.clear(all=True) == 2
    assert (await memory.stats())["archived"] == 0
    assert await memory.kv.scan("arc:") == []


async def test_archive_older_than(memory, clock):
    old = await memory.add("reimbursement process: submit receipts to finance")
    pinned = await memory.add("reimbursement limit is 500 per month")
    await memory.feedback(pinned.id, "important")
    clock.advance(31 * DAY)
    new = await memory.add("new laptop arrives tomorrow")
    assert await memory.archive_older_than(30) == 1
    assert {i.id for i in await memory.list()} == {pinned.id, new.id}
    assert [i.id for i in (await memory.retrieve("reimbursement process")).items] == [pinned.id]
    found = await memory.search_archive("reimbursement receipts")
    assert [a.id for a in found] == [old.id]
    assert found[0].content == old.content
    stored = json.loads(await memory.kv.get("arc:" + old.id))
    assert set(stored) == {"id", "type", "timestamp", "content"}
    assert (await memory.stats())["archived"] == 1
    with pytest.raises(NotFoundError):
        await memory.get(old.id)


async def test_auto_archive_runs_in_background(clock):
    kv = MapKv()
    mem = await Memory.open(kv, clock=clock)
    await mem.add("ancient history")
    await mem.close()
    clock.advance(100 * DAY)
    mem = await Memory.open(kv, clock=clock, auto_archive_days=30)
    for _ in range(100):
        if (await mem.stats())["archived"] == 1:
            break
        await asyncio.sleep(0.01)
    assert (await mem.stats())["archived"] == 1
    assert await mem.list() == []
    await mem.close()


async def test_export_import_round_trip(memory, clock):
    await memory.add("a note", tags=["x"], metadata={"k": [1, 2.5, None]}, ttl_ms=10**9)
    await memory.add("a preference", type="user_preference", scope="user")
    clock.advance(40 * DAY)
    b = await memory.add("recent", scope="conversation:7")
    await memory.feedback(b.id, "liked")
    await memory.archive_older_than(30)
    lines = [line async for line in memory.export()]
    assert json.loads(lines[0]) == {"format": "pymemory-export", "version": 1}

    other = await Memory.open(MapKv(), clock=Clock(clock.now))
    result = await other.import_("".join(lines))
    assert (result.added, result.replaced, result.skipped, result.archived) == (3, 0, 0, 2)
    assert [line async for line in other.export()] == lines
    assert (await other.get(b.id)).feedback.liked == 1
    with pytest.raises(ConflictError):
        await other.import_(lines)
    skipped = await other.import_(lines, on_conflict="skip")
    assert skipped.skipped == 3
    replaced = await other.import_(lines, on_conflict="replace")
    assert replaced.replaced == 3
    assert [line async for line in other.export()] == lines
    await other.close()


@pytest.mark.parametrize(
    "bad",
    [
        "",
        '{"format":"other","version":1}\n',
        '{"format":"pymemory-export","version":1}\nnot json\n',
        '{"format":"pymemory-export","version":1}\n{"kind":"memory","item":{"id":"x"}}\n',
        '{"format":"pymemory-export","version":1}\n{"kind":"thing","item":{}}\n',
    ],
)
async def test_bad_import_changes_nothing(memory, bad):
    await memory.add("existing")
    before = await memory.kv.scan("")
    with pytest.raises(ImportFormatError):
        await memory.import_(bad)
    assert await memory.kv.scan("") == before


async def test_import_rejects_duplicate_ids_and_names_line(memory):
    other = await Memory.open()
    await other.add("x")
    lines = [line async for line in other.export()]
    with pytest.raises(ImportFormatError) as err:
        await memory.import_([*lines, lines[1]])
    assert err.value.line == 3
    assert await memory.list() == []


async def test_persistence_and_index_reload(tmp_path):
    path = tmp_path / "m.db"
    mem = await Memory.open(path)
    item = await mem.add("the wifi password is on the fridge", tags=["home"])
    await mem.close()
    mem = await Memory.open(path)
    assert await mem.get(item.id) == item
    assert (await mem.retrieve("wifi password")).items == [item]
    await mem.close()
    with pytest.raises(StoreClosedError):
        await mem.add("after close")


async def test_kv_passed_in_stays_open(clock):
    kv = await SqliteKv.open(":memory:")
    mem = await Memory.open(kv, clock=clock)
    await mem.add("x")
    await mem.close()
    assert await kv.scan("mem:") != []
    await kv.close()


async def test_unreadable_record_is_kept_and_reported(clock):
    kv = MapKv()
    mem = await Memory.open(kv, clock=clock)
    good = await mem.add("fine")
    await mem.close()
    await kv.put_many([("mem:broken", b"{not json")])
    mem = await Memory.open(kv, clock=clock)
    assert [i.id for i in await mem.list()] == [good.id]
    assert (await mem.stats())["unreadable_records"] == 1
    assert await kv.get("mem:broken") == b"{not json"
    await mem.close()


async def test_concurrent_adds_all_land(tmp_path):
    mem = await Memory.open(tmp_path / "c.db")
    items = await asyncio.gather(*(mem.add(f"note number {i}") for i in range(50)))
    assert len({i.id for i in items}) == 50
    await mem.close()
    mem = await Memory.open(tmp_path / "c.db")
    assert len(await mem.list()) == 50
    await mem.close()


async def test_stats(memory, clock):
    await memory.add("a", type="tool_result", scope="session")
    await memory.add("b")
    stats = await memory.stats()
    assert stats["items"] == 2
    assert stats["by_type"] == {"message": 1, "tool_result": 1}
    assert stats["by_scope"] == {"global": 1, "session": 1}
    assert stats["oldest_ms"] == T0
    assert stats["schema_version"] == 3


async def test_hours_window_uses_clock(memory, clock):
    a = await memory.add("status report")
    clock.advance(25 * HOUR)
    b = await memory.add("status report")
    assert (await memory.retrieve("status", time_window(hours=24))).items == [b]
    assert {i.id for i in (await memory.retrieve("status")).items} == {a.id, b.id}
