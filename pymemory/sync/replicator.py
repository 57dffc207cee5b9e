"""One sync round between a local store and a CouchDB-protocol hub: push, then pull.

**Push.** The keys changed since the last pushed change-log position (or, when the log no
longer reaches back, every travelling item record), plus every record the agent
primitives keep (they write without the log) are compared with their ``sync:k:`` record:
a value whose digest differs from the one last synced is a local change. Each goes up as
one document with a fresh clock; the hub refusing a write (someone else wrote the key
since this device last saw it) leaves it for after the pull. The local ``sync:k:``
records change only after the hub accepted a write, so a round killed mid-push pushes
again and, finding its own write on the hub, adopts it (nothing duplicated).

**Pull.** The hub's ``_changes`` feed after the stored position, a page at a time. Each
page is checked whole (shape; for an encrypted store every stamp, and no record older
than the one this device holds) and then applied in ONE transaction with the new feed
position, so a round killed mid-pull resumes at the last applied page. Conflicts are
decided by :func:`~.records.wins` on every device alike; a local edit that beats the
hub's version is pushed again at the end of the round, the hub's losing version of an
item (or of a history record) is kept in the item's history (:mod:`.losers`, which also
says how every device keeps it under one key). Pulled keys are then logged in the change
log, so every ``Memory`` over the store re-reads them (``sync:unlogged`` makes that
survive a crash).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import pymemory.sync.local as L
import pymemory.sync.losers as losers
import pymemory.sync.manifest as manifest

from ..errors import SchemaError, SyncError, SyncIntegrityError
from ..storage import KvBackend, Writes, changes, iter_prefix, schema
from .couch import Auth, CouchClient, split_url
from .local import Local
from .records import (
    DOC_PREFIX,
    HUB_FORMAT,
    KEY_RECORD,
    LOGGED_PREFIXES,
    SCANNED_PREFIXES,
    SCHEMA_RECORD,
    STORE_DOC,
    TRAVEL_PREFIXES,
    Clock,
    Incoming,
    Version,
    digest,
    from_doc,
    stamp_body,
    to_doc,
    travels,
    wins,
)
from .transport import Transport, WireCount, default_transport

#: A local change: the key, its value (None: deleted) and its sync record (None: never).
Dirty = tuple[str, bytes | None, dict[str, Any] | None]
PUSH_BATCH = 500
PULL_BATCH = 500
READ_CHUNK = 500


@dataclass
class SyncResult:
    """What one round did: records ``pushed`` and ``pulled`` (own echoes not counted),
    ``conflicts`` decided, the hub's feed position after it (``checkpoint``, opaque) and
    the bytes on the wire."""

    pushed: int = 0
    pulled: int = 0
    conflicts: int = 0
    checkpoint: Any = None
    hub: str = ""
    wire: WireCount = field(default_factory=WireCount)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "pushed": self.pushed,
            "pulled": self.pulled,
            "conflicts": self.conflicts,
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
        self.clock = Clock(last["h"] if isinstance(last, dict) else 0)
        point = L.decode(cp) or {}
        self.since = point.get("since", 0)
        self.pushed_seq = int(point.get("pushed", 0))

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
        else:
            keys, seq = only, None
        self.retry = set()
        for start in range(0, len(keys), READ_CHUNK):
            chunk = keys[start : start + READ_CHUNK]
            got = await self.local.raw.get_many(chunk + [L.meta_key(k) for k in chunk])
            values, metas = got[: len(chunk)], [L.decode(m) for m in got[len(chunk) :]]
            dirty = []
            for key, value, meta in zip(chunk, values, metas, strict=True):
                synced = meta["x"] if isinstance(meta, dict) else digest(None)
                if digest(value) != synced:
                    dirty.append((key, value, meta if isinstance(meta, dict) else None))
            if dirty:
                await self._push_batch(dirty)
        if seq is not None and not self.retry:
            self.pushed_seq = seq
            await self.local.raw.put_many([self._checkpoint(self.since, seq), self._clock_record()])

    async def _push_batch(self, dirty: list[Dirty]) -> None:
        versions = [Version(self.clock.tick(), self.device, value) for _, value, _ in dirty]
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
            revs = await self.client.bulk_docs(docs[part])
            await self._record_pushed(dirty[part], versions[part], revs)

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
            grown = manifest.grow(values[-1], gone) if self.local.sealer is not None else None
            if grown is not None:
                puts.append(grown)
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
        read = keys + [L.meta_key(k) for k in keys] + [manifest.MANIFEST_KEY]
        await self.local.raw.transact(read, record)

    # --- pull ----------------------------------------------------------------------

    async def _pull(self) -> None:
        while True:
            docs, last = await self.client.changes(self.since, PULL_BATCH)
            incoming: dict[str, Incoming] = {}
            for doc in docs:
                found = from_doc(doc)
                if found is not None:
                    incoming[found.key] = found
            if incoming:
                await self._verify(list(incoming.values()))
            await self._apply(list(incoming.values()), last)
            self.since = last
            if len(docs) < PULL_BATCH:
                return

    async def _verify(self, batch: list[Incoming]) -> None:
        """An encrypted store's checks, before anything of the page is written."""
        sealer = self.local.sealer
        if not self.local.encrypted or sealer is None:
            return
        for found in batch:
            v = found.version
            if found.stamp is None:
                raise SyncIntegrityError(f"the hub's record {found.key!r} carries no seal")
            opened = await sealer.open(L.SYNC + found.key, found.stamp)
            if opened != stamp_body(found.key, v.h, v.d, v.value):
                raise SyncIntegrityError(
                    f"the hub's record {found.key!r} does not match its seal (altered clock, "
                    "value or deletion); nothing of its batch was written"
                )

    async def _apply(self, batch: list[Incoming], last: Any) -> None:
        for found in batch:
            self.clock.observe(found.version.h)
        now = self.clock.tick()
        keys = [f.key for f in batch]
        n = len(keys)
        read = keys + [L.meta_key(k) for k in keys] + [L.UNLOGGED_KEY, schema.META_SCHEMA]
        encrypted = self.local.encrypted
        device, hub_point = self.device, self._checkpoint(last, self.pushed_seq)
        clock = self._clock_record()

        def apply(values: list[bytes | None], _: list[list[str]]) -> Writes:
            puts: list[tuple[str, bytes]] = [hub_point, clock]
            deletes: list[str] = []
            changed: list[str] = []
            pulled = conflicts = 0
            retry: list[str] = []
            lost = 0
            for i, found in enumerate(batch):
                key, inc = found.key, found.version
                here, meta = values[i], L.decode(values[n + i])
                mine = digest(here)
                theirs = digest(inc.value)
                meta_ok = isinstance(meta, dict)
                if meta_ok and (inc.h, inc.d) < (meta["h"], meta["d"]):
                    if encrypted:
                        raise SyncIntegrityError(
                            f"the hub served an older revision of {key!r} than this device "
                            "holds (a replay); nothing of its batch was written"
                        )
                    continue  # stale: keep what is here
                synced = meta["x"] if meta_ok else digest(None)
                record = {"h": inc.h, "d": inc.d, "x": theirs, "r": found.rev}
                if mine == theirs:  # the same bytes (e.g. this device's own push)
                    puts.append((L.meta_key(key), L.encode(record)))
                    continue
                if mine != synced:  # a local change not on the hub yet: a conflict
                    conflicts += 1
                    if not wins(key, inc, Version(now, device, here)):
                        keep = {**record, "x": synced}
                        puts.append((L.meta_key(key), L.encode(keep)))
                        retry.append(key)
                        if key.startswith(losers.KEPT_PREFIXES) and here and inc.value:
                            puts.append(losers.put_aside(key, inc.value))
                            lost += 1
                        continue
                if inc.value is None:
                    deletes.append(key)
                else:
                    puts.append((key, inc.value))
                puts.append((L.meta_key(key), L.encode(record)))
                changed.append(key)
                pulled += 1
            if changed:
                pending = L.decode(values[2 * n]) or {"keys": []}
                keys_now = sorted(set(pending["keys"]) | set(changed))
                puts.append((L.UNLOGGED_KEY, L.encode({"keys": keys_now})))
                if values[2 * n + 1] is None and not encrypted:
                    puts.append(schema.version_record(schema.SCHEMA_VERSION))
            return Writes(puts, deletes, result=(changed, pulled, conflicts, retry, lost))

        changed, pulled, conflicts, retry, lost = await self.local.raw.transact(read, apply)
        self.result.pulled += pulled
        self.result.conflicts += conflicts
        self.progress.pulled = self.result.pulled
        self.retry.update(retry)
        if changed:
            await self._flush_unlogged(last)
        if lost:
            self.retry.update(await losers.keep(self.local))  # pushed at the end of the round
