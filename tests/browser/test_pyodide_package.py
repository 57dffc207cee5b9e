"""pymemory as a Pyodide package: a plain page that runs its own Pyodide (as PyScript,
JupyterLite or any app does) installs the wheel with micropip, or a worker of its own with
``loadPackage``, and uses ``pymemory.Memory`` over IndexedDB from Python. No pymemory worker
and no pymemory JS: the page's folder has only Pyodide, its numpy/micropip wheels and the
pymemory wheel, served by a plain static file server; the IndexedDB bridge comes out of the
wheel. Real Chromium, real IndexedDB, and the data survives a reload."""

from __future__ import annotations

import asyncio
import json
import textwrap
from concurrent.futures import ThreadPoolExecutor

import pytest
from browserkit import BOOT_TIMEOUT_MS, watch_errors

from pymemory import Memory
from tools.app_site import WORKER_PAGE, serve_app, wheel_name
from tools.assets import WHEELS

PAGE = """<!doctype html>
<meta charset="utf-8">
<title>my notebook</title>
<script type="module">
  import { loadPyodide } from "./pyodide/pyodide.mjs";
  const pyodide = await loadPyodide({ indexURL: new URL("./pyodide/", location.href).href });
  await pyodide.loadPackage("micropip");
  await pyodide.runPythonAsync(`
import micropip
await micropip.install("${new URL("./WHEEL", location.href).href}")
`);
  window.pyodide = pyodide;
  document.body.dataset.ready = "1";
</script>
"""

# What the page's Python does; each snippet's last expression is the JSON it reports.
WRITE = """
import json
from pymemory.browser.pyodide import open_memory

memory = await open_memory("{db}")
await memory.add("Hi! From now on I prefer answers as tables, not bullet lists.",
                 type="user_preference", scope="user")
await memory.add("We agreed the permissions module goes live next Tuesday.", tags=["meeting"])
r = await memory.retrieve("when does the permissions module go live?")
stats = await memory.stats()
await memory.close()
json.dumps({{"items": stats["items"], "counter": stats["token_counter"], "tokens": r.tokens_used,
            "top": r.items[0].content, "text": r.text}})
"""
READ = """
import json
from pymemory.browser.pyodide import open_memory

memory = await open_memory("{db}")
r = await memory.retrieve("answer format preference")
items = await memory.list(scope=None)
await memory.close()
json.dumps({{"contents": sorted(m.content for m in items), "top": r.items[0].content}})
"""
CONTENTS = [
    "From now on I prefer answers as tables, not bullet lists.",
    "We agreed the permissions module goes live next Tuesday.",
]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A folder like an app's: Pyodide (+ numpy, micropip), the wheel, two pages."""
    if not (WHEELS / "manifest.json").exists():
        pytest.fail("browser assets missing: run python3 build.py setup", pytrace=False)
    root = tmp_path_factory.mktemp("plain-site")
    server, base = serve_app(root, {"index.html": PAGE, "worker.html": WORKER_PAGE})
    yield base, wheel_name()
    server.shutdown()


def python_on_page(page, code: str) -> dict:
    return json.loads(page.evaluate("(code) => window.pyodide.runPythonAsync(code)", code))


def python_in_worker(page, code: str) -> dict:
    answer = page.evaluate("(code) => window.python(code)", code)
    assert answer["ok"], answer.get("error")
    return json.loads(answer["result"])


def open_page(context, url: str, requests: list[str]):
    page = context.new_page()
    page.on("request", lambda r: requests.append(r.url))
    page.errors = watch_errors(page)
    page.goto(url)
    return page


async def cpython_reference() -> dict:
    """The same writes and query in CPython, for the token count."""
    async with await Memory.open(None) as memory:
        await memory.add(
            "Hi! From now on I prefer answers as tables, not bullet lists.",
            type="user_preference",
            scope="user",
        )
        await memory.add(
            "We agreed the permissions module goes live next Tuesday.", tags=["meeting"]
        )
        r = await memory.retrieve("when does the permissions module go live?")
        return {"tokens": r.tokens_used, "text": r.text}


