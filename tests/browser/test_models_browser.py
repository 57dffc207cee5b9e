"""Local models in the worker: MiniLM for hybrid retrieval and SmolLM2 as Encoder stage 2,
loaded after boot, with the same results as CPython."""

import asyncio
from concurrent.futures import ThreadPoolExecutor

import pytest
from browserkit import js, watch_errors

from pymemory.encoder import RuleEncoder
from pymemory.encoder.smollm2 import load_smollm2_refiner
from tools import server

TEXTS = [
    "Hi there! Could you please move our weekly sync with the design team from Tuesday "
    "to Thursday at 3pm? Thanks a lot, and sorry for the late notice.",
    "你好！我觉得这个方案有点复杂，能不能简化一下？另外我需要它能在 Windows 上运行。谢谢",
    "The deploy to staging failed because the database migration timed out after 30 seconds.",
]


def test_models_load_after_boot_and_match_cpython(harness):
    got = js(
        harness,
        """
        const m = pm.createAgentMemory({ dbName: "models", models: ["embedder", "summarizer"] });
        const phases = [];
        const partial = new Set(); // model files seen part-way through their download
        const sources = {}; // model file -> where its reads came from (network, then cache)
        m.onStatus((s) => {
          phases.push(JSON.stringify(s.models ?? null));
          for (const [name, f] of Object.entries(s.files ?? {})) {
            if (!name.includes("/")) continue;
            if (f.total && f.loaded < f.total) partial.add(name);
            (sources[name] ??= new Set()).add(f.source);
          }
        });
        await m.ready;
        const before = await m.retrieve("design meeting");   // models may still be loading
        await m.modelsReady;
        const items = [];
        for (const t of args[0]) items.push(await m.addMemory(t));
        let changes = 0;
        m.subscribe(() => changes++);
        const idle = await pm.connection().call("models", "modelsIdle", {});
        const t0 = performance.now();
        while (changes === 0 && performance.now() - t0 < 5000) await new Promise((r) => setTimeout(r, 20));
        const after = await Promise.all(items.map((i) => m.get(i.id)));
        const r = await m.retrieve("reschedule the design meeting", { trace: true });
        const seen = Object.fromEntries(Object.entries(sources).map(([n, v]) => [n, [...v]]));
        return { phases, before, items, after, r, status: m.status, changes, idle,
                 partial: [...partial], seen };
        """,
        TEXTS,
    )
    # Model files report their bytes like Pyodide's: "<model>/<file>", part-way, then whole.
    models = {n: f for n, f in got["status"]["files"].items() if "/" in n}
    onnx = sorted(n for n in models if n.endswith("/model.onnx"))
    assert len(onnx) == 2, models
    for name in onnx:
        assert models[name]["loaded"] == models[name]["total"] > 10_000_000
        # A fresh profile downloads it; the urgent model worker's own session then reads it
        # from the cache.
        assert "network" in got["seen"][name]
    assert set(onnx) <= set(got["partial"])
    assert got["status"]["models"]["embedder"] == "ready"
    assert got["status"]["models"]["summarizer"] == "ready"
    assert any('"loading"' in p for p in got["phases"])
    # add() returned stage 1 at once; the model refined in the background.
    assert all(i["contentMethod"] in ("rules", "verbatim") for i in got["items"])
    assert got["r"]["mode"] == "hybrid" and got["r"]["notes"] == []
    assert got["r"]["trace"][0]["dense"] is not None
    assert got["r"]["memories"][0]["item"]["id"] == got["items"][0]["id"]

    # Whatever the browser's model wrote passed its guard; CPython's guard agrees. (Greedy
    # outputs of the int8 model can differ between onnxruntime's CPU and WASM kernels on
    # near-tied tokens, so the texts themselves are not compared.)
    refined = [(t, i) for t, i in zip(TEXTS, got["after"], strict=True)
               if i["contentMethod"] == "model"]  # fmt: skip
    stats = got["idle"]["summarizer"]
    assert stats["calls"] == len(TEXTS)  # the model ran on every new item
    assert stats["accepted"] == len(refined)  # and only accepted outputs were written
    assert got["idle"]["embedded"] == len(TEXTS)
    if refined:
        assert got["changes"] >= 1  # the page heard about the background rewrite

    async def check():
        refiner = await load_smollm2_refiner(preload=False)
        return [
            refiner.guard.check(t, i["content"], stage1=RuleEncoder().summarize(t)).accepted
            for t, i in refined
        ]

    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API owns this thread's loop
        assert all(pool.submit(asyncio.run, check()).result())


