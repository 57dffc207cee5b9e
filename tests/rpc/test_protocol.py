"""The JS side's lists against the Python API they talk to, so that there is one list of
the JSON API's methods: ``web/protocol.mjs`` (what the client and the worker import) has
exactly the methods the Python ``RpcApi`` serves, the ``.d.ts`` declares a client member
for every method the client exposes, and ``web/presets.mjs``'s strategy builders give
the values Python's ``pymemory.retrieval.strategies`` builders give.

The JS modules are imported by Node (``node`` on PATH, as ``build.py test`` needs for the
JS unit tests); the ``.d.ts`` is read as text.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pymemory.retrieval import strategies as py

try:  # the runtime-free JSON API's package (pymemory.browser.api before it moved there)
    import pymemory.browser.rpc as rpc
    from pymemory.browser.rpc import RpcApi
except ImportError:  # pragma: no cover - the layout before the move
    import pymemory.browser.api as rpc  # type: ignore[no-redef]
    from pymemory.browser.api import RpcApi  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[2]
WEB = ROOT / "web"
DTS = (WEB / "agent-memory.d.ts").read_text(encoding="utf-8")


def node_json(script: str) -> object:
    """Run an ES module ``script`` in Node from web/ and parse what it prints as JSON."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is needed for the JS protocol checks (apt-get install -y nodejs)")
    done = subprocess.run(
        [node, "--input-type=module", "-e", script], cwd=WEB, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def protocol() -> dict:
    return node_json(
        """
        const p = await import("./protocol.mjs");
        console.log(JSON.stringify({ methods: p.METHODS, worker: p.WORKER_METHODS,
                                     mutations: [...p.MUTATIONS], open: p.OPEN }));
        """
    )


def agent_rpc_class() -> type:
    agent = getattr(rpc, "AgentRpc", None)
    if agent is None:  # the layout before the move
        from pymemory.browser.agent_api import AgentRpc as agent  # type: ignore[no-redef]
    return agent


def python_methods() -> set[str]:
    """Every method name the Python API serves: RpcApi's ``_m_<name>`` and the agent
    primitives' ``_a_<area>_<name>`` (served as ``<area>.<name>``)."""
    core = {n.removeprefix("_m_") for n in dir(RpcApi) if n.startswith("_m_")}
    agent = {
        n.removeprefix("_a_").replace("_", ".", 1)
        for n in dir(agent_rpc_class())
        if n.startswith("_a_")
    }
    return core | agent


def test_the_js_protocol_lists_exactly_the_python_apis_methods(protocol):
    js = set(protocol["methods"])
    py_methods = python_methods()
    assert js - py_methods == set(), "in web/protocol.mjs but not served by Python"
    assert py_methods - js == set(), "served by Python but missing from web/protocol.mjs"
    assert protocol["open"] in js
    # The worker's own methods never reach Python, and must not shadow one that does.
    assert not set(protocol["worker"]) & py_methods


def test_the_js_mutations_are_the_python_tables(protocol):
    mutations = set(protocol["mutations"])
    assert mutations <= set(protocol["methods"])
    assert mutations == {n for n, m in protocol["methods"].items() if m["mutates"]}
    py_mutations = getattr(rpc, "MUTATIONS", None)
    if py_mutations is not None:  # the Python API's own table of methods
        assert mutations == set(py_mutations)
    else:  # pragma: no cover - before it had one
        assert mutations >= {"addMemory", "update", "delete", "clear"}


def interface(name: str) -> str:
    """The body of ``export interface <name> { ... }`` in the .d.ts."""
    match = re.search(rf"^export interface {name}\b[^{{]*\{{\n(.*?)^\}}", DTS, re.S | re.M)
    assert match, f"no interface {name} in web/agent-memory.d.ts"
    return match.group(1)


def members(body: str) -> dict[str, str]:
    """Top-level members of an interface body: name -> the rest of its line."""
    found = {}
    for line in body.splitlines():
        m = re.match(r"^  (?:readonly )?(\w+)\??\s*([(<:].*)$", line)
        if m:
            found.setdefault(m.group(1), m.group(2))
    return found


def test_the_dts_declares_every_client_method(protocol):
    client = members(interface("AgentMemory"))
    missing = []
    for name, method in protocol["methods"].items():
        path = method["client"]
        if path is None:
            continue
        area, _, member = path.rpartition(".")
        if not area:
            ok = client.get(member, "").startswith(("(", "<"))
        else:
            kind = re.match(r":\s*(\w+);", client.get(area, ""))
            ok = bool(kind) and members(interface(kind.group(1))).get(member, "").startswith(
                ("(", "<")
            )
        if not ok:
            missing.append(f"{name} (client.{path})")
    assert not missing, f"web/agent-memory.d.ts lacks {missing}"


def test_the_client_has_exactly_the_protocols_members_and_its_own(protocol):
    """createAgentMemory()'s functions: one per method the protocol gives a client member,
    and the client's own (which call none, or one under another name)."""
    got = node_json(
        """
        const { createAgentMemory } = await import("./agent-memory.mjs");
        const client = createAgentMemory({ tabs: "own" }); // no Worker in Node: ready rejects
        client.ready.catch(() => {});
        client.modelsReady.catch(() => {});
        const paths = [];
        for (const [name, value] of Object.entries(client)) {
          if (typeof value === "function") paths.push(name);
          else if (value && typeof value === "object" && !("then" in value) && name !== "status"
                   && name !== "listing" && name !== "strategy") {
            for (const [inner, fn] of Object.entries(value)) if (typeof fn === "function") paths.push(`${name}.${inner}`);
          }
        }
        console.log(JSON.stringify(paths));
        """
    )
    exposed = {m["client"] for m in protocol["methods"].values() if m["client"]}
    own = {"onStatus", "subscribe", "debug", "close"}
    assert set(got) == exposed | own


# --- strategies: the JS builders give Python's values ------------------------------------------

# (JS builder call, the same strategy built in Python)
CASES = [
    ("timeWindow({ hours: 24 })", lambda: py.time_window(24)),
    (
        "timeWindow({ sinceMs: 1000, untilMs: 2000 })",
        lambda: py.time_window(since_ms=1000, until_ms=2000),
    ),
    ('byTag("a")', lambda: py.by_tag("a")),
    ('byTag(["a", "b"], { match: "all" })', lambda: py.by_tag("a", "b", match="all")),
    ('byType("message", "tool_result")', lambda: py.by_type("message", "tool_result")),
    ('byType(["user_preference"])', lambda: py.by_type(["user_preference"])),
    ('byScope("user", "conversation")', lambda: py.by_scope("user", "conversation")),
    ("timeDecay()", lambda: py.time_decay()),
    ("timeDecay({ halfLifeHours: 48 })", lambda: py.time_decay(48)),
    ("timeDecay({ floor: 0.3 })", lambda: py.time_decay(floor=0.3)),
    (
        "timeDecay({ halfLifeHours: 12, floor: 0.2, queryWindow: 1 })",
        lambda: py.time_decay(12, floor=0.2, query_window=1),
    ),
    (
        "timeDecay({ byType: { tool_result: { halfLifeHours: 6 }, message: { floor: 0.9 } } })",
        lambda: py.time_decay(
            by_type={"tool_result": {"half_life_hours": 6}, "message": {"floor": 0.9}}
        ),
    ),
    ("feedbackWeight()", lambda: py.feedback_weight()),
    (
        "feedbackWeight({ liked: 1.5, important: 3 })",
        lambda: py.feedback_weight(liked=1.5, important=3),
    ),
    ("fusion()", lambda: py.fusion()),
    (
        'fusion({ method: "rrf", k: 30, depth: 50 })',
        lambda: py.fusion(method="rrf", k=30, depth=50),
    ),
    (
        "fusion({ lexical: 0.5, dense: 0.5, power: 1, context: [0.5] })",
        lambda: py.fusion(lexical=0.5, dense=0.5, power=1, context=[0.5]),
    ),
    ("relevanceFloor()", lambda: py.relevance_floor()),
    (
        "relevanceFloor({ minDense: 0.3, minLexical: 0.1 })",
        lambda: py.relevance_floor(min_dense=0.3, min_lexical=0.1),
    ),
    ('compose(byTag("a"), fusion())', lambda: py.compose(py.by_tag("a"), py.fusion())),
    (
        'compose([byScope("user"), timeDecay()])',
        lambda: py.compose([py.by_scope("user"), py.time_decay()]),
    ),
]


@pytest.fixture(scope="module")
def js_strategies() -> dict:
    calls = ", ".join(f"[{json.dumps(call)}, s.{call}]" for call, _ in CASES)
    return node_json(
        f"""
        const {{ strategies: s, PRESETS, resolveStrategy }} = await import("./presets.mjs");
        const {{ byTag, byScope, fusion, timeDecay }} = s;
        const built = Object.fromEntries([{calls}]);
        console.log(JSON.stringify({{
          built, builders: Object.keys(s), presets: PRESETS,
          byTagPreset: resolveStrategy("by-tag", {{ tags: ["x", "y"] }}).strategy,
        }}));
        """
    )


@pytest.mark.parametrize("call", [c for c, _ in CASES])
def test_a_js_strategy_builder_gives_pythons_strategy(js_strategies, call):
    build = dict(CASES)[call]
    parsed = py.from_dict(js_strategies["built"][call])  # what the worker's Python reads
    assert py.to_dict(parsed) == py.to_dict(build())


def test_every_python_strategy_kind_has_a_js_builder(js_strategies):
    kinds = {
        f.default
        for cls in vars(py).values()
        if isinstance(cls, type) and dataclasses.is_dataclass(cls)
        for f in dataclasses.fields(cls)
        if f.name == "kind"
    }
    camel = {re.sub(r"_(\w)", lambda m: m.group(1).upper(), k) for k in kinds}
    assert set(js_strategies["builders"]) == camel
    assert {py.to_dict(build())["kind"] for _, build in CASES} == kinds  # each one compared


def test_the_presets_are_the_dts_presets_and_by_tag_is_pythons_by_tag(js_strategies):
    union = re.search(r"export type StrategyPreset = ([^;]+);", DTS).group(1)
    assert js_strategies["presets"] == re.findall(r'"([^"]+)"', union)
    by_tag = py.from_dict(js_strategies["byTagPreset"])
    assert py.to_dict(by_tag) == py.to_dict(py.by_tag("x", "y"))
