"""Property tests: bad input raises a documented exception and leaves the store unchanged."""

import asyncio

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pymemory import Memory, NotFoundError, PymemoryError, StrategyError, ValidationError
from pymemory.item import MAX_TIMESTAMP_MS
from pymemory.storage import MapKv

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))

not_str = (
    st.integers() | st.floats() | st.binary() | st.lists(st.integers(), max_size=2) | st.none()
)
non_json = st.sampled_from(
    [{1, 2}, b"bytes", object(), float("nan"), float("inf"), 1j, (x for x in [])]
)


async def snapshot(mem: Memory):
    return await mem.kv.scan("")


async def seeded() -> Memory:
    mem = await Memory.open(MapKv(), feedback_flush_s=3600)
    await mem.add("seed item", tags=["a"])
    return mem


def run(coro):
    return asyncio.run(coro)


async def assert_rejected(mem: Memory, call, exc=ValidationError):
    before = await snapshot(mem)
    stats = await mem.stats()
    with pytest.raises(exc) as err:
        await call
    assert isinstance(err.value, PymemoryError) and err.value.code
    assert await snapshot(mem) == before
    assert await mem.stats() == stats


@SETTINGS
@given(value=not_str.filter(lambda v: v is not None))
def test_wrong_text_type(value):
    async def body():
        mem = await seeded()
        await assert_rejected(mem, mem.add(value))
        await assert_rejected(mem, mem.add("ok", content=value))
        await mem.close()

    run(body())


@SETTINGS
@given(
    field=st.sampled_from(["type", "scope", "ttl_ms", "timestamp", "tags", "metadata"]),
    value=not_str | st.text(max_size=5).map(lambda s: s + " !"),
)
def test_wrong_field_types(field, value):
    if field in ("ttl_ms", "timestamp", "metadata") and value is None:
        return
    if field == "ttl_ms" and isinstance(value, int) and value > 0:
        return
    if field == "timestamp" and isinstance(value, int) and 0 <= value <= MAX_TIMESTAMP_MS:
        return
    if field == "tags" and value == []:
        return

    async def body():
        mem = await seeded()
        await assert_rejected(mem, mem.add("valid text", **{field: value}))
        await mem.close()

    run(body())


@SETTINGS
@given(value=non_json, key=st.text(min_size=1, max_size=5))
def test_non_json_metadata(value, key):
    async def body():
        mem = await seeded()
        await assert_rejected(mem, mem.add("x", metadata={key: value}))
        await assert_rejected(mem, mem.add("x", metadata={"nested": [{key: value}]}))
        item = (await mem.list())[0]
        await assert_rejected(mem, mem.update(item.id, metadata={key: value}))
        await mem.close()

    run(body())


@SETTINGS
@given(size=st.integers(16_400, 40_000))
def test_oversized_metadata(size):
    async def body():
        mem = await seeded()
        await assert_rejected(mem, mem.add("x", metadata={"blob": "y" * size}))
        await assert_rejected(
            mem, mem.add_many([{"text": "fine"}, {"text": "x", "metadata": {"b": "y" * size}}])
        )
        await mem.close()

    run(body())


@SETTINGS
@given(item_id=st.uuids().map(str) | st.text(max_size=40))
def test_unknown_ids(item_id):
    async def body():
        mem = await seeded()
        for call in (
            mem.get(item_id),
            mem.delete(item_id),
            mem.update(item_id, tags=["x"]),
            mem.feedback(item_id, "liked"),
        ):
            await assert_rejected(mem, call, NotFoundError)
        await mem.close()

    run(body())


strategy_dicts = st.one_of(
    st.none().map(lambda _: {"kind": "nope"}),
    st.just({"kind": "time_window"}),
    st.just({"kind": "time_window", "hours": -1}),
    st.just({"kind": "time_window", "since_ms": 10, "until_ms": 5}),
    st.just({"kind": "by_tag", "tags": []}),
    st.just({"kind": "by_tag", "tags": ["x"], "match": "some"}),
    st.just({"kind": "by_type", "types": ["chat"]}),
    st.just({"kind": "by_scope", "scopes": ["bad scope"]}),
    st.just({"kind": "time_decay", "half_life_hours": 0}),
    st.just({"kind": "time_decay", "floor": 2}),
    st.just({"kind": "feedback_weight", "liked": -1}),
    st.just({"kind": "feedback_weight", "liked": float("nan")}),
    st.just({"kind": "compose", "strategies": "x"}),
    st.just({"kind": "compose", "strategies": [{"kind": "bogus"}]}),
    st.just({"kind": "by_tag", "tags": ["x"], "extra": 1}),
    st.just({"no": "kind"}),
    st.integers().map(lambda i: {"kind": i}),
)


@SETTINGS
@given(spec=strategy_dicts | st.integers() | st.text(max_size=4))
def test_invalid_strategies(spec):
    async def body():
        mem = await seeded()
        await assert_rejected(mem, mem.retrieve("seed", spec), StrategyError)
        await mem.close()

    run(body())


@pytest.mark.parametrize(
    "kwargs",
    [{"max_items": 0}, {"max_items": "5"}, {"max_tokens": -1}, {"max_tokens": 1.5}, {"trace": 1}],
)
async def test_bad_retrieve_args(kwargs):
    mem = await seeded()
    await assert_rejected(mem, mem.retrieve("seed", **kwargs))
    await assert_rejected(mem, mem.retrieve(b"seed"))  # type: ignore[arg-type]
    await mem.close()


async def test_bad_clear_and_list_args():
    mem = await seeded()
    await assert_rejected(mem, mem.clear(scope="bad scope"))
    await assert_rejected(mem, mem.clear(type="chat"))
    await assert_rejected(mem, mem.clear(since_ms="yesterday"))
    await assert_rejected(mem, mem.list(limit=-1))
    await assert_rejected(mem, mem.archive_older_than(-1))
    await assert_rejected(mem, mem.feedback((await mem.list())[0].id, "love"))
    await mem.close()
