"""A hub that fails, seen from the browser (issue 27): real Chromium, Pyodide and
IndexedDB; the hub is the session's pouchdb-server behind a real local HTTP server
(hubproxy.py) that answers 500s, bodies that are not JSON or JSON of the wrong shape, or
nothing at all, at the start of a round or in the middle of it (after the push, in the
pull). ``memory.sync()`` rejects with ``sync_failed`` (``retryable`` as Python says) in a
bounded time, ``ready`` still resolves, and the browser's store is what it was; once the
hub behaves again, a round converges with a CPython device and the hub holds every record
once."""

from __future__ import annotations

import base64
import json
import uuid

import pytest
from browserkit import js
from hubproxy import HubProxy, Rule
from test_sync_browser import export, hub_text, on_device

from pymemory import Memory

DB_INFO = r"^/[^/?]+/?$"  # GET /<db>: the first request of a round
CHANGES = r"/_changes\?"
BULK = r"/_bulk_docs"
NOT_JSON = b"<html><body>Gateway says hello</body></html>"

# (what the hub does, the error's retryable, words of its message)
FAILURES = [
    ("500 to everything", Rule(None, ".", status=500, body=b'{"error":"boom"}'), True, "answered 500"),
    ("not JSON to everything", Rule(None, ".", status=200, body=NOT_JSON, content_type="text/html"),
     True, "not JSON"),
    ("database info of the wrong shape", Rule("GET", DB_INFO, status=200, body=b'{"hello":"world"}'),
     False, "not a CouchDB database"),
    ("500 in the pull, after the push", Rule("GET", CHANGES, status=503, body=b"{}"), True, "answered 503"),
    ("a feed of the wrong shape", Rule("GET", CHANGES, status=200, body=b'{"results":5,"last_seq":3}'),
     True, "no results"),
    ("a feed whose row has no document",
     Rule("GET", CHANGES, status=200, body=b'{"results":[{"id":"k:mem:x","seq":9}],"last_seq":9}'),
     False, "no document"),
    ("not JSON to the push", Rule("POST", BULK, status=200, body=NOT_JSON), True, "not JSON"),
]  # fmt: skip

FAIL = """
  const t0 = performance.now();
  try { await m.sync(); return { ok: true }; }
  catch (e) {
    return { ok: false, code: e.code, retryable: e.retryable, message: e.message,
             isError: e instanceof pm.MemoryError, ms: performance.now() - t0,
             status: m.status.sync };
  }
"""


@pytest.fixture
def proxy(hub_root):
    server = HubProxy(hub_root).start()
    yield server
    server.stop()


def live_contents(hub: str) -> list[str]:
    """The item contents of the hub's live ``k:mem:`` records (a plain store's values
    are the items' JSON), one entry per record."""
    out = []
    for row in json.loads(hub_text(hub))["rows"]:
        doc = row.get("doc") or {}
        if row["id"].startswith("k:mem:") and "v" in doc and not doc.get("del"):
            out.append(json.loads(base64.b64decode(doc["v"]))["content"])
    return out


def open_client(page, db: str, url: str, timeout_ms: int | None = None) -> dict:
    sync = "{ url: args[1] }" if timeout_ms is None else "{ url: args[1], timeoutMs: args[2] }"
    return js(
        page,
        f"window.m = pm.createAgentMemory({{ dbName: args[0], sync: {sync} }}); "
        "return (await m.ready).sync;",
        db, url, timeout_ms,
    )  # fmt: skip


