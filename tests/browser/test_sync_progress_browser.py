"""A round's progress in the client's ``status.sync.round`` (issue 27): real Chromium,
Pyodide and IndexedDB; the session's pouchdb-server behind a real local HTTP server
(hubproxy.py) that slows the push and every page of the pull by a second, so the round
takes seconds and its phases and counts can be watched from the page as it goes."""

from __future__ import annotations

import time
import uuid

import pytest
from browserkit import js
from hubproxy import HubProxy, Rule
from test_sync_browser import on_device
from test_sync_failures_browser import BULK, CHANGES

from pymemory import Memory

LAPTOP_NOTES = 1100  # three pages of the pull (500 records each)

WATCH = """
  window.rounds = [];
  m.onStatus((s) => window.rounds.push({ at: Date.now(), state: s.sync?.state,
                                          round: s.sync?.round ?? null }));
  const t0 = Date.now();
  const done = await m.sync();
  return { t0, t1: Date.now(), done, after: m.status.sync, seen: window.rounds };
"""


@pytest.fixture
def proxy(hub_root):
    server = HubProxy(hub_root).start()
    yield server
    server.stop()


def test_status_follows_a_slow_round_and_is_null_after(harness, hub_root, proxy, tmp_path):
    name = f"progress-{uuid.uuid4().hex[:8]}"
    hub, via = f"{hub_root}/{name}", f"{proxy.url}/{name}"
    status = js(
        harness,
        "window.m = pm.createAgentMemory({ dbName: args[0], sync: { url: args[1] } }); "
        "return (await m.ready).sync;",
        name, via,
    )  # fmt: skip
    assert status["state"] == "idle" and status["round"] is None, status
    js(harness, "for (let i = 0; i < 3; i++) await m.addMemory(`browser note ${i}`);")

    async def laptop_adds(memory: Memory) -> None:
        await memory.add_many([{"text": f"laptop note {i}"} for i in range(LAPTOP_NOTES)])
        await memory.sync(hub)

    on_device(tmp_path / "laptop.db", laptop_adds)
    proxy.set_rules(Rule("POST", BULK, delay_s=1.0), Rule("GET", CHANGES, delay_s=1.0))
    t = time.monotonic()
    got = js(harness, WATCH)
    assert time.monotonic() - t >= 3  # the push and three pages, a second each
    done, after = got["done"], got["after"]
    assert (done["pushed"], done["pulled"]) == (3, LAPTOP_NOTES), done
    assert after["state"] == "idle" and after["round"] is None, after

    rounds = [s["round"] for s in got["seen"] if s["round"] is not None]
    assert rounds, got["seen"]
    # a round shows only while the status says syncing
    assert all(s["state"] == "syncing" for s in got["seen"] if s["round"] is not None)
    phases = [r["phase"] for r in rounds]
    assert "push" in phases and "pull" in phases, phases
    assert phases.index("pull") > phases.index("push")  # in that order
    started = {r["startedMs"] for r in rounds}
    assert len(started) == 1 and got["t0"] - 1000 <= started.pop() <= got["t1"], rounds
    pulled = [r["pulled"] for r in rounds if r["phase"] == "pull"]
    assert pulled == sorted(pulled)  # never goes back
    # updated during the round: the pull's first pages show before the round ends
    assert any(0 < n < LAPTOP_NOTES for n in pulled), pulled
    assert max(r["pushed"] for r in rounds) <= 3
    assert any(r["phase"] == "pull" and r["pushed"] == 3 for r in rounds), rounds
    # the last status of the round is the idle one, with no round
    last = got["seen"][-1]
    assert last["state"] == "idle" and last["round"] is None
