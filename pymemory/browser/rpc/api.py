"""The JSON API the JavaScript client speaks, independent of where it runs.

The worker calls ``await api.call(db, method, params_json)`` and gets back a JSON string:
``{"ok": true, "result": ...}`` or ``{"ok": false, "error": {"code": ..., "message": ...}}``
(:mod:`.envelope`). The methods and their parameters are listed in :mod:`.methods`;
parameters and results use the JS naming (camelCase); item metadata is passed through
untouched. Nothing here imports a browser module, so it is tested in CPython.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from typing import Any

from ...errors import PymemoryError, SchemaError, ValidationError, WrongKeyError, shown
from ...memory import ImportResult, Memory
from ...models.embedding import EmbedderUnavailableError, HashingEmbedder
from ...storage import KvBackend
from ...storage.encrypted import KEYRING_KEY, EncryptedKv
from .envelope import error_answer, error_js, ok_answer, parse_params
from .methods import ADD_FIELDS, METHODS, handler_name
from .params import check_params, py_names
from .sync_rpc import (
    TransportFactory,
    auth_from_js,
    check_url,
    first_pull,
    result_js,
    timed,
    timeout_s,
)
from .unlock import Unlock
from .wire import archived_js, item_js, retrieval_js, stats_js

log = logging.getLogger("pymemory")

KvFactory = Callable[[str], Awaitable[KvBackend]]
Progress = Callable[[int, int], object]
Handler = Callable[..., Awaitable[Any]]

#: The Unlock of the call being served (None: the call brought no key).
_UNLOCK: ContextVar[Unlock | None] = ContextVar("pymemory_unlock", default=None)

#: Methods that never open the database themselves: ``sync`` pulls a new encrypted
#: device's key record before it opens; ``syncStatus`` is polled during that pull.
NO_OPEN = frozenset({"sync", "syncStatus"})

_ENCRYPTED = (
    "database {db!r} is encrypted: open it with its passphrase or key "
    "(createAgentMemory({{ encryption }}))"
)


class RpcApi:
    """Memories by database name, opened on first use, behind one ``call`` entry point."""

    #: Make the local models on first use (None: the local models on onnxruntime in
    #: CPython; the browser sets factories over onnxruntime-web). ``embedder_factory``
    #: takes the embedder's name (a key of ``pymemory.models.LOCAL_EMBEDDERS``).
    embedder_factory: Callable[[str], Awaitable[Any]] | None = None
    refiner_factory: Callable[[], Awaitable[Any]] | None = None

    #: Encrypted databases: ``locked_kv_factory(db, unlock)`` opens database ``db`` as an
    #: EncryptedKv unlocked with ``unlock`` (WrongKeyError if it does not open it; nothing
    #: written). None: this runtime has no encryption, and a call with a key is refused.
    locked_kv_factory: Callable[[str, Unlock], Awaitable[KvBackend]] | None = None
    #: The Unlock of calls that bring none (e.g. ``create_api(passphrase=...)``).
    default_unlock: Unlock | None = None
    #: The sync replicator's HTTP for this runtime (None: httpx; the browser: fetch).
    sync_transport: TransportFactory | None = None

    def __init__(self, kv_factory: KvFactory, **memory_options: Any) -> None:
        self._kv_factory = kv_factory
        self._memory_options = memory_options
        self._memories: dict[str, Memory] = {}
        # db -> the ids of the Unlocks admitted to it; None: opened without a key
        self._unlocked: dict[str, set[str] | None] = {}
        self._opening: dict[str, asyncio.Lock] = {}
        self._embedders: dict[str, Any] = {}
        self._refiner: Any = None
        self._live: dict[tuple[str, str], Any] = {}  # (db, url) -> its LiveSync

    def parse_unlock(self, value: Any) -> Unlock:
        """The Unlock of a call's ``unlock`` argument: an Unlock or a mapping of its fields
        (a runtime replaces this method to read its own form, e.g. the client's JS object)."""
        if isinstance(value, Unlock):
            return value
        if not isinstance(value, Mapping):
            raise ValidationError("encryption must be an object")
        return Unlock.from_fields(value)

    async def call(
        self,
        db: str,
        method: str,
        params_json: str = "{}",
        progress: Progress | None = None,
        unlock: Any = None,
    ) -> str:
        """Serve one call. ``unlock``: the calling client's key (its ``encryption``
        option, see :class:`Unlock`); every call of a client of an encrypted database
        brings it, so a worker that takes over after another tab's can open the database."""
        reset = None
        try:
            if not isinstance(db, str) or not db or len(db) > 128:
                raise ValidationError("dbName must be a non-empty string of at most 128 chars")
            key = self.default_unlock if unlock is None else self.parse_unlock(unlock)
            reset = _UNLOCK.set(key)
            spec = METHODS.get(method) if isinstance(method, str) else None
            handler = None if spec is None else self.handler(method)
            if spec is None or handler is None:
                return error_answer("unknown_method", f"unknown method {shown(method)}")
            if (key is not None or db in self._memories) and method not in NO_OPEN:
                await self.memory(db)  # the call's key opens or is checked, even for close
            params = spec.check(parse_params(params_json, spec))
            if spec.progress:
                result = await handler(db, params, progress)
            else:
                result = await handler(db, params)
            return ok_answer(method, result)
        except PymemoryError as exc:
            return error_answer(exc.code, str(exc), getattr(exc, "retryable", None))
        except Exception as exc:  # a bug, not bad input: report it, keep the worker alive
            log.exception("internal error in %s", method)
            return error_answer("internal", f"{type(exc).__name__}: {exc}")
        finally:
            if reset is not None:
                _UNLOCK.reset(reset)

    def handler(self, method: str) -> Handler | None:
        """What serves ``method`` of :data:`~.methods.METHODS` (None: nothing here)."""
        if "." not in method:
            return getattr(self, handler_name(method), None)
        # Imported on first use: the agent primitives are ~15% of the worker's Python
        # imports at boot, and most pages never call them.
        from .agent_api import agent_rpc

        return agent_rpc(self).handler(method)  # blocks.*, tools.*, observer.*, ...

    async def memory(self, db: str) -> Memory:
        """The Memory of database ``db``, opened on first use, for the call being served:
        an encrypted database needs the call's key (the first call of each client is
        checked against the store's key record; WrongKeyError, nothing written), a plain
        one no key."""
        unlock = _UNLOCK.get()
        memory = self._memories.get(db)
        if memory is not None and self._admitted(db, unlock):
            return memory
        lock = self._opening.setdefault(db, asyncio.Lock())
        async with lock:  # one open (or key check) of a database at a time
            memory = self._memories.get(db)
            if memory is None:
                memory = await self._open(db, unlock)
                self._memories[db] = memory
                self._unlocked[db] = None if unlock is None else {unlock.id}
                memory.listeners.append(lambda kind, item_id: self._changed(db, kind, item_id))
            elif not self._admitted(db, unlock):
                await self._check_unlock(db, unlock)
        return memory

    def _admitted(self, db: str, unlock: Unlock | None) -> bool:
        ids = self._unlocked.get(db)
        if ids is None:  # opened without a key
            return unlock is None
        return unlock is not None and unlock.id in ids

    async def _open(self, db: str, unlock: Unlock | None) -> Memory:
        if unlock is None:
            kv = await self._kv_factory(db)
            try:
                if not isinstance(kv, EncryptedKv) and await kv.get(KEYRING_KEY) is not None:
                    raise WrongKeyError(_ENCRYPTED.format(db=db))
            except BaseException:
                await kv.close()
                raise
        else:
            kv = await self._locked_kv(db, unlock)
        try:
            memory = await Memory.open(kv, **self._memory_options)
        except BaseException:
            await kv.close()
            raise
        if self.sync_transport is not None:
            memory.syncs.transport = self.sync_transport
        return memory

    async def _locked_kv(self, db: str, unlock: Unlock) -> KvBackend:
        if self.locked_kv_factory is None:
            raise ValidationError("this runtime does not open encrypted databases")
        return await self.locked_kv_factory(db, unlock)

    async def _check_unlock(self, db: str, unlock: Unlock | None) -> None:
        """Admit ``unlock`` to the open database ``db`` if it opens the store, else raise."""
        ids = self._unlocked.get(db)
        if unlock is None:
            raise WrongKeyError(_ENCRYPTED.format(db=db))
        if ids is None:
            raise SchemaError(
                f"database {db!r} is not encrypted (it is open here without a key): open it "
                "without encryption, or export it and import it into a new, encrypted database"
            )
        check = await self._locked_kv(db, unlock)  # a second handle: the key record decides
        await check.close()
        ids.add(unlock.id)

    #: Called as fn(db, kind, item_id) when background work changes a memory (the worker
    #: forwards it to pages, whose hooks then refresh).
    on_change: Callable[[str, str, str], object] | None = None

    def _changed(self, db: str, kind: str, item_id: str) -> None:
        if self.on_change is not None:
            self.on_change(db, kind, item_id)

    async def close_all(self) -> None:
        from .agent_api import close_agents

        await close_agents(self)
        for db in list(self._memories):
            await self._m_close(db, {})

    # --- methods (``_m_<name>``: :data:`~.methods.CORE_METHODS`; ``p`` is checked) --------

    async def _m_open(self, db: str, p: dict[str, Any]) -> dict[str, Any]:
        return stats_js(await (await self.memory(db)).stats())

    async def _m_close(self, db: str, p: dict[str, Any]) -> None:
        memory = self._memories.pop(db, None)
        self._unlocked.pop(db, None)
        for where in [k for k in self._live if k[0] == db]:
            del self._live[where]  # memory.close() stops them
        if memory is not None:
            await memory.close()
            await memory.kv.close()

    async def _m_addMemory(self, db: str, p: dict[str, Any]) -> dict[str, Any]:
        return item_js(await (await self.memory(db)).add(**py_names(p)))

    async def _m_addMany(self, db: str, p: dict[str, Any]) -> list[dict[str, Any]]:
        entries = p["entries"]
        if not isinstance(entries, list):
            raise ValidationError("entries must be a list of addMemory inputs")
        for i, e in enumerate(entries):
            if isinstance(e, dict):
                check_params(e, ADD_FIELDS)
            else:
                raise ValidationError(f"entry {i} must be an object")
        items = await (await self.memory(db)).add_many([py_names(e) for e in entries])
        return [item_js(i) for i in items]

    async def _m_get(self, db: str, p: dict[str, Any]) -> dict[str, Any]:
        return item_js(await (await self.memory(db)).get(p["id"]))

    async def _m_history(self, db: str, p: dict[str, Any]) -> list[dict[str, Any]]:
        versions = await (await self.memory(db)).history(p["id"])
        return [
            {
                "item": item_js(v.item),
                "validFrom": v.valid_from,
                "validTo": v.valid_to,
                "conflict": v.conflict,
            }
            for v in versions
        ]

    async def _m_update(self, db: str, p: dict[str, Any]) -> dict[str, Any]:
        item_id = p.pop("id")
        return item_js(await (await self.memory(db)).update(item_id, **py_names(p)))

    async def _m_delete(self, db: str, p: dict[str, Any]) -> None:
        memory = await self.memory(db)
        await memory.delete(p["id"], expected_version=p.get("expectedVersion"))

    async def _m_list(self, db: str, p: dict[str, Any]) -> list[dict[str, Any]]:
        return [item_js(i) for i in await (await self.memory(db)).list(**py_names(p))]

    async def _m_retrieve(self, db: str, p: dict[str, Any]) -> dict[str, Any]:
        result = await (await self.memory(db)).retrieve(
            p["query"],
            p.get("strategy"),
            max_items=p.get("maxItems", 5),
            max_tokens=p.get("maxTokens", 1500),
            trace=p.get("trace", False),
            condense=p.get("condense", True),
            inject=p.get("inject", "passages"),
        )
        return retrieval_js(result)

    async def _m_feedback(self, db: str, p: dict[str, Any]) -> None:
        memory = await self.memory(db)
        await memory.feedback(p["id"], p["kind"], durable=p.get("durable", True))

    async def _m_flush(self, db: str, p: dict[str, Any]) -> int:
        return await (await self.memory(db)).flush()

    async def _m_clear(self, db: str, p: dict[str, Any]) -> int:
        if "all" in p and not isinstance(p["all"], bool):
            raise ValidationError("all must be a boolean")
        return await (await self.memory(db)).clear(**py_names(p))

    async def _m_archiveOlderThan(self, db: str, p: dict[str, Any]) -> int:
        keep = p.get("keepImportant", True)
        if not isinstance(keep, bool):
            raise ValidationError("keepImportant must be a boolean")
        return await (await self.memory(db)).archive_older_than(p["days"], keep_important=keep)

    async def _m_searchArchive(self, db: str, p: dict[str, Any]) -> list[dict[str, Any]]:
        found = await (await self.memory(db)).search_archive(
            p.get("query", ""), limit=p.get("limit", 10)
        )
        return [archived_js(a) for a in found]

    async def _m_sweep(self, db: str, p: dict[str, Any]) -> int:
        return await (await self.memory(db)).sweep()

    async def _m_stats(self, db: str, p: dict[str, Any]) -> dict[str, Any]:
        return stats_js(await (await self.memory(db)).stats())

    async def _m_exportJsonl(self, db: str, p: dict[str, Any]) -> str:
        return "".join([line async for line in (await self.memory(db)).export()])

    async def _m_importJsonl(
        self, db: str, p: dict[str, Any], progress: Progress | None
    ) -> dict[str, int]:
        if not isinstance(p["text"], str):
            raise ValidationError("text must be a string of JSON Lines")
        result: ImportResult = await (await self.memory(db)).import_(
            p["text"],
            on_conflict=p.get("onConflict", "error"),
            chunk_size=p.get("chunkSize", 1000),
            on_progress=progress,
        )
        return {
            "added": result.added,
            "replaced": result.replaced,
            "skipped": result.skipped,
            "archived": result.archived,
        }

    async def _m_sync(self, db: str, p: dict[str, Any]) -> dict[str, Any]:
        """One sync round with the CouchDB database at ``url`` (docs/sync.md): what it
        did. ``live``: also keep syncing in the background (one loop per database and
        url: a worker that took over from another tab's starts it again). ``atOpen`` (a
        client's ``ready``): a failed round is reported in the result's ``error`` instead
        of raised, so a device opens offline; but a new encrypted device that cannot pull
        the hub's key record fails. ``timeoutMs``: each request's bound (default 30 s;
        the database's later rounds, live ones included, keep the last value given)."""
        auth = auth_from_js(p.get("auth"))
        url = check_url(p["url"], auth)
        live, at_open = p.get("live", False), p.get("atOpen", False)
        if not isinstance(live, bool) or not isinstance(at_open, bool):
            raise ValidationError("live and atOpen must be booleans")
        transport = timed(self.sync_transport, timeout_s(p.get("timeoutMs")))
        pulled = None
        if db not in self._memories and _UNLOCK.get() is not None:
            pulled = await first_pull(self._kv_factory, db, url, auth, transport)
        memory = await self.memory(db)
        memory.syncs.transport = transport
        try:
            out = result_js(await memory.sync(url, auth=auth), pulled)
        except PymemoryError as exc:
            if not at_open:
                raise
            out = {"error": error_js(exc)}
        running = self._live.get((db, url))
        if live and (running is None or not running.running):
            self._live[(db, url)] = await memory.sync(url, auth=auth, live=True)
        return out

    async def _m_syncStatus(self, db: str, p: dict[str, Any]) -> dict[str, Any] | None:
        """The database's sync state (``Memory.stats()["sync"]``: ``round`` is the round
        running now, None between rounds), or None while the database is not open here
        for the call's key (e.g. during a new encrypted device's first pull): polling it
        never opens a database, and tells a caller without the key nothing."""
        memory = self._memories.get(db)
        if memory is None or not self._admitted(db, _UNLOCK.get()):
            return None
        return await memory.syncs.status()

    async def embedder(self, name: str = "minilm") -> Any:
        """The local embedding model ``name``, made on first use by ``embedder_factory``."""
        from ...models import LOCAL_EMBEDDERS, load_local_embedder

        if name not in LOCAL_EMBEDDERS:
            raise ValidationError(
                f"no local embedder {name!r}; choose one of {', '.join(LOCAL_EMBEDDERS)}"
            )
        if name not in self._embedders:
            factory = self.embedder_factory or load_local_embedder
            try:
                made = await factory(name)
            except (ImportError, OSError) as exc:
                raise EmbedderUnavailableError(
                    f"the local embedder {name} cannot load: {exc}"
                ) from exc
            self._embedders.setdefault(name, made)  # two first calls may race: keep one
        return self._embedders[name]

    async def refiner(self) -> Any:
        """The local summarizer (Encoder stage 2), made on first use by ``refiner_factory``."""
        if self._refiner is None:
            factory = self.refiner_factory
            if factory is None:
                from ...encoder.smollm2 import load_smollm2_refiner

                factory = load_smollm2_refiner
            try:
                made = await factory()
            except Exception as exc:
                raise ModelUnavailableError(f"the local summarizer cannot load: {exc}") from exc
            if self._refiner is None:
                self._refiner = made
        return self._refiner

    async def _m_loadModels(self, db: str, p: dict[str, Any]) -> dict[str, Any]:
        """Load the local models and attach them to this database's Memory: ``embedder``
        (``true`` or ``"minilm"``: all-MiniLM-L6-v2, English; ``"multilingual-e5-small"``:
        reads Chinese, Japanese, Korean and Latin-script languages; ``"hashing"``: the model-free
        :class:`~pymemory.models.embedding.HashingEmbedder`, a lexical baseline for tests and
        benchmarks; ``hashing: {dim, seed}`` sets its options) and ``summarizer`` (SmolLM2:
        Encoder stage 2). Idempotent. Returns what is attached, how long loading took and
        ``embedding``: background embedding's progress (a store that held another
        embedder's vectors is embedded again: docs/models.md)."""
        from ...models import LOCAL_EMBEDDERS

        kind = p.get("embedder", False)
        if kind not in (True, False, "hashing", *LOCAL_EMBEDDERS):
            names = ", ".join(f'"{n}"' for n in ("hashing", *LOCAL_EMBEDDERS))
            raise ValidationError(f"embedder must be true (minilm), false or one of {names}")
        hashing = p.get("hashing", {})
        if (
            not isinstance(hashing, dict)
            or not set(hashing) <= {"dim", "seed"}
            or not all(type(v) is int for v in hashing.values())
        ):
            raise ValidationError("hashing must be an object of ints: dim and seed (optional)")
        memory = await self.memory(db)
        out: dict[str, Any] = {}
        if kind:
            t0 = time.perf_counter()
            if kind == "hashing":
                embedder = HashingEmbedder(**hashing)
            else:
                embedder = await self.embedder("minilm" if kind is True else kind)
            if memory.embedder is None:
                await memory.attach_embedder(embedder)
            elif memory.embedder.name != embedder.name:
                raise ValidationError(f"{memory.embedder.name} is already attached")
            out["embedder"] = {"name": embedder.name, "loadMs": _ms(t0)}
            out["embedding"] = (await memory.stats())["embedding"]
        if p.get("summarizer", False):
            t0 = time.perf_counter()
            refiner = await self.refiner()
            if memory.refiner is None:
                await memory.attach_refiner(refiner)
            out["summarizer"] = {"name": refiner.method, "loadMs": _ms(t0)}
        return out

    async def _m_modelsIdle(self, db: str, p: dict[str, Any]) -> dict[str, Any]:
        """Wait for background embedding and refinement to catch up (tests, benchmarks)."""
        memory = await self.memory(db)
        await memory.embed_idle()
        await memory.refine_idle()
        stats = getattr(memory.refiner, "stats", None)
        return {
            "embedded": 0 if memory.vectors is None else len(memory.vectors),
            "summarizer": None if stats is None else stats.as_dict(),
        }

    async def _m_embed(self, db: str, p: dict[str, Any]) -> dict[str, Any]:
        """Diagnostics: embed ``texts`` (or token ``inputIds``) with the local model.
        ``raw``: also return the model's ``last_hidden_state`` for the padded batch
        (base64 of little-endian float32, with its shape); ``model``: which local embedder
        (default ``"minilm"``). ``db`` is not used."""
        if ("texts" in p) == ("inputIds" in p):
            raise ValidationError("give either texts (strings) or inputIds (lists of ints)")
        model = p.get("model", "minilm")
        if not isinstance(model, str):
            raise ValidationError("model must be a string")
        embedder = await self.embedder(model)
        if not hasattr(embedder, "embed_ids"):  # not a tokenizer + model embedder
            texts = p.get("texts")
            if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
                raise ValidationError(f"{embedder.name} takes texts: a list of strings")
            vectors = await embedder.embed(texts)
            return {"model": embedder.name, "dim": embedder.dim, "vectors": vectors.tolist()}
        t0 = time.perf_counter()
        if "texts" in p:
            texts = p["texts"]
            if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
                raise ValidationError("texts must be a list of strings")
            ids = embedder.tokenize(texts)
        else:
            ids = p["inputIds"]
            if not isinstance(ids, list) or not all(
                isinstance(row, list) and row and all(type(i) is int for i in row) for row in ids
            ):
                raise ValidationError("inputIds must be a list of non-empty lists of ints")
        vectors = await embedder.embed_ids(ids)
        ms = (time.perf_counter() - t0) * 1000
        session = await embedder.load()
        result: dict[str, Any] = {
            "model": embedder.name,
            "dim": embedder.dim,
            "runtime": embedder.runtime.name,
            "loadMs": embedder.load_ms,
            "session": getattr(session, "info", None),
            "ms": ms,
            "inputIds": ids,
            "vectors": vectors.tolist(),
        }
        if p.get("raw") and ids:
            hidden = await embedder.forward(embedder.batch_inputs(ids))
            result["lastHiddenState"] = {
                "shape": list(hidden.shape),
                "dtype": "float32",
                "base64": base64.b64encode(hidden.astype("<f4").tobytes()).decode("ascii"),
            }
        return result

    async def _m_runKvConformance(self, db: str, p: dict[str, Any]) -> list[dict[str, Any]]:
        """Diagnostics: the core's KV conformance suite on this runtime's backend, each
        check on a fresh store named ``<db>-conformance-<n>`` (an EncryptedKv over it
        when the call brings a key)."""
        unlock = _UNLOCK.get()
        made: list[KvBackend] = []
        counter = iter(range(10**9))

        async def factory() -> KvBackend:
            name = f"{db}-conformance-{next(counter)}"
            kv = await (self._kv_factory(name) if unlock is None else self._locked_kv(name, unlock))
            made.append(kv)
            return kv

        from ...storage.conformance import run_conformance  # diagnostics only: not at boot

        results = await run_conformance(factory)
        for kv in made:
            destroy = getattr(getattr(kv, "inner", kv), "destroy", None)
            if destroy is not None:
                await destroy()
        return [{"name": r.name, "ok": r.ok, "error": r.error} for r in results]


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 1)


class ModelUnavailableError(PymemoryError):
    """A local model could not load (not built, or its files are unreachable)."""

    code = "model_unavailable"
