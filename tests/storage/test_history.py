"""Memory history: update() keeps the version it replaces; retrieval sees only the
current one; forgetting a memory forgets its history; exports carry it."""

from __future__ import annotations

import json

import pytest

from pymemory import ImportFormatError, Memory, MemoryVersion, NotFoundError, ValidationError
from pymemory.storage import MapKv, SqliteKv, schema

T0 = 1_700_000_000_000
DAY = 86_400_000


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def memory(clock):
    mem = await Memory.open(clock=clock)
    yield mem
    await mem.close()


async def test_update_keeps_each_replaced_version_with_when_it_was_valid(memory, clock):
    item = await memory.add("I live in Lisbon.", type="user_preference")
    clock.now += 1000
    await memory.update(item.id, text="I moved to Porto.")
    clock.now += 1000
    await memory.update(item.id, tags=["home"])
    versions = await memory.history(item.id)
    assert [type(v) for v in versions] == [MemoryVersion] * 3
    assert [v.item.content for v in versions] == [
        "I live in Lisbon.",
        "I moved to Porto.",
        "I moved to Porto.",
    ]
    assert [v.item.version for v in versions] == [1, 2, 3]
    assert [(v.valid_from, v.valid_to) for v in versions] == [
        (T0, T0 + 1000),
        (T0 + 1000, T0 + 2000),
        (T0 + 2000, None),
    ]
    assert versions[-1].item == await memory.get(item.id)


async def test_feedback_and_a_never_updated_item_add_no_version(memory):
    item = await memory.add("plain note")
    await memory.feedback(item.id, "liked", durable=True)
    (only,) = await memory.history(item.id)
    assert only.item.version == 2 and only.item.feedback.liked == 1
    assert (only.valid_from, only.valid_to) == (item.timestamp, None)


async def test_retrieval_sees_only_the_current_version(memory):
    item = await memory.add("The wifi password is tangerine-42.")
    await memory.update(item.id, text="The wifi password is kumquat-77.")
    got = await memory.retrieve("tangerine-42 wifi password", trace=True)
    assert [m.item.content for m in got.memories] == ["The wifi password is kumquat-77."]
    assert all("tangerine" not in m.item.text for m in got.memories)
    assert len(await memory.list()) == 1


@pytest.mark.parametrize(
    "forget",
    [
        lambda m, item: m.delete(item.id),
        lambda m, item: m.clear(scope="chat"),
        lambda m, item: m.clear(all=True),
        lambda m, item: m.archive_older_than(1),
    ],
    ids=["delete", "clear-scope", "clear-all", "archive"],
)
async def test_forgetting_a_memory_forgets_its_history(memory, clock, forget):
    item = await memory.add("old address: 12 Rua Augusta", scope="chat")
    await memory.update(item.id, text="new address: 3 Rua do Ouro")
    other = await memory.add("unrelated", scope="other")
    await memory.update(other.id, tags=["kept"])
    clock.now += 2 * DAY
    await forget(memory, item)
    left = [k for k, _ in await memory.kv.scan(schema.HST)]
    assert all(schema.hst_id(k) != item.id for k in left)
    with pytest.raises(NotFoundError):
        await memory.history(item.id)
    exported = "".join([line async for line in memory.export()])
    assert "Rua Augusta" not in exported


async def test_a_ttl_sweep_forgets_history_too(memory, clock):
    item = await memory.add("temporary code 5512", ttl_ms=1000)
    await memory.update(item.id, text="temporary code 7788")
    clock.now += 2000
    with pytest.raises(NotFoundError, match="expired"):
        await memory.history(item.id)
    assert await memory.sweep() == 1
    assert await memory.kv.scan(schema.HST) == []


async def test_export_and_import_carry_history(memory, clock):
    item = await memory.add("first wording")
    clock.now += 10
    await memory.update(item.id, text="second wording")
    lines = [line async for line in memory.export()]
    assert json.loads(lines[-1])["kind"] == "version"
    again = await Memory.open()
    result = await again.import_(lines)
    assert (result.added, result.replaced) == (1, 0)
    assert await again.history(item.id) == await memory.history(item.id)
    assert [line async for line in again.export()] == lines
    await again.close()


