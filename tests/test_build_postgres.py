"""`python3 build.py postgres` (a throwaway PostgreSQL for trying the server store) stops
its server and removes its temporary folder on SIGTERM, as it does on Ctrl-C (SIGINT)."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    return not (status.exists() and "\nState:\tZ" in status.read_text())


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_postgres_and_removes_its_folder(sig):
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "build.py"), "postgres", "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
    )  # fmt: skip
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if line.startswith("DSN (unix socket)"):
                break
        text = "".join(lines)
        found = re.search(r"PostgreSQL in (\S+) \(log", text)
        assert found, text
        root = Path(found.group(1))
        pid = int((root / "data" / "postmaster.pid").read_text().split()[0])
        assert alive(pid)
        proc.send_signal(sig)
        assert proc.wait(60) in (0, 1), text + proc.stdout.read()
        deadline = time.monotonic() + 30
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not alive(pid), "PostgreSQL still runs"
        assert not root.exists(), f"{root} was left behind"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
