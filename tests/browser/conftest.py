"""Browser tests: real Chromium (Debian's package), real Pyodide, real IndexedDB."""

import sys
from pathlib import Path

import pytest
from browserkit import BOOT_TIMEOUT_MS, CHROMIUM_ARGS, chromium_path, watch_errors

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tools import server  # noqa: E402
from tools.assets import WHEELS  # noqa: E402


@pytest.fixture(scope="session")
def base_url():
    if not (WHEELS / "manifest.json").exists():
        pytest.fail("browser assets missing: run python3 build.py setup", pytrace=False)
    srv = server.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()


@pytest.fixture(scope="session")
def playwright_instance():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="session")
def browser(playwright_instance):
    b = playwright_instance.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
    yield b
    b.close()


@pytest.fixture
def context(browser):
    ctx = browser.new_context()  # fresh profile: an empty IndexedDB per test
    ctx.set_default_timeout(BOOT_TIMEOUT_MS)
    yield ctx
    ctx.close()


@pytest.fixture
def harness(context, base_url):
    """A page with the client module loaded as window.pymemory."""
    page = context.new_page()
    page.errors = watch_errors(page)
    page.goto(f"{base_url}/web/pages/test/harness.html")
    page.wait_for_function("document.body.dataset.loaded === '1'")
    yield page
    assert page.errors == []
