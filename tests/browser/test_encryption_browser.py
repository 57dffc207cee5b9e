"""Encrypted stores in the browser (issue 16): EncryptedKv over IndexedDbKv with WebCrypto,
through the JS client's `encryption` option. Real Chromium, real IndexedDB, real WebCrypto:
the KV conformance suite, canaries absent from the raw IndexedDB values, records moved
between the browser and CPython both ways, wrong keys refused with nothing written, and
several tabs (a follower's key crosses the BroadcastChannel; a takeover reopens)."""

from __future__ import annotations

import asyncio
import base64
import json
from concurrent.futures import ThreadPoolExecutor

import pytest
from browserkit import js, watch_errors

from pymemory import Memory, WrongKeyError
from pymemory.storage import MapKv
from pymemory.storage.encrypted import KEYRING_KEY, OVERHEAD, EncryptedKv

FAST = 1000  # PBKDF2 iterations for tests (the default is 600,000)
PASS = "pässphrase, ✓ café"  # not ASCII: both runtimes must derive from the same bytes

# The raw records of an IndexedDB database, read by the page with the IndexedDB API
# (as devtools or another script of the origin would): [[key, base64 of the value]].
RAW = """
  const [name] = args;
  const req = (r) => new Promise((ok, fail) => { r.onsuccess = () => ok(r.result); r.onerror = () => fail(r.error); });
  if (!(await indexedDB.databases()).some((d) => d.name === name)) throw new Error(`no database ${name}`);
  const db = await req(indexedDB.open(name));
  const store = db.transaction("kv", "readonly").objectStore("kv");
  const [keys, values] = await Promise.all([req(store.getAllKeys()), req(store.getAll())]);
  db.close();
  const b64 = (bytes) => {
    let s = "";
    for (let i = 0; i < bytes.length; i += 8192) s += String.fromCharCode(...bytes.subarray(i, i + 8192));
    return btoa(s);
  };
  const text = new TextDecoder();
  return keys.map((k, i) => [text.decode(k), b64(new Uint8Array(values[i]))]);
"""

# Write raw records into a new IndexedDB database laid out as idb_kv.mjs lays it out (one
# object store "kv", UTF-8 key bytes, Uint8Array values).
PUT_RAW = """
  const [name, records] = args;
  const req = (r) => new Promise((ok, fail) => { r.onsuccess = () => ok(r.result); r.onerror = () => fail(r.error); });
  const open = indexedDB.open(name, 1);
  open.onupgradeneeded = () => open.result.createObjectStore("kv");
  const db = await req(open);
  const tx = db.transaction("kv", "readwrite");
  const bytes = (b64) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  for (const [k, v] of records) tx.objectStore("kv").put(bytes(v), new TextEncoder().encode(k));
  await new Promise((ok, fail) => { tx.oncomplete = ok; tx.onerror = () => fail(tx.error); });
  db.close();
  return records.length;
"""


def raw_records(page, name: str) -> dict[str, bytes]:
    return {k: base64.b64decode(v) for k, v in js(page, RAW, name)}


def run_async(coro):
    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API runs a loop in this thread
        return pool.submit(asyncio.run, coro).result()


def open_js(db: str, encryption: str = f"{{ passphrase: args[1], iterations: {FAST} }}") -> str:
    return f"const m = pm.createAgentMemory({{ dbName: {db}, encryption: {encryption} }}); await m.ready;"


def rejection(page, expr: str, *args) -> dict | None:
    """The {code, message} `expr` (a promise, `pm` and `args` in scope) rejects with."""
    body = f"try {{ await ({expr}); return null; }} catch (e) {{ return {{ code: e.code, message: e.message }}; }}"
    return js(page, body, *args)


# --- (a) the KV conformance suite ------------------------------------------------------


def test_kv_conformance_on_encrypted_indexeddb(harness):
    """Every check of the suite on EncryptedKv (WebCrypto) over IndexedDbKv: the client's
    runKvConformance runs on stores opened with the client's key."""
    from pymemory.storage.conformance import CHECKS

    results = js(harness, open_js("args[0]") + "return await m.runKvConformance();", "conf", PASS)
    assert [r["name"] for r in results] == list(CHECKS)  # transact and purge included
    failed = [r for r in results if not r["ok"]]
    assert failed == [], failed


