import pytest

from pymemory.storage import MapKv, SqliteKv
from pymemory.storage.conformance import CHECKS, run_check


@pytest.fixture(params=["map", "sqlite"])
def factory(request, tmp_path):
    counter = iter(range(10**6))

    async def make():
        if request.param == "map":
            return MapKv()
        return await SqliteKv.open(tmp_path / f"kv{next(counter)}.db")

    return make


@pytest.mark.parametrize("name", list(CHECKS))
async def test_conformance(name, factory):
    result = await run_check(name, factory)
    assert result.ok, result.error
