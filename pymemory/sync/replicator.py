"""One sync round between a local store and a CouchDB-protocol hub: push, then pull.

**Push.** The keys changed since the last pushed change-log position (or, when the log no
longer reaches back, every travelling item record), plus every record the agent
primitives keep (they write without the log) are compared with their ``sync:k:`` record:
a value whose digest differs from the one last synced is a local change. Each goes up as
one document with the clock its edit got when it was made (:mod:`.edits`; never behind the
version it replaces); the hub refusing a write (someone else wrote the key since this
device last saw it) leaves it for after the pull. A deleted item also deletes its
``arc:`` record (a deletion beats another device's archive). The local ``sync:k:``
records change only after the hub accepted a write, so a round killed mid-push pushes
again and, finding its own write on the hub, adopts it (nothing duplicated).

**Pull.** The hub's ``_changes`` feed after the stored position, a page at a time. Each
page is checked whole (shape; for an encrypted store every stamp, and no record older
than the one this device holds) and then applied in ONE transaction with the new feed
position, so a round killed mid-pull resumes at the last applied page (:mod:`.pull`).
Conflicts are decided by :func:`~.records.wins` on every device alike, with the local
change's edit clock; a local edit that beats the hub's version is pushed again at the end
of the round, the losing version of an item (or of a history record), local or the hub's,
is kept in the item's history (:mod:`.losers`, which also says how every device keeps it
under one key). Keys the hub refuses twice in a round and no longer holds at all go up
again as new (:func:`.pull.repair`). Pulled keys are then logged in the change
log, so every ``Memory`` over the store re-reads them (``sync:unlogged`` makes that
survive a crash).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import pymemory.sync.local as L
import pymemory.sync.losers as losers
import pymemory.sync.manifest as manifest
import pymemory.sync.pull as pull

from ..errors import SchemaError, SyncError
from ..storage import KvBackend, Writes, changes, iter_prefix, schema
from .couch import Auth, CouchClient, split_url
from .edits import EditClocks
from .local import Local
from .records import (
    DOC_PREFIX,
    GONE,
    HUB_FORMAT,
    KEY_RECORD,
    LOGGED_PREFIXES,
    SCANNED_PREFIXES,
    SCHEMA_RECORD,
    STORE_DOC,
    TRAVEL_PREFIXES,
    UNSYNCED,
    Clock,
    Incoming,
    Version,
    digest,
    from_doc,
    local_change,
    stamp_body,
    to_doc,
    travels,
)
from .transport import Transport, WireCount, default_transport

log = logging.getLogger("pymemory")

#: A local change: the key, its value (None: deleted) and its sync record (None: never).
Dirty = tuple[str, bytes | None, dict[str, Any] | None]
#: The sync record of an ``arc:`` key this device deleted without ever syncing it.
UNSYNCED_DELETE = {"h": 0, "d": "", "x": UNSYNCED}
PUSH_BATCH = 500
PULL_BATCH = 500
READ_CHUNK = 500


@dataclass
class SyncResult:
    """What one round did: records ``pushed`` and ``pulled`` (own echoes not counted),
    ``conflicts``: the items whose conflicts it decided (``conflicted``: which), the hub's
    feed position after it (``checkpoint``, opaque) and the bytes on the wire."""

    pushed: int = 0
    pulled: int = 0
    conflicts: int = 0
    #: The items (ids; other records: their keys) whose conflicts the round decided,
    #: each once however many of its records conflicted.
    conflicted: list[str] = field(default_factory=list)
    checkpoint: Any = None
    hub: str = ""
    wire: WireCount = field(default_factory=WireCount)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "pushed": self.pushed,
            "pulled": self.pulled,
            "conflicts": self.conflicts,
            "conflictItems": list(self.conflicted),
            "checkpoint": self.checkpoint,
            "bytesSent": self.wire.sent,
            "bytesReceived": self.wire.received,
            "requests": self.wire.requests,
            "seconds": round(self.seconds, 3),
        }


def now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass
class Progress:
    """A round as it runs: its ``phase``, the records ``pushed`` and ``pulled`` so far
    (counted as :class:`SyncResult` counts them, after each batch or page) and when it
    started (epoch ms). ``SyncHost.status`` shows it as ``round``."""

    phase: Literal["push", "pull"] = "push"
    pushed: int = 0
    pulled: int = 0
    started_ms: int = field(default_factory=now_ms)

    def to_dict(self) -> dict[str, Any]:
        return {
            "phase": self.phase,
            "pushed": self.pushed,
            "pulled": self.pulled,
            "startedMs": self.started_ms,
        }


async def sync_store(
    kv: KvBackend,
    url: str,
    *,
    auth: Auth = None,
    transport: Transport | None = None,
    progress: Progress | None = None,
) -> SyncResult:
    """One round (push, then pull) between ``kv`` and the CouchDB database at ``url``.

    ``kv`` may be an EncryptedKv (its sealed bytes travel, stamped with its key), a plain
    store, or an encrypted store's inner backend opened without the key (pull only: a new
    device's first sync, after which ``EncryptedKv.open`` unlocks it with the passphrase).
    SyncError (retryable or not) if the hub fails; SchemaError if the hub holds the other
    kind of store (plain vs encrypted) or an encrypted store under another key.
    ``progress`` (optional) follows the round as it goes."""
    db_url, authorization, _ = split_url(url, auth)
    own = transport is None
    client = CouchClient(db_url, authorization, transport or default_transport())
    try:
        return await Round(await Local.of(kv), client, progress).run()
    finally:
        if own:
            await client.transport.close()


class Round:
    def __init__(self, local: Local, client: CouchClient, progress: Progress | None) -> None:
        self.local = local
        self.client = client
        self.result = SyncResult(wire=client.wire)
        self.progress = Progress() if progress is None else progress
        self.device = ""
        self.clock = Clock()
        self.hub = ""
        self.retry: set[str] = set()
        self.edits = EditClocks(None, 0, self.clock)
        self.conflicted: set[str] = set()
        self.page = PULL_BATCH  # read here, so that a test can shrink it

    async def run(self) -> SyncResult:
        start = time.perf_counter()
        await self.client.ensure_db()
        self.hub = await self._hub_store()
        self.result.hub = self.hub
        await self._load_state()
        await self._flush_unlogged()
        await losers.keep(self.local)  # those a killed round put aside (the log has them)
        if self.local.can_push:
            await self._push(None)
        self.progress.phase = "pull"
        if self.local.encrypted:
            await manifest.check(self)  # a dropped delete: refused before anything is pulled
        await self._pull()
        self.progress.phase = "push"
        if self.retry and self.local.can_push:
            await self._push(sorted(self.retry))
            if self.retry:
                await self._repair(sorted(self.retry))
        if self.local.encrypted:
            await manifest.push(self)
        await self._save_last(time.perf_counter() - start)
        return self.result

    # --- state ---------------------------------------------------------------------

    async def _hub_store(self) -> str:
        """The hub's store record (created by the first device): its id; SchemaError if
        the hub holds the other kind of store or one under another key."""
        doc = await self.client.get_doc(STORE_DOC)
        if doc is None:
            made = {
                "_id": STORE_DOC,
                "format": HUB_FORMAT,
                "encrypted": self.local.encrypted,
                "schema": schema.SCHEMA_VERSION,
                "hub": L.new_device_id() + L.new_device_id(),
            }
            if await self.client.put_doc(made) is None:  # another device made it first
                doc = await self.client.get_doc(STORE_DOC)
            else:
                doc = made
        if not isinstance(doc, dict) or not isinstance(doc.get("hub"), str):
            raise SyncError("the hub's pymemory store record is malformed")
        if doc.get("format") != HUB_FORMAT or not isinstance(doc.get("schema"), int):
            raise SchemaError("the hub was written by another pymemory sync format")
        if doc["schema"] > schema.SCHEMA_VERSION:
            raise SchemaError("the hub holds a store of a newer pymemory; upgrade to sync it")
        if doc.get("encrypted") and not self.local.encrypted and await self._empty():
            self.local = replace(self.local, encrypted=True)  # a new device: pull only
        if bool(doc.get("encrypted")) != self.local.encrypted:
            kinds = ["a plain", "an encrypted"]
            if doc.get("encrypted"):
                kinds.reverse()
            raise SchemaError(
                f"the hub holds {kinds[0]} store and this is {kinds[1]} one: they never "
                "sync into each other; use another database"
            )
        if self.local.encrypted:
            await self._check_key_record()
        return doc["hub"]

    async def _empty(self) -> bool:
        """Whether the local store holds nothing that travels (a new device)."""
        for prefix in TRAVEL_PREFIXES:
            if await self.local.raw.scan(prefix, limit=1):
                return False
        return True

    async def _check_key_record(self) -> None:
        """An encrypted store whose key record never synced must hold the hub's (or the
        hub none): two stores under different keys never mix."""
        mine = await self.local.raw.get(KEY_RECORD)
        if L.decode(await self.local.raw.get(L.meta_key(KEY_RECORD))) is not None:
            return
        theirs = await self.client.get_doc(DOC_PREFIX + KEY_RECORD)
        if theirs is None or mine is None:
            return
        found = from_doc(theirs)
        if found is not None and found.version.value != mine:
            raise SchemaError(
                "this encrypted store has another key than the hub's store: sync a new, "
                "empty store from the hub and open it with the hub store's passphrase"
            )

    async def _load_state(self) -> None:
        raw = self.local.raw
        device, clock, cp = await raw.get_many([L.DEVICE_KEY, L.CLOCK_KEY, L.hub_key(self.hub)])
        found = L.decode(device)
        self.device = found["id"] if isinstance(found, dict) and "id" in found else ""
        if not self.device:
            self.device = L.new_device_id()

            def make(values: list[bytes | None], _: list[list[str]]) -> Writes:
                if values[0] is not None:
                    return Writes(result=L.decode(values[0])["id"])
                return Writes([(L.DEVICE_KEY, L.encode({"id": self.device}))], result=self.device)

            self.device = await raw.transact([L.DEVICE_KEY], make)
        last = L.decode(clock)
        stored = last["h"] if isinstance(last, dict) and isinstance(last.get("h"), int) else 0
        seen = changes.decode_clock(await raw.get(changes.SEQ_KEY))
        self.clock = Clock(max(stored, seen))
        point = L.decode(cp) or {}
        self.since = point.get("since", 0)
        self.pushed_seq = int(point.get("pushed", 0))
        logged = self.local.host is not raw or not self.local.encrypted
        self.edits = EditClocks(self.local.host if logged else None, self.pushed_seq, self.clock)
        if cp is None:
            last_round = L.decode(await raw.get(L.LAST_KEY))
            if isinstance(last_round, dict) and last_round.get("hub") not in (None, self.hub):
                await self._hub_replaced()

    async def _hub_replaced(self) -> None:
        """The hub is not the one this device last synced with (it lost everything and
        was made again, or the store moved to a new database): every record synced
        there goes up again as it was (its clock and device kept), so the new hub gets
        the whole store from any device that has it."""
        raw = self.local.raw
        rows = [(k, L.decode(v)) async for k, v in iter_prefix(raw, L.META_PREFIX)]
        marks = [
            (k, L.encode({**meta, "r": None, "gone": True}))
            for k, meta in rows
            if isinstance(meta, dict) and meta.get("h") and "x" in meta
        ]
        log.warning("sync: a new hub (%s); pushing %d records to it again", self.hub, len(marks))
        for start in range(0, len(marks), READ_CHUNK):
            await raw.put_many(marks[start : start + READ_CHUNK])

    def _checkpoint(self, since: Any, pushed: int) -> tuple[str, bytes]:
        return L.hub_key(self.hub), L.encode({"since": since, "pushed": pushed})

    async def _flush_unlogged(self, since: Any = None) -> None:
        """Log pulled keys a killed round did not log (module docstring). A pulled commit
        right after the pushed position is not a local change: the position moves past
        it, so ``pending`` (stats) never counts pulled records."""
        found = L.decode(await self.local.raw.get(L.UNLOGGED_KEY))
        if not found or not found.get("keys"):
            return
        if self.local.host is not self.local.raw or not self.local.encrypted:
            done = await changes.log_keys(self.local.host, found["keys"])
            if done.before == self.pushed_seq and done.seq > done.before:
                self.pushed_seq = done.seq
                mark = self.since if since is None else since
                await self.local.raw.put_many([self._checkpoint(mark, done.seq)])
        await self.local.raw.delete_many([L.UNLOGGED_KEY])

    async def _save_last(self, seconds: float) -> None:
        self.result.seconds = seconds
        self.result.checkpoint = self.since
        last = {
            "at": now_ms(),
            "pushed": self.result.pushed,
            "pulled": self.result.pulled,
            "conflicts": self.result.conflicts,
            "conflictItems": self.result.conflicted,
            "hub": self.hub,
            "since": self.since,
        }
        await self.local.raw.put_many([(L.LAST_KEY, L.encode(last)), self._clock_record()])

    def _clock_record(self) -> tuple[str, bytes]:
        return L.CLOCK_KEY, L.encode({"h": self.clock.last})

    # --- push ----------------------------------------------------------------------

    async def _candidates(self) -> tuple[list[str], int]:
        """Keys that may have changed locally, and the change-log position they reach."""
        raw = self.local.raw
        keys: set[str] = set()
        seq = await changes.read_seq(raw)
        found = None
        if self.local.host is not raw or not self.local.encrypted:
            found = await changes.changes_since(self.local.host, self.pushed_seq, current=seq)
        if found is not None and found.keys is not None:
            keys.update(k for k in found.keys if k.startswith(LOGGED_PREFIXES))
            seq = found.seq
        else:  # the log does not reach back: every item record, and every synced one
            for prefix in LOGGED_PREFIXES:
                keys.update([k async for k, _ in iter_prefix(raw, prefix)])
                keys.update(
                    [k[len(L.META_PREFIX) :] async for k, _ in iter_prefix(raw, L.meta_key(prefix))]
                )
        for prefix in SCANNED_PREFIXES:
            keys.update([k async for k, _ in iter_prefix(raw, prefix)])
            keys.update(
                [k[len(L.META_PREFIX) :] async for k, _ in iter_prefix(raw, L.meta_key(prefix))]
            )
        keys.update((KEY_RECORD, SCHEMA_RECORD))
        return sorted(k for k in keys if travels(k)), seq

    async def _push(self, only: list[str] | None) -> None:
        if only is None:
            keys, seq = await self._candidates()
            again = L.decode(await self.local.raw.get(L.REPUSH_KEY)) or {}
            keys = sorted(set(keys) | set(again.get("keys", [])))
        else:
            keys, seq = only, None
        self.retry = set()
        kept = 0
        for start in range(0, len(keys), READ_CHUNK):
            chunk = keys[start : start + READ_CHUNK]
            got = await self.local.raw.get_many(chunk + [L.meta_key(k) for k in chunk])
            values, metas = got[: len(chunk)], [L.decode(m) for m in got[len(chunk) :]]
            dirty: list[Dirty] = []
            for key, value, meta in zip(chunk, values, metas, strict=True):
                meta = meta if isinstance(meta, dict) else None
                if local_change(value, meta) or (meta is not None and meta.get("gone")):
                    dirty.append((key, value, meta))
            if dirty:
                dirty += await self._implied(dirty)
                await self.edits.load([key for key, _, _ in dirty])
                kept += await self._overwritten(dirty)
                await self._push_batch(dirty)
        if kept:
            self.retry.update(await losers.keep(self.local))  # pushed at the end of the round
        if seq is not None and not self.retry:
            self.pushed_seq = seq
            await self.local.raw.put_many([self._checkpoint(self.since, seq), self._clock_record()])

    async def _implied(self, dirty: list[Dirty]) -> list[Dirty]:
        """A deleted item (its ``mem:`` record gone here, with no ``arc:`` record) is
        also deleted from the archive, so that another device's archiving of it never
        brings it back (a deletion beats an archive): a tombstone for each ``arc:`` key
        this device never synced, dated with the delete."""
        deleted = [k for k, v, _ in dirty if v is None and k.startswith(schema.MEM)]
        arcs = [schema.ARC + k[len(schema.MEM) :] for k in deleted]
        have = {k for k, _, _ in dirty}
        arcs = [k for k in arcs if k not in have]
        if not arcs:
            return []
        got = await self.local.raw.get_many(arcs + [L.meta_key(k) for k in arcs])
        out: list[Dirty] = []
        for i, (mem, arc) in enumerate(zip(deleted, arcs, strict=False)):
            if got[i] is None and got[len(arcs) + i] is None:
                await self.edits.load([mem])
                self.edits.given[arc] = self.edits.of(mem)
                # a local deletion from now on (its record is written before the push),
                # whatever answer the push gets: the pull decides it against the hub's
                out.append((arc, None, dict(UNSYNCED_DELETE)))
        return out

    async def _overwritten(self, dirty: list[Dirty]) -> int:
        """A history record written here over a different synced one (an item whose
        winning line, after a conflict, has reached a version number the losing line
        used): the synced one, read back from the hub, goes into the item's history as
        a conflict's loser (:mod:`.losers`) rather than being lost. How many."""
        over = [
            (key, meta)
            for key, value, meta in dirty
            if key.startswith(schema.HST)
            and value is not None
            and meta is not None
            and meta.get("h")
            and meta.get("x") not in (GONE, UNSYNCED, digest(value))
            and "~" not in key
        ]
        if not over:
            return 0
        docs = await self.client.get_docs([DOC_PREFIX + key for key, _ in over])
        found = [from_doc(d) for d in docs.values() if d is not None]
        synced = {key: meta["x"] for key, meta in over}
        back = [f for f in found if f is not None and f.version.value is not None]
        back = [f for f in back if digest(f.version.value) == synced.get(f.key)]
        if not back:
            return 0
        await self._verify(back)
        aside = [losers.put_aside(f.key, f.version.value) for f in back]  # type: ignore[arg-type]
        await self.local.raw.put_many(aside)
        return len(aside)

    def _version(self, key: str, value: bytes | None, meta: dict[str, Any] | None) -> Version:
        """The version a local change goes up as: its edit's clock (never behind the
        version it replaces); a record the hub lost goes up again as it was."""
        if meta is not None and meta.get("gone") and digest(value) == meta.get("x"):
            return Version(meta["h"], meta["d"], value)
        h = self.edits.of(key)
        if meta is not None and isinstance(meta.get("h"), int):
            h = max(h, meta["h"] + 1)
        self.clock.observe(h)
        return Version(h, self.device, value)

    async def _push_batch(self, dirty: list[Dirty]) -> None:
        versions = [self._version(key, value, meta) for key, value, meta in dirty]
        stamps: list[bytes | None] = [None] * len(dirty)
        sealer = self.local.sealer
        if sealer is not None:
            pairs = [
                (L.SYNC + key, stamp_body(key, v.h, v.d, v.value))
                for (key, _, _), v in zip(dirty, versions, strict=True)
            ]
            stamps = list(await sealer.seal_many(pairs))  # type: ignore[attr-defined]
        docs = [
            to_doc(key, v, meta.get("r") if meta else None, stamp)
            for (key, _, meta), v, stamp in zip(dirty, versions, stamps, strict=True)
        ]
        for start in range(0, len(docs), PUSH_BATCH):
            part = slice(start, start + PUSH_BATCH)
            await self._mark_sent(dirty[part], versions[part])
            revs = await self.client.bulk_docs(docs[part])
            await self._record_pushed(dirty[part], versions[part], revs)

    async def _mark_sent(self, dirty: list[Dirty], versions: list[Version]) -> None:
        """Before a batch goes up: each key's sync record notes the digest sent (``p``, the
        last few since the hub's last answer),
        so that if the answer is lost (the hub may hold it), a later change of the key
        here, a delete included, is still a local change (:func:`local_change`)."""
        keys = [L.meta_key(key) for key, _, _ in dirty]

        def mark(values: list[bytes | None], _: list[list[str]]) -> Writes:
            puts = []
            for key, raw, version, (_, _, given) in zip(keys, values, versions, dirty, strict=True):
                meta = L.decode(raw)
                if not isinstance(meta, dict):  # never synced (an implied delete: marked)
                    meta = given if given is not None else {"h": 0, "d": "", "x": GONE}
                sent = [d for d in meta.get("p", []) if d != digest(version.value)]
                sent = [*sent[-7:], digest(version.value)]
                puts.append((key, L.encode({**meta, "p": sent})))
            return Writes(puts)

        await self.local.raw.transact(keys, mark)

    async def _record_pushed(
        self,
        dirty: list[Dirty],
        versions: list[Version],
        revs: dict[str, str | None],
    ) -> None:
        """After the hub took them: each key's sync record, in one transaction that checks
        the local value is still the one pushed (else it stays a local change)."""
        keys = [key for key, _, _ in dirty]
        clock = self._clock_record()
        gone = manifest.tombstones(keys, versions, [revs[DOC_PREFIX + k] for k in keys])

        def record(values: list[bytes | None], _: list[list[str]]) -> Writes:
            puts = [clock]
            grown = manifest.grow(values[-2], gone) if self.local.sealer is not None else None
            if grown is not None:
                puts.append(grown)
            again = L.decode(values[-1]) or {}
            if again.get("keys"):
                done = {k for k in keys if revs[DOC_PREFIX + k] is not None}
                puts.append((L.REPUSH_KEY, L.encode({"keys": sorted(set(again["keys"]) - done)})))
            for i, (key, version) in enumerate(zip(keys, versions, strict=True)):
                rev = revs[DOC_PREFIX + key]
                if rev is None:
                    continue
                now, sent = values[i], digest(version.value)
                old = L.decode(values[len(keys) + i]) or {}
                x = sent if digest(now) == sent else old.get("x", digest(None))
                meta = {"h": version.h, "d": version.d, "x": x, "r": rev}
                puts.append((L.meta_key(key), L.encode(meta)))
            return Writes(puts)

        for key in keys:
            if revs[DOC_PREFIX + key] is None:
                self.retry.add(key)
            else:
                self.result.pushed += 1
        self.progress.pushed = self.result.pushed
        read = keys + [L.meta_key(k) for k in keys] + [manifest.MANIFEST_KEY, L.REPUSH_KEY]
        await self.local.raw.transact(read, record)

    # --- pull ----------------------------------------------------------------------

    async def _pull(self) -> None:
        await pull.pull(self)

    async def _verify(self, batch: list[Incoming]) -> None:
        await pull.verify(self, batch)

    async def _apply(
        self, batch: list[Incoming], last: Any, lost: dict[str, str | None] | None = None
    ) -> None:
        await pull.apply(self, batch, last, lost or {})

    async def _repair(self, keys: list[str]) -> None:
        await pull.repair(self, keys)