# --- (b) canaries -------------------------------------------------------------------------

CANARIES = ["QX7-CANARY-TEXT", "QX7-CANARY-TAG", "QX7-CANARY-META", "QX7-CANARY-BLOCK",
            "QX7-CANARY-FACT", "QX7-CANARY-EDIT"]  # fmt: skip

FILL = """
  await m.addMemory({ text: "The vault code is QX7-CANARY-TEXT, tell nobody", tags: ["QX7-CANARY-TAG"],
                      metadata: { note: "QX7-CANARY-META" } });
  const b = await m.addMemory("My sister lives in Lisbon");
  await m.update(b.id, { text: "My sister moved to Porto, QX7-CANARY-EDIT" });
  await m.blocks.open("persona", [{ label: "human", value: "Name: QX7-CANARY-BLOCK" }]);
  await m.structured.put("semantic", "favourite", { colour: "QX7-CANARY-FACT" });
  await m.feedback(b.id, "liked");
  return (await m.list({ scope: null })).length;
"""


def test_canaries_are_in_no_raw_indexeddb_value(harness):
    plain = js(
        harness, "const m = pm.createAgentMemory({ dbName: 'plain-canary' }); await m.ready;" + FILL
    )
    key = "await crypto.subtle.generateKey({ name: 'AES-GCM', length: 256 }, false, ['encrypt', 'decrypt'])"
    enc = {
        "pass-canary": js(harness, open_js("args[0]") + FILL, "pass-canary", PASS),
        "key-canary": js(harness, open_js("args[0]", f"{{ key: {key} }}") + FILL, "key-canary"),
    }
    assert plain == 2 and set(enc.values()) == {2}

    # The check can see them: every canary is in the plain store's raw values.
    plain_raw = b"".join(raw_records(harness, "plain-canary").values())
    assert [c for c in CANARIES if c.encode() not in plain_raw] == []

    for name in enc:
        raw = raw_records(harness, name)
        assert len(raw) > 10, raw.keys()  # items, history, change log, blocks, facts
        for key_name, value in raw.items():
            for canary in CANARIES:
                assert canary.encode() not in value, (name, key_name)
                assert canary not in key_name
            if key_name in (KEYRING_KEY, "meta:seq"):  # the two clear records
                continue
            assert value[0] == 1 and len(value) >= OVERHEAD, (name, key_name)  # sealed, format 1


# --- (c) the same format in both runtimes ---------------------------------------------------

TEXTS = [
    f"Fact {i}: the blue folder number {i} is on shelf {i % 7}, café ✓ {'é' * i}" for i in range(12)
]


async def _decrypt_in_cpython(records: dict[str, bytes], **secret) -> list[dict]:
    inner = MapKv()
    await inner.put_many(list(records.items()))
    kv = await EncryptedKv.open(inner, **secret)
    memory = await Memory.open(kv)
    items = await memory.list(scope=None)
    blocks = await kv.get("blk:persona")
    await memory.close()
    await kv.close()
    assert blocks is not None and b"Ada" in blocks
    return [{"id": i.id, "text": i.text, "tags": list(i.tags)} for i in items]


def test_browser_records_decrypt_in_cpython(harness):
    """The raw IndexedDB records of stores encrypted in Chromium, put into a CPython MapKv,
    open with EncryptedKv.open(passphrase= or key=) and every memory reads back."""
    fill = """
      const added = await m.addMany(args[2].map((text) => ({ text, tags: ["folders"] })));
      await m.blocks.open("persona", [{ label: "human", value: "Name: Ada" }]);
      return added.map((i) => ({ id: i.id, text: i.text, tags: i.tags }));
    """
    by_pass = js(harness, open_js("args[0]") + fill, "xrt-pass", PASS, TEXTS)
    # An app's extractable key, exported so that CPython can use the same 32 bytes.
    by_key = js(
        harness,
        """
        const key = await crypto.subtle.generateKey({ name: "AES-GCM", length: 256 }, true, ["encrypt", "decrypt"]);
        const raw = new Uint8Array(await crypto.subtle.exportKey("raw", key));
        const m = pm.createAgentMemory({ dbName: args[0], encryption: { key } });
        await m.ready;"""
        + fill.replace("return added", "const items = added")
        + "return { items, raw: btoa(String.fromCharCode(...raw)) };",
        "xrt-key",
        None,
        TEXTS,
    )
    expected = sorted(by_pass, key=lambda i: i["id"])
    assert len(expected) == len(TEXTS)

    records = raw_records(harness, "xrt-pass")
    got = run_async(_decrypt_in_cpython(records, passphrase=PASS))
    assert sorted(got, key=lambda i: i["id"]) == expected

    raw_key = base64.b64decode(by_key["raw"])
    got = run_async(_decrypt_in_cpython(raw_records(harness, "xrt-key"), key=raw_key))
    assert sorted(got, key=lambda i: i["id"]) == sorted(by_key["items"], key=lambda i: i["id"])

    with pytest.raises(WrongKeyError):  # and the check is real
        run_async(_decrypt_in_cpython(records, passphrase=PASS + "!"))


