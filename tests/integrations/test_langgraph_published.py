"""pymemory's LangGraph store (pymemory/integrations/langgraph/) against LangGraph's own
published store behaviours (the cases in langgraph_cases.py, each citing its source).

Every case runs against PymemoryStore over MapKv and over SqliteKv, and against
LangGraph's InMemoryStore (with an index whose embed function is pymemory's hashing
embedder, so its query ranking works offline) as a control that the expectation is
LangGraph's. A case where InMemoryStore is known to disagree with the published behaviour
says so (``control=DIFFERS``) and the control run checks that it still does; a case where
pymemory deliberately differs carries ``ours=`` and ``why=`` (docs/langgraph.md).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers import Clock
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from langgraph_cases import CASES, DIFFERS, HASHING, NO_CONTROL, Case

from pymemory.integrations.langgraph import PymemoryStore
from pymemory.storage import MapKv, SqliteKv

# --- running a case ----------------------------------------------------------------------


def _hashing_embed(texts: list[str]) -> list[list[float]]:
    return HASHING.embed_sync(texts).tolist()


@dataclass
class Subject:
    kind: str
    store: BaseStore
    clock: Clock | None


@pytest.fixture
async def subject(request, tmp_path):
    kind = request.param
    if kind == "inmemory":
        yield Subject(kind, InMemoryStore(index={"dims": 384, "embed": _hashing_embed}), None)
        return
    clock = Clock()
    kv = MapKv() if kind == "mapkv" else await SqliteKv.open(tmp_path / "lg.db")
    yield Subject(kind, PymemoryStore(kv, clock=clock), clock)
    await kv.close()


async def _step(s: Subject, step: tuple) -> Any:
    store = s.store
    op, *args = step
    if op == "put":
        ns, key, value, *rest = args
        return await store.aput(ns, key, value, **(rest[0] if rest else {}))
    if op == "get":
        ns, key, *rest = args
        return await store.aget(ns, key, **(rest[0] if rest else {}))
    if op == "search":
        ns, *rest = args
        return await store.asearch(ns, **(rest[0] if rest else {}))
    if op == "list":
        return await store.alist_namespaces(**args[0])
    if op == "delete":
        return await store.adelete(*args)
    if op == "batch":
        return await store.abatch(args[0])
    if op == "tick":
        if s.clock is not None:
            s.clock.advance(round(args[0] * 60_000))
        else:
            time.sleep(0.002)  # InMemoryStore reads the real clock
        return None
    if op == "created_kept":
        ns, key, v1, v2 = args
        await store.aput(ns, key, v1)
        first = await store.aget(ns, key)
        await _step(s, ("tick", 1))
        await store.aput(ns, key, v2)
        second = await store.aget(ns, key)
        return {
            "value": second.value,
            "created_kept": second.created_at == first.created_at,
            "updated_later": second.updated_at > first.updated_at,
        }
    raise AssertionError(f"unknown step {op}")


def _observe(kind: str, result: Any, expect: tuple) -> Any:
    if kind == "get":
        return None if result is None else result.value
    if kind == "keys":
        return [r.key for r in result]
    if kind == "keyset":
        return {r.key for r in result}
    if kind == "count":
        return len(result)
    if kind == "scored":
        return [(r.key, r.score is not None) for r in result]
    if kind == "first_of":
        return (result[0].key if result else None, len(result))
    if kind == "namespaces":
        return [tuple(ns) for ns in result]
    if kind == "nsset":
        return {tuple(ns) for ns in result}
    if kind == "times":
        return result
    if kind == "batch":
        out = []
        for r in result:
            if r is None:
                out.append(None)
            elif isinstance(r, list):
                out.append([x.key for x in r])
            else:
                out.append(r.key)
        return out
    raise AssertionError(f"unknown expectation {kind}")


async def _outcome(s: Subject, case: Case, expect: tuple) -> Any:
    for step in case.setup:
        await _step(s, step)
    try:
        result = await _step(s, case.call)
    except Exception as exc:
        return ("raises", type(exc))
    if expect[0] == "raises":
        return ("returned", result)
    if expect[0] == "then_search":
        return ("then_search", expect[1], [r.key for r in await s.store.asearch(expect[1])])
    return (expect[0], _observe(expect[0], result, expect), *expect[2:])[: len(expect)]


def _matches(outcome: Any, expect: tuple) -> bool:
    if expect[0] == "raises":
        return outcome[0] == "raises" and issubclass(outcome[1], expect[1])
    if expect[0] == "first_of":
        return outcome[1] == (expect[1], expect[2])
    return outcome == expect


def _params() -> list:
    out = []
    for case in CASES:
        for kind in ("mapkv", "sqlite", "inmemory"):
            if kind == "inmemory" and case.control == NO_CONTROL:
                continue
            out.append(pytest.param(kind, case, id=f"{case.id}[{kind}]"))
    return out


@pytest.mark.parametrize(("subject", "case"), _params(), indirect=["subject"])
async def test_published_store_behaviour(subject, case: Case):
    if subject.kind == "inmemory":
        outcome = await _outcome(subject, case, case.expect)
        if case.control == DIFFERS:
            assert not _matches(outcome, case.expect), (
                f"InMemoryStore now does what LangGraph publishes ({case.control_why!r} no longer "
                "holds): mark the case SAME"
            )
        else:
            assert _matches(outcome, case.expect), outcome
        return
    expect = case.ours or case.expect
    outcome = await _outcome(subject, case, expect)
    assert _matches(outcome, expect), (outcome, case.why)


def test_every_deliberate_difference_is_named_and_in_the_docs():
    section = (Path(__file__).resolve().parents[2] / "docs" / "langgraph.md").read_text()
    for case in CASES:
        assert (case.ours is None) == (not case.why), case.id
        assert case.control != DIFFERS or case.control_why, case.id
    assert "omit_expired" in section  # the one deliberate difference (ttl-expired-before-sweep)


def test_cases_cover_every_op_kind():
    calls = {case.call[0] for case in CASES}
    assert {"get", "put", "search", "list", "batch"} <= calls
    assert len(CASES) >= 50
