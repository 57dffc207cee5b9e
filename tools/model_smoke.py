"""The smoke check of the built models: load each one and run it.

    python -m tools.models smoke --minilm .cache/models/minilm --smollm .cache/models/smollm2

MiniLM must give unit vectors whose paraphrases are nearer than unrelated sentences, the
same batched or one by one; SmolLM2 must tokenize its prompt template, prefill and decode
with the KV cache in agreement with a full forward pass, and say something. It runs in
whichever interpreter has onnxruntime, numpy and tokenizers (tools/models.py picks it and
reads the JSON result this prints), so those are imported inside the checks.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from .models import ModelBuildError

SMOKE_SENTENCES = [
    "The user prefers dark mode in the editor.",
    "Please always use a dark theme for my IDE.",
    "The quarterly revenue grew by twelve percent.",
]
SMOKE_PROMPT = "Summarize in one sentence: The user asked to move the weekly meeting to Friday."


def smoke_minilm(folder: Path) -> dict:
    import numpy as np
    import onnxruntime as ort
    from tokenizers import Tokenizer

    cfg = json.loads((folder / "config.json").read_text())
    t0 = time.perf_counter()
    sess = ort.InferenceSession(str(folder / cfg["file"]), providers=["CPUExecutionProvider"])
    tok = Tokenizer.from_file(str(folder / cfg["tokenizer"]))
    tok.no_padding()
    tok.enable_truncation(cfg["max_length"])
    load_s = time.perf_counter() - t0
    names = [i.name for i in sess.get_inputs()], [o.name for o in sess.get_outputs()]
    want = [i["name"] for i in cfg["inputs"]], [o["name"] for o in cfg["outputs"]]
    if names != want:
        raise ModelBuildError(f"MiniLM input/output names {names} differ from config {want}")

    def embed(texts: list[str]) -> np.ndarray:
        enc = tok.encode_batch(texts)
        n = max(len(e.ids) for e in enc)
        ids = np.zeros((len(texts), n), np.int64)
        mask = np.zeros((len(texts), n), np.int64)
        for i, e in enumerate(enc):
            ids[i, : len(e.ids)] = e.ids
            mask[i, : len(e.ids)] = 1
        (hidden,) = sess.run(None, {"input_ids": ids, "attention_mask": mask,
                                    "token_type_ids": np.zeros_like(ids)})  # fmt: skip
        m = mask[:, :, None].astype(np.float32)
        pooled = (hidden * m).sum(1) / np.maximum(m.sum(1), 1e-9)
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)

    embed(SMOKE_SENTENCES[:1])  # warm-up
    t0 = time.perf_counter()
    one = embed(SMOKE_SENTENCES[:1])
    one_ms = (time.perf_counter() - t0) * 1000
    t0 = time.perf_counter()
    vecs = embed(SMOKE_SENTENCES)
    batch_ms = (time.perf_counter() - t0) * 1000
    norms = np.linalg.norm(vecs, axis=1)
    if vecs.shape != (len(SMOKE_SENTENCES), cfg["dims"]) or not np.allclose(norms, 1, atol=1e-4):
        raise ModelBuildError(f"MiniLM smoke check: shape {vecs.shape}, norms {norms}")
    if not np.allclose(one[0], vecs[0], atol=1e-4):
        raise ModelBuildError("MiniLM smoke check: batched and single embeddings differ")
    near, far = float(vecs[0] @ vecs[1]), float(vecs[0] @ vecs[2])
    if not near > far:
        raise ModelBuildError(f"MiniLM smoke check: paraphrase {near:.3f} <= unrelated {far:.3f}")
    return {
        "load_s": round(load_s, 3),
        "embed_1_ms": round(one_ms, 1),
        f"embed_{len(SMOKE_SENTENCES)}_ms": round(batch_ms, 1),
        "dims": int(vecs.shape[1]),
        "cos_paraphrase": round(near, 3),
        "cos_unrelated": round(far, 3),
    }


def smoke_smollm(folder: Path, max_new_tokens: int = 24) -> dict:
    import numpy as np
    import onnxruntime as ort
    from tokenizers import Tokenizer

    cfg = json.loads((folder / "config.json").read_text())
    gen = json.loads((folder / "generation.json").read_text())
    t0 = time.perf_counter()
    sess = ort.InferenceSession(str(folder / cfg["file"]), providers=["CPUExecutionProvider"])
    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    load_s = time.perf_counter() - t0
    names = [i.name for i in sess.get_inputs()], [o.name for o in sess.get_outputs()]
    want = [i["name"] for i in cfg["inputs"]], [o["name"] for o in cfg["outputs"]]
    if names != want:
        raise ModelBuildError(f"SmolLM2 input/output names {names} differ from config {want}")

    prompt = gen["prompt_template"].format(system=gen["default_system"], user=SMOKE_PROMPT)
    ids = tok.encode(prompt, add_special_tokens=False).ids
    if ids[0] != gen["im_start_id"] or ids.count(gen["im_start_id"]) != 3:
        raise ModelBuildError(f"SmolLM2 prompt tokenization is off: {ids[:8]}...")
    layers, kv, hd = cfg["num_layers"], cfg["num_key_value_heads"], cfg["head_dim"]
    empty = np.zeros((1, kv, 0, hd), np.float32)
    past = {
        cfg[f"past_{kind}_template"].format(layer=i): empty
        for i in range(layers)
        for kind in ("key", "value")
    }
    out_names = [o.name for o in sess.get_outputs()]

    def step(new: list[int], past: dict, pos: int):
        n = len(new)
        feeds = {
            "input_ids": np.array([new], np.int64),
            "attention_mask": np.ones((1, pos + n), np.int64),
            **past,
        }
        if cfg["uses_position_ids"]:
            feeds["position_ids"] = np.arange(pos, pos + n, dtype=np.int64)[None]
        res = dict(zip(out_names, sess.run(None, feeds), strict=True))
        present = {
            cfg[f"past_{kind}_template"].format(layer=i): res[
                cfg[f"present_{kind}_template"].format(layer=i)
            ]
            for i in range(layers)
            for kind in ("key", "value")
        }
        return res["logits"][0, -1], present

    t0 = time.perf_counter()
    chunk = gen.get("prefill_chunk_tokens") or len(ids)
    for start in range(0, len(ids), chunk):
        logits, past = step(ids[start : start + chunk], past, start)
    prefill_s = time.perf_counter() - t0
    if logits.shape != (cfg["vocab_size"],) or not np.isfinite(logits).all():
        raise ModelBuildError(f"SmolLM2 smoke check: bad logits {logits.shape}")
    generated: list[int] = []
    t0 = time.perf_counter()
    cached_logits = logits
    while len(generated) < max_new_tokens:
        cached_logits = logits
        nxt = int(np.argmax(logits))
        generated.append(nxt)
        if nxt in gen["stop_token_ids"]:
            break
        logits, past = step([nxt], past, len(ids) + len(generated) - 1)
    decode_s = time.perf_counter() - t0
    # The KV cache must agree with a full forward pass over the same tokens. Not exactly:
    # dynamic int8 quantizes each MatMul input with one scale over all the rows of a call,
    # so a one-token step and a many-token pass round differently (correlation ~0.93 here;
    # a missing cache gives ~0.3).
    if len(generated) >= 2:
        full_logits, _ = step(ids + generated[:-1], {k: empty for k in past}, 0)
        corr = float(np.corrcoef(full_logits, cached_logits)[0, 1])
        top5 = np.argsort(-full_logits)[:5]
        if corr < 0.8 or generated[-1] not in top5:
            raise ModelBuildError(
                f"SmolLM2 smoke check: cached and uncached decoding disagree (corr {corr:.3f})"
            )
    text = tok.decode([g for g in generated if g not in gen["stop_token_ids"]])
    if not text.strip():
        raise ModelBuildError("SmolLM2 smoke check: generated nothing")
    return {
        "load_s": round(load_s, 3),
        "prompt_tokens": len(ids),
        "prefill_ms": round(prefill_s * 1000, 1),
        "new_tokens": len(generated),
        "tokens_per_s": round(len(generated) / decode_s, 1),
        "text": text,
    }


def smoke_main(minilm: Path | None, smollm: Path | None) -> dict:
    result = {}
    if minilm:
        result["minilm"] = smoke_minilm(minilm)
    if smollm:
        result["smollm2"] = smoke_smollm(smollm)
    return result