async def _sealed_in_cpython() -> tuple[dict[str, bytes], list[dict]]:
    inner = MapKv()
    kv = await EncryptedKv.open(inner, passphrase=PASS, iterations=FAST)
    memory = await Memory.open(kv)
    items = await memory.add_many([{"text": t, "tags": ["folders"]} for t in TEXTS[:5]])
    await memory.close()
    records = dict(await inner.scan(""))
    await kv.close()
    return records, [{"id": i.id, "text": i.text} for i in items]


def test_cpython_records_open_in_the_browser(harness):
    """The reverse: a record set sealed in CPython, written into IndexedDB as is, opens in
    Chromium with the passphrase (and only with it)."""
    records, items = run_async(_sealed_in_cpython())
    assert KEYRING_KEY in records
    wire = [[k, base64.b64encode(v).decode()] for k, v in records.items()]
    assert js(harness, PUT_RAW, "from-cpython", wire) == len(records)
    wrong = rejection(
        harness, "pm.createAgentMemory({ dbName: args[0], encryption: { passphrase: 'not it' } }).ready",
        "from-cpython",
    )  # fmt: skip
    assert wrong["code"] == "wrong_key"
    got = js(
        harness,
        open_js("args[0]")
        + """
        const before = await m.list({ scope: null });
        const found = await m.retrieve("where is the blue folder number 3?");
        await m.addMemory("added in the browser");
        const after = await m.list({ scope: null });
        const pairs = (list) => list.map((i) => ({ id: i.id, text: i.text }));
        return { before: pairs(before), after: pairs(after), found: found.memories.map((x) => x.item.text) };
        """,
        "from-cpython",
        PASS,
    )
    assert sorted(got["before"], key=lambda i: i["id"]) == sorted(items, key=lambda i: i["id"])
    assert TEXTS[3] in got["found"]
    assert {i["text"] for i in got["after"]} == {*TEXTS[:5], "added in the browser"}


# --- (d) wrong keys -------------------------------------------------------------------------


def test_wrong_key_rejects_with_wrong_key_and_writes_nothing(harness):
    js(harness, open_js("args[0]") + "await m.addMemory('The spare key is under the blue pot');",
       "locked", PASS)  # fmt: skip
    before = raw_records(harness, "locked")
    attempts = {
        "wrong passphrase": ("{ passphrase: 'wrong horse' }", "ready"),
        "wrong passphrase, a write": ("{ passphrase: 'wrong horse' }", "addMemory('x')"),
        "no key": ("undefined", "ready"),
        "no key, a read": ("undefined", "list({ scope: null })"),
        "a CryptoKey": (
            "{ key: await crypto.subtle.generateKey({ name: 'AES-GCM', length: 256 }, false, "
            "['encrypt', 'decrypt']) }",
            "ready",
        ),
    }
    for what, (encryption, call) in attempts.items():
        body = f"""
          const other = pm.createAgentMemory({{ dbName: args[0], encryption: {encryption} }});
          other.ready.catch(() => {{}});  // awaited below, or not: the call is the check
          try {{ await other.{call}; return null; }} catch (e) {{ return e.code; }}"""
        assert js(harness, body, "locked") == "wrong_key", what
    assert raw_records(harness, "locked") == before  # byte for byte: nothing written
    # and the right key still reads, in this worker and after the wrong attempts
    texts = js(harness, open_js("args[0]") + "return (await m.list({ scope: null })).map((i) => i.text);",
               "locked", PASS)  # fmt: skip
    assert texts == ["The spare key is under the blue pot"]


