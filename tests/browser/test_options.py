"""Every option of createAgentMemory / useAgentMemory is checked before anything starts
(issue 17): a value of the wrong type or range, or an unknown name (a typo such as
`presist`), throws a MemoryError with code invalid_input (invalid_strategy for `strategy`)
that names the option, and no worker, lock or IndexedDB database was created. Real
Chromium; the good values of every option boot a real store."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest
from browserkit import js

# [option, bad value as a JS expression, the code]
BAD = [
    ("dbName", "3", "invalid_input"),
    ("dbName", '""', "invalid_input"),
    ("dbName", '"x".repeat(129)', "invalid_input"),
    ("dbName", "null", "invalid_input"),
    ("scope", "5", "invalid_input"),
    ("scope", '"two words"', "invalid_input"),
    ("scope", "null", "invalid_input"),
    ("strategy", "5", "invalid_strategy"),
    ("strategy", '"recent-6"', "invalid_strategy"),
    ("tags", '"work"', "invalid_input"),
    ("tags", "[1]", "invalid_input"),
    ("custom", '"newest"', "invalid_input"),
    ("custom", "[]", "invalid_input"),
    ("models", '"embedder"', "invalid_input"),
    ("models", '["gpt-4"]', "invalid_input"),
    ("encryption", '"secret"', "invalid_input"),
    ("encryption", '{ passphrase: "" }', "invalid_input"),
    ("persist", '"yes"', "invalid_input"),
    ("persist", '"false"', "invalid_input"),
    ("persist", "1", "invalid_input"),
    ("persist", "null", "invalid_input"),
    ("modelWorker", '"false"', "invalid_input"),
    ("modelWorker", "0", "invalid_input"),
    ("modelWorker", "null", "invalid_input"),
    ("pyodideSnapshot", '"no"', "invalid_input"),
    ("pyodideSnapshot", "1", "invalid_input"),
    ("storageReserveBytes", "-1", "invalid_input"),
    ("storageReserveBytes", "1.5", "invalid_input"),
    ("storageReserveBytes", '"1024"', "invalid_input"),
    ("storageReserveBytes", "null", "invalid_input"),
    ("bootTimeoutMs", "0", "invalid_input"),
    ("bootTimeoutMs", '"30000"', "invalid_input"),
    ("bootTimeoutMs", "2 ** 31", "invalid_input"),  # setTimeout would fire at once
    ("bootTimeoutMs", "Infinity", "invalid_input"),
    ("tabs", '"all"', "invalid_input"),
    ("tabs", "true", "invalid_input"),
    ("ortThreads", "0", "invalid_input"),
    ("ortThreads", "1.5", "invalid_input"),
    ("ortThreads", '"2"', "invalid_input"),
    ("durability", '"fast"', "invalid_input"),
    ("durability", "true", "invalid_input"),
    ("feedbackFlushMs", "0", "invalid_input"),
    ("feedbackFlushMs", "NaN", "invalid_input"),
    ("feedbackFlushMs", '"500"', "invalid_input"),
    ("autoArchiveDays", "0", "invalid_input"),
    ("autoArchiveDays", '"7"', "invalid_input"),
    ("autoArchiveDays", "Infinity", "invalid_input"),
    ("assetsUrl", "5", "invalid_input"),
    ("workerUrl", "{}", "invalid_input"),
    ("wheelsUrl", "true", "invalid_input"),
    ("modelsUrl", "[]", "invalid_input"),
    ("pyodideUrl", "1", "invalid_input"),
    ("onnxruntimeUrl", "null", "invalid_input"),
    ("tiktokenUrl", "() => '/x/'", "invalid_input"),
    ("presist", "true", "invalid_input"),  # a typo is refused, not ignored
    ("dbname", '"x"', "invalid_input"),
]

# Whatever the page started: the store worker's script, the Web Lock its leader holds, the
# IndexedDB databases.
STARTED = """async () => ({
  workers: performance.getEntriesByType("resource").filter((e) => e.name.includes("memory-worker")).length,
  locks: (await navigator.locks.query()).held.length + (await navigator.locks.query()).pending.length,
  databases: (await indexedDB.databases()).map((d) => d.name),
})"""

NOTHING = {"workers": 0, "locks": 0, "databases": []}


def attempt(page, expression: str):
    """createAgentMemory(<expression>): "created", or the error's [name, code, message]."""
    return js(
        page,
        f"try {{ pm.createAgentMemory({expression}); return 'created'; }}"
        " catch (e) { return [e.name, e.code, e.message]; }",
    )


@pytest.mark.parametrize(("option", "value", "code"), BAD, ids=[f"{o}={v}" for o, v, _ in BAD])
def test_a_bad_option_throws_its_code_naming_it_and_starts_nothing(harness, option, value, code):
    got = attempt(harness, f'{{ dbName: "opts", {option}: {value} }}')
    assert got != "created", f"{option}: {value} was accepted"
    name, got_code, message = got
    assert (name, got_code) == ("MemoryError", code), got
    if option != "strategy":  # invalid_strategy messages name the strategy instead
        assert option in message, message
    assert harness.evaluate(STARTED) == NOTHING


