"""The pull of a sync round (pymemory/sync/replicator.py's docstring): the hub's feed a
page at a time, each page checked whole and applied in ONE transaction with the new feed
position.

Conflicts: a pulled version meets a local change not on the hub yet; :func:`~.records.wins`
decides with the local change's EDIT clock (:mod:`.edits`), so the later edit wins on every
device whichever syncs first. The losing version of an item (or history record), local or
the hub's, goes to the item's history (:mod:`.losers`). A conflict is counted once per item
however many of its records met. Two cases are not conflicts: the hub holding this device's
own push whose answer was lost (recorded as if the answer had come, so what the device did
since, a delete included, goes up as it would have), and a document deleted at the CouchDB
level (the hub lost it: a device that holds the key pushes it again as it was, one that
never had it skips it with a warning). A live history record of an item that is gone
here (deleted, or archived, which drops its history) is refused and deleted on the hub:
the edit that wrote it lost to the deletion.
"""

from __future__ import annotations

import logging
from typing import Any

import pymemory.sync.local as L
import pymemory.sync.losers as losers

from ..errors import SyncIntegrityError
from ..storage import Writes, changes, schema
from .records import (
    DOC_PREFIX,
    UNSYNCED,
    Incoming,
    Version,
    digest,
    from_doc,
    item_of_key,
    local_change,
    stamp_body,
    travels,
    wins,
)

log = logging.getLogger("pymemory")


async def pull(rnd: Any) -> None:
    """The pull of a round: the hub's feed after its position, a page at a time."""
    while True:
        docs, last = await rnd.client.changes(rnd.since, rnd.page)
        incoming: dict[str, Incoming] = {}
        lost: dict[str, str | None] = {}
        for doc in docs:
            if doc.get("_deleted") is True:  # deleted at the CouchDB level: lost
                key = doc["_id"][len(DOC_PREFIX) :]
                if doc["_id"].startswith(DOC_PREFIX) and travels(key):
                    incoming.pop(key, None)
                    lost[key] = doc["_rev"]
                continue
            found = from_doc(doc)
            if found is not None:
                incoming[found.key] = found
                lost.pop(found.key, None)
        if incoming:
            await verify(rnd, list(incoming.values()))
        await apply(rnd, list(incoming.values()), last, lost)
        rnd.since = last
        if len(docs) < rnd.page:
            return


async def verify(rnd: Any, batch: list[Incoming]) -> None:
    """An encrypted store's checks, before anything of the page is written."""
    sealer = rnd.local.sealer
    if not rnd.local.encrypted or sealer is None:
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


async def apply(rnd: Any, batch: list[Incoming], last: Any, lost: dict[str, str | None]) -> None:
    """Apply one page in one transaction (the module docstring); ``lost``: keys the
    hub deleted at the CouchDB level (with the deletion's revision)."""
    while True:
        try:
            return await _apply_once(rnd, batch, last, lost)
        except _Undated as exc:  # a conflict of a change older than the log read
            await rnd.edits.load(exc.keys)


