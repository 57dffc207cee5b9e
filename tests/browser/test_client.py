"""The JS client in a real page: boot, CRUD, retrieval, feedback, clear, persistence,
errors with codes, the KV conformance suite on IndexedDB, the React hook, bulk import."""

import json
import uuid

import pytest
from browserkit import BOOT_TIMEOUT_MS, CHROMIUM_ARGS, chromium_path, js, watch_errors

from pymemory.models.embedding import HashingEmbedder

OPEN = "const m = pm.createAgentMemory({ dbName: args[0] }); await m.ready;"


def test_boot_add_retrieve_feedback_clear(harness):
    result = js(
        harness,
        OPEN
        + """
        const phases = [];
        m.onStatus((s) => phases.push(s.phase));
        const pref = await m.addMemory({ text: "I prefer answers as tables, not bullet lists.",
                                         type: "user_preference", scope: "user" });
        const a = await m.addMemory("Hi! Could you export the sales report as CSV every Monday? Thanks");
        const b = await m.addMemory({ text: "The CSV export should include the region column",
                                      tags: ["csv"] });
        const first = await m.retrieve("csv export");
        await m.feedback(b.id, "liked");
        const second = await m.retrieve("csv export", { trace: true });
        const removed = await m.clear({ scope: "conversation" });
        const left = await m.list({ scope: null });
        const stats = await m.stats();
        return { status: m.status, pref, a, b, first, second, removed, left, stats };
        """,
        "basic",
    )
    assert result["status"]["ready"] and result["status"]["phase"] == "ready"
    assert result["status"]["bootMs"] > 0
    assert result["a"]["type"] == "message" and result["a"]["scope"] == "conversation"
    assert "Hi!" not in result["a"]["content"] and "CSV" in result["a"]["content"]
    assert result["a"]["text"].startswith("Hi!")  # the raw text is kept
    first_ids = [m["item"]["id"] for m in result["first"]["memories"]]
    assert set(first_ids) == {result["a"]["id"], result["b"]["id"]}
    second = result["second"]
    assert second["memories"][0]["item"]["id"] == result["b"]["id"]
    top = second["memories"][0]
    assert top["feedbackWeight"] == 1.5  # liked: re-ranks among comparable memories
    assert top["score"] == pytest.approx(
        top["relevance"] * top["decay"] * top["feedbackWeight"] * top["timeMatch"]
    )
    parts = top["densePart"] + top["lexicalPart"] + top["contextPart"]
    assert top["relevance"] == pytest.approx(parts)
    assert second["tokensUsed"] <= second["maxTokens"]
    statuses = {c["id"]: c["status"] for c in second["trace"]}
    assert statuses == {
        result["a"]["id"]: "included",
        result["b"]["id"]: "included",
        result["pref"]["id"]: "no_match",  # shares no term with "csv export"
    }
    assert result["removed"] == 2
    assert [i["id"] for i in result["left"]] == [result["pref"]["id"]]
    assert result["stats"]["items"] == 1 and result["stats"]["byScope"] == {"user": 1}


def test_reload_keeps_data(harness):
    added = js(
        harness,
        OPEN + "return await m.addMemory('Remember the wifi password is on the fridge');",
        "reload",
    )
    harness.reload()
    harness.wait_for_function("document.body.dataset.loaded === '1'")
    found = js(harness, OPEN + "return await m.retrieve('wifi password');", "reload")
    assert [m["item"]["id"] for m in found["memories"]] == [added["id"]]


def test_relaunch_same_profile_keeps_data(playwright_instance, base_url, tmp_path):
    profile = tmp_path / "profile"

    def session(body):
        ctx = playwright_instance.chromium.launch_persistent_context(
            str(profile), executable_path=chromium_path(), args=CHROMIUM_ARGS
        )
        ctx.set_default_timeout(BOOT_TIMEOUT_MS)
        page = ctx.new_page()
        page.goto(f"{base_url}/web/pages/test/harness.html")
        page.wait_for_function("document.body.dataset.loaded === '1'")
        try:
            return js(page, OPEN + body, "relaunch")
        finally:
            ctx.close()

    added = session(
        "return await m.addMemory({ text: 'Flight to Lisbon on 12 March', tags: ['travel'] });"
    )
    found = session("return await m.list({ tags: ['travel'] });")
    assert [i["id"] for i in found] == [added["id"]]
    assert found[0]["text"] == "Flight to Lisbon on 12 March"


def test_kv_conformance_on_indexeddb(harness):
    from pymemory.storage.conformance import CHECKS

    results = js(harness, OPEN + "return await m.runKvConformance();", "conformance")
    assert [r["name"] for r in results] == list(CHECKS)  # transact and purge included
    failed = [r for r in results if not r["ok"]]
    assert failed == [], failed


