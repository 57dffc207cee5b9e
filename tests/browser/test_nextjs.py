"""Next.js from the packed tarball, as docs/bundlers.md says to set it up, and the agent
framework adapters (pymemory/ai, pymemory/langchain) with the real npm packages.

One app outside this repository (a temporary folder) with Next.js, React, `ai`,
`@langchain/core` and TypeScript pinned in tests/browser/apps/next/package-lock.json
(installed with `npm ci`, cached under .cache/bundler-apps/next-<the lock's hash>/ like
test_bundlers.py's apps) and pymemory from `build.py pack`'s tarball. Its pages: `/`, the
client component of docs/bundlers.md's Next.js section (nothing else special: no config, no
`dynamic(..., { ssr: false })`); `/agent`, docs/browser.md's AI SDK example driven with the
SDK's own MockLanguageModelV4; `/langchain`, docs/browser.md's LangChain.js example. The
app is built once (`next build`) and served with `next start`; `next dev` runs the same app
once. Each check reads the server's log and the browser's console for errors (a hydration
mismatch is a console error).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import tarfile
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from test_npm_package import npm, readme_block

from tools import pack

TEMPLATE = Path(__file__).parent / "apps" / "next"
CACHE = pack.ROOT / ".cache" / "bundler-apps"
BUNDLERS_PAGE = pack.ROOT / "docs/bundlers.md"
BROWSER_PAGE = pack.ROOT / "docs/browser.md"
FRAMEWORKS = "## The Vercel AI SDK and LangChain.js"
COPIED = ["app", "typecheck", "next.config.mjs", "package.json", "package-lock.json"]
ENV = {**os.environ, "NEXT_TELEMETRY_DISABLED": "1", "NO_COLOR": "1", "FORCE_COLOR": "0"}
# What a clean server log never has: Next.js marks errors with ⨯; the failures were
# `MemoryError ... Worker is not defined` and `unhandledRejection`.
SERVER_ERRORS = re.compile(r"error|⨯|unhandled|Worker is not defined|MemoryError", re.IGNORECASE)
FACT = "The user's favourite colour is teal."


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cached_node_modules() -> Path:
    """`npm ci` of the Next.js app's lock, once per lock (keyed by its sha256)."""
    lock = (TEMPLATE / "package-lock.json").read_bytes()
    folder = CACHE / f"next-{hashlib.sha256(lock).hexdigest()[:16]}"
    if not (folder / "node_modules" / ".package-lock.json").exists():
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        for name in ("package.json", "package-lock.json"):
            shutil.copy(TEMPLATE / name, folder / name)
        npm("ci", "--no-audit", "--no-fund", "--loglevel=error", cwd=folder)
    return folder / "node_modules"


def run(cmd: list[str], cwd: Path, timeout: int = 600) -> str:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=ENV)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    return out


class Server:
    """`next start` or `next dev` on a free port, its output collected."""

    def __init__(self, root: Path, mode: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log: list[str] = []
        self.proc = subprocess.Popen(
            ["node", "node_modules/next/dist/bin/next", mode, "-H", "127.0.0.1", "-p", str(self.port)],
            cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=ENV,
        )  # fmt: skip
        threading.Thread(target=lambda: self.log.extend(self.proc.stdout), daemon=True).start()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            assert self.proc.poll() is None, "".join(self.log)
            time.sleep(0.2)
        pytest.fail(f"next {mode} did not start: {''.join(self.log)}")

    def errors(self) -> list[str]:
        return [line for line in self.log if SERVER_ERRORS.search(line)]

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="module")
def app_root(tmp_path_factory):
    """The app's folder: the lock's node_modules (hard links of the cache) with the packed
    pymemory in it, the app's files, docs' examples as its modules, the assets copied as
    docs/bundlers.md says."""
    tarball = pack.pack()
    modules = cached_node_modules()
    root = tmp_path_factory.mktemp("next-app")
    assert not root.resolve().is_relative_to(pack.ROOT)
    subprocess.run(["cp", "-al", str(modules), str(root / "node_modules")], check=True)
    with tarfile.open(tarball) as tar:
        tar.extractall(root / "node_modules", filter="data")
    (root / "node_modules" / "package").rename(root / "node_modules" / "pymemory")
    for name in COPIED:
        src = TEMPLATE / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, root / name)
    (root / "app" / "memory-panel.jsx").write_text(
        readme_block("## Next.js", "jsx", page=BUNDLERS_PAGE)
    )
    (root / "app" / "agent" / "converse.js").write_text(
        readme_block(FRAMEWORKS, "js", 0, page=BROWSER_PAGE)
    )
    (root / "app" / "langchain" / "tour.js").write_text(
        readme_block(FRAMEWORKS, "js", 1, page=BROWSER_PAGE)
    )
    run(["node", "node_modules/pymemory/bin/pymemory-assets.mjs", "public"], root)
    shutil.copy(root / "node_modules" / "pymemory" / "sw.mjs", root / "public" / "pymemory-sw.mjs")
    return root


