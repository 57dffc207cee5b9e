"""Sync in the browser (issue 27): a Chromium replica (Pyodide in the store worker, fetch,
IndexedDB) and a CPython replica (a SQLite file in this process) sync through the session's
pouchdb-server (tests/sync_hub.py; CORS on, the page is served from another port) and
converge to byte-identical exports; deletes travel both ways; an encrypted store's second
device is the browser, which pulls the key record at `ready` and opens with the
passphrase, and the hub holds no canary."""

from __future__ import annotations

import asyncio
import json
import urllib.request
import uuid
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from browserkit import js
from docblocks import block, section

from pymemory import Memory, NotFoundError
from pymemory.storage import EncryptedKv, SqliteKv

FAST = 1000  # PBKDF2 iterations for tests
PASS = "pässphrase for sync, ✓"
CANARY = "okapi-canary-5521"


def run_async(coro: Awaitable[Any]) -> Any:
    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API runs a loop in this thread
        return pool.submit(asyncio.run, coro).result()


def on_device(path: Path, work: Callable[[Memory], Awaitable[Any]], passphrase: str | None = None):
    """Open the CPython device (the SQLite file ``path``, encrypted with ``passphrase``),
    run ``work`` on its Memory, close it; returns what ``work`` returned."""

    async def main() -> Any:
        kv = await SqliteKv.open(path)
        store = (
            kv
            if passphrase is None
            else await EncryptedKv.open(kv, passphrase=passphrase, iterations=FAST)
        )
        memory = await Memory.open(store)
        try:
            return await work(memory)
        finally:
            await memory.close()
            await store.close()

    return run_async(main())


async def export(memory: Memory) -> str:
    return "".join([line async for line in memory.export()])


def hub_text(hub: str) -> str:
    with urllib.request.urlopen(f"{hub}/_all_docs?include_docs=true") as answer:
        return answer.read().decode()


def open_browser(page, db: str, hub: str, encryption: str = "null") -> dict:
    """createAgentMemory with the sync option as window.m; the status once ready."""
    return js(
        page,
        f"window.m = pm.createAgentMemory({{ dbName: args[0], sync: {{ url: args[1] }}, "
        f"encryption: {encryption} }}); const s = await m.ready; return s.sync;",
        db, hub, PASS, FAST,
    )  # fmt: skip


def test_browser_and_cpython_converge_and_deletes_travel(harness, hub, tmp_path):
    device = tmp_path / "laptop.db"

    async def first(memory: Memory) -> list[str]:
        ids = [(await memory.add(f"laptop note {i}", scope="user")).id for i in range(3)]
        await memory.sync(hub)
        return ids

    laptop_ids = on_device(device, first)
    status = open_browser(harness, f"sync-{uuid.uuid4().hex[:8]}", hub)
    assert status["state"] == "idle" and status["last"]["pulled"] >= 3, status
    listed = js(harness, "return (await m.list({ scope: null })).map((i) => i.id).sort();")
    assert listed == sorted(laptop_ids)

    # the browser edits offline (no sync between), then syncs
    js(harness, """
      await m.addMemory({ text: "browser note A", scope: "user" });
      await m.addMemory({ text: "browser note B", scope: "user", tags: ["b"] });
      await m.update(args[0], { text: "laptop note 0, edited in the browser" });
    """, laptop_ids[0])  # fmt: skip
    done = js(harness, "return await m.sync();")
    assert done["pushed"] >= 3 and done["bytesSent"] > 0 and done["requests"] > 0, done
    assert js(harness, "return m.status.sync.state;") == "idle"

    async def pull(memory: Memory) -> str:
        await memory.sync(hub)
        return await export(memory)

    laptop_export = on_device(device, pull)
    browser_export = js(harness, "return await m.exportJsonl();")
    assert browser_export == laptop_export
    assert "laptop note 0, edited in the browser" in laptop_export

    # repeated sync is a no-op on both sides
    again = js(harness, "return await m.sync();")
    assert (again["pushed"], again["pulled"]) == (0, 0), again
    repeat = on_device(device, lambda memory: memory.sync(hub))
    assert (repeat.pushed, repeat.pulled) == (0, 0)

    # a delete in the browser disappears on the laptop, and the reverse
    js(harness, "await m.delete(args[0]); await m.sync();", laptop_ids[1])

    async def delete_and_sync(memory: Memory) -> None:
        await memory.sync(hub)
        with pytest.raises(NotFoundError):
            await memory.get(laptop_ids[1])
        await memory.delete(laptop_ids[2])
        await memory.sync(hub)

    on_device(device, delete_and_sync)
    js(harness, "await m.sync();")
    gone = js(
        harness,
        "try { await m.get(args[0]); return null; } catch (e) { return e.code; }",
        laptop_ids[2],
    )
    assert gone == "not_found"
    assert js(harness, "return await m.exportJsonl();") == on_device(device, pull)


