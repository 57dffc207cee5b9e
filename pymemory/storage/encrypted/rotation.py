"""Re-sealing every value under a new data key: the progress record and the two steps.

A rotation (or the migration of a plaintext store) walks the inner store in key order, a
page at a time. Each page is re-sealed in one inner transaction together with the cursor
in ``meta:enc:rotation`` (:data:`ROTATION_KEY`), so an interrupted run resumes after the
last page that landed; the end retires the old data keys and the progress record in one
more transaction. Both steps write only if the key record and the progress record are
still what was read, and return None when another writer got there first.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from ...errors import CorruptValueError, ValidationError
from ..base import KvBackend, Writes
from .cipher import CLEAR_KEYS, HIDDEN_KEYS, KEYRING_KEY, ROTATION_KEY, Cipher, sealed_key_id
from .keyring import Ring, encode_ring

log = logging.getLogger("pymemory")


@dataclass(frozen=True)
class Progress:
    """The parsed ``meta:enc:rotation`` and the bytes it was parsed from."""

    raw: bytes
    source: tuple[int, ...] | None  # data key ids being retired; None: plaintext
    after: str | None  # the last key done


def encode_progress(source: Sequence[int] | None, after: str | None) -> bytes:
    """The progress record: the data key ids retired (None: plaintext), the cursor."""
    record = {"from": "plain" if source is None else sorted(source), "after": after}
    return json.dumps(record, separators=(",", ":"), sort_keys=True).encode()


def parse_progress(raw: bytes) -> Progress:
    """:class:`Progress` from the stored record; CorruptValueError if it is damaged."""
    try:
        record = json.loads(raw)
        source, after = record["from"], record["after"]
    except (ValueError, KeyError, TypeError):
        raise CorruptValueError(f"{ROTATION_KEY} is damaged") from None
    if after is not None and not isinstance(after, str):
        raise CorruptValueError(f"{ROTATION_KEY}: bad cursor")
    if source == "plain":
        return Progress(bytes(raw), None, after)
    if not isinstance(source, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) for i in source
    ):
        raise CorruptValueError(f"{ROTATION_KEY}: bad key ids")
    return Progress(bytes(raw), tuple(source), after)


def check_batch_size(batch_size: object) -> int:
    """``batch_size`` (keys re-sealed per transaction) if it is an int >= 1."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValidationError("batch_size must be an int >= 1")
    return batch_size


async def reseal_page(
    inner: KvBackend,
    cipher: Cipher,
    ring: Ring,
    progress: Progress,
    page: list[tuple[str, bytes]],
) -> int | None:
    """Re-seal one page with ``cipher`` in one transaction with the cursor: the values
    moved, or None if it raced."""
    keys, raws, puts = [], [], []
    for key, raw in page:
        if key in HIDDEN_KEYS or key in CLEAR_KEYS:
            continue
        if progress.source is None:
            plaintext = raw
        else:
            if sealed_key_id(raw) not in progress.source:
                continue  # already under the new key
            try:
                plaintext = await cipher.open(key, raw)
            except CorruptValueError as exc:  # stays unreadable, as it already was
                log.warning("rotation left a damaged value as it was: %s", exc)
                continue
        keys.append(key)
        raws.append(raw)
        puts.append((key, await cipher.seal(key, plaintext)))
    puts.append((ROTATION_KEY, encode_progress(progress.source, page[-1][0])))

    def write(values: list[bytes | None], _listed: list[list[str]]) -> Writes:
        if values[0] != ring.raw or values[1] != progress.raw or values[2:] != raws:
            return Writes(result=None)
        return Writes(puts, result=len(keys))

    return await inner.transact([KEYRING_KEY, ROTATION_KEY, *keys], write)


async def retire_old_keys(inner: KvBackend, ring: Ring, progress: Progress) -> bytes | None:
    """Drop the retired data keys from the key record and delete the progress record, in
    one transaction: the new key record, or None if it raced."""
    retired = set(progress.source or ())
    kept = {i: w for i, w in ring.wrapped.items() if i not in retired}
    record = encode_ring(ring.kdf, kept, ring.write_id)

    def end(values: list[bytes | None], _listed: list[list[str]]) -> Writes:
        if values[0] != ring.raw or values[1] != progress.raw:
            return Writes(result=False)
        return Writes([(KEYRING_KEY, record)], [ROTATION_KEY], result=True)

    if not await inner.transact([KEYRING_KEY, ROTATION_KEY], end):
        return None
    return record
