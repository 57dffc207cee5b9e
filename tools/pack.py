"""Assemble the npm package and pack it: ``dist/pymemory-<version>.tgz``.

The package holds the client, the React hook, their type declarations, the worker and its
bridges, and ``wheels/`` (the pymemory wheel and Pyodide's numpy wheel, with their
manifest). Pyodide, onnxruntime-web and js-tiktoken are npm dependencies, not copies; the
models are not in it (``pymemory models fetch`` or ``build.py setup`` builds them, and the
app serves them at ``modelsUrl``). Everything is built from the cache that ``build.py
setup`` fills; nothing here downloads.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from .assets import WHEELS, AssetError

ROOT = Path(__file__).resolve().parent.parent
DIST = ROOT / "dist"
STAGE = DIST / "npm" / "package"
WEB_FILES = ("agent-memory.mjs", "agent-memory.d.ts", "connection.mjs", "errors.mjs",
             "react.mjs", "react.d.ts", "react-umd.mjs", "sw.mjs")  # fmt: skip


def stage() -> Path:
    """Lay the package out in dist/npm/package (replacing what was there)."""
    manifest = json.loads((ROOT / "web" / "package.json").read_text())
    shutil.rmtree(STAGE, ignore_errors=True)
    (STAGE / "worker").mkdir(parents=True)
    (STAGE / "wheels").mkdir()
    for name in WEB_FILES:
        shutil.copy2(ROOT / "web" / name, STAGE / name)
    for script in sorted((ROOT / "worker").glob("*.mjs")):
        shutil.copy2(script, STAGE / "worker" / script.name)
    wheels = json.loads((WHEELS / "manifest.json").read_text())
    for key in ("pymemory", "numpy"):
        if key not in wheels:
            raise AssetError(f"{WHEELS / 'manifest.json'} names no {key} wheel: run build.py setup")
        shutil.copy2(WHEELS / wheels[key], STAGE / "wheels" / wheels[key])
    shutil.copy2(WHEELS / "manifest.json", STAGE / "wheels" / "manifest.json")
    shutil.copy2(ROOT / "web" / "README.npm.md", STAGE / "README.md")
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