@pytest.fixture(scope="module")
def built(app_root):
    """`next build`; its output must show no error (the issue's build logged boot_failed)."""
    out = run(["node", "node_modules/next/dist/bin/next", "build"], app_root)
    assert not SERVER_ERRORS.search(out), out[-4000:]
    return app_root


@pytest.fixture(scope="module")
def started(built):
    server = Server(built, "start")
    yield server
    server.stop()


def watch(page) -> list[str]:
    """The page's errors: uncaught exceptions and console errors (React reports a hydration
    mismatch there)."""
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(f"pageerror: {exc}"))
    page.on(
        "console", lambda m: problems.append(f"console: {m.text}") if m.type == "error" else None
    )
    return problems


def wait_ready(page) -> None:
    page.wait_for_function(
        "['ready', 'error'].includes(document.getElementById('status')?.textContent) ||"
        " document.getElementById('status')?.textContent.startsWith('Memory unavailable')",
        timeout=180_000,
    )
    assert page.inner_text("#status") == "ready"


def memory_workers(page) -> list[str]:
    return [w.url for w in page.workers if w.url.endswith("/memory-worker.mjs")]


def wait_offline_cache(page) -> None:
    """Until the service worker (sw.mjs, registered by registerOffline) cached this page."""
    page.wait_for_function(
        """async () => {
             const cache = await caches.open("pymemory-offline-v1");
             return (await cache.keys()).length > 10 && !!(await cache.match(location.href));
           }""",
        timeout=60_000,
        polling=250,
    )


def server_html(url: str) -> str:
    with urllib.request.urlopen(url, timeout=60) as response:
        return response.read().decode()


def test_server_rendering_shows_starting_and_the_browser_hydrates_it_unchanged(started, context):
    # The HTML `next start` serves (prerendered by `next build`): the hook's status there...
    html = server_html(f"{started.url}/")
    assert '<p id="status">starting</p>' in html, html[-2000:]
    assert "Memory unavailable" not in html
    # ...is what the first client render shows: React hydrates it without a mismatch (a
    # mismatch is a console error), and then the client starts.
    page = context.new_page()
    problems = watch(page)
    page.goto(f"{started.url}/")
    wait_ready(page)
    assert problems == []
    assert started.errors() == []


def test_next_build_and_start_boot_add_retrieve_reload_and_offline(started, context):
    """docs/bundlers.md's Next.js steps: boots, adds, retrieves, reloads, and the second visit
    works with the network off; no server error, no browser error, one store worker."""
    from pymemory.testing import PageMemory

    page = context.new_page()
    problems = watch(page)
    page.goto(f"{started.url}/")
    wait_ready(page)
    memory = PageMemory(page, db_name="app")  # the app's own connection
    memory.seed([FACT], scope="user")
    page.wait_for_selector('li:has-text("teal")')  # the hook listed the add
    assert "teal" in memory.retrieve("what colour does the user like?")["text"]
    assert len(memory_workers(page)) == 1
    wait_offline_cache(page)

    page.reload()
    wait_ready(page)
    page.wait_for_selector('li:has-text("teal")')

    context.set_offline(True)
    try:
        page.reload()
        wait_ready(page)
        page.wait_for_selector('li:has-text("teal")')
        assert (
            "teal"
            in PageMemory(page, db_name="app").retrieve("what colour does the user like?")["text"]
        )
    finally:
        context.set_offline(False)
    assert problems == []
    assert started.errors() == []


