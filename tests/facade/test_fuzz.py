"""Fuzzing the public surface: the Python API (``Memory``) and the worker's JSON API
(``RpcApi.call``, what the JS client sends), with generated calls, most of them bad.

Every call must give a typed error (a PymemoryError; on the JSON API an answer with a
documented code, never ``internal``) or a valid result; after a failed call the export
(and every other record of the store) is byte-identical; and whatever a call did, the
store stays usable (``retrieve("")``, ``list()`` and ``stats()`` still answer). The case
count is printed at the end of the run (tests/conftest.py).
"""

from __future__ import annotations

import asyncio
import json
import math
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pymemory import Memory, PymemoryError
from pymemory.browser.rpc import RpcApi, item_js, retrieval_js
from pymemory.item import MEMORY_TYPES, ArchivedItem, MemoryItem
from pymemory.memory import ImportResult
from pymemory.retrieval.results import Retrieval
from pymemory.storage import MapKv

CASES: Counter[str] = Counter()
MIN_CASES = 10_000
FUZZ = settings(
    max_examples=1500,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,  # a fixed budget of fresh cases each run
)
DOCUMENTED_CODES = {
    line.strip().split('"')[1]
    for line in Path(__file__)
    .resolve()
    .parents[2]
    .joinpath("web/errors.mjs")
    .read_text()
    .split("export const ERROR_CODES = Object.freeze([")[1]
    .split("]);")[0]
    .splitlines()
    if line.strip().startswith('"')
}

# --- the store every case starts from -----------------------------------------------

SEED_IDS = [str(uuid.UUID(int=i + 1, version=4)) for i in range(6)]
ARCHIVED_ID = str(uuid.UUID(int=99, version=4))
NOW = 1_790_000_000_000
DAY = 86_400_000


def _seed_records() -> list[tuple[str, bytes]]:
    async def build() -> list[tuple[str, bytes]]:
        kv = MapKv()
        memory = await Memory.open(kv, clock=lambda: NOW)
        lines = ['{"format":"pymemory-export","version":1}']
        for n, item_id in enumerate(SEED_IDS):
            item = MemoryItem(
                id=item_id,
                type=MEMORY_TYPES[n % len(MEMORY_TYPES)],
                timestamp=NOW - n * 10 * DAY,
                content=f"seed {n}: the CSV export runs every Monday",
                text=f"seed {n}: the CSV export of the sales report runs every Monday at 9",
                metadata={"source": "seed"},
                scope=["global", "user", "conversation", "conversation:42"][n % 4],
                tags=("csv", f"t{n}") if n % 2 else ("report",),
                ttl_ms=None if n != 5 else DAY,
            )
            lines.append(json.dumps({"kind": "memory", "item": item.to_dict()}))
        archived = ArchivedItem(ARCHIVED_ID, "message", NOW - 90 * DAY, "an archived note")
        lines.append(json.dumps({"kind": "archived", "item": archived.to_dict()}))
        await memory.import_("\n".join(lines))
        await memory.close()
        return await kv.scan("")

    return asyncio.run(build())


SEED = _seed_records()


def seeded_kv() -> MapKv:
    kv = MapKv()
    kv._data = dict(SEED)  # a copy of the seeded store, without re-running the seeding
    kv._keys = [k for k, _ in SEED]
    return kv


def clock() -> int:
    return NOW


# --- values: plausible ones and hostile ones ------------------------------------------


