"""The KV conformance suite: the checks every KvBackend must pass.

It ships inside the package so that any runtime can run it against its own backend,
e.g. IndexedDbKv inside Pyodide in a browser::

    results = await run_conformance(make_empty_store)
    assert all(r.ok for r in results), [r for r in results if not r.ok]

Each check receives a fresh, empty, open backend from the factory and closes it itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ..errors import StoreClosedError, ValidationError
from .base import KvBackend, Writes, iter_prefix

Factory = Callable[[], Awaitable[KvBackend]]
Check = Callable[[KvBackend], Awaitable[None]]
CHECKS: dict[str, Check] = {}


def check(fn: Check) -> Check:
    CHECKS[fn.__name__.removeprefix("check_")] = fn
    return fn


@dataclass(frozen=True)
class CheckResult:
    name: str
    ok: bool
    error: str = ""


async def run_check(name: str, factory: Factory) -> CheckResult:
    kv = await factory()
    try:
        await CHECKS[name](kv)
    except Exception:
        return CheckResult(name, False, traceback.format_exc())
    finally:
        with contextlib.suppress(Exception):
            await kv.close()
    return CheckResult(name, True)


async def run_conformance(factory: Factory) -> list[CheckResult]:
    """Run every check, each on a fresh store from ``factory``."""
    return [await run_check(name, factory) for name in CHECKS]


async def _raises(exc: type[BaseException], awaitable: Awaitable[object]) -> None:
    try:
        await awaitable
    except exc:
        return
    raise AssertionError(f"expected {exc.__name__}")


async def _all(kv: KvBackend, prefix: str = "") -> dict[str, bytes]:
    return dict(await kv.scan(prefix))


@check
async def check_get_missing(kv: KvBackend) -> None:
    assert await kv.get("nope") is None
    assert await kv.get_many(["a", "b"]) == [None, None]
    assert await kv.get_many([]) == []


@check
async def check_roundtrip_bytes(kv: KvBackend) -> None:
    values = {"empty": b"", "binary": bytes(range(256)), "text": "héllo 世界 🙂".encode()}
    await kv.put_many(list(values.items()))
    for key, value in values.items():
        got = await kv.get(key)
        assert got == value, (key, got)
        assert isinstance(got, bytes)


@check
async def check_overwrite(kv: KvBackend) -> None:
    await kv.put_many([("k", b"1")])
    await kv.put_many([("k", b"2")])
    assert await kv.get("k") == b"2"
    assert await _all(kv) == {"k": b"2"}


@check
async def check_get_many_order(kv: KvBackend) -> None:
    await kv.put_many([("a", b"A"), ("c", b"C")])
    assert await kv.get_many(["c", "b", "a", "c"]) == [b"C", None, b"A", b"C"]


@check
async def check_last_duplicate_wins(kv: KvBackend) -> None:
    await kv.put_many([("k", b"1"), ("k", b"2"), ("j", b"x")])
    assert await _all(kv) == {"j": b"x", "k": b"2"}


@check
async def check_put_with_deletes(kv: KvBackend) -> None:
    await kv.put_many([("a", b"1"), ("b", b"2"), ("c", b"3")])
    await kv.put_many([("d", b"4"), ("b", b"new")], deletes=["a", "b", "zz"])
    assert await _all(kv) == {"b": b"new", "c": b"3", "d": b"4"}


@check
async def check_delete_many(kv: KvBackend) -> None:
    await kv.put_many([("a", b"1"), ("b", b"2")])
    await kv.delete_many(["a", "missing"])
    await kv.delete_many([])
    assert await _all(kv) == {"b": b"2"}


@check
async def check_scan_prefix_bounds(kv: KvBackend) -> None:
    keys = ["mem:", "mem:a", "mem:b", "mem;", "me", "mem", "mem:\U0010ffff", "arc:a", "mem:a:1"]
    await kv.put_many([(k, k.encode()) for k in keys])
    assert [k for k, _ in await kv.scan("mem:")] == [
        "mem:", "mem:a", "mem:a:1", "mem:b", "mem:\U0010ffff",
    ]  # fmt: skip
    assert [k for k, _ in await kv.scan("mem:a")] == ["mem:a", "mem:a:1"]
    assert [k for k, _ in await kv.scan("zzz")] == []
    assert [k for k, _ in await kv.scan("")] == sorted(keys)
    assert all(v == k.encode() for k, v in await kv.scan(""))


@check
async def check_scan_code_point_order(kv: KvBackend) -> None:
    # Code point order, not UTF-16 order: U+FFFF sorts before U+10000.
    keys = ["p:\uffff", "p:\U00010000", "p:Z", "p:a", "p:é", "p:中", "p:10", "p:9", "p:\u00ff"]
    await kv.put_many([(k, b"") for k in keys])
    assert [k for k, _ in await kv.scan("p:")] == sorted(keys)


@check
async def check_scan_pagination(kv: KvBackend) -> None:
    keys = [f"n:{i:04d}" for i in range(250)]
    await kv.put_many([(k, str(i).encode()) for i, k in enumerate(keys)])
    page = await kv.scan("n:", limit=100)
    assert [k for k, _ in page] == keys[:100]
    page = await kv.scan("n:", start_after=keys[99], limit=100)
    assert [k for k, _ in page] == keys[100:200]
    page = await kv.scan("n:", start_after="n:0199x")
    assert [k for k, _ in page] == keys[200:]
    assert [k async for k, _ in iter_prefix(kv, "n:", page_size=7)] == keys


@check
async def check_scan_after_delete(kv: KvBackend) -> None:
    await kv.put_many([(f"x:{i}", b"v") for i in range(10)])
    await kv.delete_many([f"x:{i}" for i in range(0, 10, 2)])
    assert [k for k, _ in await kv.scan("x:")] == [f"x:{i}" for i in range(1, 10, 2)]


@check
async def check_bad_batch_writes_nothing(kv: KvBackend) -> None:
    await kv.put_many([("keep", b"1")])
    bad_batches: list[list] = [
        [("a", b"1"), (7, b"2")],
        [("a", b"1"), ("b", "not bytes")],
        [("a", b"1"), ("", b"2")],
        [("a", b"1"), ("nul\x00", b"2")],
        [("a", b"1"), ("\ud800", b"2")],
        [("a", b"1"), ("b",)],
    ]
    for batch in bad_batches:
        await _raises(ValidationError, kv.put_many(batch))
    await _raises(ValidationError, kv.put_many([("a", b"1")], deletes=[None]))  # type: ignore[list-item]
    await _raises(ValidationError, kv.delete_many(["keep", 5]))  # type: ignore[list-item]
    await _raises(ValidationError, kv.get(5))  # type: ignore[arg-type]
    assert await _all(kv) == {"keep": b"1"}


@check
async def check_large_batch_and_value(kv: KvBackend) -> None:
    big = bytes(range(256)) * 4096  # 1 MiB
    await kv.put_many([(f"b:{i:05d}", i.to_bytes(4, "big")) for i in range(5000)] + [("big", big)])
    assert await kv.get("big") == big
    rows = await kv.scan("b:")
    assert len(rows) == 5000
    assert rows[4999] == ("b:04999", (4999).to_bytes(4, "big"))


@check
async def check_concurrent_writes(kv: KvBackend) -> None:
    async def writer(w: int) -> None:
        for i in range(20):
            await kv.put_many([(f"w{w}:{i:02d}", b"%d" % i)])

    await asyncio.gather(*(writer(w) for w in range(5)))
    assert len(await kv.scan("w")) == 100


@check
async def check_transact_reads_then_writes(kv: KvBackend) -> None:
    await kv.put_many(
        [("a", b"1"), ("p:\U00010000", b""), ("p:\uffff", b""), ("p:", b""), ("q", b"")]
    )
    seen: list[object] = []

    def fn(values: list[bytes | None], listed: list[list[str]]) -> Writes:
        seen.extend([values, listed])
        return Writes([("a", b"2"), ("n", b"new"), ("q", b"kept")], ["q", "p:", "zz"], "done")

    result = await kv.transact(["a", "missing", "a"], fn, list_prefixes=["p:", "zz", ""])
    assert result == "done"
    assert seen[0] == [b"1", None, b"1"], seen
    everything = ["a", "p:", "p:\uffff", "p:\U00010000", "q"]
    assert seen[1] == [["p:", "p:\uffff", "p:\U00010000"], [], everything], seen
    assert await _all(kv) == {
        "a": b"2", "n": b"new", "p:\U00010000": b"", "p:\uffff": b"", "q": b"kept",
    }  # fmt: skip
    assert await kv.transact([], lambda v, listed: Writes(result=(v, listed))) == ([], [])


class _Refused(Exception):
    pass


@check
async def check_transact_failure_writes_nothing(kv: KvBackend) -> None:
    await kv.put_many([("keep", b"1")])

    def refuse(values: list[bytes | None], listed: list[list[str]]) -> Writes:
        raise _Refused("no")

    await _raises(_Refused, kv.transact(["keep"], refuse))
    for bad in (
        Writes([("a", b"1"), ("", b"2")]),
        Writes([("a", b"1"), ("b", "text")]),  # type: ignore[list-item]
        Writes([("a", b"1")], [None]),  # type: ignore[list-item]
        Writes([("a", b"1")], "keep"),  # type: ignore[arg-type]
        ("a", b"1"),
    ):
        await _raises(ValidationError, kv.transact(["keep"], lambda v, _l, w=bad: w))
    await _raises(ValidationError, kv.transact([7], lambda v, _l: Writes()))  # type: ignore[list-item]
    await _raises(ValidationError, kv.transact([], lambda v, _l: Writes(), list_prefixes=[7]))  # type: ignore[list-item]
    assert await _all(kv) == {"keep": b"1"}


@check
async def check_transact_is_atomic(kv: KvBackend) -> None:
    """Concurrent read-modify-writes of one counter lose no increment."""

    def increment(values: list[bytes | None], listed: list[list[str]]) -> Writes:
        n = int(values[0] or b"0") + 1
        return Writes([("counter", b"%d" % n), (f"log:{n:03d}", b"")], result=n)

    async def writer(w: int) -> list[int]:
        got = []
        for i in range(10):
            got.append(await kv.transact(["counter"], increment))
            await kv.put_many([(f"other:{w}:{i}", b"")])
        return got

    results = await asyncio.gather(*(writer(w) for w in range(4)))
    assert sorted(n for r in results for n in r) == list(range(1, 41))
    assert await kv.get("counter") == b"40"
    assert len(await kv.scan("log:")) == 40 and len(await kv.scan("other:")) == 40


@check
async def check_purge_keeps_live_data(kv: KvBackend) -> None:
    await kv.put_many([("a", b"1"), ("b", b"secret")])
    await kv.delete_many(["b"])
    await kv.purge()
    await kv.purge()
    assert await _all(kv) == {"a": b"1"}


@check
async def check_close(kv: KvBackend) -> None:
    await kv.put_many([("a", b"1")])
    await kv.close()
    await kv.close()  # idempotent
    await _raises(StoreClosedError, kv.get("a"))
    await _raises(StoreClosedError, kv.put_many([("b", b"2")]))
    await _raises(StoreClosedError, kv.scan(""))
    await _raises(StoreClosedError, kv.transact(["a"], lambda v, _l: Writes()))
    await _raises(StoreClosedError, kv.purge())
