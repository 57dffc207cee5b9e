"""onnxruntime-web in the worker (OrtWebRuntime + web/worker/ort-bridge.mjs) against onnxruntime
in CPython: the same MiniLM vectors, the same raw model outputs, and model files read from
Cache Storage on the second visit."""

import asyncio
import base64
import concurrent.futures
from pathlib import Path

import numpy as np
import pytest
from browserkit import js, watch_errors

ROOT = Path(__file__).resolve().parents[2]
MODEL_DIR = ROOT / ".cache" / "models" / "minilm"
ORT_WEB = ROOT / ".cache" / "vendor" / "onnxruntime-web" / "ort.wasm.min.mjs"

SENTENCES = [
    "How do I reset my password?",
    "I forgot my login password",
    "The cat sat on the mat",
    "",
    "Deploy the new build to staging on Friday at 5pm.",
    "The quarterly sales report should be exported as CSV every Monday.",
    "Remember: the wifi password is written on the fridge.",
    "I prefer answers as tables, not bullet lists.",
    "Café crème, naïve façade — résumé of the déjà vu.",
    "東京の天気は晴れです。",
    "Emoji: 🚀🔥 and symbols ++ -- == !!",
    "Der schnelle braune Fuchs springt über den faulen Hund.",
    "user_id=42; token expires 2025-01-31T12:00:00Z",
    "What's the capital of France? Paris, of course.",
    "Mixed CASE and    extra   spaces\tand\ttabs\nand newlines",
    "The meeting moved from Tuesday to Thursday afternoon.",
    "She said: «bonjour» and left.",
    "Numbers 3.14159, 2.71828 and 1,000,000.",
    "A short one.",
    "word " * 300,  # longer than the model's 256 tokens: truncated
]

EMBED = """
const c = pm.connection();
await c.ready;
return await c.call("inference", "embed", args[0]);
"""


@pytest.fixture(scope="module")
def cpython_embedder():
    if not (MODEL_DIR / "model.onnx").is_file():
        pytest.fail("MiniLM is not built: run python3 build.py setup", pytrace=False)
    if not ORT_WEB.is_file():
        pytest.fail("onnxruntime-web is missing: run python3 build.py setup", pytrace=False)
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        pytest.fail("onnxruntime is not installed: install pymemory's `models` extra", False)
    from pymemory.models import load_minilm
    from pymemory.models.ort import OrtRuntime

    return _sync(load_minilm(OrtRuntime(intra_op_threads=1), MODEL_DIR))


