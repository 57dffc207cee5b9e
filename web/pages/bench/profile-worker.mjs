// Where pymemory's retrieve spends its time and memory inside Pyodide: a worker that boots
// Pyodide, numpy and the pymemory wheel (as the real worker does, without IndexedDB: the
// Memory sits on a MapKv) and runs PROFILE below on a corpus and queries fetched from URLs.
// The page cannot see Pyodide's WebAssembly heap (measureUserAgentSpecificMemory leaves
// WebAssembly.Memory out), so the Python heap is measured here, with tracemalloc.
// Used by benchmarks/bench_retrieval_browser.py --profile; posts back a JSON string.

const PROFILE = `
import cProfile, gc, io, json, pstats, statistics, time, tracemalloc
from pymemory.models.embedding import HashingEmbedder
from pymemory.storage import MapKv
from pymemory.memory import Memory
from pymemory.retrieval.strategies import coerce, compile_strategy

RETRIEVE = {"max_items": 10, "max_tokens": 10**6}

def ms(fn, *args):
    t0 = time.perf_counter()
    fn(*args)
    return (time.perf_counter() - t0) * 1000

async def ams(coro):
    t0 = time.perf_counter()
    await coro
    return (time.perf_counter() - t0) * 1000

def traced():
    gc.collect()
    return tracemalloc.get_traced_memory()[0]

async def measure_memory(corpus):
    """Python heap (tracemalloc) of a Memory holding the corpus, without its MapKv records
    (in the real worker those live in IndexedDB)."""
    out = {}
    tracemalloc.start()
    base = traced()
    memory = await Memory.open(MapKv())
    await memory.import_(corpus)
    items = traced()
    await memory.attach_embedder(HashingEmbedder())
    await memory.embed_idle()
    both = traced()
    memory.kv._data.clear()  # what the MapKv alone holds: freed when its records go
    memory.kv._keys.clear()
    kv_free = traced()
    out["kv_bytes"] = both - kv_free
    out["heap_items_and_vectors"] = kv_free - base
    out["vector_matrix_bytes"] = memory.vectors.nbytes
    tracemalloc.stop()
    await memory.close()
    out["heap_items_kv_included"] = items - base
    return out

async def profile(corpus, queries, warmup, wasm_bytes):
    """Time the parts of retrieve (and the WebAssembly memory's growth, untraced), then
    measure the Python heap in a second, traced, Memory."""
    out = {}
    wasm = {"start": wasm_bytes()}
    memory = await Memory.open(MapKv())
    out["import_ms"] = await ams(memory.import_(corpus))
    wasm["items"] = wasm_bytes()
    out["token_counter"] = memory.token_counter.name
    warm, timed = queries[:warmup], queries[warmup:]
    for q in warm:
        await memory.retrieve(q, **RETRIEVE)
    bm25 = [await ams(memory.retrieve(q, **RETRIEVE)) for q in timed]
    embedder = HashingEmbedder()
    t0 = time.perf_counter()
    await memory.attach_embedder(embedder)
    await memory.embed_idle()
    out["embed_all_ms"] = (time.perf_counter() - t0) * 1000
    wasm["vectors"] = wasm_bytes()
    depth = compile_strategy(coerce(None)).fusion.depth
    for q in warm:
        await memory.retrieve(q, **RETRIEVE)
    parts = {"query_embed": [], "vector_search": [], "retrieve_bm25_only": bm25,
             "retrieve_hybrid": []}
    for q in timed:
        t0 = time.perf_counter()
        vec = await embedder.embed([q])
        parts["query_embed"].append((time.perf_counter() - t0) * 1000)
        parts["vector_search"].append(ms(memory.vectors.search, vec[0], depth))
        parts["retrieve_hybrid"].append(await ams(memory.retrieve(q, **RETRIEVE)))
    out["p50_ms"] = {k: statistics.median(v) for k, v in parts.items()}
    prof = cProfile.Profile()
    prof.enable()
    for q in timed:
        await memory.retrieve(q, **RETRIEVE)
    prof.disable()
    for key in ("tottime", "cumulative"):
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats(key).print_stats(25)
        out[f"profile_{key}"] = text.getvalue()
    out["queries"] = len(timed)
    await memory.close()
    del memory, prof
    gc.collect()
    out["memory"] = {**await measure_memory(corpus), "wasm": wasm}
    return json.dumps(out)
`;

self.onmessage = async (event) => {
  try {
    const { corpusUrl, queriesUrl, warmup } = event.data;
    const { loadPyodide } = await import("/vendor/pyodide/pyodide.mjs");
    const pyodide = await loadPyodide({ indexURL: "/vendor/pyodide/" });
    const manifest = await (await fetch("/wheels/manifest.json")).json();
    await pyodide.loadPackage(["numpy", `/wheels/${manifest.pymemory}`], {
      messageCallback: () => {},
    });
    const corpus = await (await fetch(corpusUrl)).text();
    const queries = await (await fetch(queriesUrl)).json();
    await pyodide.runPythonAsync(PROFILE);
    const run = pyodide.globals.get("profile");
    const wasmBytes = () => pyodide._module.HEAP8.buffer.byteLength;
    const result = await run(corpus, pyodide.toPy(queries), warmup, wasmBytes);
    self.postMessage({ ok: true, result });
  } catch (err) {
    self.postMessage({ ok: false, error: String(err?.stack ?? err) });
  }
};