@pytest.mark.parametrize("threads", [1, 2])
def test_calls_do_not_wait_for_a_busy_model(harness, threads):
    """Inference runs in the model worker: with the summarizer working through a backlog,
    a hybrid retrieve (its query embedding queued before the background runs) and an add
    complete long before the backlog does; also with onnxruntime-web's WASM threads (the
    test server makes pages cross-origin isolated, so its thread workers can start)."""
    got = js(
        harness,
        """
        const m = pm.createAgentMemory({ dbName: "busy", models: ["embedder", "summarizer"],
                                         ortThreads: args[1] });
        await m.modelsReady;
        await m.addMany(args[0]);                         // a backlog for the summarizer
        const order = [];
        const idle = pm.connection().call("busy", "modelsIdle", {}).then((r) => { order.push("backlog done"); return r; });
        await new Promise((r) => setTimeout(r, 500));     // the summarizer is mid-refinement
        const t0 = performance.now();
        const r = await m.retrieve("when is the design team sync?");
        order.push("retrieve");
        const retrieveMs = performance.now() - t0;
        const t1 = performance.now();
        await m.addMemory("One more note while the model works.");
        order.push("add");
        const addMs = performance.now() - t1;
        const busy = await pm.connection().link.request({ op: "modelStats" });
        const done = await idle;
        return { order, retrieveMs, addMs, mode: r.mode, busy, done, isolated: crossOriginIsolated };
        """,
        TEXTS * 4,
        threads,
    )
    assert got["order"] == ["retrieve", "add", "backlog done"], got["order"]
    assert got["mode"] == "hybrid"
    # the query embedding ran in the urgent model worker, not behind the background queue
    assert got["busy"]["urgent"]["queue"]["urgent"] >= 1
    assert got["busy"]["background"]["queue"]["urgent"] == 0
    assert got["done"]["summarizer"]["calls"] >= len(TEXTS) * 4
    # both model workers run onnxruntime-web with the threads asked for (2 cores here)
    assert got["isolated"] is True
    for worker in ("background", "urgent"):
        assert got["busy"][worker]["crossOriginIsolated"] is True
        assert got["busy"][worker]["wasmThreads"] == threads
    print(f"\nwith the summarizer busy ({threads} WASM thread(s)): "
          f"retrieve {got['retrieveMs']:.0f} ms, add {got['addMs']:.0f} ms")  # fmt: skip


@pytest.fixture
def plain_harness(context):
    """The harness page served without COOP/COEP: not cross-origin isolated."""
    srv = server.start(isolate=False)
    page = context.new_page()
    page.errors = watch_errors(page)
    page.goto(f"http://127.0.0.1:{srv.server_address[1]}/web/pages/test/harness.html")
    page.wait_for_function("document.body.dataset.loaded === '1'")
    yield page
    srv.shutdown()
    assert page.errors == []


def test_threads_fall_back_to_one_where_the_page_is_not_isolated(plain_harness):
    got = js(
        plain_harness,
        """
        const m = pm.createAgentMemory({ dbName: "plain", models: ["embedder"], ortThreads: 2 });
        await m.modelsReady;
        const items = [];
        for (const t of args[0]) items.push(await m.addMemory(t));
        await pm.connection().call("plain", "modelsIdle", {});
        const r = await m.retrieve("reschedule the design meeting");
        const stats = await pm.connection().link.request({ op: "modelStats" });
        return { isolated: crossOriginIsolated, r, ids: items.map((i) => i.id), stats };
        """,
        TEXTS,
    )
    assert got["isolated"] is False
    for worker in ("background", "urgent"):
        assert got["stats"][worker]["crossOriginIsolated"] is False
        assert got["stats"][worker]["wasmThreads"] == 1
    assert got["r"]["mode"] == "hybrid" and got["r"]["notes"] == []
    assert got["r"]["memories"][0]["item"]["id"] == got["ids"][0]
