"""OrtRuntime (onnxruntime in CPython) and the MiniLM embedder on it: loading, caching,
shapes, norms, batching, semantics, and the same vectors as an independent reference (the
Rust `tokenizers` package + onnxruntime + numpy pooling written out here)."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest

from pymemory.browser.rpc import RpcApi
from pymemory.errors import ValidationError
from pymemory.models import MiniLmEmbedder, find_model_dir, load_minilm
from pymemory.models.embedding import Embedder, EmbedderUnavailableError
from pymemory.models.ort import OrtRuntime
from pymemory.models.runtime import InferenceRuntime, InferenceSession
from pymemory.storage import MapKv

MODEL_DIR = find_model_dir("minilm")


@pytest.fixture(autouse=True, scope="module")
def _requirements():
    """Never skip: missing pieces fail with what to do."""
    try:
        import onnxruntime  # noqa: F401
        import tokenizers  # noqa: F401  (the reference)
    except ImportError as exc:
        pytest.fail(f"{exc.name} is not installed: install pymemory's `models` extra", False)
    if MODEL_DIR is None:
        pytest.fail("MiniLM is not built: run python3 build.py setup", pytrace=False)


SENTENCES = [
    "How do I reset my password?",
    "I forgot my login password",
    "The cat sat on the mat",
    "",
    "Deploy the new build to staging on Friday at 5pm.",
    "Café crème, naïve façade — résumé of the déjà vu.",
    "東京の天気は晴れです。",
    "Emoji: 🚀🔥 and symbols ++ -- == !!",
    "Please export the quarterly sales report as CSV every Monday morning.",
    "word " * 400,  # longer than the model's 256 tokens: truncated
]


@pytest.fixture(scope="module")
def runtime() -> OrtRuntime:
    return OrtRuntime(intra_op_threads=1)


@pytest.fixture
async def embedder(runtime) -> MiniLmEmbedder:
    return await load_minilm(runtime, MODEL_DIR)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


# --- the runtime ------------------------------------------------------------------------


async def test_runtime_loads_minilm_once(runtime):
    assert isinstance(runtime, InferenceRuntime)
    path = MODEL_DIR / "model.onnx"
    first, second = await asyncio.gather(runtime.load(path), runtime.load(str(path)))
    assert first is second  # concurrent first loads share one session
    assert await runtime.load(MODEL_DIR / ".." / "minilm" / "model.onnx") is first
    assert isinstance(first, InferenceSession)
    assert first.input_names == ("input_ids", "attention_mask", "token_type_ids")
    assert first.output_names == ("last_hidden_state",)

    ids = np.array([[101, 7592, 2088, 102]], dtype=np.int64)
    out = await first.run(
        {
            "input_ids": ids,
            "attention_mask": np.ones_like(ids),
            "token_type_ids": np.zeros_like(ids),
        }
    )
    assert list(out) == ["last_hidden_state"]
    assert out["last_hidden_state"].shape == (1, 4, 384)
    assert out["last_hidden_state"].dtype == np.float32
    with pytest.raises(ValueError, match="unknown output"):
        await first.run({"input_ids": ids}, ["logits"])


async def test_runtime_errors(runtime, tmp_path):
    with pytest.raises(FileNotFoundError, match="no ONNX model"):
        await runtime.load(tmp_path / "missing.onnx")
    with pytest.raises(FileNotFoundError):  # a failed load is not cached
        await runtime.load(tmp_path / "missing.onnx")
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="intra_op_threads"):
            OrtRuntime(intra_op_threads=bad)
    with pytest.raises(ValueError, match="graph_optimization"):
        OrtRuntime(graph_optimization="fast")


async def test_run_does_not_block_the_event_loop(runtime):
    session = await runtime.load(MODEL_DIR / "model.onnx")
    ids = np.full((16, 256), 1000, dtype=np.int64)
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": 0 * ids}
    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            await asyncio.sleep(0.001)
            ticks += 1

    task = asyncio.create_task(ticker())
    await session.run(feeds)
    task.cancel()
    assert ticks > 0


# --- the embedder -----------------------------------------------------------------------


async def test_embedder_shape_norm_and_protocol(embedder):
    assert isinstance(embedder, Embedder)
    assert embedder.dim == 384 and embedder.max_length == 256
    assert "MiniLM" in embedder.name and embedder.load_ms is not None
    vectors = await embedder.embed(SENTENCES)
    assert vectors.shape == (len(SENTENCES), 384) and vectors.dtype == np.float32
    assert np.isfinite(vectors).all()
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert (await embedder.embed([])).shape == (0, 384)
    with pytest.raises(ValidationError):
        await embedder.embed("a plain str")
    with pytest.raises(ValidationError):
        await embedder.embed(["ok", 3])


async def test_batch_equals_one_by_one(runtime):
    small_batches = await load_minilm(runtime, MODEL_DIR, batch_size=3)
    batched = await small_batches.embed(SENTENCES)
    single = np.vstack([await small_batches.embed([s]) for s in SENTENCES])
    assert np.abs(batched - single).max() < 1e-5


async def test_batches_follow_length_and_a_token_budget(runtime):
    e = await load_minilm(runtime, MODEL_DIR, batch_size=4, max_batch_tokens=20, preload=False)
    lengths = [9, 3, 3, 30, 4, 5, 3, 6, 5]
    batches = e.plan_batches(lengths)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    assert [[lengths[i] for i in b] for b in batches] == [[3, 3, 3, 4], [5, 5, 6], [9], [30]]
    for b in batches:  # never over the row limit; over the budget only a lone long text
        assert len(b) <= 4 and (len(b) * max(lengths[i] for i in b) <= 20 or len(b) == 1)
    assert e.plan_batches([]) == []
    with pytest.raises(ValidationError):
        await load_minilm(runtime, MODEL_DIR, max_batch_tokens=0, preload=False)


async def test_token_budget_batches_give_the_same_vectors(runtime):
    tight = await load_minilm(runtime, MODEL_DIR, batch_size=64, max_batch_tokens=24)
    loose = await load_minilm(runtime, MODEL_DIR, batch_size=64, max_batch_tokens=10**6)
    assert np.abs(await tight.embed(SENTENCES) - await loose.embed(SENTENCES)).max() < 1e-5


async def test_semantic_sanity(embedder):
    q, near, far = await embedder.embed(
        ["How do I reset my password?", "I forgot my login password", "The cat sat on the mat"]
    )
    assert cosine(q, near) > cosine(q, far) + 0.3
    assert cosine(q, near) > 0.6


async def test_truncation_keeps_sep(embedder):
    (ids,) = embedder.tokenize(["word " * 400])
    assert len(ids) == 256 and ids[0] == 101 and ids[-1] == 102
    short = await load_minilm(embedder.runtime, MODEL_DIR, max_length=8, preload=False)
    assert short.tokenize(["one two three four five six seven eight nine"])[0][-1] == 102
    assert len(short.tokenize(["one two three four five six seven eight nine"])[0]) == 8
    assert short.name != embedder.name  # other settings, other vectors
    long_ = await load_minilm(embedder.runtime, MODEL_DIR, max_length=4096, preload=False)
    assert long_.max_length == 256  # never beyond the model's limit


async def test_same_vectors_as_the_rust_tokenizers_reference(embedder):
    import onnxruntime as ort
    import tokenizers as rust

    tok = rust.Tokenizer.from_file(str(MODEL_DIR / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(256)
    session = ort.InferenceSession(
        str(MODEL_DIR / "model.onnx"), providers=["CPUExecutionProvider"]
    )
    reference = []
    for text in SENTENCES:
        enc = tok.encode(text)
        ids = np.array([enc.ids], dtype=np.int64)
        mask = np.array([enc.attention_mask], dtype=np.int64)
        (hidden,) = session.run(
            ["last_hidden_state"],
            {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
        )
        pooled = (hidden[0] * mask[0, :, None]).sum(0) / mask.sum()
        reference.append(pooled / np.linalg.norm(pooled))
    assert embedder.tokenize(SENTENCES) == [tok.encode(t).ids for t in SENTENCES]
    ours = await embedder.embed(SENTENCES)
    assert np.abs(ours - np.array(reference)).max() < 1e-5

    # The embedder also takes the Rust tokenizer itself (encode() -> Encoding with .ids).
    with_rust = MiniLmEmbedder(embedder.runtime, MODEL_DIR, tok)
    assert np.abs(await with_rust.embed(SENTENCES) - ours).max() < 1e-6


async def test_load_minilm_defaults_and_missing_model(tmp_path, monkeypatch):
    embedder = await load_minilm(preload=False)  # finds .cache/models/minilm
    assert embedder.runtime.name == "onnxruntime" and embedder.load_ms is None
    assert embedder.model_url == str(MODEL_DIR / "model.onnx")

    (tmp_path / "config.json").write_text(json.dumps({"dims": 384}))
    with pytest.raises(FileNotFoundError):  # no tokenizer.json: load_embedder reports OSError
        await load_minilm(OrtRuntime(), tmp_path)

    from pymemory.models import minilm as module

    monkeypatch.setattr(module, "find_model_dir", lambda name: None)
    with pytest.raises(EmbedderUnavailableError, match=r"build\.py setup"):
        await load_minilm()


async def test_rpc_embed_diagnostic(embedder):
    async def factory(name):
        assert name == "minilm"
        return embedder

    api = RpcApi(lambda name: _map_kv())
    api.embedder_factory = factory
    answer = json.loads(await api.call("diag", "embed", json.dumps({"texts": SENTENCES[:3]})))
    assert answer["ok"], answer
    result = answer["result"]
    assert result["dim"] == 384 and result["runtime"] == "onnxruntime"
    assert result["inputIds"] == embedder.tokenize(SENTENCES[:3])
    expected = await embedder.embed(SENTENCES[:3])
    np.testing.assert_array_equal(np.array(result["vectors"], np.float32), expected)

    raw = json.loads(
        await api.call("diag", "embed", json.dumps({"inputIds": [[101, 102]], "raw": True}))
    )["result"]
    assert raw["lastHiddenState"]["shape"] == [1, 2, 384]

    bad_params = [
        {},
        {"texts": "x"},
        {"texts": ["a"], "inputIds": [[1]]},
        {"inputIds": [[]]},
        {"texts": ["a"], "other": 1},
    ]
    for bad in bad_params:
        err = json.loads(await api.call("diag", "embed", json.dumps(bad)))
        assert not err["ok"] and err["error"]["code"] == "invalid_input", bad


async def _map_kv():
    return MapKv()


async def test_rpc_embed_reports_a_missing_model():
    async def factory(name):
        raise FileNotFoundError("no ONNX model at /nowhere/model.onnx")

    api = RpcApi(lambda name: _map_kv())
    api.embedder_factory = factory
    err = json.loads(await api.call("diag", "embed", json.dumps({"texts": ["x"]})))
    assert not err["ok"] and err["error"]["code"] == "embedder_unavailable"
    assert "/nowhere/model.onnx" in err["error"]["message"]
