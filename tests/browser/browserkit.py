"""Shared helpers of the browser tests."""

import json
import shutil

import pytest

CHROMIUM_ARGS = [
    "--no-sandbox",  # tests run as root
    "--headless=new",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
BOOT_TIMEOUT_MS = 120_000


def chromium_path() -> str:
    path = shutil.which("chromium")
    if path is None:
        pytest.fail("Debian's Chromium is missing: apt-get install -y chromium", pytrace=False)
    return path


def watch_errors(page) -> list[str]:
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return errors


def js(page, body: str, *args):
    """Run an async JS body with `pm` (the client module) and `args` in scope."""
    return page.evaluate(
        f"async (args) => {{ const pm = window.pymemory; {body} }}", json.loads(json.dumps(args))
    )