def deep(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


def deep_text(depth: int) -> str:
    """JSON nested ``depth`` deep, as text (too deep for json.dumps to build)."""
    return '{"k":' * depth + "1" + "}" * depth


def deep_compose_text(depth: int) -> str:
    head = '{"kind": "compose", "strategies": [' * depth
    return head + '{"kind": "by_tag", "tags": ["csv"]}' + "]}" * depth


def deep_compose(depth: int) -> dict:
    strategy: dict = {"kind": "by_tag", "tags": ["csv"]}
    for _ in range(depth):
        strategy = {"kind": "compose", "strategies": [strategy]}
    return strategy


HOSTILE = [
    None, True, False, 0, -1, 2**53, 10**400, -(10**400), 253_402_300_800_000, 2**63,
    1.5, -0.0, 1e303, 1e308, math.nan, math.inf, -math.inf,
    "", " ", "\ud800", "a\x00b", "x" * 201, "x" * 100_001, "🙂", "bad scope", "chat", "nope",
    [], [1], ["a"] * 40, ("t",), {}, {"a": 1}, {"kind": "nope"}, deep(200), deep(30),
    deep_compose(40), b"bytes", bytearray(b"x"), {1, 2}, object(),
    np.array(["error", "skip"]), np.array([1, 2]), np.float64("nan"), np.int64(5),
]  # fmt: skip
JSON_HOSTILE = [
    None, True, False, 0, -1, 2**53, 10**400, 253_402_300_800_000, 1.5, 1e303, 1e308,
    "", " ", "\ud800", "x" * 201, "x" * 100_001, "bad scope", "chat", "nope",
    [], [1], ["a"] * 40, {}, {"a": 1}, {"kind": "nope"}, deep(200), deep(30), deep_compose(40),
]  # fmt: skip

ids = st.sampled_from([*SEED_IDS, ARCHIVED_ID, str(uuid.uuid4()), "not-a-uuid", ""])
texts = st.sampled_from(
    ["csv export", '{"city": "Beijing", "temp": 23}', json.dumps(deep(300)), "Monday report"]
) | st.text(min_size=1, max_size=40)
tag_lists = st.lists(
    st.sampled_from(["csv", "report", "t1", "new", " x", "", "a" * 70]), max_size=4
)
scopes = st.sampled_from(
    ["global", "user", "conversation", "conversation:42", "global", "bad scope"]
)
types = st.sampled_from([*MEMORY_TYPES, "message", "chat"])
times = st.integers(1, NOW) | st.integers(-5, 2**54) | st.sampled_from([NOW, 253_402_300_800_000])
metadata = st.dictionaries(
    st.text(max_size=5),
    st.none() | st.integers() | st.floats() | st.text(max_size=8) | st.just(deep(20)),
    max_size=3,
)
good_strategies = st.sampled_from(
    [
        None,
        {"kind": "time_window", "hours": 24 * 60},
        {"kind": "by_tag", "tags": ["csv"], "match": "all"},
        {"kind": "by_type", "types": ["message"]},
        {"kind": "by_scope", "scopes": ["user", "global"]},
        {"kind": "compose", "strategies": [{"kind": "by_tag", "tags": ["csv"]}]},
        {"kind": "feedback_weight", "liked": 1e6, "important": 1e6},
        {"kind": "fusion", "k": 1e6, "lexical": 1e6, "dense": 0},
        deep_compose(8),
    ]
)
bad_strategies = st.sampled_from(
    [
        {"kind": "time_window", "hours": 1e303},
        {"kind": "time_window", "since_ms": 0, "until_ms": 10**30},
        {"kind": "time_decay", "half_life_hours": 1e300},
        {"kind": "feedback_weight", "liked": 10**400},
        {"kind": "feedback_weight", "liked": 1e300, "important": 1e300},
        {"kind": "fusion", "k": 1e-300, "lexical": 1e300},
        {"kind": "fusion", "depth": 10**6},
        deep_compose(17),
        deep_compose(600),
        {"kind": "compose", "strategies": [{"kind": "fusion", "k": 10**400}]},
    ]
)
strategy_dicts = st.integers(0, 2).flatmap(lambda n: good_strategies if n else bad_strategies)


def export_text(records: list[dict]) -> str:
    lines = ['{"format":"pymemory-export","version":1}']
    lines += [json.dumps(r, ensure_ascii=False) for r in records]
    return "\n".join(lines)


def item_record(item_id: str, **changes: Any) -> dict:
    item = {
        "id": item_id, "type": "message", "timestamp": NOW, "content": "imported",
        "metadata": {}, "scope": "global", "tags": [], "feedback": {},
    }  # fmt: skip
    item.update(changes)
    return {"kind": "memory", "item": item}


imports = st.sampled_from(
    [
        export_text([item_record(str(uuid.UUID(int=500, version=4)))]),
        export_text([item_record(SEED_IDS[0])]),  # a conflict
        export_text(
            [item_record(str(uuid.UUID(int=501, version=4)), timestamp=253_402_300_800_000)]
        ),
        export_text([item_record(str(uuid.UUID(int=502, version=4)), content_method="\ud800")]),
        export_text([item_record(str(uuid.UUID(int=503, version=4)), content="\ud800 x")]),
        export_text([item_record(str(uuid.UUID(int=504, version=4)), metadata={"d": "@"})]).replace(
            '"@"', deep_text(5000)
        ),
        export_text([item_record(str(uuid.UUID(int=505, version=4)), version=0)]),
        export_text([item_record(str(uuid.UUID(int=506, version=4)), version=7)]),
        export_text(
            [
                {
                    "kind": "archived",
                    "item": {
                        "id": SEED_IDS[1],
                        "type": "message",
                        "timestamp": 1,
                        "content": "arc",
                    },
                }
            ]
        ),
        '{"format":"pymemory-export","version":1}\n' + "[" * 5000 + "]" * 5000,
        '{"format":"pymemory-export","version":1}\n{"kind":"memory","item":' + "{" * 900,
        "not json at all",
        "",
    ]
)


def value(plausible: st.SearchStrategy, hostile: list = HOSTILE) -> st.SearchStrategy:
    """A plausible value four times in five, else a hostile one."""
    return st.integers(0, 4).flatmap(lambda n: plausible if n else st.sampled_from(hostile))


# Each Python method: its positional parameters and its keyword parameters.
PY_METHODS: dict[str, tuple[list[tuple[str, st.SearchStrategy]], list[tuple[str, st.SearchStrategy]]]] = {
    "add": ([("text", texts)], [("content", texts), ("type", types), ("metadata", metadata),
            ("tags", tag_lists), ("scope", scopes), ("ttl_ms", times), ("timestamp", times)]),
    "add_many": ([("entries", st.lists(st.fixed_dictionaries({"text": texts}, optional={
        "tags": tag_lists, "timestamp": times, "scope": scopes}), max_size=3))], []),
    "update": ([("id", ids)], [("text", texts), ("content", texts), ("type", types),
               ("metadata", metadata), ("tags", tag_lists), ("scope", scopes),
               ("ttl_ms", times), ("expected_version", st.integers(1, 3))]),
    "delete": ([("id", ids)], [("expected_version", st.integers(1, 3))]),
    "feedback": ([("id", ids), ("kind", st.sampled_from(["liked", "disliked", "important", "love"]))],
                 [("durable", st.booleans())]),
    "get": ([("id", ids)], []),
    "history": ([("id", ids)], []),
    "list": ([], [("scope", scopes), ("type", types), ("tags", tag_lists), ("since_ms", times),
                  ("until_ms", times), ("limit", st.integers(0, 5))]),
    "retrieve": ([("query", texts)], [("strategy", strategy_dicts), ("max_items", st.integers(1, 8)),
                 ("max_tokens", st.integers(1, 3000)), ("trace", st.booleans()),
                 ("condense", st.booleans())]),
    "clear": ([], [("scope", scopes), ("tags", tag_lists), ("type", types), ("since_ms", times),
                   ("until_ms", times), ("all", st.booleans())]),
    "sweep": ([], []),
    "archive_older_than": ([("days", st.integers(0, 40) | st.floats(0, 100))],
                           [("keep_important", st.booleans())]),
    "search_archive": ([("query", texts)], [("limit", st.integers(0, 5))]),
    "stats": ([], []),
    "flush": ([], []),
    "import_": ([("lines", imports)], [("on_conflict", st.sampled_from(["error", "skip", "replace"])),
                ("chunk_size", st.integers(1, 3))]),
}  # fmt: skip


@st.composite
def py_calls(draw: st.DrawFn) -> tuple[str, list, dict]:
    name = draw(st.sampled_from(sorted(PY_METHODS)))
    positional, keywords = PY_METHODS[name]
    args = []
    for _, strategy in positional:
        if draw(st.integers(0, 9)) == 0:
            break  # a missing positional: a TypeError is Python's own, not drawn
        args.append(draw(value(strategy)))
    if len(args) < len(positional):
        args += [draw(value(s)) for _, s in positional[len(args) :]]
    kwargs = {k: draw(value(s)) for k, s in keywords if draw(st.integers(0, 2)) == 0}
    return name, args, kwargs


def check_result(name: str, result: Any) -> None:
    """What a successful call must return (and that its JSON form is strict JSON)."""
    expected = {
        "add": MemoryItem, "update": MemoryItem, "get": MemoryItem, "add_many": list,
        "history": list,
        "list": list, "retrieve": Retrieval, "clear": int, "sweep": int,
        "archive_older_than": int, "search_archive": list, "stats": dict, "flush": int,
        "import_": ImportResult, "delete": type(None), "feedback": type(None),
    }[name]  # fmt: skip
    assert isinstance(result, expected), (name, result)
    if isinstance(result, Retrieval):
        json.dumps(retrieval_js(result), allow_nan=False)
    if name in ("add_many", "list"):
        assert all(isinstance(i, MemoryItem) for i in result)
        json.dumps([item_js(i) for i in result], allow_nan=False)
    if isinstance(result, int):
        assert result >= 0


async def export_of(memory: Memory) -> tuple[str, list[tuple[str, bytes]]]:
    return "".join([line async for line in memory.export()]), await memory.kv.scan("")


async def still_usable(memory: Memory) -> None:
    json.dumps(retrieval_js(await memory.retrieve("")), allow_nan=False)
    json.dumps(retrieval_js(await memory.retrieve("csv export", trace=True)), allow_nan=False)
    json.dumps([item_js(i) for i in await memory.list()], allow_nan=False)
    json.dumps(await memory.stats(), allow_nan=False)


async def run_py_calls(calls: list[tuple[str, list, dict]]) -> None:
    memory = await Memory.open(seeded_kv(), clock=clock, feedback_flush_s=3600)
    try:
        for name, args, kwargs in calls:
            CASES["python"] += 1
            before = await export_of(memory)
            try:
                result = await getattr(memory, name)(*args, **kwargs)
            except PymemoryError as exc:
                assert exc.code and isinstance(str(exc), str)
                after = await export_of(memory)
                assert after == before, (
                    f"{name}{args, kwargs} failed ({exc!r}) but changed the store"
                )
            else:
                check_result(name, result)
            await still_usable(memory)
    finally:
        await memory.close()


@FUZZ
@given(calls=st.lists(py_calls(), min_size=3, max_size=10))
def test_python_api_calls_give_typed_errors_and_change_nothing_when_they_fail(calls):
    asyncio.run(run_py_calls(calls))


# --- the worker's JSON API ------------------------------------------------------------

json_ids = st.sampled_from([*SEED_IDS, *SEED_IDS, ARCHIVED_ID, str(uuid.uuid4()), "x", 5, None])
tool_args = st.sampled_from(
    [
        {"command": "create", "path": "/memories/a.md", "file_text": "hello"},
        {"command": "create", "path": "/memories/a.md", "file_text": "x" * 200_000},
        {"command": "view", "path": "/memories"},
        {"command": "str_replace", "path": "/memories/a.md", "old_str": "hello", "new_str": "hi"},
        {"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/b/a.md"},
        {"command": "delete", "path": "/memories/b"},
        {"command": "view", "path": "/etc/passwd"},
        {"operation": "write", "key": "k", "text": "v"},
        {"operation": "read", "key": "k"},
        {"operation": "list"},
        '{"command": "view", "path": "/memories"}',
        json.dumps(deep(400)),
        "{not json",
    ]
)
RPC_PARAMS: dict[str, dict[str, st.SearchStrategy]] = {
    "open": {}, "close": {}, "flush": {}, "sweep": {}, "stats": {}, "exportJsonl": {},
    "addMemory": {"text": texts, "content": texts, "type": types, "metadata": metadata,
                  "tags": tag_lists, "scope": scopes, "ttlMs": times, "timestamp": times},
    "addMany": {"entries": st.lists(st.fixed_dictionaries({"text": texts}), max_size=3)},
    "get": {"id": json_ids},
    "history": {"id": json_ids},
    "update": {"id": json_ids, "text": texts, "tags": tag_lists, "expectedVersion": st.integers(1, 3)},
    "delete": {"id": json_ids, "expectedVersion": st.integers(1, 3)},
    "list": {"scope": scopes, "tags": tag_lists, "sinceMs": times, "limit": st.integers(0, 5)},
    "retrieve": {"query": texts, "strategy": strategy_dicts, "maxItems": st.integers(1, 8),
                 "maxTokens": st.integers(1, 3000), "trace": st.booleans()},
    "feedback": {"id": json_ids, "kind": st.sampled_from(["liked", "important", "love"]),
                 "durable": st.booleans()},
    "clear": {"scope": scopes, "tags": tag_lists, "all": st.booleans(), "type": types},
    "archiveOlderThan": {"days": st.integers(0, 40), "keepImportant": st.booleans()},
    "searchArchive": {"query": texts, "limit": st.integers(0, 5)},
    "importJsonl": {"text": imports, "onConflict": st.sampled_from(["error", "skip", "replace"]),
                    "chunkSize": st.integers(1, 3)},
    "blocks.open": {"setId": st.sampled_from(["core", "core", "bad id!"]),
                    "blocks": st.just([{"label": "human", "value": "hi"}]), "maxBlocks": st.integers(1, 6)},
    "blocks.get": {"setId": st.just("core"), "label": st.sampled_from(["human", "nope"])},
    "blocks.setValue": {"setId": st.just("core"), "label": st.just("human"), "value": texts},
    "blocks.render": {"setId": st.just("core")},
    "structured.put": {"namespace": st.sampled_from(["semantic", "episodic", "semantic", "nope"]),
                       "key": st.sampled_from(["k", "k", "", "a\x00"]),
                       "value": st.just({"v": 1}) | st.just(deep(40)), "ttlMs": times},
    "structured.get": {"namespace": st.just("semantic"), "key": st.just("k")},
    "structured.history": {"namespace": st.just("semantic"), "key": st.just("k")},
    "structured.delete": {"namespace": st.just("semantic"), "key": st.just("k"), "purge": st.booleans()},
    "tools.call": {"name": st.sampled_from(["memory", "memory_kv", "core_memory_append", "nope"]),
                   "args": tool_args, "setId": st.just("core")},
    "tools.schemas": {"format": st.sampled_from(["openai", "anthropic", "nope"])},
    "checkpoints.save": {"runId": st.sampled_from(["run-1", "run-1", "bad:id"]),
                         "state": st.just({"s": 1}) | st.just(deep(40))},
    "checkpoints.latest": {"runId": st.just("run-1")},
    "checkpoints.load": {"runId": st.just("run-1"), "seq": st.integers(1, 3)},
    "observer.configure": {"sessionId": st.just("s"), "model": st.just({"kind": "rules"}),
                           "tokenThreshold": st.integers(1, 20)},
    "observer.noteStep": {"sessionId": st.just("s"), "step": texts},
    "observer.flush": {"sessionId": st.just("s")},
    "observer.list": {"sessionId": st.just("s")},
    "nope": {}, "blocks.nope": {}, "_m_open": {},
}  # fmt: skip
REQUIRED = {
    "get": ("id",), "history": ("id",), "update": ("id",), "delete": ("id",), "retrieve": ("query",),
    "feedback": ("id", "kind"), "archiveOlderThan": ("days",), "importJsonl": ("text",),
    "addMany": ("entries",), "tools.call": ("name",), "checkpoints.save": ("runId", "state"),
    "checkpoints.latest": ("runId",), "checkpoints.load": ("runId", "seq"),
    "observer.configure": ("sessionId", "model"), "observer.noteStep": ("sessionId", "step"),
    "observer.flush": ("sessionId",), "observer.list": ("sessionId",),
    "structured.put": ("namespace", "key", "value"), "structured.get": ("namespace", "key"),
    "structured.history": ("namespace", "key"), "structured.delete": ("namespace", "key"),
    "blocks.open": ("setId",), "blocks.get": ("setId", "label"),
    "blocks.setValue": ("setId", "label", "value"), "blocks.render": ("setId",),
}  # fmt: skip
RAW_PARAMS = [
    "", "null", "[]", '"text"', "{", "NaN", '{"query": Infinity}', '{"query": "x", "maxItems": 1e400}',
    '{"query": "csv", "strategy": {"kind": "time_window", "hours": 1e303}}',
    '{"query": "csv", "strategy": {"kind": "feedback_weight", "liked": 1' + "0" * 400 + "}}",
    '{"query": "csv", "strategy": ' + deep_compose_text(900) + "}",
    '{"query": "csv", "strategy": ' + deep_compose_text(600) + "}",
    '{"text": ' + json.dumps('{"format":"pymemory-export","version":1}\n' + "[" * 100_000) + "}",
    '{"text": "' + "x" * 3_000_000 + '"}',
    '{"text": "\\ud800 lone"}', '{"id": "\\udfff"}', "[" * 100_000, '{"a":' * 10_000,
]  # fmt: skip


@st.composite
def rpc_calls(draw: st.DrawFn) -> tuple[str, str]:
    method = draw(st.sampled_from(sorted(RPC_PARAMS)))
    if draw(st.integers(0, 9)) == 0:
        return method, draw(st.sampled_from(RAW_PARAMS))
    params = {
        k: draw(value(s, JSON_HOSTILE))
        for k, s in RPC_PARAMS[method].items()
        if draw(st.integers(0, 2)) == 0 or k in REQUIRED.get(method, ())
    }
    if draw(st.integers(0, 9)) == 0:
        params["unknownParam"] = 1
    try:
        text = json.dumps(params)  # lone surrogates become \\udXXX escapes, as from JS
    except ValueError:
        text = json.dumps(params, allow_nan=True)
    return method, text


def strict_json(text: str) -> Any:
    def refuse(constant: str) -> None:
        raise AssertionError(f"answer holds {constant}: not JSON")

    return json.loads(text, parse_constant=refuse)


async def rpc_snapshot(api: RpcApi) -> tuple[str, list[tuple[str, bytes]]]:
    answer = strict_json(await api.call("db", "exportJsonl", "{}"))
    assert answer["ok"], answer
    return answer["result"], await (await api.memory("db")).kv.scan("")


async def run_rpc_calls(calls: list[tuple[str, str]]) -> None:
    async def kv_factory(_name: str) -> MapKv:
        return seeded_kv()

    api = RpcApi(kv_factory, clock=clock, feedback_flush_s=3600)
    try:
        for method, params in calls:
            CASES["json_api"] += 1
            before = await rpc_snapshot(api)
            answer = strict_json(await api.call("db", method, params))
            if answer["ok"]:
                assert set(answer) == {"ok", "result"}
            else:
                code = answer["error"]["code"]
                assert code in DOCUMENTED_CODES and code != "internal", (
                    method,
                    params[:200],
                    answer,
                )
                if method != "close":
                    assert await rpc_snapshot(api) == before, (method, params[:200], answer)
            for check in ('{"query": ""}', '{"query": "csv", "trace": true}'):
                assert strict_json(await api.call("db", "retrieve", check))["ok"]
            assert strict_json(await api.call("db", "list", "{}"))["ok"]
    finally:
        await api.close_all()


@FUZZ
@given(calls=st.lists(rpc_calls(), min_size=3, max_size=10))
def test_json_api_calls_give_documented_codes_and_change_nothing_when_they_fail(calls):
    asyncio.run(run_rpc_calls(calls))


def test_fuzz_case_count():
    """Runs after the two suites above (file order): they made at least 10,000 calls."""
    total = sum(CASES.values())
    if total:  # the suites ran in this session (not deselected)
        assert total >= MIN_CASES, CASES
