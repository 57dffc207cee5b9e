"""Issue 37 with one device in Chromium (Pyodide in the store worker, fetch, IndexedDB) and
one in CPython (a SQLite file), through the session's pouchdb-server: the later edit wins
whichever device syncs first, the loser is in history marked ``conflict``, one conflict
counted; a delete made after a lost answer stays deleted; a deleted memory never comes
back archived. Plain and encrypted stores."""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from browserkit import js
from test_sync_browser import FAST, PASS, export, open_browser, run_async

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "sync"))

from faultproxy import FaultProxy, Lose

from pymemory import Memory, NotFoundError
from pymemory.storage import EncryptedKv, SqliteKv
from pymemory.sync import sync_store

KINDS = [False, True]
KIND_IDS = ["plain", "encrypted"]
ENCRYPTION = "{ passphrase: args[2], iterations: args[3] }"


def cpython(path: Path, hub: str, encrypted: bool, work: Callable[[Memory], Awaitable[Any]]):
    """Run ``work`` on the CPython device (the SQLite file ``path``); a new encrypted
    device pulls the key record from ``hub`` first."""

    async def main() -> Any:
        raw = await SqliteKv.open(path)
        store: Any = raw
        if encrypted:
            if not await raw.scan("meta:enc", limit=1):
                await sync_store(raw, hub)
            store = await EncryptedKv.open(raw, passphrase=PASS, iterations=FAST)
        memory = await Memory.open(store)
        try:
            return await work(memory)
        finally:
            await memory.close()
            await store.close()

    return run_async(main())


def browser(page, hub: str, encrypted: bool) -> dict:
    db = f"i37-{uuid.uuid4().hex[:8]}"
    return open_browser(page, db, hub, ENCRYPTION if encrypted else "null")


def gone_in_browser(page, item_id: str) -> dict:
    return js(page, """
      let got = null;
      try { await m.get(args[0]); got = "found"; } catch (e) { got = e.code; }
      const archived = (await m.searchArchive("", { limit: 100 })).map((a) => a.id);
      const listed = (await m.list({ scope: null })).map((i) => i.id);
      return { got, archived: archived.includes(args[0]), listed: listed.includes(args[0]) };
    """, item_id)  # fmt: skip


async def gone_here(memory: Memory, item_id: str) -> bool:
    try:
        await memory.get(item_id)
    except NotFoundError:
        archived = {a.id for a in await memory.search_archive("", limit=100)}
        return item_id not in archived
    return False


@pytest.mark.parametrize("encrypted", KINDS, ids=KIND_IDS)
@pytest.mark.parametrize("first", ["cpython", "browser"], ids=["later-syncs-first", "older-syncs-first"])
def test_the_later_edit_wins_with_a_browser_device(harness, hub, tmp_path, encrypted, first):
    """The browser edits first, the CPython device a second later; whichever syncs first,
    the CPython edit wins on both, the browser's is the marked loser, one conflict."""
    laptop = tmp_path / "laptop.db"
    status = browser(harness, hub, encrypted)
    assert status["state"] == "idle", status
    item_id = js(harness, """
      const it = await m.addMemory({ text: "The boat leaves at six.", scope: "user" });
      await m.sync(); return it.id;
    """)  # fmt: skip
    cpython(laptop, hub, encrypted, lambda m: m.sync(hub))
    js(harness, "await m.update(args[0], { text: 'The boat leaves at seven (browser).' });", item_id)
    time.sleep(1.0)

    async def edit(memory: Memory) -> None:
        await memory.update(item_id, content="The boat leaves at eight (laptop).")

    cpython(laptop, hub, encrypted, edit)
    conflicts = 0
    for _ in range(3):
        for who in ([first, "browser" if first == "cpython" else "cpython"]):
            if who == "browser":
                conflicts += js(harness, "return (await m.sync()).conflicts;")
            else:
                done = cpython(laptop, hub, encrypted, lambda m: m.sync(hub))
                conflicts += done.conflicts
    assert conflicts == 1
    history = js(harness, """
      return (await m.history(args[0])).map((v) => [v.item.content, v.item.version, v.conflict]);
    """, item_id)  # fmt: skip
    assert history == [
        ["The boat leaves at six.", 1, False],
        ["The boat leaves at seven (browser).", 2, True],
        ["The boat leaves at eight (laptop).", 2, False],
    ]

    async def look(memory: Memory) -> tuple[str, list[list[Any]], str]:
        shown = [[v.item.content, v.item.version, v.conflict] for v in await memory.history(item_id)]
        return (await memory.get(item_id)).content, shown, await export(memory)

    content, laptop_history, laptop_export = cpython(laptop, hub, encrypted, look)
    assert content == "The boat leaves at eight (laptop)."
    assert laptop_history == history
    assert js(harness, "return (await m.get(args[0])).content;", item_id) == content
    assert js(harness, "return await m.exportJsonl();") == laptop_export


