"""What travels, how it looks on the hub, and who wins a conflict: pure functions.

One hub document per KV key (``_id`` = ``k:<key>``)::

    {"_id": "k:mem:<id>", "_rev": ..., "h": <clock>, "d": "<device>",
     "v": "<base64 of the stored bytes>"          # a live record, or
     "del": true                                  # a tombstone (no content at all)
     "s": "<base64 stamp>"}                       # encrypted stores only

``v`` is the value exactly as the local backend holds it: for an encrypted store the
sealed bytes, so the hub holds ciphertext only. ``s`` (the stamp) seals ``{"h", "d", "x"}``
(``x``: the digest of ``v``, or ``"-"`` for a tombstone) under the name ``sync:<key>``
with the store's data key: a hub cannot change a record's clock, turn a record into a
tombstone, or move a record to another key without failing the stamp.

Conflicts (:func:`wins`): for the item records (``mem:``, ``arc:``, ``hst:``, whose
ids are random and never reused) a tombstone beats any live version, so a delete or a
forget always sticks; otherwise the version with the higher hybrid logical clock wins,
then the higher device id. A version's clock is the one its edit got when it was made
(pymemory/storage/changes.py), kept through every push, pull and retry. Every device
applies the same rule to the same two versions.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from ..errors import SyncError
from ..storage import changes

DOC_PREFIX = "k:"
STORE_DOC = "pymemory"  # the hub's store record: {"encrypted": bool, "schema": N, "hub": id}
HUB_FORMAT = 1
KEY_RECORD = "meta:enc"
#: Prefixes whose records travel (the key record ``meta:enc`` too). Not: ``chg:`` (the
#: local change log), ``meta:seq``, ``vec:`` and ``meta:embedder`` (re-embedded on each
#: device), ``snap:`` (index snapshots), ``sync:`` (this replicator's own state).
TRAVEL_PREFIXES = ("mem:", "arc:", "hst:", "obs:", "blk:", "ns:", "ckpt:", "fs:", "mt:", "lg:")
#: Prefixes every Memory write logs in the change log: found through it between rounds.
LOGGED_PREFIXES = ("mem:", "arc:", "hst:")
#: The rest is written by the agent primitives without the log: scanned every round.
SCANNED_PREFIXES = tuple(p for p in TRAVEL_PREFIXES if p not in LOGGED_PREFIXES)
#: Item records: ids are random and never reused, so a tombstone always wins.
ITEM_PREFIXES = ("mem:", "arc:", "hst:")
GONE = "-"  # the digest of a deleted record
#: The synced digest of a record this device deleted before it ever synced a version of
#: it: any live version the hub has is a local change's conflict (which the delete wins).
UNSYNCED = "?"
CLOCK_SHIFT = changes.CLOCK_SHIFT  # an HLC value is ms * CLOCK_SHIFT + a counter


SCHEMA_RECORD = "meta:schema"  # travels so that an encrypted device gets it sealed


def travels(key: str) -> bool:
    return key in (KEY_RECORD, SCHEMA_RECORD) or key.startswith(TRAVEL_PREFIXES)


def digest(raw: bytes | None) -> str:
    """A short fingerprint of a stored value (GONE for none)."""
    if raw is None:
        return GONE
    return hashlib.sha256(raw).hexdigest()[:32]


@dataclass(frozen=True)
class Version:
    """One version of a key: its clock, the device that wrote it, and its bytes (None: a
    tombstone)."""

    h: int
    d: str
    value: bytes | None

    @property
    def deleted(self) -> bool:
        return self.value is None


def wins(key: str, a: Version, b: Version) -> bool:
    """Whether version ``a`` of ``key`` beats ``b`` (the module docstring's rule)."""
    if key.startswith(ITEM_PREFIXES) and a.deleted != b.deleted:
        return a.deleted
    return (a.h, a.d) > (b.h, b.d)


class Clock:
    """A hybrid logical clock: never behind the wall clock, nor anything it has seen."""

    def __init__(self, last: int = 0) -> None:
        self.last = last

    def observe(self, h: int) -> None:
        self.last = max(self.last, h)

    def tick(self) -> int:
        self.last = changes.tick(self.last)
        return self.last


def item_of_key(key: str) -> str:
    """What a conflict is counted against: an item record's item id (``mem:``, ``arc:``,
    ``hst:<id>:<n>``), else the key itself."""
    if key.startswith(ITEM_PREFIXES):
        return key[4:].split(":", 1)[0]
    return key


def local_change(value: bytes | None, meta: dict[str, Any] | None) -> bool:
    """Whether the local ``value`` of a key differs from what the hub may hold of this
    device's: the version last synced (``x``) or one sent whose answer was lost (``p``,
    the digests sent since the last answer)."""
    mine = digest(value)
    if meta is None:
        return mine != GONE
    sent = meta.get("p")
    return mine != meta["x"] or (isinstance(sent, list) and any(d != mine for d in sent))


def stamp_body(key: str, h: int, d: str, value: bytes | None) -> bytes:
    return json.dumps({"h": h, "d": d, "k": key, "x": digest(value)}, sort_keys=True).encode()


def to_doc(key: str, version: Version, rev: str | None, stamp: bytes | None) -> dict[str, Any]:
    doc: dict[str, Any] = {"_id": DOC_PREFIX + key, "h": version.h, "d": version.d}
    if rev is not None:
        doc["_rev"] = rev
    if version.value is None:
        doc["del"] = True
    else:
        doc["v"] = base64.b64encode(version.value).decode()
    if stamp is not None:
        doc["s"] = base64.b64encode(stamp).decode()
    return doc


@dataclass(frozen=True)
class Incoming:
    """A hub document read back: the key, the version, its revision and stamp."""

    key: str
    version: Version
    rev: str
    stamp: bytes | None


def from_doc(doc: dict[str, Any]) -> Incoming | None:
    """The record a hub document carries; None for a document that is not one (the store
    record, design documents); SyncError for a malformed one."""
    doc_id = doc["_id"]
    if not doc_id.startswith(DOC_PREFIX):
        return None
    key = doc_id[len(DOC_PREFIX) :]
    h, d, rev = doc.get("h"), doc.get("d"), doc.get("_rev")
    if isinstance(h, bool) or not isinstance(h, int) or h < 0:
        raise SyncError(f"hub record {doc_id!r} has no valid clock")
    if not isinstance(d, str) or not d or not isinstance(rev, str):
        raise SyncError(f"hub record {doc_id!r} has no device or revision")
    if not travels(key):
        raise SyncError(f"hub record {doc_id!r} names a key that does not travel")
    try:
        if doc.get("del") is True:
            value = None
        elif isinstance(doc.get("v"), str):
            value = base64.b64decode(doc["v"], validate=True)
        else:
            raise ValueError("no value")
        stamp = base64.b64decode(doc["s"], validate=True) if isinstance(doc.get("s"), str) else None
    except ValueError:
        raise SyncError(f"hub record {doc_id!r} has a malformed value") from None
    return Incoming(key, Version(h, d, value), rev, stamp)
