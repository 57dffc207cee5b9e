#!/usr/bin/env python3
"""The project's one task runner.

    python3 build.py demo     set up (venv + package) and run the Python demo
    python3 build.py test     set up and run lint + the whole test suite
    python3 build.py setup    only create/refresh the virtual environment
    python3 build.py bench    run the benchmark scripts

Uses only the standard library, so it runs on a fresh machine with plain python3.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / ("python.exe" if os.name == "nt" else "python")
STAMP = VENV / ".pymemory-setup"
EXTRAS = "test,bench"


def step(msg: str) -> None:
    print(f"==> {msg}", flush=True)


def run(*cmd: str | Path, **kw) -> None:
    result = subprocess.run([str(c) for c in cmd], cwd=ROOT, **kw)
    if result.returncode:
        sys.exit(result.returncode)


def setup() -> None:
    """Create .venv if needed and (re)install the package when pyproject.toml changed."""
    if not PY.exists():
        step(f"creating virtual environment in {VENV}")
        venv.EnvBuilder(with_pip=True, clear=True).create(VENV)
    want = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + EXTRAS.encode()).hexdigest()
    if STAMP.exists() and STAMP.read_text() == want:
        return
    step(f"installing pymemory[{EXTRAS}] (editable) into {VENV}")
    run(PY, "-m", "pip", "install", "--disable-pip-version-check", "-q", "--upgrade", "pip")
    run(PY, "-m", "pip", "install", "--disable-pip-version-check", "-q", "-e", f".[{EXTRAS}]")
    STAMP.write_text(want)


def cmd_test(args: argparse.Namespace) -> None:
    setup()
    step("ruff")
    run(PY, "-m", "ruff", "check", "pymemory", "tests", "benchmarks", "build.py")
    step("pytest")
    run(PY, "-m", "pytest", *args.pytest_args)


def cmd_demo(args: argparse.Namespace) -> None:
    setup()
    step("running examples/quickstart.py")
    run(PY, ROOT / "examples" / "quickstart.py")


def cmd_bench(args: argparse.Namespace) -> None:
    setup()
    for script in sorted((ROOT / "benchmarks").glob("bench_*.py")):
        step(f"running {script.name}")
        run(PY, script, *args.bench_args)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("setup", help="create/refresh .venv").set_defaults(fn=lambda a: setup())
    p = sub.add_parser("test", help="lint and run the test suite")
    p.add_argument("pytest_args", nargs=argparse.REMAINDER, help="extra pytest arguments")
    p.set_defaults(fn=cmd_test)
    sub.add_parser("demo", help="set up and run the demo").set_defaults(fn=cmd_demo)
    p = sub.add_parser("bench", help="run benchmarks/bench_*.py")
    p.add_argument("bench_args", nargs=argparse.REMAINDER)
    p.set_defaults(fn=cmd_bench)
    args = parser.parse_args()
    args.fn(args)


if __name__ == "__main__":
    main()