BAD_CALLS = [
    ("m.addMemory(42)", "invalid_input"),
    ("m.addMemory({})", "invalid_input"),
    ("m.addMemory({ text: 7 })", "invalid_input"),
    ("m.addMemory({ text: 'x', type: 'chat' })", "invalid_input"),
    ("m.addMemory({ text: 'x', tags: 'not-a-list' })", "invalid_input"),
    ("m.addMemory({ text: 'x', metadata: { f: () => 1 } })", "invalid_input"),
    ("m.addMemory({ text: 'x', metadata: { n: NaN } })", "invalid_input"),
    ("m.addMemory({ text: 'x', metadata: { confidence: 3 } })", "invalid_input"),
    ("m.addMemory({ text: 'x', ttlMs: -5 })", "invalid_input"),
    ("m.addMemory({ text: 'x', colour: 'red' })", "invalid_input"),
    ("m.addMemory({ content: 'y'.repeat(201) })", "invalid_input"),
    ("m.addMany([{ text: 'fine' }, { text: 5 }])", "invalid_input"),
    ("m.get('no-such-id')", "not_found"),
    ("m.delete('00000000-0000-4000-8000-000000000000')", "not_found"),
    ("m.update('00000000-0000-4000-8000-000000000000', { tags: ['x'] })", "not_found"),
    ("m.feedback('00000000-0000-4000-8000-000000000000', 'liked')", "not_found"),
    ("m.feedback(args[1], 'love')", "invalid_input"),
    ("m.retrieve(12)", "invalid_input"),
    ("m.retrieve('x', { maxItems: 0 })", "invalid_input"),
    ("m.retrieve('x', { strategy: { kind: 'nope' } })", "invalid_strategy"),
    ("m.retrieve('x', { strategy: 'by-tag' })", "invalid_strategy"),
    ("m.clear({ scope: 'bad scope' })", "invalid_input"),
    ("m.importJsonl('garbage')", "invalid_import"),
    ("m.archiveOlderThan('ten')", "invalid_input"),
]


def test_bad_input_rejects_with_code_and_changes_nothing(harness):
    seeded = js(harness, OPEN + "return await m.addMemory('keep me');", "bad")
    before = js(harness, OPEN + "return await m.exportJsonl();", "bad")
    for expr, code in BAD_CALLS:
        got = js(
            harness,
            OPEN
            + f"""
            try {{ await {expr}; return {{ resolved: true }}; }}
            catch (e) {{ return {{ name: e.name, code: e.code, message: e.message }}; }}
            """,
            "bad",
            seeded["id"],
        )
        assert got.get("code") == code, (expr, got)
        assert got["name"] == "MemoryError" and got["message"]
    after = js(harness, OPEN + "return await m.exportJsonl();", "bad")
    assert after == before


# Issue 12: these threw synchronously instead of rejecting.
SYNC_THROWS = [
    ("m.addMemory([])", "invalid_input"),
    ("m.update(args[1], 'text')", "invalid_input"),
    ("m.retrieve('x', { strategy: 'nope' })", "invalid_strategy"),
    ("m.list('scope')", "invalid_input"),
    ("m.feedback(args[1], 'liked', 'durable')", "invalid_input"),
    ("m.structured.put('semantic', 'k', 1, 'options')", "invalid_input"),
]


def test_bad_arguments_reject_and_never_throw(harness):
    seeded = js(harness, OPEN + "return await m.addMemory('keep me');", "reject")
    for expr, code in SYNC_THROWS:
        got = js(
            harness,
            OPEN
            + f"""
            let promise;
            try {{ promise = {expr}; }} catch (e) {{ return {{ threw: e.code ?? String(e) }}; }}
            try {{ await promise; return {{ resolved: true }}; }}
            catch (e) {{ return {{ rejected: e.code }}; }}
            """,
            "reject",
            seeded["id"],
        )
        assert got == {"rejected": code}, (expr, got)


