"""Many app-server processes on one user's memory in PostgreSQL, some SIGKILLed at random
moments (tests/storage/postgres_peer.py), and the database server itself crashed and
restarted under writers: nothing acknowledged is lost, nothing deleted comes back, no
process sees another namespace, and every failed call failed with a typed error."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import threading
import uuid
from pathlib import Path

from pymemory import Memory
from pymemory.errors import PymemoryError
from pymemory.storage.postgres import (
    CommitUnknownError,
    PostgresDatabase,
    PostgresKv,
    ServerUnavailableError,
)

PEER = Path(__file__).with_name("postgres_peer.py")
QUIET = {"feedback_flush_s": 3600, "sweep_interval_s": 3600}


class Peer:
    """One peer process; its JSON lines are collected by a thread, which SIGKILLs the
    process once it has printed ``kill_after`` lines (None: let it finish)."""

    def __init__(self, dsn: str, namespace: str, name: str, seed: int, count: int,
                 kill_after: int | None) -> None:  # fmt: skip
        self.name = name
        self.lines: list[dict] = []
        self.killed = False
        self.proc = subprocess.Popen(
            [sys.executable, str(PEER), dsn, namespace, name, str(seed), str(count)],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": os.getcwd()},
        )
        self._kill_after = kill_after
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(json.loads(line))
            if self._kill_after is not None and len(self.lines) >= self._kill_after:
                self.proc.send_signal(signal.SIGKILL)
                self.killed = True
                break

    def wait(self) -> None:
        self._thread.join(timeout=240)
        self.proc.wait(timeout=60)
        assert self.proc.stdout is not None
        if not self.killed:
            assert self.proc.returncode == 0, f"{self.name} failed: {self.lines[-3:]}"
            assert self.lines[-1] == {"done": True}
        self.proc.stdout.close()

    def values(self, key: str) -> list:
        return [line[key] for line in self.lines if key in line]


async def _stored(dsn: str, namespace: str) -> dict[str, dict]:
    memory = await Memory.open(await PostgresKv.open(dsn, namespace=namespace), **QUIET)
    try:
        return {i.id: i.to_dict() for i in await memory.list()}
    finally:
        await memory.close()
        await memory.kv.close()


async def test_four_processes_with_random_kills_lose_nothing_acknowledged(postgres_dsn):
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    shared, neighbour = f"shared-{uuid.uuid4().hex[:8]}", f"neighbour-{uuid.uuid4().hex[:8]}"
    added: set[str] = set()
    removing: set[str] = set()  # intents: deleted or cleared, acknowledged or not
    removed: set[str] = set()  # acknowledged deletes and clears
    versions: dict[str, int] = {}  # the highest acknowledged update of each id
    killed = 0
    for round_no in range(3):
        doomed = set() if round_no == 0 else set(rng.sample(range(4), 2))
        peers = [
            Peer(
                postgres_dsn,
                shared,
                f"r{round_no}p{p}",
                rng.randrange(1 << 30),
                300,
                rng.randrange(10, 350) if p in doomed else None,
            )
            for p in range(4)
        ]
        other = Peer(postgres_dsn, neighbour, f"r{round_no}n", rng.randrange(1 << 30), 60, None)
        for peer in [*peers, other]:
            peer.wait()
        killed += sum(p.killed for p in peers)
        for peer in peers:
            added.update(peer.values("add"))
            removing.update(peer.values("deleting"))
            removed.update(peer.values("deleted"))
            for ids in peer.values("clearing"):
                removing.update(ids)
            for line in peer.lines:
                if "cleared" in line:
                    removed.update(line["ids"])
                if "update" in line:
                    versions[line["update"]] = max(versions.get(line["update"], 0), line["version"])
        for peer in [*peers, other]:
            assert all(f == [] for f in peer.values("foreign")), f"seed {seed}: a foreign item"
        stored = await _stored(postgres_dsn, shared)
        lost = added - removing - set(stored)
        assert not lost, f"seed {seed}: acknowledged adds lost: {sorted(lost)[:5]}"
        back = removed & set(stored)
        assert not back, f"seed {seed}: deleted items came back: {sorted(back)[:5]}"
        for item_id, version in versions.items():
            if item_id in stored:
                assert stored[item_id].get("version", 1) >= version, f"seed {seed}: lost update"
            else:
                assert item_id in removing, f"seed {seed}: updated item vanished"
        assert all(i["content"].startswith(shared + " ") for i in stored.values())
    assert killed == 4, "every kill round killed two writers"
    assert len(added) > 1800 and removed, (len(added), len(removed))
    assert all(
        i["content"].startswith(neighbour + " ")
        for i in (await _stored(postgres_dsn, neighbour)).values()
    )


# --- the server itself crashes -----------------------------------------------------------


async def test_a_server_crash_mid_write_loses_nothing_acknowledged(own_postgres_server):
    """Writers (Memory.add and raw put_many) run while the server is SIGKILLed and
    restarted; every call either returned (and its write is there afterwards) or raised
    a typed StorageError: ServerUnavailableError only when nothing was written,
    CommitUnknownError when it may have been."""
    own_server = own_postgres_server
    dsn = own_server.dsn()
    db = await PostgresDatabase.open(dsn, max_connections=8, connect_timeout_s=2)
    memories = [await Memory.open(db.kv(f"crash-{n}"), **QUIET) for n in range(3)]
    kv = db.kv("crash-raw")
    outcomes: list[tuple[str, str, str | None]] = []  # (namespace, token, error class)
    stop = asyncio.Event()

    async def writer(name: str, call) -> None:
        n = 0
        while not stop.is_set():
            token = f"{name}-{n}"
            n += 1
            try:
                await call(token)
            except PymemoryError as exc:
                outcomes.append((name, token, type(exc).__name__))
                assert exc.code == "storage_error", exc
                await asyncio.sleep(0.05)
            except Exception as exc:  # anything untyped fails the test
                outcomes.append((name, token, f"UNTYPED {type(exc).__name__}: {exc}"))
            else:
                outcomes.append((name, token, None))

    tasks = [
        asyncio.ensure_future(writer(f"crash-{n}", lambda t, m=m: m.add(f"note {t}")))
        for n, m in enumerate(memories)
    ]
    tasks.append(asyncio.ensure_future(writer("crash-raw", lambda t: kv.put_many([(t, b"v")]))))
    await asyncio.sleep(1.0)
    own_server.kill()
    await asyncio.sleep(3.0)  # longer than connect_timeout_s: calls give up meanwhile
    own_server.start()
    await asyncio.sleep(3.0)  # the pool reconnects; writes land again
    stop.set()
    await asyncio.gather(*tasks)
    for memory in memories:
        await memory.close()
    await db.close()

    untyped = [o for o in outcomes if o[2] and o[2].startswith("UNTYPED")]
    assert not untyped, untyped[:3]
    failed = [o for o in outcomes if o[2]]
    assert failed, "the crash failed no call: it happened between writes?"
    kinds = {o[2] for o in failed}
    assert kinds <= {"ServerUnavailableError", "CommitUnknownError"}, kinds
    assert "ServerUnavailableError" in kinds  # calls made while it was down
    before = next(i for i, o in enumerate(outcomes) if o[2])
    after = [o for o in outcomes[before:] if o[2] is None]
    assert len(after) >= 4, "writes did not resume after the restart"
    # What is stored now, read through fresh connections after the restart.
    check = await PostgresDatabase.open(dsn)
    try:
        stored: dict[str, set[str]] = {
            "crash-raw": {k for k, _ in await check.kv("crash-raw").scan("")}
        }
        for n in range(3):
            memory = await Memory.open(check.kv(f"crash-{n}"), **QUIET)
            stored[f"crash-{n}"] = {i.content.removeprefix("note ") for i in await memory.list()}
            await memory.close()
    finally:
        await check.close()
    for name, token, error in outcomes:
        if error is None:
            assert token in stored[name], f"acknowledged {token} lost"
        elif error == ServerUnavailableError.__name__:
            assert token not in stored[name], f"{token} failed as unwritten but was written"
        else:
            assert error == CommitUnknownError.__name__  # landed whole or not at all
