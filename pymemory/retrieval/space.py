"""Which embedder a store's vectors come from (``meta:embedder``), and switching to another.

    meta:embedder   {"name": N, "dim": D}, with "dropping": true while old vectors go

Vectors of two embedders do not mix (their cosines mean nothing), so a store holds the
vectors of one: the one its record names. The record is device-local like the vectors
(never synced, never exported); every vector write reads it in its transaction and
writes nothing unless it names the writer's embedder (:func:`accepts`).

Attaching an embedder (:func:`settle`) makes the record name it. When it named another
one (or the stored vectors have another dim), the store switches: the record first
says ``dropping`` under the new name, so that no instance writes vectors while the old
ones are deleted in chunks; the record without ``dropping`` then says the switch is
done, and the caller embeds every item again in the background. A restart in the middle
finds ``dropping`` and resumes.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass

from ..errors import ValidationError
from ..models.embedding import Embedder
from ..storage import KvBackend, Writes, schema
from ..storage.transactions import Transaction
from .vectors_kv import decode_group
from .writer import StoreWriter

log = logging.getLogger("pymemory")

KEY = schema.META_EMBEDDER
#: Local models that shipped after the record existed: a store without a record never
#: holds their vectors.
SHIPPED_WITH_RECORD = ("multilingual-e5-small",)
DROP_CHUNK = 1000  # vector records deleted per transaction during a switch


@dataclass(frozen=True)
class Space:
    """What ``meta:embedder`` says: the embedder's name and dim, and whether the vectors
    of the one before are still being deleted."""

    name: str
    dim: int
    dropping: bool = False

    def encode(self) -> bytes:
        doc: dict[str, object] = {"name": self.name, "dim": self.dim}
        if self.dropping:
            doc["dropping"] = True
        return json.dumps(doc, sort_keys=True).encode()

    def holds(self, embedder: Embedder) -> bool:
        """Whether vectors of ``embedder`` belong in this store now."""
        return not self.dropping and self.name == embedder.name and self.dim == embedder.dim


def decode(raw: bytes | None) -> Space | None:
    """The record's value (None: no record, or an unreadable one)."""
    if raw is None:
        return None
    try:
        doc = json.loads(raw)
        name, dim = doc["name"], doc["dim"]
    except (ValueError, KeyError, TypeError):
        log.error("%s is unreadable: %r", KEY, raw[:80])
        return None
    if not isinstance(name, str) or isinstance(dim, bool) or not isinstance(dim, int):
        return None
    return Space(name, dim, doc.get("dropping") is True)


def accepts(raw: bytes | None, embedder: Embedder) -> bool:
    """Whether a vector write of ``embedder`` may land, given the record as read in the
    write's transaction."""
    recorded = decode(raw)
    return recorded is not None and recorded.holds(embedder)


async def settle(writer: StoreWriter, embedder: Embedder) -> bool:
    """Make the store's record name ``embedder``; True if that was a switch (the old
    vectors are deleted by then: every item needs embedding again).

    A store without a record (written by a pymemory before the record existed) adopts
    ``embedder``: its vectors were made by the only model that pymemory shipped then,
    MiniLM, the default (or by the app's own embedder). Unless they are of another dim,
    or ``embedder`` is a model that shipped later (:data:`SHIPPED_WITH_RECORD`): then
    they are dropped."""
    kv = writer.kv
    while True:
        raw = await kv.get(KEY)
        recorded = decode(raw)
        if recorded is not None and recorded.holds(embedder):
            return False
        if recorded is None and raw is None:
            dim = await _stored_dim(kv)
            later = embedder.name.startswith(SHIPPED_WITH_RECORD)
            switch = dim is not None and (dim != embedder.dim or later)
        else:
            switch = True
        target = Space(embedder.name, embedder.dim, dropping=switch)
        async with writer.lock:
            claimed = await writer.commit_vectors([], _claim(raw, target))
        if not claimed:
            continue
        if not switch:
            return False
        if recorded is not None:
            log.warning(
                "the embedder changed (%s, dim %d -> %s, dim %d): dropping the stored "
                "vectors; every memory is embedded again in the background",
                recorded.name, recorded.dim, embedder.name, embedder.dim,
            )  # fmt: skip
        if await _drop_vectors(writer, target):
            return True


def _claim(seen: bytes | None, target: Space) -> Transaction:
    """Record ``target`` if the record is still ``seen`` (else another instance changed
    it meanwhile: the caller looks again); whether it did."""

    def fn(values: list[bytes | None], _listed: list[list[str]]) -> Writes:
        if values[0] != seen:
            return Writes(result=False)
        return Writes([(KEY, target.encode())], result=True)

    return fn


async def _stored_dim(kv: KvBackend) -> int | None:
    """The dim of a stored vector (None: none stored, or unreadable)."""
    found = await kv.scan(schema.VEC, limit=1)
    if not found:
        return None
    try:
        return int(decode_group(found[0][1])[1].shape[1])
    except ValidationError:
        return None


async def _drop_vectors(writer: StoreWriter, target: Space) -> bool:
    """Delete every vector record, a chunk per transaction under the write lock, then
    record ``target`` as done; False if another instance changed the record meanwhile."""
    kv = writer.kv
    while True:
        async with writer.lock:
            keys = [k for k, _ in await kv.scan(schema.VEC, limit=DROP_CHUNK)]
            outcome = await writer.commit_vectors([], _drop(keys, target))
        if outcome is None:
            return False
        if outcome:
            return True


def _drop(keys: list[str], target: Space) -> Transaction:
    """Delete ``keys`` (False), or with none left record the switch as done (True); None
    if the record is no longer ``target``."""

    def fn(values: list[bytes | None], _listed: list[list[str]]) -> Writes:
        if decode(values[0]) != target:
            return Writes(result=None)
        if not keys:  # no instance writes vectors while the record says dropping
            return Writes([(KEY, Space(target.name, target.dim).encode())], result=True)
        return Writes(deletes=keys, result=False)

    return fn
