"""pymemory.testing.PageMemory against the demo page, as an app's own e2e test would."""

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from browserkit import watch_errors

from pymemory.testing import PageMemory, PageMemoryError


def test_seed_inspect_reset_through_the_demo_page(context, base_url):
    page = context.new_page()
    errors = watch_errors(page)
    page.goto(f"{base_url}/?db=e2e-app&models=0")
    memory = PageMemory(page, db_name="e2e-app")
    assert memory.wait_ready()["items"] == 0

    seeded = memory.seed(
        [
            {"text": "The user prefers metric units", "type": "user_preference"},
            "Booked a table for two at 7pm",
        ]
    )
    assert [m["type"] for m in seeded] == ["user_preference", "message"]
    # The app's own UI sees the seeded memories at once (same worker, change events).
    page.get_by_test_id("memory-item").nth(1).wait_for()
    assert page.get_by_test_id("memory-item").count() == 2

    # Drive the app: add through its form, then inspect from the test.
    page.get_by_test_id("add-text").fill("Remind me to water the plants on Sunday")
    page.get_by_test_id("add-submit").click()
    page.wait_for_function("document.querySelectorAll('[data-testid=memory-item]').length === 3")
    contents = [m["content"] for m in memory.list()]
    assert any("water the plants" in c for c in contents)
    found = memory.retrieve("metric units")
    assert found["memories"][0]["item"]["id"] == seeded[0]["id"]

    with pytest.raises(PageMemoryError) as err:
        memory._call("get", "no-such-id")
    assert err.value.code == "not_found"

    assert memory.reset() == 3
    assert memory.stats()["items"] == 0
    page.wait_for_function("document.querySelectorAll('[data-testid=memory-item]').length === 0")
    assert errors == []


# --- docs/testing.md (Playwright), run as an app would run it ---------------------------

TESTING_PAGE = Path(__file__).resolve().parents[2] / "docs" / "testing.md"


def readme_playwright_example() -> tuple[str, list[str]]:
    """The test file and the pytest command of docs/testing.md, verbatim."""
    section = TESTING_PAGE.read_text(encoding="utf-8")
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    (command,) = re.findall(r"^pytest .*$", section, re.M)
    return code, shlex.split(command)


def run_app_tests(folder: Path, args: list[str], **env: str) -> subprocess.CompletedProcess:
    """pytest in ``folder`` (outside the repository: its own rootdir, no repo conftest),
    with this venv's plugins as an app's venv would have them."""
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYMEMORY_CHROMIUM")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
        cwd=folder, env={**environ, **env}, capture_output=True, text=True, timeout=300,
    )


def test_readme_playwright_example_runs_through_the_plugin(base_url, tmp_path):
    code, command = readme_playwright_example()
    assert command[0] == "pytest" and "--chromium-path" in command
    (tmp_path / "test_app.py").write_text(code, encoding="utf-8")
    args = [base_url if a == "http://127.0.0.1:8000" else a for a in command[1:]]
    assert base_url in args, "the page's command should point at the demo server on port 8000"

    done = run_app_tests(tmp_path, args)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout

    # The environment variable instead of the option; then a browser that does not exist.
    args = [a for a in args if a not in ("--chromium-path", "/usr/bin/chromium")]
    done = run_app_tests(tmp_path, args, PYMEMORY_CHROMIUM="/usr/bin/chromium")
    assert done.returncode == 0, done.stdout + done.stderr
    done = run_app_tests(tmp_path, [*args, "--chromium-path", "/no/such/chromium"])
    assert done.returncode == 4  # a usage error, before any test runs
    assert "--chromium-path /no/such/chromium: no such executable" in done.stderr


def test_launch_args_extend_pytest_playwrights():
    from pymemory.testing import launch_args

    base = {"headless": False, "args": ["--lang=de"]}
    got = launch_args(base, "/usr/bin/chromium", ["--disable-gpu"], root=True)
    assert got == {
        "headless": False,
        "executable_path": "/usr/bin/chromium",
        "args": ["--lang=de", "--no-sandbox", "--disable-gpu"],
    }
    assert launch_args({}, "/usr/bin/chromium", [], root=False) == {
        "executable_path": "/usr/bin/chromium"
    }
    assert base == {"headless": False, "args": ["--lang=de"]}  # not modified


# --- PageMemory fails loudly instead of hanging ----------------------------------------


def test_page_memory_times_out_on_a_page_without_the_client(context, base_url):
    context.route(f"{base_url}/plain.html", lambda route: route.fulfill(
        content_type="text/html", body="<!doctype html><title>no pymemory here</title>"))  # fmt: skip
    page = context.new_page()
    page.goto(f"{base_url}/plain.html")
    memory = PageMemory(page, db_name="app", timeout_ms=1500)
    t0 = time.monotonic()
    with pytest.raises(PageMemoryError) as err:
        memory.stats()
    assert time.monotonic() - t0 < 6
    assert err.value.code == "no_client"
    assert "has not loaded pymemory's JS client" in str(err.value)
    assert "within 1.5 s" in str(err.value)


def test_page_memory_times_out_when_the_worker_never_loads(context, base_url):
    # The worker script's request never gets an answer: the page's client cannot boot.
    stalled = []
    context.route("**/worker/memory-worker.mjs", lambda route: stalled.append(route))
    page = context.new_page()
    errors = watch_errors(page)
    page.goto(f"{base_url}/?db=stuck&models=0")
    memory = PageMemory(page, db_name="stuck", timeout_ms=3000)
    t0 = time.monotonic()
    with pytest.raises(PageMemoryError) as err:
        memory.stats()
    assert time.monotonic() - t0 < 10
    assert stalled, "the worker was requested"
    # The client reports its own boot failure if it detects one first (boot_failed);
    # otherwise PageMemory's timeout names the call, the limit and the worker's status.
    if err.value.code == "timeout":
        message = str(err.value)
        assert "did not answer stats() within 3 s" in message
        assert "the worker's status is starting 0%" in message
    else:
        assert err.value.code == "boot_failed", err.value
    assert errors == []


def test_page_memory_checks_its_timeout():
    with pytest.raises(ValueError):
        PageMemory(object(), timeout_ms=0)
    with pytest.raises(TypeError):
        PageMemory(object(), timeout_ms="60")


def test_find_chromium_names_a_real_browser_or_says_why_not(monkeypatch):
    from pymemory.testing import find_chromium

    monkeypatch.delenv("PYMEMORY_CHROMIUM", raising=False)
    assert find_chromium(None) is None  # nothing asked: Playwright's own browser
    assert find_chromium("auto") == shutil.which("chromium")
    assert find_chromium("chromium") == shutil.which("chromium")
    monkeypatch.setenv("PYMEMORY_CHROMIUM", "/usr/bin/chromium")
    assert find_chromium(None) == "/usr/bin/chromium"
    with pytest.raises(ValueError, match="no such executable"):
        find_chromium("/no/such/chromium")
    monkeypatch.setenv("PATH", "/nowhere")
    with pytest.raises(ValueError, match="none of chromium"):
        find_chromium("auto")