async def test_import_replace_swaps_in_the_imported_history(memory, clock):
    item = await memory.add("v1 text")
    exported = [line async for line in memory.export()]  # no history yet
    await memory.update(item.id, text="v2 text")
    await memory.update(item.id, text="v3 text")
    result = await memory.import_(exported, on_conflict="replace")
    assert result.replaced == 1
    versions = await memory.history(item.id)
    assert [v.item.content for v in versions] == ["v1 text"]  # the import's own history
    assert await memory.kv.scan(schema.HST) == []


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda mem, past: [mem, past, past], "appears twice"),
        (lambda mem, past: [past], "not a past version"),
        (lambda mem, past: [mem, {**past, "valid_to": "soon"}], "timestamp"),
        (lambda mem, past: [mem, {**past, "extra": 1}], "a version is"),
    ],
    ids=["duplicate", "orphan", "bad-valid-to", "extra-field"],
)
async def test_bad_version_records_are_refused_and_change_nothing(memory, make, message):
    item = await memory.add("to export")
    await memory.update(item.id, text="updated")
    lines = [line async for line in memory.export()]
    header, mem, past = lines[0], json.loads(lines[1]), json.loads(lines[2])
    before = [line async for line in memory.export()]
    fresh = await Memory.open()
    bad = [header, *(json.dumps(r) for r in make(mem, past))]
    with pytest.raises(ImportFormatError, match=message):
        await fresh.import_(bad)
    assert await fresh.kv.scan("") == await (await Memory.open()).kv.scan("")
    assert [line async for line in memory.export()] == before
    await fresh.close()


async def test_history_of_an_unknown_id_or_a_bad_one(memory):
    with pytest.raises(NotFoundError):
        await memory.history("5e0f1cbe-54a7-4a36-9c0c-6b7f3b1d2a10")
    with pytest.raises(NotFoundError):
        await memory.history("not-an-id")
    with pytest.raises(ValidationError):
        await memory.history(42)  # type: ignore[arg-type]


async def test_search_and_get_all_are_retrieve_and_list(memory):
    await memory.add("The user prefers dark mode.", tags=["ui"])
    await memory.add("Deploys happen on Fridays.")
    assert await memory.get_all(tags=["ui"]) == await memory.list(tags=["ui"])
    got = await memory.search("dark mode", max_items=1)
    want = await memory.retrieve("dark mode", max_items=1)
    assert [m.item.id for m in got.memories] == [m.item.id for m in want.memories]


async def test_two_instances_on_one_file_share_history(tmp_path):
    path = tmp_path / "h.db"
    a, b = await Memory.open(path), await Memory.open(path)
    item = await a.add("status: draft")
    await b.update(item.id, text="status: in review")
    await a.update(item.id, text="status: approved")
    assert [v.item.content for v in await b.history(item.id)] == [
        "status: draft",
        "status: in review",
        "status: approved",
    ]
    await b.delete(item.id)
    with pytest.raises(NotFoundError):
        await a.history(item.id)
    await a.close()
    await b.close()
    blob = b"".join(p.read_bytes() for p in tmp_path.glob("h.db*"))
    assert b"in review" not in blob and b"status: draft" not in blob


async def test_a_v2_store_opens_as_v3_and_keeps_its_items():
    kv = MapKv()
    await kv.put_many([("meta:schema", b'{"version": 2}')])
    mem = await Memory.open(kv)
    assert mem.schema_migrated_from == 2
    assert json.loads(await kv.get("meta:schema")) == {"version": schema.SCHEMA_VERSION} == {
        "version": 3
    }
    await mem.close()


async def test_history_survives_reopening_a_sqlite_store(tmp_path):
    kv = await SqliteKv.open(tmp_path / "r.db")
    mem = await Memory.open(kv)
    item = await mem.add("kept across restarts")
    await mem.update(item.id, text="kept across restarts, edited")
    await mem.close()
    again = await Memory.open(kv)
    assert len(await again.history(item.id)) == 2
    await again.close()
    await kv.close()
