"""Versioned key layout: new stores get a version, newer ones are refused, older migrate."""

import json

import pytest

from pymemory import Memory, SchemaError
from pymemory.storage import MapKv
from pymemory.storage import schema as schema_mod


async def test_new_store_gets_version():
    kv = MapKv()
    mem = await Memory.open(kv)
    assert mem.schema_migrated_from == 0
    await mem.close()
    assert json.loads(await kv.get("meta:schema")) == {"version": schema_mod.SCHEMA_VERSION}


async def test_newer_store_is_refused_untouched():
    kv = MapKv()
    await kv.put_many([("meta:schema", b'{"version": 99}'), ("mem:x", b"{}")])
    before = await kv.scan("")
    with pytest.raises(SchemaError, match="newer"):
        await Memory.open(kv)
    assert await kv.scan("") == before


async def test_foreign_store_is_refused():
    kv = MapKv()
    await kv.put_many([("mem:x", b"{}")])
    with pytest.raises(SchemaError, match="not written by pymemory"):
        await Memory.open(kv)


async def test_garbled_version_is_refused():
    kv = MapKv()
    await kv.put_many([("meta:schema", b"[1]")])
    with pytest.raises(SchemaError):
        await Memory.open(kv)


async def test_older_store_is_migrated(monkeypatch):
    """Simulate a v4 release: a v3 store is migrated in one atomic batch on open."""
    kv = MapKv()
    mem = await Memory.open(kv)
    item = await mem.add("hello world", tags=["greeting"])
    await mem.close()

    async def v3_to_v4(kv):
        # e.g. v4 renames a tag; return the batch, ensure_schema adds the version bump
        puts = []
        for key, raw in await kv.scan("mem:"):
            data = json.loads(raw)
            data["tags"] = [t.upper() for t in data["tags"]]
            puts.append((key, json.dumps(data).encode()))
        return puts, []

    monkeypatch.setattr(schema_mod, "SCHEMA_VERSION", 4)
    monkeypatch.setitem(schema_mod.MIGRATIONS, 3, v3_to_v4)
    start = await schema_mod.ensure_schema(kv, target=4)
    assert start == 3
    assert json.loads(await kv.get("meta:schema")) == {"version": 4}
    assert json.loads(await kv.get("mem:" + item.id))["tags"] == ["GREETING"]
    # Opening again is a no-op.
    assert await schema_mod.ensure_schema(kv, target=4) == 4


async def test_v1_store_opens_as_current():
    """A store written before the change log: items read as version 1, then count up."""
    kv = MapKv()
    item_id = "5e0f1cbe-54a7-4a36-9c0c-6b7f3b1d2a10"
    record = {
        "id": item_id, "type": "message", "timestamp": 1, "content": "hello v1",
        "metadata": {"source": "api", "confidence": 1.0, "references": []},
    }  # fmt: skip
    await kv.put_many(
        [("meta:schema", b'{"version": 1}'), ("mem:" + item_id, json.dumps(record).encode())]
    )
    mem = await Memory.open(kv)
    assert mem.schema_migrated_from == 1
    assert json.loads(await kv.get("meta:schema")) == {"version": schema_mod.SCHEMA_VERSION}
    assert (await mem.get(item_id)).version == 1
    assert (await mem.update(item_id, tags=["x"])).version == 2
    await mem.close()


async def test_two_openers_of_a_new_store_agree(tmp_path):
    """Two processes creating one store at once: neither calls the other's data foreign."""
    import asyncio

    from pymemory.storage import SqliteKv

    path = tmp_path / "new.db"
    kvs = [await SqliteKv.open(path) for _ in range(2)]

    async def opener(kv):
        mem = await Memory.open(kv)
        await mem.add("written right after open")
        await mem.close()

    await asyncio.gather(*(opener(kv) for kv in kvs))
    mem = await Memory.open(kvs[0])
    assert len(await mem.list()) == 2
    await mem.close()
    for kv in kvs:
        await kv.close()


async def test_missing_migration_is_an_error():
    kv = MapKv()
    await kv.put_many([("meta:schema", b'{"version": 1}')])
    with pytest.raises(SchemaError, match="no migration"):
        await schema_mod.ensure_schema(kv, target=schema_mod.SCHEMA_VERSION + 1)
