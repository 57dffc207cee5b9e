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
    """Simulate a v2 release: a v1 store is migrated in one atomic batch on open."""
    kv = MapKv()
    mem = await Memory.open(kv)
    item = await mem.add("hello world", tags=["greeting"])
    await mem.close()

    async def v1_to_v2(kv):
        # e.g. v2 renames a tag; return the batch, ensure_schema adds the version bump
        puts = []
        for key, raw in await kv.scan("mem:"):
            data = json.loads(raw)
            data["tags"] = [t.upper() for t in data["tags"]]
            puts.append((key, json.dumps(data).encode()))
        return puts, []

    monkeypatch.setattr(schema_mod, "SCHEMA_VERSION", 2)
    monkeypatch.setitem(schema_mod.MIGRATIONS, 1, v1_to_v2)
    start = await schema_mod.ensure_schema(kv, target=2)
    assert start == 1
    assert json.loads(await kv.get("meta:schema")) == {"version": 2}
    assert json.loads(await kv.get("mem:" + item.id))["tags"] == ["GREETING"]
    # Opening again is a no-op.
    assert await schema_mod.ensure_schema(kv, target=2) == 2


async def test_missing_migration_is_an_error():
    kv = MapKv()
    await kv.put_many([("meta:schema", b'{"version": 1}')])
    with pytest.raises(SchemaError, match="no migration"):
        await schema_mod.ensure_schema(kv, target=3)
