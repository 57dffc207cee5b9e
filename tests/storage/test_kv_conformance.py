import pytest

from pymemory.storage import MapKv, SqliteKv
from pymemory.storage.conformance import CHECKS, run_check
from pymemory.storage.encrypted import EncryptedKv
from pymemory.storage.postgres import PostgresKv

KEY = bytes(range(32))


@pytest.fixture(
    params=["map", "sqlite", "encrypted-map", "encrypted-sqlite", "postgres", "encrypted-postgres"]
)
def factory(request, tmp_path):
    counter = iter(range(10**6))
    # PostgreSQL (tests/storage/conftest.py): a fresh namespace per store, one table.
    dsn = request.getfixturevalue("postgres_dsn") if "postgres" in request.param else None

    async def make():
        if request.param == "map":
            return MapKv()
        if request.param == "encrypted-map":
            return await EncryptedKv.open(MapKv(), key=KEY)
        if dsn is not None:
            inner = await PostgresKv.open(
                dsn, namespace=f"conformance-{tmp_path.name}-{next(counter)}"
            )
            return await EncryptedKv.open(inner, key=KEY) if "encrypted" in request.param else inner
        inner = await SqliteKv.open(tmp_path / f"kv{next(counter)}.db")
        if request.param == "encrypted-sqlite":
            return await EncryptedKv.open(inner, key=KEY)
        return inner

    return make


@pytest.mark.parametrize("name", list(CHECKS))
async def test_conformance(name, factory):
    result = await run_check(name, factory)
    assert result.ok, result.error