def _sync(coro):
    """Run a coroutine to completion on a thread (Playwright's loop owns this one)."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def _hidden(result) -> np.ndarray:
    raw = result["lastHiddenState"]
    data = np.frombuffer(base64.b64decode(raw["base64"]), dtype="<f4")
    return data.reshape(raw["shape"])


def test_same_vectors_as_cpython(harness, cpython_embedder):
    result = js(harness, EMBED, {"texts": SENTENCES})
    assert result["runtime"] == "onnxruntime-web" and result["dim"] == 384
    assert result["model"] == cpython_embedder.name
    assert result["session"]["threads"] == 1
    # The pure-Python tokenizer gives the same ids in Pyodide as in CPython.
    assert result["inputIds"] == cpython_embedder.tokenize(SENTENCES)
    browser = np.array(result["vectors"], dtype=np.float32)
    cpython = _sync(cpython_embedder.embed(SENTENCES))
    assert browser.shape == cpython.shape == (len(SENTENCES), 384)
    np.testing.assert_allclose(np.linalg.norm(browser, axis=1), 1.0, atol=1e-5)
    diff = float(np.abs(browser - cpython).max())
    print(f"\nmax abs diff browser vs CPython over {len(SENTENCES)} sentences: {diff:.2e}")
    assert diff < 1e-4
    # The same ranking of the semantic pair.
    q, near, far = browser[:3]
    assert q @ near > q @ far + 0.3


def test_raw_outputs_match_for_the_same_input_ids(harness, cpython_embedder):
    ids = cpython_embedder.tokenize(SENTENCES[:6])  # mixed lengths: a padded batch
    result = js(harness, EMBED, {"inputIds": ids, "raw": True})
    browser = _hidden(result)
    feeds = cpython_embedder.batch_inputs(ids)
    cpython = _sync(cpython_embedder.forward(feeds))
    assert browser.shape == cpython.shape == (*feeds["input_ids"].shape, 384)
    mask = feeds["attention_mask"].astype(bool)
    diff = float(np.abs(browser[mask] - cpython[mask]).max())  # the real tokens
    scale = float(np.abs(cpython[mask]).max())
    print(f"\nlast_hidden_state max abs diff {diff:.2e} (values up to {scale:.1f})")
    assert diff < 1e-3 * max(scale, 1.0)


def test_second_visit_reads_the_model_from_cache_storage(context, base_url):
    requests: list[str] = []
    context.on("request", lambda r: requests.append(r.url))  # the worker's requests too

    def visit():
        page = context.new_page()
        errors = watch_errors(page)
        page.goto(f"{base_url}/web/pages/test/harness.html")
        page.wait_for_function("document.body.dataset.loaded === '1'")
        result = js(page, EMBED, {"texts": ["cached model"]})
        keys = js(
            page,
            """const cache = await caches.open("pymemory-models-v1");
               return (await cache.keys()).map((r) => new URL(r.url).pathname).sort();""",
        )
        page.close()
        assert errors == []
        return result, keys

    first, keys = visit()
    model_requests = [u for u in requests if u.endswith("/models/minilm/model.onnx")]
    assert len(model_requests) == 1
    assert first["session"]["source"] == "network" and first["session"]["verified"]
    assert keys == [
        "/web/models/minilm/config.json",
        "/web/models/minilm/model.onnx",
        "/web/models/minilm/tokenizer.json",
    ]

    requests.clear()
    second, _ = visit()
    assert second["session"]["source"] == "cache" and second["session"]["verified"]
    fetched = [u for u in requests if "/models/minilm/" in u]
    assert fetched == [], f"the second visit downloaded {fetched}"
    assert second["vectors"] == first["vectors"]
    print(
        f"\nmodel read: network {first['session']['fetchMs']:.0f} ms, "
        f"cache {second['session']['fetchMs']:.0f} ms (with sha256 check)"
    )


def test_a_stale_cached_model_is_downloaded_again(context, base_url):
    page = context.new_page()
    page.goto(f"{base_url}/web/pages/test/harness.html")
    page.wait_for_function("document.body.dataset.loaded === '1'")
    # A cached copy that is self-consistent but not what the manifest pins (an old build).
    js(
        page,
        """const bytes = new TextEncoder().encode("an older model");
           const hash = Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)),
                                   (b) => b.toString(16).padStart(2, "0")).join("");
           const cache = await caches.open("pymemory-models-v1");
           await cache.put(new URL("/web/models/minilm/model.onnx", location.href).href,
                           new Response(bytes, { headers: { "x-pymemory-sha256": hash } }));""",
    )
    result = js(page, EMBED, {"texts": ["fresh model"]})
    assert result["session"]["source"] == "network"
    assert result["session"]["replaced"] == "stale"
    assert len(result["vectors"][0]) == 384
    page.close()


CONVERSIONS = r"""
import json

import js
import numpy as np

from pymemory.browser.pyodide import tensor_from_js, tensor_to_js

# What web/worker/ort-bridge.mjs does with a feed, and what it hands back for an output.
bridge = js.eval('''(t) => {
  const C = { int64: BigInt64Array, float32: Float32Array, bool: Uint8Array, int32: Int32Array,
              float64: Float64Array, uint8: Uint8Array }[t.type];
  const data = new C(t.bytes.buffer, t.bytes.byteOffset, t.bytes.byteLength / C.BYTES_PER_ELEMENT);
  return { type: t.type, dims: t.dims, data };
}''')
arrays = [
    np.arange(-3, 3, dtype=np.int64).reshape(2, 3) * 2**40,
    np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2),
    np.array([[True, False]]),
    np.zeros((0, 4), np.float32),
    np.arange(4, dtype=np.int32),
    np.array([1e300, -2.5]),
    np.arange(6, dtype=np.uint8).reshape(2, 3)[:, ::2],  # not contiguous
]
out = []
for arr in arrays:
    back = bridge(tensor_to_js("x", arr))
    got = tensor_from_js("x", back)
    out.append([str(got.dtype) == str(arr.dtype), bool(np.array_equal(got, arr)),
                str(back.data.constructor.name)])
json.dumps(out)
"""


def test_tensor_conversions_round_trip(harness):
    """numpy -> the bridge's typed arrays -> numpy, in Pyodide (int64 as BigInt64Array)."""
    result = js(
        harness,
        """const { loadPyodide } = await import("/vendor/pyodide/pyodide.mjs");
           const py = await loadPyodide({ indexURL: "/vendor/pyodide/" });
           const m = await (await fetch("/wheels/manifest.json")).json();
           await py.loadPackage(["numpy", "/wheels/" + m.pymemory],
                                { messageCallback: () => {} });
           return JSON.parse(py.runPython(args[0]));""",
        CONVERSIONS,
    )
    assert [r[:2] for r in result] == [[True, True]] * 7
    assert [r[2] for r in result] == [
        "BigInt64Array", "Float32Array", "Uint8Array", "Float32Array", "Int32Array",
        "Float64Array", "Uint8Array",
    ]  # fmt: skip