def test_a_plain_pyodide_page_micropip_installs_the_wheel_and_keeps_memories(
    context, site
):
    base, wheel = site
    requests: list[str] = []
    page = open_page(context, f"{base}/index.html", requests)
    page.wait_for_function("document.body.dataset.ready === '1'", timeout=BOOT_TIMEOUT_MS)

    wrote = python_on_page(page, WRITE.format(db="my-notes"))
    assert wrote["items"] == 2
    assert wrote["top"] == CONTENTS[1]
    # Exact o200k_base counts from the ranks inside the wheel (pure Python in Pyodide),
    # equal to CPython's.
    assert wrote["counter"] == "o200k_base"
    # (in a thread of its own: Playwright's sync API keeps an event loop in this one)
    with ThreadPoolExecutor(1) as pool:
        reference = pool.submit(asyncio.run, cpython_reference()).result()
    assert (wrote["tokens"], wrote["text"]) == (reference["tokens"], reference["text"])

    page.reload()
    page.wait_for_function("document.body.dataset.ready === '1'", timeout=BOOT_TIMEOUT_MS)
    read = python_on_page(page, READ.format(db="my-notes"))
    assert read["contents"] == CONTENTS
    assert read["top"] == CONTENTS[0]

    # Nothing but Pyodide, its packages and the wheel was fetched: no pymemory JS.
    fetched = {u.removeprefix(base + "/") for u in requests if u.startswith(base)}
    assert f"{wheel}" in fetched
    others = {u for u in fetched if not u.startswith("pyodide/")} - {"index.html", wheel}
    assert others == set(), others
    assert page.errors == []


def test_a_pages_own_pyodide_worker_loads_the_wheel_and_shares_the_store(context, site):
    base, _ = site
    requests: list[str] = []
    # The main-thread page writes first ...
    page = open_page(context, f"{base}/index.html", requests)
    page.wait_for_function("document.body.dataset.ready === '1'", timeout=BOOT_TIMEOUT_MS)
    python_on_page(page, WRITE.format(db="shared-notes"))
    page.close()

    # ... then a worker of the app's own, with loadPackage instead of micropip, reads the
    # same IndexedDB database, writes its own, and after a reload reads that back.
    page = open_page(context, f"{base}/worker.html", requests)
    read = python_in_worker(page, READ.format(db="shared-notes"))
    assert read["contents"] == CONTENTS
    wrote = python_in_worker(page, WRITE.format(db="worker-notes"))
    assert (wrote["items"], wrote["counter"]) == (2, "o200k_base")
    page.reload()
    read = python_in_worker(page, READ.format(db="worker-notes"))
    assert read["contents"] == CONTENTS
    assert page.errors == []


def test_open_memory_rejects_bad_arguments_with_typed_errors(context, site):
    base, _ = site
    page = open_page(context, f"{base}/index.html", [])
    page.wait_for_function("document.body.dataset.ready === '1'", timeout=BOOT_TIMEOUT_MS)
    code = textwrap.dedent(
        """
        import json
        from pymemory import ValidationError
        from pymemory.browser.pyodide import IndexedDbKv, open_memory

        caught = []
        for name, durability in (("", "strict"), ("ok", "eventually")):
            try:
                await open_memory(name, durability=durability)
            except ValidationError as exc:
                caught.append(type(exc).__name__)
        kv = await IndexedDbKv.open("closing")
        await kv.close()
        try:
            await kv.get("mem:1")
        except Exception as exc:
            caught.append(type(exc).__name__)
        json.dumps(caught)
        """
    )
    caught = json.loads(page.evaluate("(code) => window.pyodide.runPythonAsync(code)", code))
    assert caught == ["ValidationError", "ValidationError", "StoreClosedError"]
