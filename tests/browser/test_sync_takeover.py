"""Sync across tabs that come and go (issue 27): the leader tab's worker runs the rounds,
so what happens when that tab closes. Real Chromium (tabs of one browser context: one
origin, one profile, one IndexedDB), Pyodide and the session's pouchdb-server, behind a
real local HTTP server (hubproxy.py) that holds the pull for the first case.

- A tab closed in the middle of a round's pull: a new tab on the same profile syncs again,
  and nothing is lost or pulled twice (exports byte-identical with a CPython device's;
  the hub holds every record once).
- ``live: true`` in two tabs: when the leader tab closes, the tab that takes over starts
  the live loop in its own worker; a record a CPython device pushes then reaches it
  without a ``sync()`` call.
"""

from __future__ import annotations

import time
import uuid

import pytest
from browserkit import js, watch_errors
from hubproxy import HubProxy, Rule
from test_sync_browser import export, on_device
from test_sync_failures_browser import CHANGES, live_contents

from pymemory import Memory

LAPTOP_NOTES = 700  # more than one page of the pull (500 records)


@pytest.fixture
def proxy(hub_root):
    server = HubProxy(hub_root).start()
    yield server
    server.stop()


def tab(context, base_url):
    page = context.new_page()
    page.errors = watch_errors(page)
    page.goto(f"{base_url}/web/pages/test/harness.html")
    page.wait_for_function("document.body.dataset.loaded === '1'")
    return page


def open_client(page, db: str, url: str, live: bool = False) -> dict:
    return js(
        page,
        "window.m = pm.createAgentMemory({ dbName: args[0], scope: 'user', "
        "sync: { url: args[1], live: args[2] } }); return await m.ready;",
        db, url, live,
    )  # fmt: skip


def until(check, timeout_s: float, what: str):
    """Poll ``check()`` until it returns something truthy; fail naming ``what``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.25)
    pytest.fail(f"{what}: not within {timeout_s:g} s")


def test_tab_closed_mid_pull_loses_and_duplicates_nothing(
    context, base_url, hub_root, proxy, tmp_path
):
    name = f"close-{uuid.uuid4().hex[:8]}"
    hub, via = f"{hub_root}/{name}", f"{proxy.url}/{name}"
    laptop = tmp_path / "laptop.db"
    first = tab(context, base_url)
    assert open_client(first, name, via)["sync"]["state"] == "idle"
    mine = [f"browser note {i}" for i in range(5)]
    js(first, "for (const text of args[0]) await m.addMemory(text);", mine)

    async def laptop_adds(memory: Memory) -> None:
        notes = [{"text": f"laptop note {i}", "scope": "user"} for i in range(LAPTOP_NOTES)]
        await memory.add_many(notes)
        await memory.sync(hub)

    on_device(laptop, laptop_adds)
    # The round pushes the browser's notes, applies the pull's first page, then waits for
    # the second page, which the proxy holds: the tab closes there.
    proxy.set_rules(Rule("GET", CHANGES, hold=True, nth=2))
    js(first, "window.round = m.sync().then((r) => r, (e) => e.code); return null;")
    assert proxy.held.wait(60), proxy.seen
    assert js(first, "return m.status.sync.state;") == "syncing"
    first.close()
    proxy.release()
    proxy.set_rules()

    second = tab(context, base_url)
    opened = open_client(second, name, via)
    assert opened["role"] == "leader" and opened["sync"]["state"] == "idle", opened
    resumed = opened["sync"]["last"]
    # the first page stayed applied: the new tab pulled the rest, not everything again
    assert 0 < resumed["pulled"] < LAPTOP_NOTES and resumed["pushed"] == 0, resumed
    again = js(second, "return await m.sync();")
    assert (again["pushed"], again["pulled"]) == (0, 0), again
    listed = js(second, "return (await m.list({ scope: null })).map((i) => i.content);")
    assert sorted(listed) == sorted(mine + [f"laptop note {i}" for i in range(LAPTOP_NOTES)])

    async def pull(memory: Memory) -> str:
        await memory.sync(hub)
        return await export(memory)

    assert js(second, "return await m.exportJsonl();") == on_device(laptop, pull)
    assert sorted(live_contents(hub)) == sorted(listed)  # every record once
    assert second.errors == []


def test_live_sync_restarts_in_the_tab_that_takes_over(context, base_url, hub, tmp_path):
    laptop = tmp_path / "laptop.db"
    name = f"live-{uuid.uuid4().hex[:8]}"
    leader, follower = tab(context, base_url), tab(context, base_url)
    assert open_client(leader, name, hub, live=True)["role"] == "leader"
    assert open_client(follower, name, hub, live=True)["role"] == "follower"
    loops = "return (await m.stats()).sync.live.filter((l) => l.running).length;"
    assert js(follower, loops) == 1  # one loop, in the leader's worker

    leader.close()
    follower.wait_for_function(
        "window.m.status.role === 'leader' && window.m.status.ready === true"
    )
    # the new leader's worker starts the loop again (one round, then every 5 s)
    until(lambda: js(follower, loops) == 1, 60, "a live loop in the new leader's worker")

    async def laptop_adds(memory: Memory) -> str:
        item = await memory.add("added on the laptop after the takeover", scope="user")
        await memory.sync(hub)
        return item.id

    item_id = on_device(laptop, laptop_adds)
    got = until(
        lambda: js(
            follower,
            "try { return (await m.get(args[0])).text; } catch (e) { return null; }",
            item_id,
        ),
        30,
        "the laptop's record in the remaining tab, by the live loop",
    )
    assert got == "added on the laptop after the takeover"
    assert js(follower, loops) == 1
    assert follower.errors == []
