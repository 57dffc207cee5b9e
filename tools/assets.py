"""Fetch pinned third-party assets with the ordinary clients (npm, pip), verify their
sha256 against assets.lock.json, and cache them under .cache/. Idempotent: a second
run only re-checks what is already cached."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "assets.lock.json"
CACHE = ROOT / ".cache"
DOWNLOADS = CACHE / "downloads"
VENDOR = CACHE / "vendor"
WHEELS = CACHE / "wheels"
MODELS = CACHE / "models"  # built by tools/models.py; served at /models/
ORT_WEB = VENDOR / "onnxruntime-web"  # npm onnxruntime-web: ort.wasm.min.mjs + its WASM


class AssetError(RuntimeError):
    pass


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def verify(path: Path, expected: str) -> None:
    got = sha256(path)
    if got != expected:
        path.unlink()
        raise AssetError(f"{path.name}: sha256 {got} does not match the pin {expected}; deleted")


def npm_tarball(name: str, version: str) -> str:
    """The file name ``npm pack`` gives a package: ``@scope/name`` packs as ``scope-name``."""
    return f"{name.removeprefix('@').replace('/', '-')}-{version}.tgz"


def fetch_npm(spec: dict) -> Path:
    """Pack, verify and extract one npm asset into .cache/vendor/<dest or name>. Files are
    flattened into that folder, unless the spec names a ``root``: then ``files`` are paths
    under that folder of the package and keep their subfolders (an ESM build whose modules
    import each other by relative path)."""
    name, version = spec["name"], spec["version"]
    tgz = DOWNLOADS / npm_tarball(name, version)
    if not tgz.exists():
        npm = shutil.which("npm")
        if npm is None:
            raise AssetError("npm is needed to fetch JS assets (apt-get install -y npm)")
        print(f"    npm pack {name}@{version}", flush=True)
        DOWNLOADS.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [npm, "pack", f"{name}@{version}", "--pack-destination", str(DOWNLOADS), "--silent"],
            check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
    verify(tgz, spec["sha256"])
    dest = VENDOR / spec.get("dest", name)
    dest.mkdir(parents=True, exist_ok=True)
    root = spec.get("root")
    with tarfile.open(tgz) as tar:
        for rel in spec["files"]:
            out = dest / (rel if root else Path(rel).name)
            if not out.resolve().is_relative_to(dest.resolve()):
                raise AssetError(f"{name}@{version}: {rel} leaves {dest}")
            if not out.exists():
                out.parent.mkdir(parents=True, exist_ok=True)
                member = tar.extractfile(f"package/{root}/{rel}" if root else f"package/{rel}")
                if member is None:
                    raise AssetError(f"{name}@{version} has no {rel}")
                out.write_bytes(member.read())
    return dest


def fetch_pypi(spec: dict, python: str) -> Path:
    whl = DOWNLOADS / spec["filename"]
    if not whl.exists():
        print(f"    pip download {spec['name']}=={spec['version']} (large)", flush=True)
        DOWNLOADS.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [python, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
             "--disable-pip-version-check", "-d", str(DOWNLOADS),
             f"{spec['name']}=={spec['version']}"],
            check=True,
        )  # fmt: skip
    verify(whl, spec["sha256"])
    dest = VENDOR / spec["dest"]
    dest.mkdir(parents=True, exist_ok=True)
    lock = json.loads((VENDOR / spec["verify_with"]).read_text())
    by_file = {p["file_name"]: p["sha256"] for p in lock["packages"].values()}
    with zipfile.ZipFile(whl) as zf:
        for member in spec["extract"]:
            out = dest / Path(member).name
            if not out.exists():
                out.write_bytes(zf.read(member))
            if out.name not in by_file:
                raise AssetError(f"{out.name} is not listed in {spec['verify_with']}")
            verify(out, by_file[out.name])
    return dest


# The distribution is `pymemory-agent` (PyPI's `pymemory` is an unrelated project); the
# import name and the manifest key the worker reads stay `pymemory`.
WHEEL_GLOB = "pymemory_agent-*.whl"
# What an installed wheel needs beyond the modules: the eval suites, the model pins, the
# IndexedDB and WebCrypto bridges Pyodide imports, and the o200k_base ranks (generated,
# git-ignored).
WHEEL_DATA = (
    "pymemory/evals/data/multi_turn_memory.jsonl",
    "pymemory/evals/data/long_context_recall.jsonl",
    "pymemory/evals/summaries_dev.jsonl",
    "pymemory/models/manifest.json",
    "pymemory/models/tokenizers/o200k_base.tiktoken",
    "pymemory/browser/idb_kv.mjs",
    "pymemory/browser/webcrypto.mjs",
)


def build_wheel(python: str, dest: Path = WHEELS) -> Path:
    """Build the pymemory wheel into ``dest`` (.cache/wheels) and write manifest.json beside
    it. The o200k_base ranks are fetched into the package first; the wheel is checked to
    contain every file of WHEEL_DATA, the ranks byte for byte."""
    from .tokenizer_assets import O200K_TIKTOKEN_SHA256, fetch_o200k_ranks

    fetch_o200k_ranks()
    # setuptools reuses build/lib: a file deleted from the source would stay in the wheel.
    shutil.rmtree(ROOT / "build", ignore_errors=True)
    dest.mkdir(parents=True, exist_ok=True)
    for old in [*dest.glob(WHEEL_GLOB), *dest.glob("pymemory-*.whl")]:
        old.unlink()
    subprocess.run(
        [python, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "--disable-pip-version-check", "-w", str(dest), str(ROOT)],
        check=True,
    )  # fmt: skip
    (wheel,) = dest.glob(WHEEL_GLOB)
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        missing = [n for n in WHEEL_DATA if n not in names]
        if missing:
            wheel.unlink()
            raise AssetError(f"the wheel lacks {missing}: check [tool.setuptools.package-data]")
        ranks = hashlib.sha256(zf.read("pymemory/models/tokenizers/o200k_base.tiktoken"))
        if ranks.hexdigest() != O200K_TIKTOKEN_SHA256:
            wheel.unlink()
            raise AssetError("the o200k_base ranks in the wheel are not the pinned file")
    manifest = {"pymemory": wheel.name, "sha256": sha256(wheel)}
    # Pyodide's numpy wheel beside ours, so the worker loads both by URL from one folder
    # (the npm package has no numpy next to Pyodide's core).
    for numpy in (VENDOR / "pyodide").glob("numpy-*.whl"):
        shutil.copy2(numpy, dest / numpy.name)
        manifest.update(numpy=numpy.name, numpy_sha256=sha256(numpy))
    (dest / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return wheel


def fetch_all(python: str = sys.executable) -> None:
    lock = json.loads(LOCK.read_text())
    for spec in lock["npm"]:
        fetch_npm(spec)
    for spec in lock["pypi"]:
        fetch_pypi(spec, python)