def test_encrypted_second_device_in_the_browser_and_no_canary_on_the_hub(harness, hub, tmp_path):
    device = tmp_path / "laptop-encrypted.db"

    async def first(memory: Memory) -> str:
        item = await memory.add(f"My locker code is {CANARY}.", scope="user", tags=[CANARY])
        await memory.sync(hub)
        return item.id

    item_id = on_device(device, first, PASS)
    encryption = "{ passphrase: args[2], iterations: args[3] }"
    status = open_browser(harness, f"sync-enc-{uuid.uuid4().hex[:8]}", hub, encryption)
    assert status["state"] == "idle", status
    got = js(harness, "return (await m.get(args[0])).text;", item_id)
    assert got == f"My locker code is {CANARY}."
    js(
        harness,
        "await m.addMemory({ text: `browser secret ${args[0]}-2`, scope: 'user' });",
        CANARY,
    )
    assert js(harness, "return (await m.sync()).pushed;") >= 1

    async def pull(memory: Memory) -> tuple[str, list[str]]:
        await memory.sync(hub)
        return await export(memory), sorted(i.content for i in await memory.list())

    laptop_export, contents = on_device(device, pull, PASS)
    assert contents == [f"My locker code is {CANARY}.", f"browser secret {CANARY}-2"]
    assert js(harness, "return await m.exportJsonl();") == laptop_export
    text = hub_text(hub)
    assert json.loads(text)["total_rows"] >= 4
    assert CANARY not in text and "locker" not in text and "browser secret" not in text


def test_sync_errors_keep_their_codes(harness, hub):
    db = f"sync-bad-{uuid.uuid4().hex[:8]}"
    # nothing listens on the discard port: `ready` still resolves, the error is in status
    status = open_browser(harness, db, "http://127.0.0.1:9/nothing")
    assert status["state"] == "error" and status["error"]["code"] == "sync_failed", status
    code = js(harness, "try { await m.sync(); return null; } catch (e) { return e.code; }")
    assert code == "sync_failed"
    refused = js(harness, """
      const out = [];
      for (const sync of [{ url: "ftp://h/db" }, { url: args[0], every: 5 }, { url: args[0], live: 1 }]) {
        try { pm.createAgentMemory({ dbName: "x", sync }); out.push(null); }
        catch (e) { out.push(e.code); }
      }
      try { await pm.createAgentMemory({ dbName: "y" }).sync(); out.push(null); }
      catch (e) { out.push(e.code); }
      return out;
    """, hub)  # fmt: skip
    assert refused == ["invalid_input"] * 4


def test_the_browser_sync_example_prints_what_docs_sync_md_shows(harness, hub):
    """docs/sync.md's browser block, run in the harness page against the test hub."""
    page, heading = "docs/sync.md", "## In the browser"
    code = block(page, heading).body
    code = code.replace(
        'import { createAgentMemory } from "pymemory";', "const { createAgentMemory } = pm;"
    )
    code = code.replace("http://127.0.0.1:5984/memory-alice", hub)
    code = code.replace('dbName: "notes"', f'dbName: "notes-{uuid.uuid4().hex[:8]}"')
    code = code.replace(
        'passphrase: "alice\'s secret"', 'passphrase: "alice\'s secret", iterations: 1000'
    )
    last = code.rindex("console.log(")
    code = code[:last] + code[last:].replace("console.log(", "out.push([").replace(
        ");", "].join(' '));"
    )
    printed = js(harness, f"const out = []; {code} return out;")
    shown = section(page, heading).split("```\n\nprints")[1].split("\n\n")[1]
    assert printed == [line.strip() for line in shown.splitlines()]
