"""How soon calls succeed again after the PostgreSQL server crashes and comes back.

Usage::

    python benchmarks/bench_postgres_recovery.py [--outages 5,20] [--timeouts 10,2]
                                                 [--json out.json]

PostgreSQL is Debian's (tools/postgres.py starts it in a temporary folder with the
default settings), reached over TCP on 127.0.0.1. For each outage length and each
``connect_timeout_s`` (10 s is the default): a ``Memory`` on a ``PostgresDatabase``
makes one ``add`` after another, 0.1 s apart (a request stream of about 10 a second);
the server is SIGKILLed (postmaster and backends), left down for the outage, and
started again. "Ready" is the moment its postmaster.pid says ``ready`` (polled every
5 ms). Reported: the time from ready to the end of the first successful call (it
includes up to one 0.1 s pause of the client), how the first call started after ready
ended and how long it took, the calls that failed after ready, and the calls made while
it was down (how many, the slowest).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import sys
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pymemory import Memory  # noqa: E402
from pymemory.errors import PymemoryError  # noqa: E402
from pymemory.storage.postgres import PostgresDatabase  # noqa: E402
from tools.postgres import LocalPostgres  # noqa: E402

QUIET = {"feedback_flush_s": 3600, "sweep_interval_s": 3600}
PACE_S = 0.1


@dataclass
class Call:
    start: float
    end: float
    error: str | None


@dataclass
class Result:
    outage_s: float
    connect_timeout_s: float
    ready_to_first_success_s: float | None
    first_call_after_ready: str  # "ok" or the error's class
    first_call_after_ready_s: float
    failed_after_ready: int
    calls_while_down: int
    slowest_call_while_down_s: float


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def is_ready(server: LocalPostgres, old: object) -> bool:
    """Whether the postmaster started after ``old`` (the killed one) says it is ready."""
    proc = server.proc
    if proc is None or proc is old:
        return False
    try:
        lines = (server.data / "postmaster.pid").read_text().splitlines()
    except OSError:
        return False
    return len(lines) >= 8 and lines[0] == str(proc.pid) and lines[7].strip() == "ready"


async def one_outage(server: LocalPostgres, outage_s: float, timeout_s: float) -> Result:
    db = await PostgresDatabase.open(
        server.tcp_dsn(), max_connections=4, connect_timeout_s=timeout_s
    )
    memory = await Memory.open(db.kv(f"recovery-{uuid.uuid4().hex[:8]}"), **QUIET)
    calls: list[Call] = []
    stop = asyncio.Event()

    async def client() -> None:
        n = 0
        while not stop.is_set():
            start = time.monotonic()
            try:
                await memory.add(f"note {n} about the deploy on Thursday")
                error = None
            except PymemoryError as exc:
                error = type(exc).__name__
            calls.append(Call(start, time.monotonic(), error))
            n += 1
            await asyncio.sleep(PACE_S)

    task = asyncio.ensure_future(client())
    try:
        await asyncio.sleep(1.0)  # steady state
        down = time.monotonic()
        killed = server.proc
        server.kill()
        await asyncio.sleep(outage_s)
        starting = asyncio.ensure_future(asyncio.to_thread(server.start))
        while not is_ready(server, killed):
            await asyncio.sleep(0.005)
        ready = time.monotonic()
        await starting
        deadline = ready + 120
        while time.monotonic() < deadline and not any(
            c.error is None and c.end > ready for c in calls
        ):
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.5)
    finally:
        stop.set()
        await task
        await memory.close()
        await db.close()
    first = next((c.end for c in calls if c.error is None and c.end > ready), None)
    during = [c for c in calls if c.start >= down and c.end <= ready]
    after = next(c for c in calls if c.start >= ready)
    return Result(
        outage_s=outage_s,
        connect_timeout_s=timeout_s,
        ready_to_first_success_s=None if first is None else first - ready,
        first_call_after_ready=after.error or "ok",
        first_call_after_ready_s=after.end - after.start,
        failed_after_ready=sum(1 for c in calls if c.error and c.end > ready),
        calls_while_down=len(during),
        slowest_call_while_down_s=max((c.end - c.start for c in during), default=0.0),
    )


async def main(args: argparse.Namespace) -> None:
    outages = [float(x) for x in args.outages.split(",")]
    timeouts = [float(x) for x in args.timeouts.split(",")]
    server = LocalPostgres(port=free_port(), tcp=True)
    server.start()
    results: list[Result] = []
    try:
        for outage in outages:
            for timeout in timeouts:
                result = await one_outage(server, outage, timeout)
                results.append(result)
                print(f"outage {outage:g} s, connect_timeout_s {timeout:g}: done", file=sys.stderr)
    finally:
        server.remove()
    print("| outage | connect_timeout_s | ready -> first successful call | first call made"
          " after ready | calls failed after ready | calls while down (slowest) |")  # fmt: skip
    print("|---:|---:|---:|---|---:|---:|")
    for r in results:
        first = "none in 120 s" if r.ready_to_first_success_s is None else (
            f"{r.ready_to_first_success_s * 1000:.0f} ms")  # fmt: skip
        print(f"| {r.outage_s:g} s | {r.connect_timeout_s:g} s | {first} |"
              f" {r.first_call_after_ready}, {r.first_call_after_ready_s * 1000:.0f} ms |"
              f" {r.failed_after_ready} | {r.calls_while_down}"
              f" ({r.slowest_call_while_down_s * 1000:.0f} ms) |")  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in results]))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--outages", default="5,20", help="outage lengths, seconds")
    parser.add_argument("--timeouts", default="10,2", help="connect_timeout_s values")
    parser.add_argument("--json", help="write the results here")
    asyncio.run(main(parser.parse_args()))
