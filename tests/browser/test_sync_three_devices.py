"""Three devices, one hub (issue 27): a SQLite file in this process, another SQLite file
in a second OS process, and a Chromium profile. Each edits offline (adds, an edit and a
delete of what the others wrote, a scoped clear), then they sync in a given order until a
whole pass moves nothing; every order ends with byte-identical exports on all three, and
nothing deleted comes back."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from browserkit import js
from test_sync_browser import export, on_device, open_browser

from pymemory import Memory

ROOT = Path(__file__).resolve().parents[2]

# The second device: its own process, its own SQLite file; one command per run.
PEER = """
import asyncio, json, sys
from pymemory import Memory

async def main(path, hub, command, arg):
    memory = await Memory.open(path)
    try:
        out = None
        if command == "add":
            out = [(await memory.add(t, scope=s)).id for t, s in json.loads(arg)]
        elif command == "delete":
            await memory.delete(arg)
        elif command == "sync":
            done = await memory.sync(hub)
            out = [done.pushed, done.pulled]
        elif command == "export":
            out = "".join([line async for line in memory.export()])
        print(json.dumps(out))
    finally:
        await memory.close()

asyncio.run(main(*sys.argv[1:]))
"""


def peer(path: Path, hub: str, command: str, arg: str = "") -> object:
    done = subprocess.run(
        [sys.executable, "-c", PEER, str(path), hub, command, arg],
        capture_output=True, text=True, cwd=ROOT, timeout=120, check=True,
    )  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("order", ["laptop,phone,browser", "browser,phone,laptop"])
def test_three_devices_converge_in_any_order(harness, hub_root, tmp_path, order):
    hub = f"{hub_root}/three-{uuid.uuid4().hex[:8]}"
    laptop, phone = tmp_path / "laptop.db", tmp_path / "phone.db"

    async def laptop_adds(memory: Memory) -> list[str]:
        ids = [(await memory.add(f"laptop note {i}", scope="user")).id for i in range(3)]
        await memory.add("laptop scratch to clear", scope="scratch")
        await memory.sync(hub)
        return ids

    laptop_ids = on_device(laptop, laptop_adds)
    phone_ids = peer(phone, hub, "add", json.dumps([["phone note", "user"], ["phone 2", "user"]]))
    peer(phone, hub, "sync")
    open_browser(harness, f"three-{uuid.uuid4().hex[:8]}", hub)
    js(harness, "await m.addMemory({ text: 'browser note', scope: 'user' }); await m.sync();")
    on_device(laptop, lambda memory: memory.sync(hub))  # everyone has seen everything
    peer(phone, hub, "sync")

    # offline edits on every device, no sync in between
    async def laptop_offline(memory: Memory) -> None:
        await memory.update(laptop_ids[0], text="laptop note 0, edited on the laptop")
        await memory.delete(phone_ids[1])  # the phone's second note: gone everywhere

    on_device(laptop, laptop_offline)
    peer(phone, hub, "delete", laptop_ids[1])
    js(harness, "await m.clear({ scope: 'scratch' });")

    def sync(device: str) -> tuple[int, int]:
        if device == "laptop":
            done = on_device(laptop, lambda memory: memory.sync(hub))
            return done.pushed, done.pulled
        if device == "phone":
            return tuple(peer(phone, hub, "sync"))
        done = js(harness, "return await m.sync();")
        return done["pushed"], done["pulled"]

    devices = order.split(",")
    for _ in range(4):  # until a whole pass moves nothing
        moved = [sync(d) for d in devices]
        if all(m == (0, 0) for m in moved):
            break
    else:
        pytest.fail(f"still moving after 4 passes: {moved}")
    exports = {
        "laptop": on_device(laptop, export),
        "phone": peer(phone, hub, "export"),
        "browser": js(harness, "return await m.exportJsonl();"),
    }
    assert exports["laptop"] == exports["phone"] == exports["browser"]
    text = exports["laptop"]
    assert "laptop note 0, edited on the laptop" in text and "browser note" in text
    for gone in (phone_ids[1], laptop_ids[1]):
        assert gone not in text
    assert "laptop scratch to clear" not in text
