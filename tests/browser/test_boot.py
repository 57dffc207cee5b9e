"""The worker's boot: `ready` does not wait for the o200k_base ranks, and every call does,
so token budgets are exact from the first call (real Chromium, Pyodide, IndexedDB; the
ranks' download is held back with Playwright's routing to make the order certain)."""

import pytest
from browserkit import js

from pymemory.retrieval.tokens import default_token_counter

RANKS = "**/ranks/o200k_base.js"

# Texts where a character-based estimate and o200k_base disagree (CJK, emoji, URLs, digits).
TEXTS = [
    "会上确定了3个角色：超级管理员、部门管理员、普通成员。下周二上线。",
    "deploy 🚀 to staging at 18:30 — ticket ABC-1234, see https://example.com/x?y=1",
    "I prefer answers as tables, not bullet points; keep them under 20 rows.",
    "Die Übergabe an das Team in München ist für Donnerstag, den 14. März, geplant.",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa " * 3,
]


@pytest.fixture
def held_ranks(context):
    """Routes the ranks' request into a list instead of answering it."""
    held = []
    context.route(RANKS, lambda route: held.append(route))
    return held


def wait_held(page, held):
    for _ in range(600):
        if held:
            return held[0]
        page.wait_for_timeout(100)
    pytest.fail("the worker never asked for the o200k_base ranks")


def test_ready_before_ranks_then_first_retrieve_counts_exactly(harness, held_ranks):
    status = js(
        harness,
        "window.m = pm.createAgentMemory({ dbName: 'boot-exact' }); await m.ready;return m.status;",
    )
    assert status["ready"] and "tokensMs" not in status  # ready with the ranks still held
    route = wait_held(harness, held_ranks)
    js(
        harness,
        """
        window.settled = false;
        window.first = (async () => {
          for (const text of args[0]) await m.addMemory({ text });
          return await m.retrieve("", { maxItems: 10, maxTokens: 60 });
        })().finally(() => { window.settled = true; });
        """,
        TEXTS,
    )
    harness.wait_for_timeout(1500)
    assert js(harness, "return window.settled;") is False  # the add waits for the ranks
    route.continue_()
    got = js(harness, "return await window.first;")
    counter = default_token_counter()
    assert counter.name == "o200k_base" and got["tokenCounter"] == "o200k_base"
    assert got["memories"], "nothing retrieved"
    for mem in got["memories"]:
        assert mem["tokens"] == counter.count(mem["line"]), mem["line"]
    assert got["tokensUsed"] == counter.count(got["text"])  # the lines and their day line
    assert all(m["line"] in got["text"] for m in got["memories"])
    assert got["tokensUsed"] <= 60
    whole = sum(counter.count(t) for t in TEXTS)
    assert whole > 60, "the budget must cut something for this test to mean anything"
    assert js(harness, "return m.status.tokensMs > 0;")


def test_ranks_failing_after_ready_fail_every_call_loudly(harness, held_ranks):
    js(harness, "window.m = pm.createAgentMemory({ dbName: 'boot-fail' }); await m.ready;")
    route = wait_held(harness, held_ranks)
    js(
        harness,
        "window.first = m.addMemory({ text: 'waits for the ranks' })"
        ".then(() => 'ok', (e) => e.code + ': ' + e.message);",
    )
    route.fulfill(status=404, body="gone")
    first = js(harness, "return await window.first;")
    assert first.startswith("boot_failed: ") and "o200k_base" in first
    later = js(
        harness,
        "return await m.retrieve('x').then(() => 'ok', (e) => e.code);",
    )
    assert later == "boot_failed"
    status = js(harness, "return m.status;")
    assert status["phase"] == "error" and status["error"]["code"] == "boot_failed"


def test_ranks_failing_before_ready_fail_the_boot(context, base_url):
    context.route(RANKS, lambda route: route.fulfill(status=404, body="gone"))
    page = context.new_page()
    page.goto(f"{base_url}/web/pages/test/harness.html")
    page.wait_for_function("document.body.dataset.loaded === '1'")
    got = js(
        page,
        "const m = pm.createAgentMemory({ dbName: 'boot-fail-early' });"
        "return await m.ready.then(() => 'ready', (e) => e.code + ': ' + e.message);",
    )
    assert got.startswith("boot_failed: ") and "o200k_base" in got


