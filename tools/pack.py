"""Assemble the npm package and pack it: ``dist/pymemory-<version>.tgz``.

The package is ``web/`` as it is in the repository (the files its package.json lists: the
client and its modules, the React hook, their type declarations, ``worker/``: the worker
and its bridges; never ``pages/`` or the ``*.test.mjs`` unit tests) plus ``wheels/`` (the
pymemory wheel and Pyodide's numpy wheel, with their manifest, and the o200k_base
ranks). Pyodide, onnxruntime-web and js-tiktoken are npm dependencies, not copies; the
models are not in it (``pymemory models fetch`` or ``build.py setup`` builds them, and the
app serves them at ``modelsUrl``). Everything is built from the cache that ``build.py
setup`` fills; nothing here downloads.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

from .assets import WHEELS, AssetError
from .tokenizer_assets import O200K_TIKTOKEN_SHA256

RANKS_NAME = "o200k_base.tiktoken"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()

ROOT = Path(__file__).resolve().parent.parent
DIST = ROOT / "dist"
STAGE = DIST / "npm" / "package"
WEB = ROOT / "web"
# Laid out by stage() itself, not copied from web/.
BUILT = ("wheels/", "README.md")


def package_files() -> list[str]:
    """The files of web/ the package ships, relative to web/: what package.json's ``files``
    lists (a folder: its .mjs modules), without the unit tests (``*.test.mjs``)."""
    manifest = json.loads((WEB / "package.json").read_text())
    out: list[str] = []
    for entry in manifest["files"]:
        if entry in BUILT or entry.startswith("!"):
            continue
        if entry.endswith("/"):
            out += [f"{entry}{p.name}" for p in sorted((WEB / entry).glob("*.mjs"))]
        else:
            out.append(entry)
    return [name for name in out if not name.endswith(".test.mjs")]


def stage() -> Path:
    """Lay the package out in dist/npm/package (replacing what was there)."""
    manifest = json.loads((WEB / "package.json").read_text())
    shutil.rmtree(STAGE, ignore_errors=True)
    STAGE.mkdir(parents=True)
    (STAGE / "wheels").mkdir()
    for name in package_files():
        (STAGE / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(WEB / name, STAGE / name)
    wheels = json.loads((WHEELS / "manifest.json").read_text())
    for key in ("pymemory", "numpy"):
        if key not in wheels:
            raise AssetError(f"{WHEELS / 'manifest.json'} names no {key} wheel: run build.py setup")
        shutil.copy2(WHEELS / wheels[key], STAGE / "wheels" / wheels[key])
    # The o200k_base ranks as data (tiktoken's own file, the wheel's copy), named with their
    # sha256 in the manifest: the worker fetches and checks these bytes, which no bundler
    # or dev server rewrites (js-tiktoken's ranks are a JS module, which they do).
    ranks = ROOT / "pymemory" / "models" / "tokenizers" / RANKS_NAME
    if not ranks.is_file() or _sha256(ranks) != O200K_TIKTOKEN_SHA256:
        raise AssetError(
            f"{ranks} is missing or not the pinned o200k_base ranks: run build.py setup"
        )
    shutil.copy2(ranks, STAGE / "wheels" / RANKS_NAME)
    wheels.update(o200k_base=RANKS_NAME, o200k_base_sha256=O200K_TIKTOKEN_SHA256)
    (STAGE / "wheels" / "manifest.json").write_text(json.dumps(wheels, indent=2))
    bins = manifest.get("bin", {})
    for script in bins.values():
        (STAGE / script).chmod(0o755)
    shutil.copy2(WEB / "README.npm.md", STAGE / "README.md")
    (STAGE / "package.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return STAGE


def pack() -> Path:
    """Stage and ``npm pack`` the package into dist/; returns the tarball."""
    npm = shutil.which("npm")
    if npm is None:
        raise AssetError("npm is needed to pack the package (apt-get install -y npm)")
    staged = stage()
    manifest = json.loads((staged / "package.json").read_text())
    tarball = DIST / f"{manifest['name']}-{manifest['version']}.tgz"
    tarball.unlink(missing_ok=True)
    subprocess.run(
        [npm, "pack", str(staged), "--pack-destination", str(DIST), "--silent"],
        check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    if not tarball.exists():
        raise AssetError(f"npm pack did not write {tarball}")
    return tarball
