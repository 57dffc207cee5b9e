"""useAgentMemory's client lifecycle in Chromium with React 18 (issue 36): the first render
starts nothing and shows "starting"; hooks with the same options share one client, which
starts after mount and is closed when the last of them unmounts; StrictMode's double mount
starts one client and one worker."""

from __future__ import annotations

PAGE = """<!doctype html>
<html><head><meta charset="utf-8">
<script src="/vendor/react/react.development.js"></script>
<script src="/vendor/react-dom/react-dom.development.js"></script>
<script type="importmap">{ "imports": { "react": "/web/react-umd.mjs" } }</script>
</head><body><div id="root"></div>
<script type="module">
  import { useAgentMemory } from "/web/react.mjs";
  const e = React.createElement;
  const OPTIONS = { dbName: "lifecycle", scope: "user" };
  window.firstRenders = [];
  window.clients = new Set();
  function Uses({ name }) {
    const m = useAgentMemory(OPTIONS);
    if (window.firstRenders.length < 2) {
      window.firstRenders.push({ phase: m.status.phase, client: m.client, memories: m.memories.length,
                                 workers: performance.getEntriesByType("resource")
                                   .filter((r) => r.name.endsWith("memory-worker.mjs")).length });
    }
    if (m.client) window.clients.add(m.client);
    return e("p", { "data-name": name }, m.status.phase);
  }
  function App({ show }) {
    return e(React.StrictMode, null, show.map((name) => e(Uses, { key: name, name })));
  }
  const root = ReactDOM.createRoot(document.getElementById("root"));
  window.show = (names) => root.render(e(App, { show: names }));
  window.show(["a", "b"]);
</script></body></html>"""


def test_one_client_per_options_started_after_mount_and_closed_after_the_last_unmount(
    context, base_url
):
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.route(
        f"{base_url}/hook-lifecycle.html",
        lambda route: route.fulfill(body=PAGE, content_type="text/html"),
    )
    page.goto(f"{base_url}/hook-lifecycle.html")
    page.wait_for_function(
        "[...document.querySelectorAll('p')].every((p) => p.textContent === 'ready')"
    )
    first = page.evaluate("window.firstRenders")
    assert first == [{"phase": "starting", "client": None, "memories": 0, "workers": 0}] * 2
    # two hooks, StrictMode's mount-unmount-mount: one client, one worker
    assert page.evaluate("window.clients.size") == 1
    assert len([w for w in page.workers if w.url.endswith("/memory-worker.mjs")]) == 1

    page.evaluate("window.show(['a'])")  # one of two users unmounts: the client stays open
    page.wait_for_timeout(100)
    assert page.evaluate(
        "async () => (await [...window.clients][0].addMemory('The user likes green tea.')).content"
    )
    page.evaluate("window.show([])")  # the last user unmounts: the client is closed
    code = page.evaluate(
        """async () => {
             await new Promise((r) => setTimeout(r, 50));
             try { await [...window.clients][0].addMemory("after close"); return "open"; }
             catch (e) { return e.code; }
           }"""
    )
    assert code == "closed"
    page.evaluate("window.show(['c'])")  # mounting again starts a new client on the same worker
    page.wait_for_function("document.querySelector('p[data-name=c]')?.textContent === 'ready'")
    assert page.evaluate("window.clients.size") == 2
    assert len([w for w in page.workers if w.url.endswith("/memory-worker.mjs")]) == 1
    assert errors == []