def test_a_fresh_database_opened_with_a_wrong_kind_of_key_is_not_created(harness):
    """A plain database is not encrypted by a client that brings a key (nor the reverse)."""
    js(harness, "const m = pm.createAgentMemory({ dbName: 'plain-db' }); await m.ready;"
                "await m.addMemory('plain note');")  # fmt: skip
    before = raw_records(harness, "plain-db")
    got = rejection(
        harness,
        "pm.createAgentMemory({ dbName: 'plain-db', encryption: { passphrase: args[0] } }).ready",
        PASS,
    )
    assert got["code"] == "schema_mismatch", got
    assert raw_records(harness, "plain-db") == before


def test_bad_encryption_options_are_refused(harness):
    bad = [
        "{}",
        "{ passphrase: '' }",
        "{ passphrase: 7 }",
        "{ passphrase: 'x', key: 'y' }",
        "{ key: 'not a CryptoKey' }",
        "{ passphrase: 'x', iterations: 10 }",
        "{ passphrase: 'x', salt: 'no' }",
        "'just a string'",
        "{ key: await crypto.subtle.generateKey({ name: 'AES-GCM', length: 128 }, false, ['encrypt', 'decrypt']) }",
        "{ key: await crypto.subtle.generateKey({ name: 'AES-CBC', length: 256 }, false, ['encrypt', 'decrypt']) }",
        "{ key: await crypto.subtle.generateKey({ name: 'AES-GCM', length: 256 }, false, ['encrypt']) }",
    ]
    for option in bad:
        body = f"""
          try {{ pm.createAgentMemory({{ dbName: "opts", encryption: {option} }}); return null; }}
          catch (e) {{ return e.code; }}"""
        assert js(harness, body) == "invalid_input", option


# --- a page's own Pyodide: open_memory(passphrase= / key=) --------------------------------

# A worker of the page's own: Pyodide, numpy and the wheel from the test server, and
# window.python(code) running Python in it (as an app's own Pyodide worker does).
PYODIDE_WORKER = """
const base = self.location.origin;
const { loadPyodide } = await import(base + "/vendor/pyodide/pyodide.mjs");
const manifest = await (await fetch(base + "/wheels/manifest.json")).json();
const pyodide = await loadPyodide({ indexURL: base + "/vendor/pyodide/" });
await pyodide.loadPackage([manifest.numpy, manifest.pymemory].map((f) => base + "/wheels/" + f));
self.onmessage = async ({ data }) => {
  try { self.postMessage({ ok: true, result: String(await pyodide.runPythonAsync(data)) }); }
  catch (err) { self.postMessage({ ok: false, error: String(err) }); }
};
self.postMessage({ ready: true });
"""
START_WORKER = """(src) => {
  const url = URL.createObjectURL(new Blob([src], { type: "text/javascript" }));
  const worker = new Worker(url, { type: "module" });
  window.python = (code) => new Promise((resolve) => {
    worker.onmessage = (e) => resolve(e.data);
    worker.postMessage(code);
  });
  return new Promise((resolve) => { worker.onmessage = (e) => resolve(e.data); });
}"""

OPEN_MEMORY = f"""
import json
from pymemory import CorruptValueError, WrongKeyError
from pymemory.browser.pyodide import IndexedDbKv, open_memory
from pyodide.code import run_js

out = {{}}
memory = await open_memory("py-enc", passphrase="{PASS}", iterations={FAST})
item = await memory.add("The boat is moored at pier QX7-CANARY-PIER")
await memory.close()
for name, kwargs in [("wrong", {{"passphrase": "nope"}}), ("none", {{}})]:
    try:
        await open_memory("py-enc", **kwargs)
        out[name] = "opened"
    except WrongKeyError as exc:
        out[name] = exc.code

# an app's non-extractable CryptoKey as the key
key = await run_js("crypto.subtle.generateKey({{ name: 'AES-GCM', length: 256 }}, false, ['encrypt', 'decrypt'])")
memory = await open_memory("py-key", key=key)
await memory.add("Remember the milk")
await memory.close()
memory = await open_memory("py-key", key=key)
out["by_key"] = [i.text for i in await memory.list(scope=None)]
await memory.close()

# a value altered on disk fails loudly (WebCrypto's OperationError -> CorruptValueError)
raw = await IndexedDbKv.open("py-enc")
sealed = await raw.get("mem:" + item.id)
await raw.put_many([("mem:" + item.id, sealed[:-1] + bytes([sealed[-1] ^ 1]))])
await raw.close()
try:
    memory = await open_memory("py-enc", passphrase="{PASS}")
    out["tampered"] = [i.text for i in await memory.list(scope=None)]
except CorruptValueError as exc:
    out["tampered"] = [type(exc).__name__, exc.code, str(exc)]
json.dumps(out)
"""