@pytest.mark.parametrize(("mode", "encrypted"), [("drop", False), ("500", True)],
                         ids=["drop-plain", "500-encrypted"])  # fmt: skip
def test_a_delete_after_a_lost_answer_stays_deleted_in_the_browser(
    harness, hub_root, tmp_path, mode, encrypted
):
    proxy = FaultProxy(hub_root).start()
    try:
        name = f"lost-{uuid.uuid4().hex[:8]}"
        hub, via = f"{hub_root}/{name}", f"{proxy.url}/{name}"
        laptop = tmp_path / "laptop.db"
        assert browser(harness, via, encrypted)["state"] == "idle"
        ids = js(harness, """
          const a = await m.addMemory({ text: "The dentist is on Friday.", scope: "user" });
          const b = await m.addMemory({ text: "The old alarm code is 0000.", scope: "user" });
          return [a.id, b.id];
        """)  # fmt: skip
        kept, doomed = ids
        proxy.lose = [Lose("POST", "/_bulk_docs", mode)]
        got = js(harness, "try { await m.sync(); return null; } catch (e) { return [e.code, e.retryable]; }")
        proxy.lose = []
        assert got == ["sync_failed", True]
        assert [x[2] for x in proxy.spoiled] == [mode]  # the hub took it, the answer lost

        async def has_it(memory: Memory) -> str:
            await memory.sync(hub)
            return (await memory.get(doomed)).content

        assert cpython(laptop, hub, encrypted, has_it) == "The old alarm code is 0000."
        js(harness, "await m.delete(args[0]);", doomed)
        for _ in range(2):  # the next good rounds: browser, laptop, browser, laptop
            js(harness, "await m.sync();")
            cpython(laptop, hub, encrypted, lambda m: m.sync(hub))
        assert gone_in_browser(harness, doomed) == {"got": "not_found", "archived": False, "listed": False}

        async def after(memory: Memory) -> tuple[bool, list[str], str]:
            return await gone_here(memory, doomed), [i.id for i in await memory.list()], await export(memory)

        gone, listed, laptop_export = cpython(laptop, hub, encrypted, after)
        assert gone and listed == [kept]
        assert js(harness, "return await m.exportJsonl();") == laptop_export
    finally:
        proxy.stop()


@pytest.mark.parametrize("encrypted", KINDS, ids=KIND_IDS)
def test_a_memory_deleted_in_the_browser_never_comes_back_archived(harness, hub, tmp_path, encrypted):
    laptop = tmp_path / "laptop.db"
    assert browser(harness, hub, encrypted)["state"] == "idle"
    doomed = js(harness, """
      const it = await m.addMemory({ text: "The storage unit is number 41.", scope: "user" });
      await m.sync(); return it.id;
    """)  # fmt: skip

    async def archive(memory: Memory) -> int:
        await memory.sync(hub)
        await asyncio.sleep(0.01)
        return await memory.archive_older_than(0)

    assert cpython(laptop, hub, encrypted, archive) == 1  # the laptop archives it, offline
    js(harness, "await m.delete(args[0]);", doomed)  # the browser deletes it, offline
    for _ in range(2):  # the archive reaches the hub first
        cpython(laptop, hub, encrypted, lambda m: m.sync(hub))
        js(harness, "await m.sync();")
    assert gone_in_browser(harness, doomed) == {"got": "not_found", "archived": False, "listed": False}

    async def after(memory: Memory) -> tuple[bool, str]:
        await memory.sync(hub)
        return await gone_here(memory, doomed), await export(memory)

    gone, laptop_export = cpython(laptop, hub, encrypted, after)
    assert gone
    js(harness, "await m.sync();")
    assert js(harness, "return await m.exportJsonl();") == laptop_export