def test_ai_sdk_agent_stores_a_fact_and_answers_from_memory_in_the_next_conversation(
    started, context
):
    """docs/browser.md's `converse`: generateText with memoryTools and memoryMiddleware."""
    page = context.new_page()
    problems = watch(page)
    page.goto(f"{started.url}/agent")
    wait_ready(page)
    page.wait_for_function("window.converse !== undefined")
    first = page.evaluate(
        "window.converse('Remember: my sister is called Priya and lives in Lisbon.')"
    )
    assert first["text"] == "Saved to memory."
    # the model called the memory_kv tool (a tool() whose execute is callTool) and read its result
    tool_results = [
        part
        for prompt in first["prompts"]
        for m in prompt
        if m["role"] == "tool"
        for part in m["content"]
    ]
    assert tool_results and tool_results[0]["toolName"] == "memory_kv"
    assert "Saved memory 'user-fact'" in json.dumps(tool_results[0]["output"])

    page.reload()  # the next conversation: a new page, a new generateText, nothing carried over
    wait_ready(page)
    page.wait_for_function("window.converse !== undefined")
    second = page.evaluate("window.converse('What is my sister called?')")
    (prompt,) = second["prompts"]
    assert (
        prompt[0]["role"] == "system" and "Priya" in prompt[0]["content"]
    )  # the middleware's retrieval
    assert "Priya" in second["text"] and second["text"].startswith("From memory:")
    # the tool's write is in the store too, and the exchanges were stored by the middleware
    stored = page.evaluate(
        """async () => {
             const kv = await window.__pymemory.open("next-agent", { assetsUrl: "/pymemory/" })
               .callTool("memory_kv", { operation: "read", key: "user-fact" });
             const items = await window.__pymemory.open("next-agent", { assetsUrl: "/pymemory/" })
               .list({ scope: null });
             return { kv: kv.content, texts: items.map((i) => i.text) };
           }"""
    )
    assert "Priya" in stored["kv"]
    # streamText through the same middleware: retrieval in, the streamed exchange stored
    streamed = page.evaluate(
        "window.streamOnce('Where does my sister live?', ['She lives ', 'in ', 'Lisbon.'])"
    )
    assert streamed["text"] == "She lives in Lisbon."
    assert "Priya" in streamed["prompts"][0][0]["content"]
    page.wait_for_function(
        """async () => (await window.__pymemory.open("next-agent", { assetsUrl: "/pymemory/" })
             .list({ scope: null })).some((i) => i.text.includes("Assistant: She lives in Lisbon."))"""
    )
    assert any(
        t.startswith("User: What is my sister called?") and "Priya" in t for t in stored["texts"]
    )
    assert problems == []
    assert started.errors() == []


def test_langchain_store_keeps_the_store_contract_and_the_retriever_returns_documents(
    started, context
):
    """LangChain.js's store contract (the BaseStore methods as its docs describe them: mset,
    then mget in order with undefined for a missing key, yieldKeys with and without a prefix,
    mdelete, bytes for a ByteStore) and docs/browser.md's example."""
    page = context.new_page()
    problems = watch(page)
    page.goto(f"{started.url}/langchain")
    wait_ready(page)
    page.wait_for_function("window.langchain !== undefined")
    checks = page.evaluate(
        """async () => {
             const { client, PyMemoryStore, PyMemoryRetriever, BaseStore, BaseRetriever, Document } = window.langchain;
             const store = new PyMemoryStore(client, { namespace: "contract" });
             const keys = async (prefix) => { const out = []; for await (const k of store.yieldKeys(prefix)) out.push(k); return out.sort(); };
             const bytes = new TextEncoder().encode("embedding bytes \\u00e9");
             await store.mset([["key1", "value1"], ["key2", { nested: [1, 2, null] }], ["other", bytes]]);
             const got = await store.mget(["key2", "missing", "key1", "other"]);
             const all = await keys();
             const prefixed = await keys("key");
             await store.mdelete(["key1", "missing"]);
             const afterDelete = await store.mget(["key1", "key2"]);
             const left = await keys();
             let refused = null;
             try { await store.mset([["bad", () => 1]]); } catch (e) { refused = e.code; }
             const separate = await new PyMemoryStore(client, { namespace: "elsewhere" }).mget(["key2"]);
             const retriever = new PyMemoryRetriever({ memory: client, maxItems: 2 });
             await client.addMemory("The user's dog is a beagle named Rex.");
             const docs = await retriever.invoke("what dog does the user have?");
             return {
               isStore: store instanceof BaseStore, isRetriever: retriever instanceof BaseRetriever,
               got: [got[0], got[1] === undefined, got[2], new TextDecoder().decode(got[3]), got[3] instanceof Uint8Array],
               all, prefixed, afterDelete: [afterDelete[0] === undefined, afterDelete[1]], left, refused,
               separate: separate[0] === undefined,
               docs: docs.map((d) => ({ isDocument: d instanceof Document, text: d.pageContent, meta: d.metadata })),
               tour: await window.langchain.langchainTour(client),
             };
           }"""
    )
    assert checks["isStore"] and checks["isRetriever"]
    assert checks["got"] == [
        {"nested": [1, 2, None]},
        True,
        "value1",
        "embedding bytes \u00e9",
        True,
    ]
    assert checks["all"] == ["key1", "key2", "other"]
    assert checks["prefixed"] == ["key1", "key2"]
    assert checks["afterDelete"] == [True, {"nested": [1, 2, None]}]
    assert checks["left"] == ["key2", "other"]
    assert checks["refused"] == "invalid_input"
    assert checks["separate"] is True
    assert checks["docs"] and all(d["isDocument"] for d in checks["docs"])
    assert "beagle" in checks["docs"][0]["text"]
    assert checks["docs"][0]["meta"]["type"] == "message" and checks["docs"][0]["meta"]["score"] > 0
    tour = checks["tour"]
    assert tour["theme"] == {"dark": True} and tour["missing"] is None and tour["keys"] == ["theme"]
    assert "peanuts" in tour["first"]
    assert problems == []
    assert started.errors() == []