def test_hostile_calls_settle_with_codes_and_the_worker_keeps_working(harness):
    """Issue 12: a compose nested 900 deep never settled (600: `internal` after 3 s), an
    import of deeply nested JSON killed the worker, a 3M-character text was refused only
    after the encoder ran. Each now rejects with a documented code, changing nothing."""
    seeded = js(harness, OPEN + "return await m.addMemory('keep me: the CSV export');", "hostile")
    before = js(harness, OPEN + "return await m.exportJsonl();", "hostile")
    got = js(
        harness,
        OPEN
        + """
        const code = (p) => p.then(() => "resolved", (e) => e.code);
        const nested = (depth) => {
          let s = pm.strategies.byTag("csv");
          for (let i = 0; i < depth; i++) s = pm.strategies.compose(s);
          return s;
        };
        const header = '{"format":"pymemory-export","version":1}\\n';
        return {
          compose900: await code(m.retrieve("csv", { strategy: nested(900) })),
          compose600: await code(m.retrieve("csv", { strategy: nested(600) })),
          compose20: await code(m.retrieve("csv", { strategy: nested(20) })),
          deepImport: await code(m.importJsonl(header + "[".repeat(100000) + "]".repeat(100000))),
          hugeText: await code(m.addMemory("x".repeat(3000000))),
          hugeWindow: await code(m.retrieve("csv", { strategy: pm.strategies.timeWindow({ hours: 1e303 }) })),
          hugeWeight: await code(m.retrieve("csv", { strategy: pm.strategies.fusion({ lexical: 1e308 }) })),
          after: (await m.retrieve("csv export")).memories.map((x) => x.item.id),
        };
        """,
        "hostile",
    )
    assert got == {
        "compose900": "invalid_input",  # nested deeper than parameters may be
        "compose600": "invalid_input",
        "compose20": "invalid_strategy",  # compose itself nests at most 16 deep
        "deepImport": "invalid_import",
        "hugeText": "invalid_input",
        "hugeWindow": "invalid_strategy",
        "hugeWeight": "invalid_strategy",
        "after": [seeded["id"]],
    }
    assert js(harness, OPEN + "return await m.exportJsonl();", "hostile") == before


def test_documented_codes_are_exported(harness):
    codes = js(harness, "return pm.ERROR_CODES;")
    for _, code in BAD_CALLS:
        assert code in codes


def test_hooks_share_a_worker_and_react_to_each_other(context, base_url):
    page = context.new_page()
    errors = watch_errors(page)
    page.goto(f"{base_url}/web/pages/test/hooks.html?db=hooks")
    viewer = page.get_by_test_id("viewer")
    page.wait_for_function("window.writer && window.writer.status.ready")
    assert viewer.get_attribute("data-count") == "0"
    page.evaluate("window.writer.addMemory('The deploy window is Friday 6pm')")
    page.wait_for_function("document.querySelector('[data-testid=viewer]').dataset.count === '1'")
    assert "deploy window" in page.get_by_test_id("viewer-item").first.inner_text()
    page.evaluate(
        "Promise.all([1,2,3,4,5,6].map((i) => window.writer.addMemory(`note number ${i}`)))"
    )
    page.wait_for_function("document.querySelector('[data-testid=viewer]').dataset.count === '7'")
    # The "recent-5" hook shows only the five newest.
    assert page.get_by_test_id("writer").get_attribute("data-count") == "5"
    page.evaluate("window.writer.clear()")
    page.wait_for_function("document.querySelector('[data-testid=viewer]').dataset.count === '0'")
    workers = page.evaluate(
        "performance.getEntriesByType('resource').filter(e => e.name.endsWith('memory-worker.mjs')).length"
    )
    assert workers == 1
    assert errors == []


def export_lines(n: int) -> str:
    lines = [json.dumps({"format": "pymemory-export", "version": 1})]
    for i in range(n):
        item = {
            "id": str(uuid.uuid4()),
            "type": "message",
            "timestamp": 1_780_000_000_000 + i,
            "content": f"bulk note {i}",
            "metadata": {"source": "test", "confidence": 1.0, "references": []},
        }
        lines.append(json.dumps({"kind": "memory", "item": item}))
    return "\n".join(lines) + "\n"


def test_closing_page_mid_import_loses_nothing_acknowledged(context, base_url):
    chunk = 250
    page = context.new_page()
    page.goto(f"{base_url}/web/pages/test/harness.html")
    page.wait_for_function("document.body.dataset.loaded === '1'")
    js(page, OPEN + "window.m = m; return true;", "bulk")
    page.evaluate(
        """([text, chunk]) => {
          window.acked = 0;
          window.m.importJsonl(text, { chunkSize: chunk, onProgress: (done) => { window.acked = done; } })
            .catch(() => {});
        }""",
        [export_lines(20_000), chunk],
    )
    page.wait_for_function(f"window.acked >= {4 * chunk}")
    acked = page.evaluate("window.acked")
    page.close()

    page = context.new_page()
    page.goto(f"{base_url}/web/pages/test/harness.html")
    page.wait_for_function("document.body.dataset.loaded === '1'")
    exported = js(page, OPEN + "return await m.exportJsonl();", "bulk")
    records = [json.loads(line) for line in exported.splitlines()[1:]]
    assert len(records) >= acked, "acknowledged items were lost"
    assert len(records) % chunk == 0, "a half-written batch is visible"
    assert len(records) < 20_000, "the import was not interrupted; make it bigger"
    notes = sorted(int(r["item"]["content"].split()[-1]) for r in records)
    assert notes == list(range(len(records)))  # whole chunks, in order, nothing corrupt


