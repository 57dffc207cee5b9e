"""Issue 17 in the browser: a full disk loses nothing. The Chromium profile lives on a
64 MB tmpfs mounted for the test (CI runs as root); the store is filled with ~100 KB
memories until a write is refused, then: the refusal is typed, the store is unchanged,
export works, deletes free room, and after a browser restart on the same profile every
acknowledged memory is there. Also: `persist: true` asks the browser for persistent
storage and status.storage reports the answer and the estimate.

What Chromium 156 does (README "When storage runs out"): navigator.storage.estimate()
reports quota = usage + 1 GiB here (usage + min(10 GiB, the disk rounded up to a GiB)),
so the reserve under it never triggers; the quota it enforces is 60% of the disk (40.3 MB,
the runtime's Cache Storage included) and a write over it aborts with QuotaExceededError.
Over that quota a transaction that puts anything is refused, even pymemory's delete (it
logs the change): IndexedDbKv then frees the 1 MiB value idb_kv.mjs keeps for deletes and
runs the delete again. When the disk itself runs out first, Chromium closes the database
and deletes a best-effort origin's data (IndexedDB and caches); with persistent storage
granted it keeps it, and pymemory reopens the database once there is room, unless the
failed write tore LevelDB's log and Chromium finds it corrupt at that reopen: then it
deletes the origin's whole IndexedDB data, which pymemory reports (storage_error) rather
than opening an empty store as if nothing happened. The first write after such a failure
makes LevelDB leave the torn log (idb_kv.mjs rollLog), which Chromium would otherwise find
corrupt at the next restart.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from browserkit import BOOT_TIMEOUT_MS, CHROMIUM_ARGS, chromium_path, js, watch_errors

DISK = "64m"
MIB = 1024 * 1024

# In the page: `within` gives every call a deadline (a write that never settles, what
# Pyodide did with Chromium's QuotaExceededError, fails the test instead of hanging it);
# `text(i)` is ~98 KB of random letters (they do not compress, so each value is a file of
# its own beside LevelDB); `fill` adds them one by one until a write is refused.
HELPERS = """() => {
  window.within = (p, ms) => Promise.race([
    p.then((r) => ({ ok: true, r }), (e) => ({ ok: false, code: e.code, message: String(e.message) })),
    new Promise((done) => setTimeout(() => done({ ok: false, code: `no answer in ${ms} ms` }), ms)),
  ]);
  window.text = (i) => {
    const bytes = new Uint8Array(98000);
    for (let at = 0; at < bytes.length; at += 65536) crypto.getRandomValues(bytes.subarray(at, at + 65536));
    const body = Array.from(bytes, (b) => (b % 27 === 0 ? " " : String.fromCharCode(97 + (b % 26)))).join("");
    return `memory ${i} ${body}`.slice(0, 98000);
  };
  // Words that compress (~3:1): the values stay inside LevelDB, whose log and compactions
  // are what runs out of disk first.
  window.words = (i) => {
    const bytes = new Uint8Array(20000);
    for (let at = 0; at < bytes.length; at += 65536) crypto.getRandomValues(bytes.subarray(at, at + 65536));
    const names = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"];
    return `memory ${i} ${Array.from(bytes, (b) => names[b % 8] + (b >> 3)).join(" ")}`.slice(0, 98000);
  };
  window.fill = async (limit, make = window.text) => {
    const acked = [];
    for (let i = 0; i < limit; i++) {
      const t = make(i);
      const got = await window.within(window.m.addMemory({ text: t }), 30000);
      if (!got.ok) return { acked, refused: got };
      acked.push([got.r.id, t.slice(0, 80)]);
    }
    return { acked, refused: null };
  };
}"""

OPEN = """async ([db]) => {
  window.m = window.pymemory.createAgentMemory({ dbName: db, scope: "user" });
  await window.m.ready;
  return window.m.status.storage;
}"""


@pytest.fixture
def small_disk(tmp_path):
    if os.geteuid() != 0:
        pytest.fail("mounting a tmpfs needs root (CI runs as root)", pytrace=False)
    mnt = tmp_path / "profile"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK}", "tmpfs", str(mnt)], check=True)
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=True)


def launch(playwright, profile, base_url):
    context = playwright.chromium.launch_persistent_context(
        str(profile), executable_path=chromium_path(), args=CHROMIUM_ARGS
    )
    context.set_default_timeout(BOOT_TIMEOUT_MS)
    page = context.new_page()
    page.errors = watch_errors(page)
    page.goto(f"{base_url}/web/pages/test/harness.html")
    page.wait_for_function("document.body.dataset.loaded === '1'")
    page.evaluate(HELPERS)
    return context, page


def call(page, body: str, *args):
    """`body` (an expression over `m` and `args`) within 60 s: {ok, r} or {ok: false, code}."""
    return page.evaluate(
        f"async (args) => {{ const m = window.m; return window.within((async () => {body})(), 60000); }}",
        list(args),
    )


def stored(page) -> dict[str, str]:
    got = call(
        page,
        "(await m.list({ scope: null, limit: 100000 })).map((x) => [x.id, x.text.slice(0, 80)])",
    )
    assert got["ok"], got
    return dict(got["r"])


def exported(page) -> set[str]:
    got = call(page, "m.exportJsonl()")
    assert got["ok"], got
    records = [json.loads(line) for line in got["r"].splitlines() if line.strip()]
    return {r["item"]["id"] for r in records if "item" in r}


def test_a_full_disk_refuses_typed_frees_room_and_loses_nothing(
    playwright_instance, small_disk, base_url
):
    context, page = launch(playwright_instance, small_disk, base_url)
    try:
        storage = page.evaluate(OPEN, ["fill"])
        # The artificial quota: usage + min(10 GiB, the disk rounded up to a GiB).
        assert storage["quota"] - storage["usage"] == 1024 * MIB
        filled = page.evaluate("(n) => window.fill(n)", 2000)
        acked = dict(filled["acked"])
        refused = filled["refused"]
        assert refused is not None, "the 64 MB disk never filled"
        assert refused["code"] == "quota_exceeded", refused
        assert len(acked) > 100  # about 200 fit under Chromium's 40 MB quota, beside its caches
        print(f"\nrefused after {len(acked)} memories: {refused['message']}")
        print("estimate at the limit:", page.evaluate("navigator.storage.estimate()"))
        print(f"disk free at the limit: {free_bytes(small_disk) / MIB:.1f} MiB")

        # The store is unchanged, and stays readable and exportable.
        again = call(page, "m.addMemory({ text: window.text(100000) })")
        assert again["ok"] is False and again["code"] == "quota_exceeded", again
        assert stored(page) == acked
        assert exported(page) == set(acked)

        # Deletes work at the limit, and once they freed room, adds do again.
        doomed = list(acked)[:20]  # ~2 MB: the 1 MiB kept for deletes is taken back first
        for n, item_id in enumerate(doomed):
            gone = call(page, "m.delete(args[0])", item_id)
            assert gone["ok"], f"delete {n} at {free_bytes(small_disk)} bytes free: {gone}"
            del acked[item_id]
        added = call(page, "m.addMemory({ text: window.text(100001) })")
        assert added["ok"], f"add after the deletes: {added}"
        acked[added["r"]["id"]] = added["r"]["text"][:80]
        assert stored(page) == acked
        assert page.errors == []
    finally:
        context.close()

    # A restart on the same profile: every acknowledged memory is there, nothing else.
    context, page = launch(playwright_instance, small_disk, base_url)
    try:
        page.evaluate(OPEN, ["fill"])
        assert stored(page) == acked
        assert page.errors == []
    finally:
        context.close()


def grant_persistent_storage(profile, origin):
    """The profile as Chromium leaves it once it granted the origin's persist(): a
    durable-storage content setting (DevTools' Browser.grantPermissions only makes
    persist() answer true; it does not reach the eviction policy)."""
    prefs = {
        "profile": {
            "content_settings": {"exceptions": {"durable_storage": {f"{origin},*": {"setting": 1}}}}
        }
    }
    (profile / "Default").mkdir()
    (profile / "Default" / "Preferences").write_text(json.dumps(prefs))


def free_bytes(folder) -> int:
    st = os.statvfs(folder)
    return st.f_bavail * st.f_frsize


def fill_disk(folder, leave: int):
    """A file that leaves `leave` bytes free on `folder`'s filesystem."""
    size = free_bytes(folder) - leave
    with open(folder / "ballast", "wb") as f:
        for _ in range(size // MIB):
            f.write(bytes(MIB))
    return folder / "ballast"


def test_a_disk_full_inside_leveldb_is_typed_then_the_store_is_whole_or_reported_lost(
    playwright_instance, small_disk, base_url
):
    # The disk runs out long before the quota, inside LevelDB (these memories compress, so
    # they are stored in it), on a profile with persistent storage granted (a best-effort
    # origin's data would be evicted). Chromium aborts the write (FILE_ERROR_NO_SPACE),
    # closes the database and reopens it. If the write tore LevelDB's log, that reopen may
    # find a checksum mismatch and Chromium deletes the origin's whole IndexedDB data:
    # nothing a page can prevent (README "When storage runs out"); then every call says
    # the database is gone. Otherwise every acknowledged memory is there, and stays there
    # after a restart: the first write after the failure makes LevelDB leave the torn log
    # (idb_kv.mjs rollLog), which Chromium would otherwise keep appending to and find
    # corrupt at the restart. Never a store that quietly lost some or all of them.
    grant_persistent_storage(small_disk, base_url)
    context, page = launch(playwright_instance, small_disk, base_url)
    try:
        storage = page.evaluate(PERSISTED, ["full"])
        assert storage["persisted"] is True
        ballast = fill_disk(small_disk, MIB)
        filled = page.evaluate("(n) => window.fill(n, window.words)", 2000)
        acked = dict(filled["acked"])
        refused = filled["refused"]
        assert refused is not None, "the disk never filled"
        assert refused["code"] in ("storage_error", "quota_exceeded"), refused
        assert len(acked) > 10
        print(f"\nrefused after {len(acked)} memories: {refused['message']}")
        # On the full disk the store may not even open: calls fail, typed.
        first = next(iter(acked))
        gone = call(page, "m.delete(args[0])", first)
        assert gone["ok"] or gone["code"] in ("storage_error", "quota_exceeded"), gone
        if gone["ok"]:
            del acked[first]

        ballast.unlink()  # room again: the closed database is reopened
        listed = call(page, LIST)
        if not listed["ok"]:
            print("Chromium discarded the database:", listed["message"])
            assert_reported_lost(listed)
            assert_reported_lost(call(page, "m.addMemory('after the loss')"))
            return
        assert dict(listed["r"]) == acked  # whole: nothing acknowledged is missing
        assert exported(page) == set(acked)
        first = next(iter(acked))
        gone = call(page, "m.delete(args[0])", first)
        assert gone["ok"], gone
        del acked[first]
        added = call(page, "m.addMemory({ text: window.words(100000) })")
        assert added["ok"], added
        acked[added["r"]["id"]] = added["r"]["text"][:80]
        assert stored(page) == acked
        assert page.errors == []
    finally:
        context.close()

    # A restart: every acknowledged memory is there.
    context, page = launch(playwright_instance, small_disk, base_url)
    try:
        opened = page.evaluate(OPEN_SETTLED, ["full"])
        assert opened["ok"], opened
        assert stored(page) == acked
    finally:
        context.close()


LIST = "(await m.list({ scope: null, limit: 100000 })).map((x) => [x.id, x.text.slice(0, 80)])"

# OPEN, settled: {ok: true} or the rejection's {ok: false, code, message}.
OPEN_SETTLED = """async ([db]) => {
  window.m = window.pymemory.createAgentMemory({ dbName: db, scope: "user" });
  return window.within(window.m.ready, 60000);
}"""


def assert_reported_lost(got):
    assert got["ok"] is False and got["code"] == "storage_error", got
    assert "no longer exists" in got["message"], got


def test_a_database_chromium_discards_as_corrupt_is_reported_not_opened_empty(
    playwright_instance, tmp_path, base_url
):
    # What a torn LevelDB log with records after it comes to at the next open: bytes in the
    # middle of the log that fail their checksum. Chromium then deletes the origin's whole
    # IndexedDB data (a few bad bytes cost every record) and reports it to the next open
    # (dataLoss "total"): pymemory rejects that open with storage_error saying so, once;
    # the store it opens after that is the new, empty one.
    profile = tmp_path / "profile"
    context, page = launch(playwright_instance, profile, base_url)
    try:
        page.evaluate(OPEN, ["torn"])
        added = call(
            page, "Promise.all(Array.from({ length: 30 }, (_, i) => m.addMemory(`note ${i}`)))"
        )
        assert added["ok"], added
        assert len(stored(page)) == 30
    finally:
        context.close()
    logs = list((profile / "Default" / "IndexedDB").glob("*.indexeddb.leveldb/*.log"))
    log = max(logs, key=lambda f: f.stat().st_size)
    with open(log, "r+b") as f:
        f.seek(log.stat().st_size // 2)
        f.write(b"\xff" * 64)

    context, page = launch(playwright_instance, profile, base_url)
    try:
        opened = page.evaluate(OPEN_SETTLED, ["torn"])
        assert opened["ok"] is False and opened["code"] == "storage_error", opened
        assert "data loss (total" in opened["message"] and "corrupt" in opened["message"], opened
        print("\n", opened["message"])
        assert page.evaluate(OPEN_SETTLED, ["torn"])["ok"]
        assert stored(page) == {}
        assert page.errors == []
    finally:
        context.close()


PERSISTED = """async ([db]) => {
  window.m = window.pymemory.createAgentMemory({ dbName: db, scope: "user", persist: true });
  await window.m.ready;
  return window.m.status.storage;
}"""


PERSIST = """async ([db]) => {
  window.persistCalls = 0;
  const real = navigator.storage.persist.bind(navigator.storage);
  let allow;
  window.allowPersist = new Promise((resolve) => { allow = resolve; });
  window.letPersist = allow;
  navigator.storage.persist = async () => { window.persistCalls++; await window.allowPersist; return real(); };
  window.m = window.pymemory.createAgentMemory({ dbName: db, persist: true });
  await window.m.ready;
  return window.m.status.storage;
}"""


def test_persist_true_asks_the_browser_and_status_reports_the_answer(context, base_url):
    page = context.new_page()
    page.errors = watch_errors(page)
    page.goto(f"{base_url}/web/pages/test/harness.html")
    page.wait_for_function("document.body.dataset.loaded === '1'")
    storage = page.evaluate(PERSIST, ["persisting"])
    assert storage["persisted"] is False  # a fresh headless profile: best-effort storage
    assert storage["reserve"] == 32 * MIB  # the default
    assert 0 < storage["usage"] < storage["quota"]
    assert page.evaluate("window.persistCalls") == 1

    # The browser grants it (as it may for an installed or much-used site): the page's
    # persist() answers, the worker measures again, and the status shows it.
    cdp = context.new_cdp_session(page)
    browser_context = cdp.send("Target.getTargetInfo")["targetInfo"]["browserContextId"]
    cdp.send(
        "Browser.grantPermissions",
        {
            "origin": base_url,
            "permissions": ["durableStorage"],
            "browserContextId": browser_context,
        },
    )
    page.evaluate("window.letPersist()")
    page.wait_for_function("window.m.status.storage.persisted === true")
    storage = page.evaluate("window.m.status.storage")
    assert storage["reserve"] == 32 * MIB and 0 < storage["usage"] < storage["quota"]
    stats = js(page, "return (await window.m.stats()).storage;")
    assert stats["persisted"] is True and stats["reserve_bytes"] == 32 * MIB
    assert page.evaluate("window.persistCalls") == 1  # once per page
    assert page.errors == []


@pytest.mark.parametrize(
    "options",
    [{"persist": "yes"}, {"persist": 1}, {"storageReserveBytes": -1}, {"storageReserveBytes": 1.5}],
)
def test_a_bad_storage_option_throws_invalid_input(harness, options):
    got = js(
        harness,
        "try { pm.createAgentMemory(args[0]); return 'created'; } catch (e) { return [e.name, e.code]; }",
        options,
    )
    assert got == ["MemoryError", "invalid_input"]
