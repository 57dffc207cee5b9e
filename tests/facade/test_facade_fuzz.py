"""Hostile values at every argument of every public async method of ``Memory``.

The methods are enumerated with ``inspect``, so a new method is fuzzed as soon as it
exists (and fails here until it has a baseline call below, if it needs one). Each
argument in turn gets each hostile value (bare, and inside a list, a dict value and, for
hashable ones, a dict key), the other arguments keeping a valid baseline. Every call must
succeed or raise a documented ``pymemory.errors`` class, never a bare ValueError,
TypeError, OverflowError, RecursionError or UnicodeEncodeError; a failed call leaves the
store's records and its export unchanged; and whatever happened, the memory still
answers ``list``, ``stats`` and ``retrieve`` (a value accepted at ``open`` must not break
the memory later).

See DESIGN.md, "What bad input gets". Fixed values and a fixed clock: deterministic.
"""

from __future__ import annotations

import inspect
import logging
from typing import Any

import pytest
from helpers import Clock

from pymemory import Memory
from pymemory.errors import PymemoryError, ValidationError
from pymemory.item import MAX_VERSION
from pymemory.models.embedding import HashingEmbedder
from pymemory.storage import MapKv


def _deep_list(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


def _deep_dict(depth: int) -> dict:
    value: dict = {}
    for _ in range(depth):
        value = {"a": value}
    return value


HOSTILE: dict[str, Any] = {
    "int 10**5000": 10**5000,
    "int -10**5000": -(10**5000),
    "list depth 10000": _deep_list(10_000),
    "dict depth 10000": _deep_dict(10_000),
    "lone surrogate": "\ud800",
    "inner lone surrogate": "a\udfffb",
    "nan": float("nan"),
    "inf": float("inf"),
    "-inf": float("-inf"),
    "bytes": b"bytes",
    "object": object(),
}


def _variants() -> list[tuple[str, Any]]:
    """Each hostile value bare, in a list, as a dict value and (hashable) as a dict key."""
    out = []
    for name, value in HOSTILE.items():
        out += [(name, value), (f"[{name}]", [value]), (f"{{'k': {name}}}", {"k": value})]
        if value.__hash__ is not None:
            out.append((f"{{{name}: 'v'}}", {value: "v"}))
    return out


VARIANTS = _variants()


class NullRefiner:
    """A refiner that keeps stage 1's summary."""

    method = "null"

    async def refine(self, text: str, summary: str, *, type: str = "message") -> str | None:
        return None


SEED_TEXT = "the seed memory: Sam prefers tea over coffee"


async def _fresh(tmp_path) -> tuple[Memory, str, list[str]]:
    """A memory holding one item (with feedback and a past version) and one archived item."""
    mem = await Memory.open(MapKv(), clock=Clock(), feedback_flush_s=3600)
    old = await mem.add("an old memory to archive", timestamp=Clock().now - 400 * 86_400_000)
    await mem.archive_older_than(365)
    seed = await mem.add(SEED_TEXT, tags=["seed"], metadata={"n": 1})
    await mem.update(seed.id, tags=["seed", "tea"])
    await mem.feedback(seed.id, "liked")
    lines = [line async for line in mem.export()]
    assert old.id in "".join(lines)
    return mem, seed.id, lines


def _baseline(name: str, seed_id: str, lines: list[str]) -> dict[str, Any]:
    """Valid arguments for the parameters a call needs (the rest keep their defaults)."""
    return {
        "add": {"text": "a new memory about coffee"},
        "add_many": {"entries": [{"text": "a batch memory"}]},
        "archive_older_than": {"days": 1},
        "attach_embedder": {"embedder": HashingEmbedder(dim=16)},
        "attach_refiner": {"refiner": NullRefiner()},
        "clear": {"scope": "nowhere"},
        "delete": {"id": seed_id},
        "feedback": {"id": seed_id, "kind": "liked"},
        "get": {"id": seed_id},
        "history": {"id": seed_id},
        "import_": {"lines": lines, "on_conflict": "skip"},
        "retrieve": {"query": "tea"},
        "search": {"query": "tea"},
        # nothing listens on the discard port: a round that passed the checks fails typed
        "sync": {"url": "http://127.0.0.1:9/fuzz"},
        "update": {"id": seed_id},
    }.get(name, {})


# ``**kwargs`` parameters take the keyword arguments of the method they forward to.
DELEGATES = {"get_all": Memory.list, "search": Memory.retrieve}


def _methods() -> dict[str, Any]:
    found = {}
    for name, fn in inspect.getmembers(Memory):
        if name.startswith("_") or isinstance(fn, property):
            continue
        if inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
            found[name] = fn
    return found


METHODS = _methods()


def _params(name: str, fn: Any) -> list[str]:
    names = []
    for p in inspect.signature(fn).parameters.values():
        if p.name in ("self", "cls"):
            continue
        if p.kind is p.VAR_KEYWORD:
            names += [
                q.name
                for q in inspect.signature(DELEGATES[name]).parameters.values()
                if q.kind is q.KEYWORD_ONLY
            ]
        elif p.kind is p.VAR_POSITIONAL:
            raise AssertionError(f"Memory.{name} takes *{p.name}: give it a fuzz plan")
        else:
            names.append(p.name)
    return names


async def _dump(mem: Memory) -> tuple[list[str], list[tuple[str, bytes]]]:
    """The export and every record of the store."""
    lines = [line async for line in mem.export()]
    return lines, list(await mem.kv.scan(""))


async def _still_usable(
    mem: Memory, caplog: pytest.LogCaptureFixture, *, write: bool = True
) -> None:
    """The memory answers and, with ``write``, takes a write and runs its background work,
    all without an error (a refiner, embedder, encoder or clock accepted earlier is used
    here)."""
    await mem.list()
    await mem.stats()
    await mem.retrieve("tea")
    await mem.search_archive("")
    if write:
        await mem.add("a memory that checks the store still works")
        await mem.refine_idle()
        await mem.embed_idle()
        await mem.flush()
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    caplog.clear()
    assert not errors, f"logged: {errors[0]}"


async def _call(mem: Memory, name: str, kwargs: dict[str, Any]) -> Any:
    result = getattr(mem, name)(**kwargs)
    if inspect.isasyncgen(result):
        return [x async for x in result]
    return await result


def _undocumented(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:200]}"