@pytest.mark.parametrize("preset", ["recent-5", "all", "by-tag"])
def test_strategy_presets(harness, preset):
    got = js(
        harness,
        """
        const m = pm.createAgentMemory({ dbName: "presets-" + args[0], strategy: args[0],
                                         tags: ["keep"] });
        await m.ready;
        for (let i = 0; i < 7; i++) await m.addMemory({ text: `item ${i}`, tags: i % 2 ? ["keep"] : [] });
        return await m.list(m.listing);
        """,
        preset,
    )
    expected = {"recent-5": 5, "all": 7, "by-tag": 3}[preset]
    assert len(got) == expected


def test_budgets_count_o200k_tokens_like_cpython(harness):
    from pymemory.retrieval.tokens import default_token_counter

    texts = [
        "I prefer answers as tables, not bullet points.",
        "会上确定了3个角色：超级管理员、部门管理员、普通成员。下周二上线。",
        "deploy 🚀 to staging at 18:30 — ticket ABC-1234, see https://example.com/x?y=1",
    ]
    got = js(
        harness,
        OPEN
        + "const out = []; for (const t of args[1]) out.push(await m.addMemory(t));"
        + "return await m.retrieve('', { maxItems: 10 });",
        "tokens",
        texts,
    )
    counter = default_token_counter()
    assert counter.name == "o200k_base" and got["tokenCounter"] == "o200k_base"
    for m in got["memories"]:
        assert m["tokens"] == counter.count(m["line"]), m["line"]
    assert got["tokensUsed"] == counter.count(got["text"])  # the lines and their day line
    assert all(m["line"] in got["text"] for m in got["memories"])


def test_strategy_builders_take_the_core_defaults(harness):
    """JS strategy builders leave unset options to Python's defaults (one source)."""
    result = js(
        harness,
        OPEN
        + """
        const s = pm.strategies;
        const day = 24 * 3600 * 1000;
        const old = await m.addMemory({ text: "deploy checklist for the api", timestamp: Date.now() - 400 * day });
        const built = s.compose(s.timeDecay(), s.fusion({ lexical: 0.5 }), s.feedbackWeight({ liked: 2 }),
                                s.relevanceFloor({ minDense: 0.2 }),
                                s.timeDecay({ byType: { tool_result: { halfLifeHours: 6 } } }));
        const byDefault = await m.retrieve("deploy checklist", { trace: true });
        const viaBuilders = await m.retrieve("deploy checklist", { strategy: built, trace: true });
        const floor = await m.retrieve("deploy checklist",
                                       { strategy: s.timeDecay({ floor: 0.9 }), trace: true });
        const off = await m.retrieve("deploy checklist",
                                     { strategy: s.timeDecay({ halfLifeHours: null }), trace: true });
        return { built, old, rows: [byDefault, viaBuilders, floor, off].map((r) => r.trace[0]) };
        """,
        "builders",
    )
    assert result["built"]["strategies"][0] == {"kind": "time_decay"}
    assert result["built"]["strategies"][1] == {"kind": "fusion", "lexical": 0.5}
    assert result["built"]["strategies"][3] == {"kind": "relevance_floor", "min_dense": 0.2}
    assert result["built"]["strategies"][4] == {
        "kind": "time_decay", "by_type": {"tool_result": {"half_life_hours": 6}},
    }  # fmt: skip
    default, via, floor, off = result["rows"]
    assert {r["id"] for r in result["rows"]} == {result["old"]["id"]}
    assert via["decay"] == pytest.approx(default["decay"])  # the core's defaults
    assert default["decay"] == 1.0  # a message does not fade by default
    assert floor["decay"] == pytest.approx(0.9, abs=1e-3)  # one decay for every type
    assert off["decay"] == 1.0


def test_hashing_embedder_turns_on_hybrid_in_the_worker(harness):
    """The model-free embedder runs in Pyodide (32-bit numpy) and gives CPython's vectors."""
    result = js(
        harness,
        OPEN
        + """
        const a = await m.addMemory("the bike storage code at the office is 7291");
        await m.addMemory("the gym locker code downstairs is 5520");
        const conn = pm.connection();
        const loaded = await conn.call(args[0], "loadModels", { embedder: "hashing" });
        const idle = await conn.call(args[0], "modelsIdle", {});
        const r = await m.retrieve("office bike storage code", { trace: true });
        return { a, loaded, idle, r };
        """,
        "hashing",
    )
    assert result["loaded"]["embedder"]["name"].startswith("hashing-384")
    assert result["idle"]["embedded"] == 2
    r = result["r"]
    assert r["mode"] == "hybrid" and r["notes"] == []
    top = r["memories"][0]
    assert top["item"]["id"] == result["a"]["id"]
    query, text = HashingEmbedder().embed_sync([r["query"], top["item"]["text"]])
    assert top["dense"] == pytest.approx(float(query @ text), abs=0.02)  # int8 storage