def test_open_memory_in_a_pages_own_pyodide(harness):
    assert harness.evaluate(START_WORKER, PYODIDE_WORKER) == {"ready": True}
    answer = harness.evaluate("(code) => window.python(code)", OPEN_MEMORY)
    assert answer["ok"], answer.get("error")
    out = json.loads(answer["result"])
    assert out["wrong"] == "wrong_key" and out["none"] == "wrong_key"
    assert out["by_key"] == ["Remember the milk"]
    assert out["tampered"][:2] == ["CorruptValueError", "storage_error"], out
    assert "failed its integrity check" in out["tampered"][2]
    raw = raw_records(harness, "py-enc")
    assert not any(b"QX7-CANARY-PIER" in v for v in raw.values())


# --- several tabs ------------------------------------------------------------------------

TAB = """async ([db, keyDb, use]) => {
  const req = (r) => new Promise((ok, fail) => { r.onsuccess = () => ok(r.result); r.onerror = () => fail(r.error); });
  // The app keeps its non-extractable key in its own IndexedDB database, as apps do.
  const open = indexedDB.open(keyDb, 1);
  open.onupgradeneeded = () => open.result.createObjectStore("keys");
  const keys = await req(open);
  let key = await req(keys.transaction("keys").objectStore("keys").get("k"));
  if (!key || use === "fresh") {
    key = await crypto.subtle.generateKey({ name: "AES-GCM", length: 256 }, false, ["encrypt", "decrypt"]);
    if (use !== "fresh") await req(keys.transaction("keys", "readwrite").objectStore("keys").put(key, "k"));
  }
  keys.close();
  window.m = window.pymemory.createAgentMemory({ dbName: db, encryption: { key } });
  try { await window.m.ready; } catch (e) { return { role: window.m.status.role, code: e.code }; }
  return { role: window.m.status.role, code: null };
}"""


def tab(context, base_url, use="stored"):
    page = context.new_page()
    page.errors = watch_errors(page)
    page.goto(f"{base_url}/web/pages/test/harness.html")
    page.wait_for_function("document.body.dataset.loaded === '1'")
    return page, page.evaluate(TAB, ["tabs-enc", "app-keys", use])


def test_tabs_share_an_encrypted_store_by_key(context, base_url):
    """The leader's worker serves followers that bring the right CryptoKey (structured-
    cloned over the BroadcastChannel) and refuses one with another key; when the leader
    tab closes, the follower's worker takes over and reopens the store with its key."""
    a, opened_a = tab(context, base_url)
    assert opened_a == {"role": "leader", "code": None}
    a.evaluate("async () => { await window.m.addMemory('The meeting moved to Thursday'); }")
    b, opened_b = tab(context, base_url)
    assert opened_b == {"role": "follower", "code": None}
    query = "async () => (await window.m.list({ scope: null })).map((i) => i.text)"
    assert b.evaluate(query) == ["The meeting moved to Thursday"]
    c, opened_c = tab(context, base_url, use="fresh")  # a follower with another key
    assert opened_c == {"role": "follower", "code": "wrong_key"}
    reading = (
        "async () => { try { await window.m.list(); return 'read'; } catch (e) { return e.code; } }"
    )
    assert c.evaluate(reading) == "wrong_key"
    c.close()
    a.close()  # the leader goes: b's tab starts a worker, which opens the store with b's key
    b.wait_for_function("window.m.status.role === 'leader' && window.m.status.ready")
    b.evaluate("async () => { await window.m.addMemory('Bring the slides on Thursday'); }")
    assert sorted(b.evaluate(query)) == [
        "Bring the slides on Thursday",
        "The meeting moved to Thursday",
    ]
    assert b.errors == []
