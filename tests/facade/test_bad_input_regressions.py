"""Regression tests, one per defect the fuzzing of issue 12 found (Python API and the
worker's JSON API). Each bad call must raise the documented exception (or answer with the
documented code) and leave the store byte-identical."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pymemory import (
    ImportFormatError,
    Memory,
    PymemoryError,
    StrategyError,
    ValidationError,
)
from pymemory.browser.rpc import MAX_PARAMS_CHARS, RpcApi
from pymemory.encoder import RuleEncoder
from pymemory.retrieval.strategies import compose, feedback_weight, fusion, time_window
from pymemory.storage import MapKv

YEAR_10000_MS = 253_402_300_800_000  # 10000-01-01T00:00:00Z
HEADER = '{"format":"pymemory-export","version":1}'


@pytest.fixture
async def memory(clock):
    mem = await Memory.open(MapKv(), clock=clock, feedback_flush_s=3600)
    await mem.add("the CSV export runs every Monday", tags=["csv"])
    yield mem
    await mem.close()


async def snapshot(memory: Memory) -> tuple[str, list]:
    return "".join([line async for line in memory.export()]), await memory.kv.scan("")


async def refused(memory: Memory, call, exc: type[PymemoryError] = ValidationError):
    before = await snapshot(memory)
    with pytest.raises(exc) as err:
        await call
    assert err.value.code
    assert await snapshot(memory) == before
    return err.value


def record(**changes) -> str:
    item = {
        "id": "0d4b3c1e-7f2a-4e5b-9c8d-1a2b3c4d5e6f", "type": "message", "timestamp": 1,
        "content": "imported", "metadata": {},
    }  # fmt: skip
    item.update(changes)
    return json.dumps({"kind": "memory", "item": item})


# --- the Python API -------------------------------------------------------------------


async def test_timestamp_in_year_10000_is_refused_and_retrieve_keeps_working(memory):
    await refused(memory, memory.add("far future", timestamp=YEAR_10000_MS))
    await refused(
        memory, memory.import_(HEADER + "\n" + record(timestamp=YEAR_10000_MS)), ImportFormatError
    )
    await refused(memory, memory.list(since_ms=YEAR_10000_MS))
    item = await memory.add("the last millisecond of 9999", timestamp=YEAR_10000_MS - 1)
    assert item.id in {m.item.id for m in (await memory.retrieve("")).memories}


async def test_add_many_of_something_not_a_list_is_a_validation_error(memory):
    for entries in (0, None, "text", b"x", {"text": "a dict"}):
        await refused(memory, memory.add_many(entries))  # type: ignore[arg-type]
    assert await memory.add_many([]) == []


async def test_deeply_nested_json_in_an_import_is_an_import_format_error(memory):
    for line in ("[" * 5000 + "]" * 5000, record(metadata={"d": 1}).replace("1}", "[" * 3000)):
        err = await refused(memory, memory.import_(HEADER + "\n" + line), ImportFormatError)
        assert err.line == 2


async def test_lone_surrogate_in_an_imported_field_is_an_import_format_error(memory):
    for field in ("content_method", "content", "scope", "text"):
        line = record(**{field: "x\ud800"})
        await refused(memory, memory.import_(HEADER + "\n" + line), ImportFormatError)
    await refused(memory, memory.import_([HEADER, record(tags=["\udfff"])]), ImportFormatError)


async def test_on_conflict_of_the_wrong_type_is_a_validation_error(memory):
    lines = HEADER + "\n" + record()
    for value in (np.array(["error", "skip"]), ["error"], None, 1):
        await refused(memory, memory.import_(lines, on_conflict=value))  # type: ignore[arg-type]


async def test_huge_time_window_or_fusion_weight_is_a_strategy_error(memory):
    for build in (
        lambda: time_window(hours=1e303),
        lambda: time_window(since_ms=0, until_ms=10**30),
        lambda: fusion(lexical=10**400),
        lambda: feedback_weight(liked=10**400),
    ):
        with pytest.raises(StrategyError):
            build()
    for spec in (
        {"kind": "time_window", "hours": 1e303},
        {"kind": "fusion", "dense": 10**400},
        {"kind": "feedback_weight", "important": float("inf")},
        {"kind": "compose", "strategies": [{"kind": "fusion", "k": 10**400}]},
    ):
        await refused(memory, memory.retrieve("csv", spec), StrategyError)


async def test_compose_nested_too_deep_is_a_strategy_error(memory):
    spec: dict = {"kind": "by_tag", "tags": ["csv"]}
    built = compose(time_window(hours=1))
    for _ in range(600):
        spec = {"kind": "compose", "strategies": [spec]}
        built = compose(built)
    await refused(memory, memory.retrieve("csv", spec), StrategyError)
    await refused(memory, memory.retrieve("csv", built), StrategyError)


async def test_clear_all_and_keep_important_take_only_bools(memory):
    await refused(memory, memory.clear(all=1))  # type: ignore[arg-type]
    await refused(memory, memory.clear(all="yes"))  # type: ignore[arg-type]
    await refused(memory, memory.archive_older_than(0, keep_important=""))  # type: ignore[arg-type]
    await refused(memory, memory.archive_older_than(0, keep_important=np.bool_(True)))  # type: ignore[arg-type]


async def test_list_tags_none_means_no_filter_and_other_types_are_refused(memory):
    # None is list()'s documented default ("no tag filter"), so it is accepted; every other
    # value that is not a list of tags is refused.
    assert await memory.list(tags=None) == await memory.list()
    for tags in ("csv", 5, {"csv": 1}, [5], np.array(["csv"])):
        await refused(memory, memory.list(tags=tags))  # type: ignore[arg-type]


async def test_oversized_text_is_refused_before_the_encoder_runs(clock):
    class CountingEncoder(RuleEncoder):
        calls = 0

        async def encode(self, text, *, type="message"):
            CountingEncoder.calls += 1
            return await super().encode(text, type=type)

    memory = await Memory.open(MapKv(), clock=clock, encoder=CountingEncoder())
    await refused(memory, memory.add("x" * 3_000_000))
    await refused(memory, memory.add("x" * 100_001, tags="not-a-list"))  # type: ignore[arg-type]
    await refused(memory, memory.add_many([{"text": "fine"}, {"text": "y" * 3_000_000}]))
    item = await memory.add("short")
    await refused(memory, memory.update(item.id, text="z" * 3_000_000))
    assert CountingEncoder.calls == 2  # "short", and "fine" (checked before the second)
    await memory.close()


# --- the worker's JSON API --------------------------------------------------------------


@pytest.fixture
async def api(clock):
    rpc = RpcApi(lambda _name: _new_kv(), clock=clock, feedback_flush_s=3600)
    assert json.loads(await rpc.call("db", "addMemory", '{"text": "keep me, CSV export"}'))["ok"]
    yield rpc
    await rpc.close_all()


async def _new_kv() -> MapKv:
    return MapKv()


def strict(text: str) -> dict:
    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


async def rpc_refused(api: RpcApi, method: str, params: str, code: str) -> dict:
    before = strict(await api.call("db", "exportJsonl", "{}"))["result"]
    answer = strict(await api.call("db", method, params))
    assert not answer["ok"] and answer["error"]["code"] == code, answer
    assert strict(await api.call("db", "exportJsonl", "{}"))["result"] == before
    assert strict(await api.call("db", "stats", "{}"))["ok"]  # the API still answers
    return answer


def compose_json(depth: int) -> str:
    return (
        '{"kind":"compose","strategies":[' * depth + '{"kind":"by_tag","tags":["x"]}' + "]}" * depth
    )


async def test_rpc_compose_nested_600_or_900_deep_is_refused(api):
    for depth in (600, 900, 5000):
        params = '{"query": "csv", "strategy": ' + compose_json(depth) + "}"
        await rpc_refused(api, "retrieve", params, "invalid_input")
    await rpc_refused(api, "retrieve", '{"query": "csv", "strategy": ' + compose_json(20) + "}",
                      "invalid_strategy")  # fmt: skip


async def test_rpc_import_of_deeply_nested_json_is_refused_and_the_api_keeps_working(api):
    text = HEADER + "\n" + "[" * 200_000 + "]" * 200_000
    answer = await rpc_refused(api, "importJsonl", json.dumps({"text": text}), "invalid_import")
    assert "line 2" in answer["error"]["message"]
    await rpc_refused(api, "addMemory", '{"text": ' + "[" * 100_000 + "}", "invalid_input")


async def test_rpc_never_answers_internal_or_infinity_for_huge_numbers(api):
    for strategy in (
        '{"kind": "time_window", "hours": 1e303}',
        '{"kind": "fusion", "lexical": 1' + "0" * 400 + "}",
        '{"kind": "fusion", "dense": 1e400}',  # Infinity once parsed
        '{"kind": "feedback_weight", "liked": 1e300, "important": 1e300}',
    ):
        await rpc_refused(api, "retrieve", f'{{"query": "csv", "strategy": {strategy}}}',
                          "invalid_strategy")  # fmt: skip
    big = '{"query": "csv", "strategy": {"kind": "feedback_weight", "liked": 1e6}, "trace": true}'
    assert strict(await api.call("db", "retrieve", big))["ok"]


async def test_rpc_wrong_types_for_clear_all_and_keep_important(api):
    await rpc_refused(api, "clear", '{"all": 1}', "invalid_input")
    await rpc_refused(api, "archiveOlderThan", '{"days": 0, "keepImportant": ""}', "invalid_input")
    await rpc_refused(api, "importJsonl", '{"text": "", "onConflict": ["error"]}', "invalid_input")


async def test_rpc_oversized_text_and_parameters_are_refused(api):
    await rpc_refused(api, "addMemory", json.dumps({"text": "x" * 3_000_000}), "invalid_input")
    params = '{"text": "' + "y" * (MAX_PARAMS_CHARS + 1) + '"}'
    answer = await rpc_refused(api, "addMemory", params, "invalid_input")
    assert "over the limit" in answer["error"]["message"]


async def test_rpc_lone_surrogates_come_back_as_valid_json(api):
    answer = strict(await api.call("db", "tools.call", json.dumps(
        {"name": "memory", "args": {"command": "view", "path": "/memories/\ud800"}}
    )))  # fmt: skip
    assert answer["ok"] and answer["result"]["isError"]
    await rpc_refused(api, "addMemory", json.dumps({"text": "x\ud800"}), "invalid_input")