def test_errors_from_the_hub_reject_sync_failed_and_leave_the_store_alone(
    harness, hub_root, proxy, tmp_path
):
    name = f"fail-{uuid.uuid4().hex[:8]}"
    hub, via = f"{hub_root}/{name}", f"{proxy.url}/{name}"
    laptop = tmp_path / "laptop.db"

    async def laptop_adds(memory: Memory, texts: list[str]) -> None:
        for text in texts:
            await memory.add(text, scope="user")
        await memory.sync(hub)

    on_device(laptop, lambda memory: laptop_adds(memory, ["laptop note 0", "laptop note 1"]))
    status = open_client(harness, f"b-{name}", via)
    assert status["state"] == "idle" and status["last"]["pulled"] >= 2, status
    added = ["laptop note 0", "laptop note 1"]
    for i, (label, rule, retryable, words) in enumerate(FAILURES):
        # something to push and something to pull, had the round worked
        text = f"laptop note during {label}"
        on_device(laptop, lambda memory, t=text: laptop_adds(memory, [t]))
        added.append(text)
        js(harness, "await m.addMemory({ text: args[0], scope: 'user' });", f"browser note {i}")
        before = js(harness, "return await m.exportJsonl();")
        proxy.set_rules(rule)
        got = js(harness, FAIL)
        proxy.set_rules()
        assert got["ok"] is False, label
        assert (got["code"], got["retryable"], got["isError"]) == ("sync_failed", retryable, True), (
            label, got,
        )  # fmt: skip
        assert words in got["message"], (label, got["message"])
        assert got["ms"] < 10_000, (label, got["ms"])
        assert got["status"]["state"] == "error" and got["status"]["error"]["code"] == "sync_failed"
        assert got["status"]["error"]["retryable"] is retryable
        assert js(harness, "return await m.exportJsonl();") == before, label
        assert any(what != "forward" for _, _, what in proxy.seen), label  # the rule was hit
        proxy.seen.clear()

    # the hub behaves again: one round brings the laptop's notes, and both ends agree
    done = js(harness, "return await m.sync();")
    assert done["pulled"] == len(FAILURES), done
    assert js(harness, "return m.status.sync.state;") == "idle"

    async def pull(memory: Memory) -> str:
        await memory.sync(hub)
        return await export(memory)

    assert js(harness, "return await m.exportJsonl();") == on_device(laptop, pull)
    contents = live_contents(hub)
    expected = added + [f"browser note {i}" for i in range(len(FAILURES))]
    assert sorted(contents) == sorted(expected)  # every record once


def test_a_hub_that_hangs_times_out(harness, hub_root, proxy):
    name = f"hang-{uuid.uuid4().hex[:8]}"
    via = f"{proxy.url}/{name}"
    timeout_ms = 1500
    assert open_client(harness, name, via, timeout_ms)["state"] == "idle"
    js(harness, "await m.addMemory({ text: 'a note before the hub hangs', scope: 'user' });")
    for label, rule in [
        ("at the start of the round", Rule(None, ".", hang=True)),
        ("in the pull, after the push", Rule("GET", CHANGES, hang=True)),
    ]:
        js(harness, "await m.addMemory({ text: args[0], scope: 'user' });", f"note {label}")
        before = js(harness, "return await m.exportJsonl();")
        proxy.set_rules(rule)
        got = js(harness, FAIL)
        proxy.release()
        proxy.set_rules()
        assert (got["ok"], got["code"], got["retryable"]) == (False, "sync_failed", True), got
        assert "timed out after 1.5s" in got["message"], got["message"]
        assert timeout_ms * 0.9 <= got["ms"] < 10_000, (label, got["ms"])
        assert js(harness, "return await m.exportJsonl();") == before, label
        assert "hang" in [what for _, _, what in proxy.seen], label
        proxy.seen.clear()

    # `ready` of a client whose hub hangs still resolves, with the error in status.sync
    proxy.set_rules(Rule(None, ".", hang=True))
    other = js(
        harness,
        "const t0 = performance.now(); "
        "const c = pm.createAgentMemory({ dbName: args[0], sync: { url: args[1], timeoutMs: 1500 } }); "
        "const s = await c.ready; return { sync: s.sync, ms: performance.now() - t0 };",
        f"{name}-other", f"{via}-other",
    )  # fmt: skip
    proxy.release()
    proxy.set_rules()
    assert other["sync"]["state"] == "error" and other["sync"]["error"]["code"] == "sync_failed"
    assert other["sync"]["error"]["retryable"] is True and other["ms"] < 15_000, other

    # and the first client syncs again once the hub answers
    js(harness, "await m.addMemory({ text: 'a note after the hub came back', scope: 'user' });")
    done = js(harness, "return await m.sync();")
    assert done["pushed"] >= 1, done
    assert js(harness, "return m.status.sync.state;") == "idle"