def test_every_public_async_method_is_fuzzed():
    assert {"add", "feedback", "retrieve", "import_", "export", "open", "update"} <= set(METHODS)
    for name, fn in METHODS.items():
        _params(name, fn)  # a new **kwargs method needs a delegate


@pytest.mark.parametrize("name", sorted(set(METHODS) - {"open"}))
async def test_hostile_arguments(name, tmp_path, monkeypatch, caplog):
    monkeypatch.chdir(tmp_path)  # a str or bytes value taken as a file path lands here
    params = _params(name, METHODS[name])
    defects: list[str] = []
    mem: Memory | None = None
    try:
        if not params:
            mem, _, _ = await _fresh(tmp_path)
            await _call(mem, name, {})
            if name != "close":
                await _still_usable(mem, caplog)
            return
        for param in params:
            for label, value in VARIANTS:
                if mem is None:
                    mem, seed_id, lines = await _fresh(tmp_path)
                    base = _baseline(name, seed_id, lines)
                before = await _dump(mem)
                kwargs = {**base, param: value}
                try:
                    await _call(mem, name, kwargs)
                except PymemoryError:
                    if await _dump(mem) != before:
                        defects.append(f"{param}={label}: failed but changed the store")
                except Exception as exc:  # what the fuzz is looking for
                    defects.append(f"{param}={label}: {_undocumented(exc)}")
                    await mem.close()
                    mem = None
                    continue
                else:  # it succeeded: the store may have changed; start the next case afresh
                    try:
                        await _still_usable(mem, caplog)
                    except Exception as exc:
                        defects.append(f"{param}={label}: accepted, then {_undocumented(exc)}")
                    await mem.close()
                    mem = None
                    continue
                try:
                    await _still_usable(mem, caplog, write=False)
                except Exception as exc:
                    defects.append(f"{param}={label}: refused, then {_undocumented(exc)}")
                    await mem.close()
                    mem = None
    finally:
        if mem is not None:
            await mem.close()
    assert not defects, f"Memory.{name}:\n" + "\n".join(defects)