def test_next_dev_server_logs_no_error_and_strict_mode_starts_one_worker(built, context):
    """`next dev` (React's StrictMode on: effects mount, unmount and mount again): the page
    boots, adds, retrieves and reloads; one store worker; no server or browser error."""
    from pymemory.testing import PageMemory

    server = Server(built, "dev")
    try:
        page = context.new_page()
        problems = watch(page)
        page.goto(f"{server.url}/", timeout=300_000)
        wait_ready(page)
        assert len(memory_workers(page)) == 1
        memory = PageMemory(page, db_name="app")
        memory.seed([FACT], scope="user")
        page.wait_for_selector('li:has-text("teal")')
        assert "teal" in memory.retrieve("what colour does the user like?")["text"]
        page.reload()
        wait_ready(page)
        page.wait_for_selector('li:has-text("teal")')
        assert len(memory_workers(page)) == 1
        assert problems == []
        assert server.errors() == []
    finally:
        server.stop()


def test_the_hook_in_server_rendering_starts_no_worker_and_no_timer(app_root):
    """React's own server renderer in Node over useAgentMemory: the status is "starting",
    and no Worker and no timer was created."""
    probe = app_root / "ssr-probe.mjs"
    probe.write_text(
        """
let workers = 0, timers = 0;
globalThis.Worker = class { constructor() { workers += 1; } };
const realSetTimeout = globalThis.setTimeout, realSetInterval = globalThis.setInterval;
globalThis.setTimeout = (...a) => { timers += 1; return realSetTimeout(...a); };
globalThis.setInterval = (...a) => { timers += 1; return realSetInterval(...a); };
const { createElement } = await import("react");
const { renderToString } = await import("react-dom/server");
const { useAgentMemory } = await import("pymemory/react");
function Probe() {
  const m = useAgentMemory({ dbName: "ssr", assetsUrl: "/pymemory/" });
  return createElement("p", null, JSON.stringify({ status: m.status, memories: m.memories, client: m.client, loaded: m.loaded }));
}
const html = renderToString(createElement(Probe));
globalThis.setTimeout = realSetTimeout; globalThis.setInterval = realSetInterval;
console.log(JSON.stringify({ html, workers, timers }));
"""
    )
    out = json.loads(run(["node", str(probe)], app_root).strip().splitlines()[-1])
    assert out["workers"] == 0 and out["timers"] == 0
    shown = json.loads(re.sub(r"^<p>|</p>$", "", out["html"]).replace("&quot;", '"'))
    assert shown == {
        "status": {"phase": "starting", "progress": 0, "ready": False, "error": None},
        "memories": [], "client": None, "loaded": False,
    }  # fmt: skip


def test_every_subpath_export_type_checks_with_tsc_strict(app_root):
    """`tsc --strict` over a file importing pymemory, pymemory/react, pymemory/offline,
    pymemory/ai and pymemory/langchain (with the frameworks' own types, skipLibCheck off)."""
    tsc = ["node", "node_modules/typescript/bin/tsc", "-p", "typecheck"]
    run(tsc, app_root)
    wrong = app_root / "typecheck" / "wrong.ts"
    wrong.write_text(
        'import { registerOffline } from "pymemory/offline";\n'
        'import { PyMemoryStore } from "pymemory/langchain";\n'
        "registerOffline(42);\n"
        "new PyMemoryStore(null);\n"
    )
    config = app_root / "typecheck" / "tsconfig.json"
    original = config.read_text()
    config.write_text(original.replace('"files": ["all.ts"]', '"files": ["all.ts", "wrong.ts"]'))
    try:
        done = subprocess.run(tsc, cwd=app_root, capture_output=True, text=True, timeout=300)
    finally:
        config.write_text(original)
        wrong.unlink()
    assert done.returncode != 0
    assert "wrong.ts(3," in done.stdout and "wrong.ts(4," in done.stdout, done.stdout[-2000:]


def test_the_lock_pins_next_react_the_frameworks_and_typescript():
    lock = json.loads((TEMPLATE / "package-lock.json").read_text())
    wanted = json.loads((TEMPLATE / "package.json").read_text())["devDependencies"]
    for name, version in wanted.items():
        assert lock["packages"][f"node_modules/{name}"]["version"] == version
