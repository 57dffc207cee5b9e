"""The sync property run at scale (issue 37): many random interleavings of adds, updates,
deletes, archives, clears and sync rounds on three devices, with lost answers, hub
restarts and skewed clocks, against a real pouchdb-server (on disk, so a restart keeps
its data) behind a fault-injecting proxy. What must hold after each: the properties in
tests/sync/sync_property.py (CI runs 200 of them: tests/sync/test_sync_property.py).

Usage (from the repository root)::

    python benchmarks/bench_sync_property.py [--seeds 2000] [--first 0] [--ops 24]

Prints one line per 100 interleavings and a summary: interleavings run, how many
failed (with their seeds: re-run one with ``--first SEED --seeds 1``), the operations,
lost answers and hub restarts they went through, and the time.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
import traceback
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "sync")]

from faultproxy import FaultProxy  # noqa: E402
from sync_property import run  # noqa: E402

from tools.sync_server import SyncServer  # noqa: E402


async def main(seeds: int, first: int, ops: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        server = SyncServer().start(data_dir=Path(tmp) / "hub")
        proxy = FaultProxy(server.url).start()

        def restart() -> None:
            port = server.port
            server.kill()
            server.start(port, data_dir=Path(tmp) / "hub")

        failed: list[int] = []
        totals: dict[str, int] = {}
        lost = restarts = 0
        began = time.perf_counter()
        try:
            for n, seed in enumerate(range(first, first + seeds), 1):
                db = f"bench-{seed}-{uuid.uuid4().hex[:6]}"
                try:
                    stats = await run(seed, proxy, db, restart, ops=ops)
                except AssertionError:
                    failed.append(seed)
                    print(f"seed {seed} FAILED:\n{traceback.format_exc(limit=2)}", flush=True)
                    continue
                for name, count in stats.ops.items():
                    totals[name] = totals.get(name, 0) + count
                lost += stats.lost
                restarts += stats.restarts
                if n % 100 == 0:
                    took = time.perf_counter() - began
                    print(f"{n} interleavings, {len(failed)} failed, {took:.0f} s", flush=True)
        finally:
            proxy.stop()
            server.stop()
        took = time.perf_counter() - began
        print(
            f"interleavings {seeds} (seeds {first}..{first + seeds - 1}), ops each {ops}: "
            f"{seeds - len(failed)} passed, {len(failed)} failed {failed}; "
            f"operations {dict(sorted(totals.items()))}, lost answers {lost}, "
            f"hub restarts {restarts}; {took:.0f} s ({took / max(seeds, 1):.2f} s each)"
        )
        return 1 if failed else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=2000)
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--ops", type=int, default=24)
    args = parser.parse_args()
    sys.exit(asyncio.run(main(args.seeds, args.first, args.ops)))
