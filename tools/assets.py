"""Fetch pinned third-party assets with the ordinary clients (npm, pip), verify their
sha256 against assets.lock.json, and cache them under .cache/. Idempotent: a second
run only re-checks what is already cached."""

from __future__ import annotations

import hashlib
import json
import os
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
    "pymemory/browser/pyodide/idb_kv.mjs",
    "pymemory/browser/pyodide/webcrypto.mjs",
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
        # Fixed zip timestamps (bdist_wheel honours it): the same sources give the same bytes.
        env={"SOURCE_DATE_EPOCH": "315532800", **os.environ},
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
    # Pyodide's numpy wheel beside ours, so the worker loads both by URL from one folder
    # (the npm package has no numpy next to Pyodide's core).
    numpys = [shutil.copy2(n, dest / n.name) for n in (VENDOR / "pyodide").glob("numpy-*.whl")]
    # Both wheels ship .py only: without bytecode Pyodide compiles every module on each
    # first visit (~0.6 s). Add pycs compiled by Pyodide's own CPython (same names).
    precompile_wheels([wheel, *map(Path, numpys)])
    manifest = {"pymemory": wheel.name, "sha256": sha256(wheel)}
    for numpy in map(Path, numpys):
        manifest.update(numpy=numpy.name, numpy_sha256=sha256(numpy))
    (dest / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return wheel


PYODIDE = VENDOR / "pyodide"
PRECOMPILE = ROOT / "tools" / "precompile.mjs"
PYC_DATE = (1980, 1, 1, 0, 0, 0)  # fixed zip timestamps: same wheel in, same bytes out


def _installed_module(name: str) -> bool:
    """A .py member a wheel installs into site-packages (not metadata, not .data)."""
    top = name.split("/", 1)[0]
    return name.endswith(".py") and not top.endswith((".dist-info", ".data"))


def precompile_wheels(wheels: list[Path]) -> None:
    """Add ``__pycache__/*.cpython-312.pyc`` (unchecked-hash, so used whatever the source
    mtime) for every module of each wheel, compiled under Node by the vendored Pyodide's
    own CPython (tools/precompile.mjs), and list them in the wheel's RECORD. The wheels
    are rewritten in place under the same names; every other entry keeps its bytes and
    its RECORD line. Fails with AssetError: no silent fallback to .py-only wheels."""
    import tempfile

    node = shutil.which("node")
    if not node:
        raise AssetError("node (Node.js >= 18) is needed to precompile the wheels for Pyodide")
    if not (PYODIDE / "pyodide.mjs").exists():
        raise AssetError(f"no Pyodide in {PYODIDE}: run build.py setup (fetches the assets)")
    with tempfile.TemporaryDirectory(prefix="pymemory-pyc-") as tmp:
        src, out = Path(tmp) / "src", Path(tmp) / "out"
        for i, wheel in enumerate(wheels):
            with zipfile.ZipFile(wheel) as zf:
                if any(n.endswith(".pyc") for n in zf.namelist()):
                    raise AssetError(f"{wheel.name} already holds .pyc files")
                for name in filter(_installed_module, zf.namelist()):
                    target = src / str(i) / name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(zf.read(name))
        try:
            done = subprocess.run(
                [node, str(PRECOMPILE), str(PYODIDE), str(src), str(out)],
                capture_output=True, text=True, timeout=300,
            )  # fmt: skip
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise AssetError(f"precompiling the wheels under Node failed: {exc}") from exc
        if done.returncode:
            raise AssetError(
                f"precompiling the wheels under Node failed ({done.returncode}):\n"
                f"{done.stderr[-4000:]}"
            )
        info = json.loads(done.stdout.strip().splitlines()[-1])
        for i, wheel in enumerate(wheels):
            _add_pycs(wheel, out / str(i), info["cache_tag"], bytes.fromhex(info["magic"]))


def _add_pycs(wheel: Path, pycs: Path, cache_tag: str, magic: bytes) -> None:
    import base64

    with zipfile.ZipFile(wheel) as zf:
        infos = zf.infolist()
        entries = [(i, zf.read(i)) for i in infos]
    added = []
    for info in infos:
        if not _installed_module(info.filename):
            continue
        folder, _, stem = info.filename.rpartition("/")
        name = f"{folder}/__pycache__/{stem[:-3]}.{cache_tag}.pyc".lstrip("/")
        path = pycs / name
        if not path.is_file():
            raise AssetError(f"{wheel.name}: no bytecode was compiled for {info.filename}")
        data = path.read_bytes()
        # Header: the magic of Pyodide's CPython, flags 0b01 (hash-based, unchecked).
        if data[:4] != magic or int.from_bytes(data[4:8], "little") != 1:
            raise AssetError(f"{wheel.name}: {name} is not an unchecked-hash pyc")
        added.append((name, data))
    records = [i for i, _ in entries if i.filename.endswith(".dist-info/RECORD")]
    if len(records) != 1:
        raise AssetError(f"{wheel.name} has {len(records)} RECORD files")
    (record,) = records
    text = dict(entries)[record].decode()
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += newline
    own = next((k for k, line in enumerate(lines) if line.startswith(f"{record.filename},")),
               len(lines))  # fmt: skip
    for name, data in added:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        lines.insert(own, f"{name},sha256={digest},{len(data)}{newline}")
        own += 1
    first_meta = next(
        (k for k, (i, _) in enumerate(entries) if i.filename.split("/", 1)[0].endswith(
            (".dist-info", ".data"))),
        len(entries),
    )  # fmt: skip
    new_entries = []
    for name, data in added:
        info = zipfile.ZipInfo(name, date_time=PYC_DATE)
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = 0o100644 << 16
        new_entries.append((info, data))
    entries[first_meta:first_meta] = new_entries
    pyc_names = {name for name, _ in added}
    tmp = wheel.with_name(wheel.name + ".tmp")
    with zipfile.ZipFile(tmp, "w") as zf:
        for info, data in entries:
            if info is record:
                data = "".join(lines).encode()
            zf.writestr(info, data, compresslevel=9 if info.filename in pyc_names else None)
    tmp.replace(wheel)


def fetch_all(python: str = sys.executable) -> None:
    lock = json.loads(LOCK.read_text())
    for spec in lock["npm"]:
        fetch_npm(spec)
    for spec in lock["pypi"]:
        fetch_pypi(spec, python)
