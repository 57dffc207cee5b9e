"""Several tabs of one app on one store: one elected tab runs the worker, the others
forward to it; when it goes, another takes over. Real Chromium, real IndexedDB, pages of
one browser context (one origin, one profile)."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor

from browserkit import watch_errors

from pymemory import Memory

OPEN = """async ([db]) => {
  window.m = window.pymemory.createAgentMemory({ dbName: db, scope: "user" });
  await window.m.ready;
  return window.m.status.role;
}"""


def tab(context, base_url, db="shared"):
    page = context.new_page()
    page.errors = watch_errors(page)
    page.goto(f"{base_url}/web/pages/test/harness.html")
    page.wait_for_function("document.body.dataset.loaded === '1'")
    role = page.evaluate(OPEN, [db])
    return page, role


def count(page) -> int:
    return page.evaluate("async () => (await window.m.list({ scope: null })).length")


def test_two_tabs_add_300_each_at_once_and_both_see_all_600(context, base_url):
    a, role_a = tab(context, base_url)
    b, role_b = tab(context, base_url)
    assert (role_a, role_b) == ("leader", "follower")
    start = """([who]) => { window.adding = (async () => {
        const all = [];
        for (let i = 0; i < 300; i++) all.push(window.m.addMemory(`${who} note number ${i}`));
        return (await Promise.all(all)).length; })(); }"""
    a.evaluate(start, ["alpha"])
    b.evaluate(start, ["bravo"])
    assert a.evaluate("window.adding") == 300 and b.evaluate("window.adding") == 300
    assert count(a) == 600 and count(b) == 600  # no reload
    for page, other in ((a, "bravo"), (b, "alpha")):
        text = page.evaluate("async ([q]) => (await window.m.retrieve(q)).text", [f"{other} note number 17"])
        assert f"{other} note number 17" in text
    assert a.errors == [] and b.errors == []


def test_forget_in_one_tab_is_gone_in_the_other(context, base_url):
    a, _ = tab(context, base_url)
    b, _ = tab(context, base_url)
    a.evaluate("async () => { await window.m.addMemory('The launch code word is pineapple'); }")
    query = "async () => (await window.m.retrieve('what is the launch code word?')).memories.length"
    assert b.evaluate(query) == 1
    assert b.evaluate("async () => await window.m.clear({ scope: 'user' })") == 1
    assert a.evaluate(query) == 0 and b.evaluate(query) == 0
    assert a.evaluate("async () => (await window.m.list({ scope: null })).length") == 0


def _export(n: int) -> str:
    async def make() -> str:
        async with await Memory.open() as memory:
            await memory.add_many(
                [{"text": f"imported fact {i}: the shelf {i} holds box {i * 7}"} for i in range(n)]
            )
            return "".join([line async for line in memory.export()])

    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API runs a loop in this thread
        return pool.submit(asyncio.run, make()).result()


IMPORT = """([text, chunk]) => {
  window.written = 0;
  window.outcome = null;
  window.m.importJsonl(text, { chunkSize: chunk, onProgress: (w) => { window.written = w; } })
    .then((r) => { window.outcome = { ok: true, r }; },
          (e) => { window.outcome = { ok: false, code: e.code, message: e.message }; });
}"""
LIST = "async () => (await window.m.list({ scope: null })).map((i) => i.content)"
CHUNK, TOTAL = 100, 4000
IN_FLIGHT = f"window.outcome === null && window.written < {TOTAL}"


def _acknowledged(text: str, written: int) -> set[str]:
    """The contents of the first ``written`` records of the import, in the order it sends them."""
    records = [json.loads(line) for line in text.splitlines()[1:]]
    return {r["item"]["content"] for r in records[:written]}


def _check_items(items: list[str], acknowledged: set[str]) -> None:
    assert len(items) == len(set(items))  # nothing twice
    assert acknowledged <= set(items)  # every acknowledged item, by content
    assert len(items) % CHUNK == 0  # no half batch


def _check_survivors(importer, idle, outcome, acknowledged) -> None:
    # A call the old leader took and did not answer is not retried (it may have applied).
    assert outcome["ok"] or outcome["code"] == "leader_lost", outcome
    for page in (importer, idle):
        page.wait_for_function("window.m.status.ready === true")
        _check_items(page.evaluate(LIST), acknowledged)
    roles = {importer.evaluate("window.m.status.role"), idle.evaluate("window.m.status.role")}
    assert roles == {"leader", "follower"}
    # the survivors keep working, through the new leader
    idle.evaluate("async () => { await window.m.addMemory('after the takeover: the kettle is blue'); }")
    found = importer.evaluate("async () => (await window.m.retrieve('what colour is the kettle?')).text")
    assert "kettle is blue" in found


def test_leader_closed_during_a_bulk_import(context, base_url):
    leader, _ = tab(context, base_url)
    importer, role = tab(context, base_url)
    idle, _ = tab(context, base_url)
    assert role == "follower"
    text = _export(TOTAL)
    importer.evaluate(IMPORT, [text, CHUNK])
    importer.wait_for_function("window.written >= 500")
    assert importer.evaluate(IN_FLIGHT)  # the import is still running when the leader goes
    leader.close()
    importer.wait_for_function("window.outcome !== null")
    written = importer.evaluate("window.written")
    _check_survivors(importer, idle, importer.evaluate("window.outcome"), _acknowledged(text, written))


def test_leader_crashed_during_a_bulk_import(browser, base_url):
    """The leader's renderer is crashed through CDP (Page.crash). Its own browser process
    and --disable-features keep the three tabs in three renderer processes."""
    from browserkit import CHROMIUM_ARGS, chromium_path
    from playwright.async_api import async_playwright

    args = [*CHROMIUM_ARGS, "--disable-features=ProcessPerSiteUpToMainFrameThreshold"]
    text = _export(TOTAL)

    async def scenario() -> dict:
        async with async_playwright() as p:
            b = await p.chromium.launch(executable_path=chromium_path(), args=args)
            ctx = await b.new_context()
            ctx.set_default_timeout(120_000)
            pages = []
            for _ in range(3):
                page = await ctx.new_page()
                await page.goto(f"{base_url}/web/pages/test/harness.html")
                await page.wait_for_function("document.body.dataset.loaded === '1'")
                pages.append((page, await page.evaluate(OPEN, ["shared"])))
            (leader, r0), (importer, r1), (idle, r2) = pages
            assert (r0, r1, r2) == ("leader", "follower", "follower")
            crashed = asyncio.get_running_loop().create_future()
            leader.on("crash", lambda _p: crashed.done() or crashed.set_result(True))
            await importer.evaluate(IMPORT, [text, CHUNK])
            await importer.wait_for_function("window.written >= 500")
            cdp = await ctx.new_cdp_session(leader)
            in_flight = await importer.evaluate(IN_FLIGHT)
            send = asyncio.ensure_future(cdp.send("Page.crash"))  # never answered: it crashed
            await asyncio.wait_for(crashed, 30)
            send.cancel()
            await importer.wait_for_function("window.outcome !== null")
            outcome = await importer.evaluate("window.outcome")
            written = await importer.evaluate("window.written")
            result = {"outcome": outcome, "written": written, "after": [], "in_flight": in_flight}
            for page in (importer, idle):
                await page.wait_for_function("window.m.status.ready === true")
                result["after"].append(
                    {"items": await page.evaluate(LIST), "role": await page.evaluate("window.m.status.role")}
                )
            await idle.evaluate("async () => { await window.m.addMemory('after the crash: the kettle is blue'); }")
            result["found"] = await importer.evaluate(
                "async () => (await window.m.retrieve('what colour is the kettle?')).text"
            )
            await b.close()
            return result

    with ThreadPoolExecutor(1) as pool:  # the sync fixtures' loop owns this thread
        got = pool.submit(asyncio.run, scenario()).result()
    assert got["in_flight"]  # the import was still running when the leader crashed
    assert got["outcome"]["ok"] or got["outcome"]["code"] == "leader_lost", got["outcome"]
    for after in got["after"]:
        _check_items(after["items"], _acknowledged(text, got["written"]))
    assert {a["role"] for a in got["after"]} == {"leader", "follower"}
    assert "kettle is blue" in got["found"]
