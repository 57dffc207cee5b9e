"""The LangGraph store itself: :class:`PymemoryStore`."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    get_text_at_path,
)

from ...errors import ValidationError, shown
from ...item import dumps, loads
from ...models.embedding import Embedder, calibrated, check_embeddings, embed_queries
from ...retrieval.analyzer import analyze
from ...retrieval.bm25 import Bm25Index
from ...retrieval.fusion import lexical_share, score_fusion
from ...retrieval.strategies import FUSION_DENSE, FUSION_LEXICAL, FUSION_POWER
from ...storage.base import KvBackend, Writes, iter_prefix
from ...storage.schema import ensure_schema
from .checks import (
    ITEM_PREFIX,
    MINUTE_MS,
    SEQ_KEY,
    TTL_CONFIG_KEYS,
    VECTOR_PREFIX,
    check_filter,
    check_int,
    check_item_key,
    check_namespace,
    check_paths,
    check_ttl_minutes,
    check_value,
    item_suffix,
    namespace_text,
    parse_item_key,
)
from .filters import (
    namespace_matches,
    value_matches,
)
from .records import (
    Record,
    as_datetime,
    decode_vectors,
    encode_vectors,
    search_item,
)

# --- the batch plan ----------------------------------------------------------------------


@dataclass
class _Put:
    namespace: tuple[str, ...]
    key: str
    suffix: str
    value: dict[str, Any] | None
    index: list[str] | bool | None
    ttl: float | None
    vectors: bytes | None = None


@dataclass
class _Touched:
    """Keys a batch's reads want rewritten: TTLs to restart, expired records to delete."""

    refresh: dict[str, None] = field(default_factory=dict)
    expired: dict[str, None] = field(default_factory=dict)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class PymemoryStore(BaseStore):
    """LangGraph's ``BaseStore`` over a pymemory :class:`~pymemory.storage.KvBackend`.

    ``embedder`` (a pymemory :class:`~pymemory.models.embedding.Embedder`, e.g.
    ``await pymemory.models.load_minilm()``) turns on semantic search beside the lexical
    one. ``fields`` are the JSON paths whose text is indexed (LangGraph's
    ``IndexConfig.fields``; default ``["$"]``, the whole value); a put's ``index=``
    overrides them for that item. ``ttl`` is LangGraph's ``TTLConfig``
    (``default_ttl`` and ``refresh_on_read``; expired items are always omitted, so
    ``omit_expired`` may only be True; there is no sweeper thread: call
    :meth:`sweep_ttl` when you want expired records gone). ``clock`` returns epoch
    milliseconds (inject one in tests).
    """

    supports_ttl: bool = True

    def __init__(
        self,
        kv: KvBackend,
        *,
        embedder: Embedder | None = None,
        fields: Sequence[str] | None = None,
        ttl: TTLConfig | None = None,
        clock: Callable[[], int] = _now_ms,
    ) -> None:
        if not all(hasattr(kv, m) for m in ("get_many", "transact", "scan")):
            raise ValidationError(f"kv must be a pymemory KvBackend, got {type(kv).__name__}")
        if embedder is not None and not isinstance(embedder, Embedder):
            raise ValidationError(
                f"embedder must be a pymemory Embedder (name, dim, async embed), "
                f"got {type(embedder).__name__}"
            )
        if not callable(clock):
            raise ValidationError("clock must be a callable returning epoch milliseconds")
        self.kv = kv
        self.embedder = embedder
        self.fields = check_paths(["$"] if fields is None else fields, "fields")
        self.ttl_config = self._check_ttl_config(ttl)
        self._clock = clock
        self._schema_ok = False
        self._loop: asyncio.AbstractEventLoop | None = None

    @staticmethod
    def _check_ttl_config(ttl: object) -> TTLConfig | None:
        if ttl is None:
            return None
        if not isinstance(ttl, Mapping):
            raise ValidationError(f"ttl must be a TTLConfig dict, got {type(ttl).__name__}")
        unknown = set(ttl) - TTL_CONFIG_KEYS
        if unknown:
            raise ValidationError(f"unknown TTLConfig keys: {', '.join(sorted(map(str, unknown)))}")
        if not isinstance(ttl.get("refresh_on_read", True), bool):
            raise ValidationError("ttl['refresh_on_read'] must be a bool")
        if ttl.get("omit_expired", True) is not True:
            raise ValidationError(
                "pymemory never returns expired items: omit_expired may only be True"
            )
        default = check_ttl_minutes(ttl.get("default_ttl"))
        sweep = ttl.get("sweep_interval_minutes")
        if sweep is not None:
            check_int(sweep, "ttl['sweep_interval_minutes']", low=1)
        config: dict[str, Any] = dict(ttl)
        if "default_ttl" in config:
            config["default_ttl"] = default
        return config  # type: ignore[return-value]

    def __repr__(self) -> str:
        model = self.embedder.name if self.embedder is not None else "lexical only"
        return f"PymemoryStore({type(self.kv).__name__}, {model})"

    # --- the two entry points LangGraph calls ------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` synchronously (see the module docstring for which event loop)."""
        ops = list(ops)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise asyncio.InvalidStateError(
                "PymemoryStore's synchronous methods cannot run on the thread of a running "
                "event loop; use the async ones there (aget, aput, asearch, ...)"
            )
        loop = self._loop
        if loop is not None and loop.is_running() and not loop.is_closed():
            return asyncio.run_coroutine_threadsafe(self._abatch(ops), loop).result()
        return asyncio.run(self._abatch(ops))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops``: reads first (they see the store as it was), then every write of
        the batch in one KV transaction. Results are in the order of ``ops``. Every op
        is checked before anything is read or written."""
        self._loop = asyncio.get_running_loop()
        return await self._abatch(list(ops))

    # --- the batch ----------------------------------------------------------------------

    async def _abatch(self, ops: list[Op]) -> list[Result]:
        puts: dict[str, _Put] = {}
        for op in ops:
            self._check_op(op, puts)
        if not self._schema_ok:
            await ensure_schema(self.kv)
            self._schema_ok = True
        now = self._now()
        touched = _Touched()
        results: list[Result] = [None] * len(ops)
        gets = [(i, op) for i, op in enumerate(ops) if isinstance(op, GetOp)]
        if gets:
            await self._get_all(gets, results, now, touched)
        for i, op in enumerate(ops):
            if isinstance(op, SearchOp):
                results[i] = await self._search(op, now, touched)
            elif isinstance(op, ListNamespacesOp):
                results[i] = await self._list_namespaces(op, now)
        if puts or touched.refresh or touched.expired:
            await self._write(list(puts.values()), touched, now)
        return results

    def _check_op(self, op: object, puts: dict[str, _Put]) -> None:
        if isinstance(op, GetOp):
            item_suffix(check_namespace(op.namespace), check_item_key(op.key))
        elif isinstance(op, PutOp):
            ns = check_namespace(op.namespace, allow_empty=False)
            key = check_item_key(op.key)
            value = None if op.value is None else check_value(op.value)
            index = op.index
            if index is not None and index is not False:
                index = check_paths(index, "index")
            ttl = check_ttl_minutes(op.ttl)
            suffix = item_suffix(ns, key)
            puts.pop(suffix, None)  # the last put of a key wins, as in LangGraph's stores
            puts[suffix] = _Put(ns, key, suffix, value, index, ttl)
        elif isinstance(op, SearchOp):
            check_namespace(op.namespace_prefix)
            check_filter(op.filter)
            check_int(op.limit, "limit", low=0)
            check_int(op.offset, "offset", low=0)
            if op.query is not None and not isinstance(op.query, str):
                raise ValidationError(f"query must be a string or None, got {shown(op.query)}")
        elif isinstance(op, ListNamespacesOp):
            for cond in op.match_conditions or ():
                if getattr(cond, "match_type", None) not in ("prefix", "suffix"):
                    raise ValidationError(
                        f"match_type must be 'prefix' or 'suffix', got {shown(cond)}"
                    )
                check_namespace(cond.path)
            if op.max_depth is not None:
                check_int(op.max_depth, "max_depth", low=1)
            check_int(op.limit, "limit", low=0)
            check_int(op.offset, "offset", low=0)
        else:
            raise ValidationError(f"Unknown operation type: {type(op).__name__}")

    def _now(self) -> int:
        now = self._clock()
        if isinstance(now, bool) or not isinstance(now, int) or now < 0:
            raise ValidationError(f"clock() must return an int of epoch ms, got {shown(now)}")
        return now

    # --- reads --------------------------------------------------------------------------

    async def _get_all(
        self, gets: list[tuple[int, GetOp]], results: list[Result], now: int, touched: _Touched
    ) -> None:
        keys = [ITEM_PREFIX + item_suffix(tuple(op.namespace), op.key) for _, op in gets]
        raws = await self.kv.get_many(keys)
        for (i, op), key, raw in zip(gets, keys, raws, strict=True):
            if raw is None:
                continue
            rec = Record.decode(raw, key)
            if rec.expired(now):
                touched.expired[key] = None
                continue
            if op.refresh_ttl and rec.ttl is not None:
                touched.refresh[key] = None
            results[i] = Item(
                value=rec.value,
                key=op.key,
                namespace=tuple(op.namespace),
                created_at=as_datetime(rec.created_at),
                updated_at=as_datetime(rec.updated_at),
            )

    async def _search(self, op: SearchOp, now: int, touched: _Touched) -> list[SearchItem]:
        flt = check_filter(op.filter)
        prefix = ITEM_PREFIX + namespace_text(tuple(op.namespace_prefix))
        rows: list[tuple[str, Record]] = []
        async for key, raw in iter_prefix(self.kv, prefix):
            rec = Record.decode(raw, key)
            if rec.expired(now):
                touched.expired[key] = None
            elif value_matches(rec.value, flt):
                rows.append((key, rec))
        scores: list[float | None] = [None] * len(rows)
        if op.query:
            scores = await self._rank(op.query, rows)
            order = sorted(
                range(len(rows)),
                key=lambda i: (scores[i] is None, -(scores[i] or 0.0), rows[i][1].seq),
            )
        else:
            order = sorted(range(len(rows)), key=lambda i: rows[i][1].seq)
        page = order[op.offset : op.offset + op.limit]
        out = []
        for i in page:
            key, rec = rows[i]
            if op.refresh_ttl and rec.ttl is not None:
                touched.refresh[key] = None
            namespace, item_key = parse_item_key(key)
            out.append(search_item(namespace, item_key, rec, scores[i]))
        return out

    def _texts(self, rec: Record | _Put) -> list[str] | None:
        """The item's indexed texts (None: put with ``index=False``)."""
        if rec.index is False or rec.value is None:
            return None
        paths = rec.index if isinstance(rec.index, list) else self.fields
        texts: list[str] = []
        for path in paths:
            texts.extend(t for t in get_text_at_path(rec.value, path) if t)
        return texts

    async def _rank(self, query: str, rows: list[tuple[str, Record]]) -> list[float | None]:
        """Relevance of each row to ``query``: lexical share, plus the dense part when an
        embedder is attached; None for rows with nothing indexed."""
        texts = [self._texts(rec) for _, rec in rows]
        ranked = [i for i, t in enumerate(texts) if t is not None]
        out: list[float | None] = [None] * len(rows)
        if not ranked:
            return out
        terms = analyze(query)
        index = Bm25Index()
        for slot, i in enumerate(ranked):
            index.add(slot, analyze(" ".join(texts[i] or ())))
        bm25 = np.zeros(len(ranked))
        slots, raw = index.scores(terms)
        bm25[slots] = raw
        share = lexical_share(bm25, index.idf_mass(terms))
        cosine = np.zeros(len(ranked))
        if self.embedder is not None:
            cosine = await self._cosines(query, [rows[i][0] for i in ranked])
        dense_w = FUSION_DENSE if self.embedder is not None else 0.0
        dense, lexical = score_fusion(
            cosine, share, lexical=FUSION_LEXICAL, dense=dense_w, power=FUSION_POWER
        )
        for pos, i in enumerate(ranked):
            out[i] = float(dense[pos] + lexical[pos])
        return out

    async def _cosines(self, query: str, item_keys: list[str]) -> np.ndarray:
        embedder = self.embedder
        assert embedder is not None
        q = check_embeddings(await embed_queries(embedder, [query]), 1, embedder.dim)[0]
        q = q.astype(np.float64)
        norm = float(np.linalg.norm(q))
        out = np.zeros(len(item_keys))
        if norm == 0.0:
            return out
        q /= norm
        vector_keys = [VECTOR_PREFIX + k[len(ITEM_PREFIX) :] for k in item_keys]
        raws = await self.kv.get_many(vector_keys)
        for pos, raw in enumerate(raws):
            rows = None if raw is None else decode_vectors(raw, embedder.name, embedder.dim)
            if rows is not None:
                # An item is as close as its closest text.
                out[pos] = float(calibrated(embedder, np.max(rows @ q)))
        return out

    async def _list_namespaces(self, op: ListNamespacesOp, now: int) -> list[tuple[str, ...]]:
        conditions = [(c.match_type, tuple(c.path)) for c in op.match_conditions or ()]
        found: set[tuple[str, ...]] = set()
        async for key, raw in iter_prefix(self.kv, ITEM_PREFIX):
            namespace, _ = parse_item_key(key)
            if namespace in found or Record.decode(raw, key).expired(now):
                continue
            found.add(namespace)
        names = [ns for ns in found if all(namespace_matches(ns, t, p) for t, p in conditions)]
        if op.max_depth is not None:
            names = list({ns[: op.max_depth] for ns in names})
        names.sort()
        return names[op.offset : op.offset + op.limit]

    # --- writes -------------------------------------------------------------------------

    async def _write(self, puts: list[_Put], touched: _Touched, now: int) -> None:
        if self.embedder is not None:
            await self._embed(puts)
        by_key = {ITEM_PREFIX + p.suffix: p for p in puts}
        refresh = [k for k in touched.refresh if k not in by_key]
        expired = [k for k in touched.expired if k not in by_key and k not in touched.refresh]
        keys = [SEQ_KEY, *by_key, *refresh, *expired]

        def write(values: list[bytes | None], _listed: list[list[str]]) -> Writes:
            raw_seq = values[0]
            seq = 0 if raw_seq is None else int(loads(raw_seq)["seq"])
            start = seq
            current = dict(zip(keys[1:], values[1:], strict=True))
            writes: list[tuple[str, bytes]] = []
            deletes: list[str] = []
            for key, put in by_key.items():
                vector_key = VECTOR_PREFIX + put.suffix
                raw = current[key]
                old = None if raw is None else Record.decode(raw, key)
                if old is not None and old.expired(now):
                    old = None
                if put.value is None:
                    deletes += [key, vector_key]
                    continue
                if old is None:
                    seq += 1
                rec = Record(
                    value=put.value,
                    created_at=now if old is None else old.created_at,
                    updated_at=now,
                    seq=seq if old is None else old.seq,
                    ttl=put.ttl,
                    expires_at=None if put.ttl is None else now + round(put.ttl * MINUTE_MS),
                    index=put.index,
                )
                writes.append((key, rec.encode()))
                if put.vectors is not None:
                    writes.append((vector_key, put.vectors))
                else:
                    deletes.append(vector_key)
            for key in refresh:
                raw = current[key]
                rec = None if raw is None else Record.decode(raw, key)
                if rec is not None and not rec.expired(now) and rec.ttl is not None:
                    expires = now + round(rec.ttl * MINUTE_MS)
                    writes.append((key, replace(rec, expires_at=expires).encode()))
            for key in expired:
                raw = current[key]
                if raw is not None and Record.decode(raw, key).expired(now):
                    deletes += [key, VECTOR_PREFIX + key[len(ITEM_PREFIX) :]]
            if seq != start:
                writes.append((SEQ_KEY, dumps({"seq": seq}).encode()))
            return Writes(writes, deletes)

        await self.kv.transact(keys, write)

    async def _embed(self, puts: list[_Put]) -> None:
        embedder = self.embedder
        assert embedder is not None
        spans: list[tuple[_Put, int, int]] = []
        texts: list[str] = []
        for put in puts:
            item_texts = self._texts(put) or []
            if item_texts:
                spans.append((put, len(texts), len(texts) + len(item_texts)))
                texts.extend(item_texts)
        if not texts:
            return
        vectors = check_embeddings(await embedder.embed(texts), len(texts), embedder.dim)
        for put, start, end in spans:
            put.vectors = encode_vectors(embedder.name, vectors[start:end])

    # --- TTL ----------------------------------------------------------------------------

    async def asweep_ttl(self) -> int:
        """Delete every expired item now; returns how many. Each deletion re-checks the
        record in its transaction, so an item another writer just renewed survives."""
        if not self._schema_ok:
            await ensure_schema(self.kv)
            self._schema_ok = True
        now = self._now()
        doomed = [
            key
            async for key, raw in iter_prefix(self.kv, ITEM_PREFIX)
            if Record.decode(raw, key).expired(now)
        ]
        removed = 0
        for start in range(0, len(doomed), 500):
            chunk = doomed[start : start + 500]

            def sweep(values: list[bytes | None], _listed: list[list[str]], chunk=chunk) -> Writes:
                gone = [
                    k
                    for k, raw in zip(chunk, values, strict=True)
                    if raw is not None and Record.decode(raw, k).expired(now)
                ]
                vectors = [VECTOR_PREFIX + k[len(ITEM_PREFIX) :] for k in gone]
                return Writes(deletes=gone + vectors, result=len(gone))

            removed += await self.kv.transact(chunk, sweep)
        return removed

    def sweep_ttl(self) -> int:
        """:meth:`asweep_ttl`, synchronously (not from a running event loop's thread)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise asyncio.InvalidStateError("use `await store.asweep_ttl()` inside a coroutine")
        loop = self._loop
        if loop is not None and loop.is_running() and not loop.is_closed():
            return asyncio.run_coroutine_threadsafe(self.asweep_ttl(), loop).result()
        return asyncio.run(self.asweep_ttl())
