"""Deletion manifests: a hub that drops or withholds a delete of an encrypted store's item
is found out (docs/sync.md, "Dropped deletes").

Each device keeps the keys of the item-record tombstones it pushed and the hub accepted
(``sync:manifest`` {"del": [...], "sent": {hub: [count, rev]}}, written in the
transaction that records the push) and, when that list grew, puts it on the hub as ONE
document ``m:<device>`` whose ``s`` seals ``{"d", "h", "del"}`` under the name
``sync:m:<device>`` with the store's key. Item tombstones are final (a deletion beats
any edit and ids are never reused), so every key a manifest lists must be a tombstone on
every device.

Before a round pulls anything, a device with the key lists the hub's manifests (ids and
revisions only), reads the ones that changed since it last checked them, refuses one
older than it has seen or a known device's manifest gone (``sync:m:<hub>:<device>``
{"h", "r"}), and reads straight from the hub each listed key it does not hold as a
tombstone: a sealed tombstone is applied; anything else (missing, deleted, a live
revision) raises SyncIntegrityError before the round writes anything it pulled.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pymemory.sync.local as L

from ..errors import SyncIntegrityError
from ..storage import Writes, iter_prefix
from .records import DOC_PREFIX, GONE, ITEM_PREFIXES, Incoming, Version, from_doc

MANIFEST_KEY = "sync:manifest"
DOC = "m:"


def seen_prefix(hub: str) -> str:
    return f"sync:m:{hub}:"


def tombstones(keys: list[str], versions: list[Version], revs: list[str | None]) -> list[str]:
    """The item-record tombstones among pushed versions the hub accepted."""
    return [
        k
        for k, v, r in zip(keys, versions, revs, strict=True)
        if r is not None and v.value is None and k.startswith(ITEM_PREFIXES)
    ]


def grow(old: bytes | None, added: list[str]) -> tuple[str, bytes] | None:
    """The device's manifest record with ``added`` in it (None: nothing new)."""
    found = L.decode(old) or {}
    have = set(found.get("del", []))
    if not added or have.issuperset(added):
        return None
    return MANIFEST_KEY, L.encode({**found, "del": sorted(have | set(added))})


async def push(rnd: Any) -> None:
    """Put this device's manifest on this hub if it grew since it was last put there."""
    raw, sealer = rnd.local.raw, rnd.local.sealer
    found = L.decode(await raw.get(MANIFEST_KEY))
    if sealer is None or not isinstance(found, dict):
        return
    keys = list(found.get("del", []))
    sent = found.get("sent", {}).get(rnd.hub) or [0, None]
    if sent[0] == len(keys):
        return
    body = {"d": rnd.device, "h": rnd.clock.tick(), "del": keys}
    stamp = await sealer.seal(L.SYNC + DOC + rnd.device, L.encode(body))
    doc: dict[str, Any] = {"_id": DOC + rnd.device, "s": base64.b64encode(stamp).decode()}
    if sent[1]:
        doc["_rev"] = sent[1]
    rev = await rnd.client.put_doc(doc)
    if rev is None:  # our last write was not recorded (a killed round): its revision
        current = await rnd.client.get_doc(doc["_id"])
        if current is not None:
            doc["_rev"] = current["_rev"]
        rev = await rnd.client.put_doc(doc)
    if rev is None:
        return  # tried again next round

    def done(values: list[bytes | None], _: list[list[str]]) -> Writes:
        now = L.decode(values[0]) or {}
        marks = {**now.get("sent", {}), rnd.hub: [len(keys), rev]}
        return Writes([(MANIFEST_KEY, L.encode({**now, "sent": marks})), rnd._clock_record()])

    await raw.transact([MANIFEST_KEY], done)


def _body(device: str, opened: bytes) -> dict[str, Any]:
    try:
        body = json.loads(opened)
    except ValueError:
        body = None
    ok = isinstance(body, dict) and body.get("d") == device and isinstance(body.get("h"), int)
    keys = body.get("del") if ok else None  # type: ignore[union-attr]
    if not isinstance(keys, list) or not all(
        isinstance(k, str) and k.startswith(ITEM_PREFIXES) for k in keys
    ):
        raise SyncIntegrityError(f"the hub's deletion manifest of device {device} is malformed")
    return body  # type: ignore[return-value]


async def check(rnd: Any) -> None:
    """The check of the module docstring; SyncIntegrityError before anything is pulled."""
    raw, sealer, client = rnd.local.raw, rnd.local.sealer, rnd.client
    if sealer is None:
        return  # a new device's first sync trusts what it pulls (no key yet)
    prefix = seen_prefix(rnd.hub)
    seen = {k[len(prefix) :]: L.decode(v) or {} async for k, v in iter_prefix(raw, prefix)}
    revs = await client.doc_revs(DOC, DOC + "\ufff0")
    on_hub = {doc_id[len(DOC) :]: rev for doc_id, rev in revs.items()}
    for device in seen:
        if device not in on_hub:
            raise SyncIntegrityError(
                f"the hub dropped device {device}'s deletion manifest; nothing was pulled"
            )
    changed = [d for d, r in on_hub.items() if d != rnd.device and seen.get(d, {}).get("r") != r]
    if not changed:
        return
    docs = await client.get_docs([DOC + d for d in changed])
    claims: dict[str, str] = {}
    marks: list[tuple[str, bytes]] = []
    for device in changed:
        doc = docs[DOC + device]
        if doc is None or not isinstance(doc.get("s"), str):
            raise SyncIntegrityError(f"the hub's deletion manifest of device {device} is gone")
        try:
            sealed = base64.b64decode(doc["s"], validate=True)
        except ValueError:
            raise SyncIntegrityError(f"device {device}'s manifest is malformed") from None
        body = _body(device, await sealer.open(L.SYNC + DOC + device, sealed))
        if body["h"] < seen.get(device, {}).get("h", 0):
            raise SyncIntegrityError(
                f"the hub served an older deletion manifest of device {device} (a replay)"
            )
        claims.update(dict.fromkeys(body["del"], device))
        marks.append((prefix + device, L.encode({"h": body["h"], "r": doc["_rev"]})))
    keys = sorted(claims)
    metas = await raw.get_many([L.meta_key(k) for k in keys]) if keys else []
    owed = [k for k, m in zip(keys, metas, strict=True) if (L.decode(m) or {}).get("x") != GONE]
    batch: list[Incoming] = []
    for start in range(0, len(owed), 500):
        part = owed[start : start + 500]
        found = await client.get_docs([DOC_PREFIX + k for k in part])
        for key in part:
            doc = found[DOC_PREFIX + key]
            inc = from_doc(doc) if doc is not None else None
            if inc is None or inc.version.value is not None:
                raise SyncIntegrityError(
                    f"the hub withholds the deletion of {key!r} that device {claims[key]} "
                    "made (its manifest lists it); nothing was pulled"
                )
            batch.append(inc)
    if batch:
        await rnd._verify(batch)
        await rnd._apply(batch, rnd.since)
    await raw.put_many(marks)