def test_tiktoken_module_encodes_like_tiktoken(harness):
    """web/worker/tiktoken.mjs's own rank table: ids equal to tiktoken's encode_ordinary."""
    tricky = [
        *TEXTS,
        "x" * 5000,  # one long piece: the heap merge
        " " * 300 + "\u0085\ufeff\u2028 end",  # White_Space as tiktoken's regex knows it
        "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=" * 20,  # base64
        "'S 'll 'Re \u017ft I'M",  # contractions, long s
        "",
    ]
    got = js(
        harness,
        """
        const tk = await import("/web/worker/tiktoken.mjs");
        await tk.init("/js-tiktoken/dist/");
        return { size: tk.size(), ids: args[0].map((t) => tk.encode(t)),
                 counts: args[0].map((t) => tk.count(t)) };
        """,
        tricky,
    )
    counter = default_token_counter()
    assert counter.name == "o200k_base" and got["size"] == 199_998
    for text, ids, n in zip(tricky, got["ids"], got["counts"], strict=True):
        assert ids == counter.encode(text) and n == len(ids), text[:40]


# --- the Pyodide memory snapshot of repeat visits ---------------------------------------

VISIT = """async () => {
  const m = window.m = window.pymemory.createAgentMemory({ dbName: "snap" });
  await m.ready;
  await m.addMemory({ text: "visit " + (Date.now() % 100000) + " of the snapshot test" });
  const got = await m.retrieve("snapshot test", { maxItems: 20, maxTokens: 500 });
  return { snapshot: m.status.snapshot, memories: got.memories, tokensUsed: got.tokensUsed };
}"""

SAVED = """async () => {
  for (let i = 0; i < 3000; i++) {
    const save = window.m.status.snapshotSave ?? "";
    if (save === "saved" || save.startsWith("failed")) return save;
    await new Promise((r) => setTimeout(r, 100));
  }
  return "timed out";
}"""

# Rewrite the cached snapshot: "keep" a copy, or replace it with a "stale" (made from other
# Pyodide files), "corrupt" (bytes no longer match their sha256) or "refused" (consistent,
# but not a snapshot Pyodide accepts) one, made from the kept copy.
REWRITE = """async (mode) => {
  const names = await caches.keys();
  const cache = await caches.open(names.find((n) => n.startsWith("pymemory-runtime-")));
  const url = (await cache.keys()).map((r) => r.url).find((u) => u.endsWith("/pymemory-snapshot.bin"))
    ?? new URL("/pyodide/pymemory-snapshot.bin", location.href).href;
  const copy = url.replace(/[^/]*$/, "kept-snapshot.bin");
  if (mode === "keep") {
    await cache.put(copy, await cache.match(url));
    return true;
  }
  const kept = await cache.match(copy);
  const bytes = new Uint8Array(await kept.arrayBuffer());
  const headers = new Headers(kept.headers);
  const sha = async (b) => Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", b)),
                                      (x) => x.toString(16).padStart(2, "0")).join("");
  if (mode === "stale") headers.set("x-pymemory-made-from", "other,files");
  if (mode === "corrupt") bytes[bytes.length >> 1] ^= 1;
  if (mode === "refused") {
    bytes[0] ^= 1;
    headers.set("x-pymemory-sha256", await sha(bytes));
  }
  await cache.put(url, new Response(bytes, { headers }));
  return true;
}"""


def test_repeat_visits_restore_the_snapshot_and_fall_back_from_a_bad_one(context, base_url):
    page = context.new_page()
    warnings: list[str] = []
    page.on("console", lambda msg: msg.type == "warning" and warnings.append(msg.text))
    counter = default_token_counter()

    def visit() -> dict:
        page.goto(f"{base_url}/web/pages/test/harness.html")
        page.wait_for_function("document.body.dataset.loaded === '1'")
        got = page.evaluate(VISIT)
        for mem in got["memories"]:  # exact budgets whichever way Pyodide started
            assert mem["tokens"] == counter.count(mem["line"])
        return got

    first = visit()
    assert first["snapshot"] == "absent" and len(first["memories"]) == 1
    assert page.evaluate(SAVED) == "saved"

    second = visit()
    assert second["snapshot"] == "restored"
    assert len(second["memories"]) == 2  # the store itself is IndexedDB's, untouched
    assert warnings == []

    page.evaluate(REWRITE, "keep")
    for n, mode in enumerate(["stale", "corrupt", "refused"], start=3):
        page.evaluate(REWRITE, mode)
        got = visit()
        assert got["snapshot"] == mode, got["snapshot"]
        assert len(got["memories"]) == n
        assert warnings and f"snapshot was {mode}" in warnings[-1]
        warnings.clear()