async def test_hostile_arguments_to_open(tmp_path, monkeypatch, caplog):
    monkeypatch.chdir(tmp_path)
    defects: list[str] = []
    for param in _params("open", METHODS["open"]):
        for label, value in VARIANTS:
            kwargs = {"store": MapKv(), "clock": Clock(), "feedback_flush_s": 3600, param: value}
            try:
                mem = await Memory.open(**kwargs)
            except PymemoryError:
                continue
            except Exception as exc:
                defects.append(f"{param}={label}: {_undocumented(exc)}")
                continue
            try:
                await _still_usable(mem, caplog)
            except Exception as exc:
                defects.append(f"{param}={label}: accepted, then {_undocumented(exc)}")
            finally:
                try:
                    await mem.close()
                except Exception as exc:
                    defects.append(f"{param}={label}: accepted, then close: {_undocumented(exc)}")
    assert not defects, "Memory.open:\n" + "\n".join(defects)
    assert list(tmp_path.iterdir()) == []  # no value was taken for a file path


# --- named regressions (issue 30 and what the fuzz above found) ------------------------


@pytest.mark.parametrize(
    "kind",
    [10**5000, -(10**5000), 10**20, -1, 3.5, _deep_list(10_000)],
    ids=["10**5000", "-10**5000", "10**20", "-1", "3.5", "list depth 10000"],
)
async def test_feedback_of_any_kind_is_a_validation_error(memory, kind):
    item = await memory.add("Sam prefers tea")
    before = [line async for line in memory.export()]
    with pytest.raises(ValidationError, match="feedback must be one of") as err:
        await memory.feedback(item.id, kind)
    assert len(str(err.value)) < 200  # the value is shown cut, or described
    assert [line async for line in memory.export()] == before
    assert (await memory.get(item.id)).feedback == item.feedback


@pytest.mark.parametrize(
    "version",
    [10**5000, -(10**5000), 0, MAX_VERSION + 1],
    ids=["10**5000", "-10**5000", "0", "MAX_VERSION+1"],
)
async def test_delete_with_an_out_of_range_expected_version_is_a_validation_error(memory, version):
    item = await memory.add("Sam prefers tea")
    with pytest.raises(ValidationError, match="expected_version"):
        await memory.delete(item.id, expected_version=version)
    assert await memory.get(item.id) == item


@pytest.mark.parametrize(
    "store",
    [float("nan"), object(), b"memory.db", 10**5000, "a\udfffb"],
    ids=["nan", "object", "bytes", "10**5000", "lone surrogate"],
)
async def test_open_refuses_a_store_that_is_not_a_kv_or_a_path(store, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # before: str(store) was opened as a SQLite file here
    with pytest.raises(ValidationError, match="store"):
        await Memory.open(store)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "kwargs",
    [
        {"feedback_flush_s": float("nan")},  # asyncio.sleep(nan) returns at once: a busy loop
        {"sweep_interval_s": 10**5000},  # float() of it raised OverflowError
        {"auto_archive_days": float("nan")},
        {"clock": 1_780_000_000_000},  # not callable: failed at the first write
        {"encoder": "rules"},  # str has .encode(): failed inside add()
        {"token_counter": object()},  # failed in stats() and retrieve()
        {"refiner": object()},  # failed in the background, logged for every add()
        {"embedder": object()},  # AttributeError
        {"vector_dtype": 10**5000},  # the message raised ValueError
    ],
    ids=lambda kw: next(iter(kw)),
)
async def test_open_refuses_a_collaborator_or_setting_it_cannot_use(kwargs):
    with pytest.raises(ValidationError, match=next(iter(kwargs))):
        await Memory.open(MapKv(), **kwargs)


async def test_attach_refuses_what_is_not_a_refiner_or_an_embedder(memory):
    with pytest.raises(ValidationError, match="refiner"):
        await memory.attach_refiner(object())  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="embedder"):
        await memory.attach_embedder("minilm")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="vector_dtype"):
        await memory.attach_embedder(HashingEmbedder(dim=8), vector_dtype=_deep_dict(10_000))
    assert memory.refiner is None and memory.embedder is None
    await memory.attach_refiner(NullRefiner())  # a real one still attaches
    await memory.attach_embedder(HashingEmbedder(dim=8), vector_dtype="float16")