def test_a_typo_names_the_option_it_probably_meant(harness):
    _, code, message = attempt(harness, "{ presist: true }")
    assert code == "invalid_input"
    assert 'unknown option "presist"' in message and "did you mean persist?" in message
    _, _, message = attempt(harness, "{ zzzzzz: 1 }")
    assert message == 'unknown option "zzzzzz"'  # nothing near it: no guess


@pytest.mark.parametrize("options", ["null", '"pymemory"', "[]", "42"])
def test_options_that_are_not_an_object_throw(harness, options):
    got = attempt(harness, options)
    assert got[:2] == ["MemoryError", "invalid_input"], got
    assert harness.evaluate(STARTED) == NOTHING


def test_the_store_options_limit_is_checked(harness):
    got = js(
        harness,
        """const out = [];
        for (const limit of [0, 1.5, "50", null, 100001]) {
          try { pm.checkStoreOptions({ limit }); out.push("accepted"); }
          catch (e) { out.push(e.code); }
        }
        try { pm.createMemoryStore({}, { limit: -1 }); out.push("accepted"); } catch (e) { out.push(e.code); }
        try { pm.createMemoryStore({}, { limt: 5 }); out.push("accepted"); } catch (e) { out.push(e.code); }
        pm.checkStoreOptions({ limit: 5 });
        pm.checkStoreOptions({});
        return out;""",
    )
    assert got == ["invalid_input"] * 7


HOOK_PAGE = """<!doctype html>
<html><head><meta charset="utf-8">
<script src="/vendor/react/react.development.js"></script>
<script src="/vendor/react-dom/react-dom.development.js"></script>
<script type="importmap">{ "imports": { "react": "/web/react-umd.mjs" } }</script>
</head><body><div id="root"></div>
<script type="module">
  import { useAgentMemory } from "/web/react.mjs";
  const e = React.createElement;
  const options = JSON.parse(new URLSearchParams(location.search).get("options"));
  class Catch extends React.Component {
    constructor(props) { super(props); this.state = { error: null }; }
    static getDerivedStateFromError(error) { return { error }; }
    render() {
      if (this.state.error) window.caught = [this.state.error.code, this.state.error.message];
      return this.state.error ? null : this.props.children;
    }
  }
  function Uses() { useAgentMemory(options); return null; }
  ReactDOM.createRoot(document.getElementById("root")).render(e(Catch, null, e(Uses)));
</script></body></html>"""


@pytest.mark.parametrize(
    "options",
    [{"dbName": "hook", "limit": 0}, {"dbName": "hook", "persist": "yes"}, {"presist": True}],
)
def test_the_hook_throws_into_the_error_boundary_and_starts_nothing(context, base_url, options):
    page = context.new_page()
    page.route(
        f"{base_url}/hook-options.html*",
        lambda route: route.fulfill(body=HOOK_PAGE, content_type="text/html"),
    )
    page.goto(f"{base_url}/hook-options.html?options={quote(json.dumps(options))}")
    page.wait_for_function("window.caught !== undefined")
    code, message = page.evaluate("window.caught")
    assert code == "invalid_input"
    assert next(k for k in options if k != "dbName") in message
    assert page.evaluate(STARTED) == NOTHING


# Every option at a good value other than its default (undefined: the default).
GOOD = """{
  dbName: "opts-good", scope: "user", strategy: "recent-5", tags: ["a"], custom: null,
  models: [], encryption: null, persist: false, modelWorker: false, pyodideSnapshot: false, storageReserveBytes: 12345,
  bootTimeoutMs: 300000, tabs: "own", ortThreads: 1, durability: "relaxed",
  feedbackFlushMs: 500, autoArchiveDays: 3650, workerUrl: pm.resolveAssets().workerUrl,
  assetsUrl: undefined,
}"""


def test_good_values_of_every_option_open_a_store_and_reach_the_worker(harness):
    got = js(
        harness,
        f"""const m = pm.createAgentMemory({GOOD});
        const status = await m.ready;
        const item = await m.addMemory("the deploy window is Friday");
        // A client with a bad option on the same database: refused, nothing written.
        let refused = null;
        try {{ pm.createAgentMemory({{ dbName: "opts-good", durability: "sometimes" }}); }}
        catch (e) {{ refused = e.code; }}
        // The page's connection is shared: another value of one of its options is refused
        // (not silently ignored); the same value, or none, joins it.
        let conflict = null;
        try {{ pm.createAgentMemory({{ dbName: "other", durability: "strict" }}); }}
        catch (e) {{ conflict = [e.code, e.message]; }}
        pm.createAgentMemory({{ dbName: "other", durability: "relaxed", tabs: "own" }});
        pm.createAgentMemory({{ dbName: "other" }});
        const items = await m.list({{ scope: null }});
        return {{ reserve: status.storage.reserve, snapshot: status.snapshot, scope: item.scope, refused, conflict,
                 ids: items.map((x) => x.id), id: item.id }};""",
    )
    assert got["conflict"][0] == "invalid_input" and "durability" in got["conflict"][1]
    assert got["reserve"] == 12345  # storageReserveBytes reached the worker
    assert got["snapshot"] == "off"  # and pyodideSnapshot
    assert got["scope"] == "user"
    assert got["refused"] == "invalid_input"
    assert got["ids"] == [got["id"]]
