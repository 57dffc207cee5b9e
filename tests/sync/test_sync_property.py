"""The sync property test (issue 37; tests/sync/sync_property.py says what holds): random
interleavings of edits, deletes, archives, clears and sync rounds on three devices, with
lost answers, hub restarts and skewed clocks, against a real pouchdb-server (one of its
own, on disk, so that a restart keeps its data) behind a fault-injecting proxy.
``SYNC_PROPERTY_SEEDS`` sets how many (default 200); benchmarks/bench_sync_property.py
runs more."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from faultproxy import FaultProxy
from sync_property import run

from tools.sync_server import SyncServer

SEEDS = int(os.environ.get("SYNC_PROPERTY_SEEDS", "200"))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SyncServer]:
    hub = SyncServer().start(data_dir=tmp_path_factory.mktemp("property-hub"))
    try:
        yield hub
    finally:
        hub.stop()


@pytest.fixture(scope="module")
def proxy(server: SyncServer) -> Iterator[FaultProxy]:
    p = FaultProxy(server.url).start()
    yield p
    p.stop()


def restarter(server: SyncServer):  # type: ignore[no-untyped-def]
    def restart() -> None:
        assert server.data_dir is not None
        port = server.port
        server.kill()
        server.start(port, data_dir=Path(server.data_dir))

    return restart


@pytest.mark.parametrize("seed", range(SEEDS))
async def test_random_interleavings_converge(
    server: SyncServer, proxy: FaultProxy, seed: int
) -> None:
    stats = await run(seed, proxy, f"prop-{seed}-{uuid.uuid4().hex[:8]}", restarter(server))
    assert sum(stats.ops.values()) > 0
