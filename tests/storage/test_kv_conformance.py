import pytest

from pymemory.storage import MapKv, SqliteKv
from pymemory.storage.conformance import CHECKS, run_check
from pymemory.storage.encrypted import EncryptedKv

KEY = bytes(range(32))


@pytest.fixture(params=["map", "sqlite", "encrypted-map", "encrypted-sqlite"])
def factory(request, tmp_path):
    counter = iter(range(10**6))

    async def make():
        if request.param == "map":
            return MapKv()
        if request.param == "encrypted-map":
            return await EncryptedKv.open(MapKv(), key=KEY)
        inner = await SqliteKv.open(tmp_path / f"kv{next(counter)}.db")
        if request.param == "encrypted-sqlite":
            return await EncryptedKv.open(inner, key=KEY)
        return inner

    return make


@pytest.mark.parametrize("name", list(CHECKS))
async def test_conformance(name, factory):
    result = await run_check(name, factory)
    assert result.ok, result.error