async def _apply_once(
    rnd: Any, batch: list[Incoming], last: Any, lost: dict[str, str | None]
) -> None:
    top = 0
    for found in batch:
        rnd.clock.observe(found.version.h)
        top = max(top, found.version.h)
    keys = [f.key for f in batch]
    gone = sorted(lost)
    n, g = len(keys), len(gone)
    extra = [L.UNLOGGED_KEY, schema.META_SCHEMA, changes.SEQ_KEY, L.REPUSH_KEY]
    # the items of incoming history records: a record of an item deleted here is refused
    owners = sorted({schema.mem_key(schema.hst_id(k)) for k in keys if k.startswith(schema.HST)})
    read = keys + [L.meta_key(k) for k in keys + gone] + extra + owners
    read += [L.meta_key(k) for k in owners]
    deleted_now = {f.key for f in batch if f.key.startswith(schema.MEM) and f.version.deleted}
    encrypted = rnd.local.encrypted
    device, hub_point = rnd.device, rnd._checkpoint(last, rnd.pushed_seq)
    clock, edits = rnd._clock_record(), rnd.edits

    def apply(values: list[bytes | None], _: list[list[str]]) -> Writes:
        puts: list[tuple[str, bytes]] = [hub_point, clock]
        deletes: list[str] = []
        changed: list[str] = []
        pulled = 0
        retry: list[str] = []
        conflicted: set[str] = set()
        undated: list[str] = []
        aside = 0
        base = 2 * n + g
        dead = set(deleted_now)  # the items gone here or in this page
        for j, owner in enumerate(owners):
            known = L.decode(values[base + 4 + len(owners) + j])
            if values[base + 4 + j] is None and isinstance(known, dict):  # gone here
                dead.add(owner)
        for i, found in enumerate(batch):
            key, inc = found.key, found.version
            here, meta = values[i], L.decode(values[n + i])
            mine = digest(here)
            theirs = digest(inc.value)
            meta_ok = isinstance(meta, dict)
            owner = schema.mem_key(schema.hst_id(key)) if key.startswith(schema.HST) else ""
            if owner in dead and inc.value is not None:
                # the history of an item deleted here (an edit that lost to the delete):
                # refused, and deleted on the hub too
                if here is not None:
                    deletes.append(key)
                refused = {"h": inc.h, "d": inc.d, "x": UNSYNCED, "r": found.rev}
                puts.append((L.meta_key(key), L.encode(refused)))
                retry.append(key)
                continue
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
            if inc.d == device and (not meta_ok or (inc.h, inc.d) > (meta["h"], meta["d"])):
                # this device's own push whose answer was lost: recorded as if it had
                # come; what changed here since goes up at the end of the round
                puts.append((L.meta_key(key), L.encode(record)))
                retry.append(key)
                continue
            if local_change(here, meta if meta_ok else None):  # a local change: a conflict
                if not edits.has(key):
                    undated.append(key)
                    continue
                conflicted.add(item_of_key(key))
                mine_v = Version(edits.of(key), device, here)
                both = key.startswith(losers.KEPT_PREFIXES) and here and inc.value
                if wins(key, mine_v, inc):
                    keep = {**record, "x": synced}
                    if meta_ok and "p" in meta:
                        keep["p"] = meta["p"]  # still unanswered
                    puts.append((L.meta_key(key), L.encode(keep)))
                    retry.append(key)
                    if both:
                        puts.append(losers.put_aside(key, inc.value))  # type: ignore[arg-type]
                        aside += 1
                    continue
                if both:  # the local edit lost: into history, like the hub's would
                    puts.append(losers.put_aside(key, here))  # type: ignore[arg-type]
                    aside += 1
            if inc.value is None:
                deletes.append(key)
            else:
                puts.append((key, inc.value))
            puts.append((L.meta_key(key), L.encode(record)))
            changed.append(key)
            pulled += 1
        if undated:
            raise _Undated(undated)
        again: list[str] = []
        for j, key in enumerate(gone):
            meta = L.decode(values[2 * n + j])
            if isinstance(meta, dict) and "x" in meta and meta.get("h", 0):
                puts.append((L.meta_key(key), L.encode({**meta, "r": lost[key], "gone": True})))
                again.append(key)
        if again:
            before = L.decode(values[base + 3]) or {}
            repush = sorted(set(before.get("keys", [])) | set(again))
            puts.append((L.REPUSH_KEY, L.encode({"keys": repush})))
        seen = changes.observe(values[base + 2], top)
        if seen is not None:
            puts.append((changes.SEQ_KEY, seen))
        if changed:
            pending = L.decode(values[base]) or {"keys": []}
            keys_now = sorted(set(pending["keys"]) | set(changed))
            puts.append((L.UNLOGGED_KEY, L.encode({"keys": keys_now})))
            if values[base + 1] is None and not encrypted:
                puts.append(schema.version_record(schema.SCHEMA_VERSION))
        result = (changed, pulled, conflicted, retry + again, aside)
        return Writes(puts, deletes, result=result)

    changed, pulled, conflicted, retry, aside = await rnd.local.raw.transact(read, apply)
    for key in set(gone) - set(retry):
        log.warning("sync: the hub lost %r, which this device never had: skipped", key)
    rnd.result.pulled += pulled
    rnd.conflicted |= conflicted
    rnd.result.conflicts = len(rnd.conflicted)
    rnd.result.conflicted = sorted(rnd.conflicted)
    rnd.progress.pulled = rnd.result.pulled
    rnd.retry.update(retry)
    if changed:
        await rnd._flush_unlogged(last)
    if aside:
        rnd.retry.update(await losers.keep(rnd.local))  # pushed at the end of the round


async def repair(rnd: Any, keys: list[str]) -> None:
    """Keys the hub refused twice in one round: one it no longer holds at all (lost,
    or deleted at the CouchDB level before this device saw it) goes up again as new;
    any other waits for the next round's pull."""
    docs = await rnd.client.get_docs([DOC_PREFIX + k for k in keys])
    missing = [k for k in keys if docs[DOC_PREFIX + k] is None]
    if not missing:
        return
    log.warning("sync: the hub lost %d record(s); pushing them again", len(missing))
    metas = await rnd.local.raw.get_many([L.meta_key(k) for k in missing])
    marks = []
    for key, raw in zip(missing, metas, strict=True):
        meta = L.decode(raw)
        if isinstance(meta, dict) and meta.get("h", 0):
            marks.append((L.meta_key(key), L.encode({**meta, "r": None, "gone": True})))
        elif isinstance(meta, dict):  # never synced (UNSYNCED_DELETE): new on the hub
            marks.append((L.meta_key(key), L.encode({**meta, "r": None})))
    await rnd.local.raw.put_many(marks)
    await rnd._push(missing)


class _Undated(Exception):
    """A page met a conflict whose local change the log read so far does not date."""

    def __init__(self, keys: list[str]) -> None:
        super().__init__(keys)
        self.keys = keys
