"""Issue #17's findings, one regression test each: no input destroys, half-writes or raises
an untyped error. Every refused call leaves the store unchanged."""

from __future__ import annotations

import json

import pytest

from pymemory import Memory
from pymemory.errors import ImportFormatError, ValidationError, shown
from pymemory.storage import MapKv

HUGE = 10**5000  # past Python's int-to-str digit limit


async def snapshot(kv: MapKv) -> dict[str, bytes]:
    return dict(await kv.scan(""))


@pytest.fixture
async def store():
    kv = MapKv()
    memory = await Memory.open(kv)
    await memory.add("the deploy key lives in the vault", metadata={"important": True})
    await memory.add("lunch was pasta")
    yield memory, kv
    await memory.close()


async def test_clear_all_false_string_does_not_wipe_the_store(store):
    memory, kv = store
    before = await snapshot(kv)
    with pytest.raises(ValidationError, match="all must be a bool"):
        await memory.clear(all="false")
    assert await snapshot(kv) == before


async def test_archive_keep_important_empty_string_is_refused(store):
    memory, kv = store
    before = await snapshot(kv)
    with pytest.raises(ValidationError, match="keep_important must be a bool"):
        await memory.archive_older_than(1, keep_important="")
    assert await snapshot(kv) == before


async def test_import_with_a_lone_surrogate_in_the_last_record_writes_nothing(store):
    memory, _ = store
    lines = [line async for line in memory.export()]
    last = json.loads(lines[-1])
    last["item"]["content_method"] = "\ud800"
    bad = [*lines[:-1], json.dumps(last)]
    kv = MapKv()
    target = await Memory.open(kv)
    before = await snapshot(kv)
    with pytest.raises(ImportFormatError, match="lone surrogate"):
        await target.import_(bad, chunk_size=1)
    assert await snapshot(kv) == before
    await target.close()


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.add("x", timestamp=HUGE),
        lambda m: m.add("x", timestamp=-HUGE),
        lambda m: m.add("x", ttl_ms=HUGE),
        lambda m: m.add("x", metadata={"n": HUGE}),
        lambda m: m.add("x", metadata={"deep": [{"n": -HUGE}]}),
        lambda m: m.clear(since_ms=HUGE),
        lambda m: m.retrieve("vault", max_items=-HUGE),
        lambda m: m.retrieve("vault", max_tokens=-HUGE),
    ],
    ids=[
        "timestamp",
        "negative timestamp",
        "ttl_ms",
        "metadata",
        "nested metadata",
        "clear since_ms",
        "max_items",
        "max_tokens",
    ],
)
async def test_a_5000_digit_int_is_a_validation_error_not_a_bare_value_error(store, call):
    memory, kv = store
    before = await snapshot(kv)
    with pytest.raises(ValidationError) as err:
        await call(memory)
    assert "digits" in str(err.value) or "within" in str(err.value), str(err.value)
    assert await snapshot(kv) == before


def test_shown_never_raises():
    assert shown(HUGE) == "an int of about 5001 digits"
    assert shown(-HUGE).startswith("-an int")
    assert shown([HUGE]) == "a list that cannot be shown"
    assert shown("x" * 500).endswith("...") and len(shown("x" * 500)) == 80
    assert shown(True) == "True" and shown(7) == "7"
