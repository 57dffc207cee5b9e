"""Checkpointer (seed 000): pause a run and resume it later, even after a process restart.

A run (``run_id``) is a sequence of :class:`Checkpoint` snapshots numbered 1, 2, 3, ...
Each holds the app's JSON ``state`` (e.g. ``MessageAssembler.export_state()`` plus the
agent's own fields) and free JSON ``metadata`` (e.g. ``{"waiting_for": "approval"}`` for
a human-in-the-loop pause). Resuming is ``await cp.latest(run_id)``.

Two implementations pass one test suite: :class:`InMemoryCheckpointer` for tests and
:class:`KvCheckpointer` over any KvBackend. Key layout of the latter::

    ckpt:<run_id>:<seq>    one Checkpoint as canonical JSON; seq zero-padded to 12 digits,
                           so a prefix scan returns a run's checkpoints oldest first
    ckpt:<run_id>:head     {"seq": n}: the latest seq, written in the same atomic batch

``run_id`` is 1-128 characters of letters, digits and ``_.@/-`` (no ``:``, so one run's
prefix never covers another's). A save is one atomic batch, so a crash leaves the run at
its previous checkpoint or its new one. A save takes the next seq inside its own
transaction (after every checkpoint stored for the run, whoever saved it), so saves of one
run from several instances or processes get distinct, consecutive seqs.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..errors import NotFoundError, ValidationError, shown
from ..item import dumps
from ..storage.base import KvBackend, Writes, iter_prefix
from ..storage.schema import ensure_schema
from .structured import canonical_json

__all__ = [
    "Checkpoint",
    "Checkpointer",
    "InMemoryCheckpointer",
    "KvCheckpointer",
    "checkpoint_key",
]

RUN_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@/-]{0,127}")
SEQ_DIGITS = 12
MAX_SEQ = 10**SEQ_DIGITS - 1
MAX_STATE_BYTES = 4 * 1024 * 1024
MAX_METADATA_BYTES = 16_384
PREFIX = "ckpt:"


def _check_run_id(run_id: object) -> str:
    if not isinstance(run_id, str) or not RUN_ID_RE.fullmatch(run_id):
        raise ValidationError(
            "run_id must be 1-128 characters of letters, digits and _.@/- (no ':'), "
            f"got {shown(run_id)}"
        )
    return run_id


def _check_seq(seq: object) -> int:
    if isinstance(seq, bool) or not isinstance(seq, int) or not 1 <= seq <= MAX_SEQ:
        raise ValidationError(f"seq must be an int in 1..{MAX_SEQ}, got {shown(seq)}")
    return seq


def checkpoint_key(run_id: str, seq: int) -> str:
    """``ckpt:<run_id>:<seq zero-padded to 12 digits>``."""
    return f"{PREFIX}{_check_run_id(run_id)}:{_check_seq(seq):0{SEQ_DIGITS}d}"


def _head_key(run_id: str) -> str:
    return f"{PREFIX}{run_id}:head"


@dataclass(frozen=True)
class Checkpoint:
    """One snapshot of a run. ``state`` and ``metadata`` are JSON objects; each read
    returns fresh copies, so changing them never changes what is stored."""

    run_id: str
    seq: int
    created_at_ms: int
    state: dict[str, Any]
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "seq": self.seq,
            "created_at_ms": self.created_at_ms,
            "state": self.state,
            "metadata": self.metadata,
        }

    def to_json(self) -> str:
        return dumps(self.to_dict())

    @classmethod
    def from_json(cls, raw: str | bytes, where: str = "checkpoint") -> Checkpoint:
        try:
            data = json.loads(raw)
            if not isinstance(data, dict) or set(data) != set(_FIELDS):
                raise ValueError("wrong fields")
            _check_run_id(data["run_id"])
            _check_seq(data["seq"])
            created = data["created_at_ms"]
            if isinstance(created, bool) or not isinstance(created, int):
                raise ValueError("created_at_ms must be an int")
            if not isinstance(data["state"], dict) or not isinstance(data["metadata"], dict):
                raise ValueError("state and metadata must be objects")
            return cls(**data)
        except (ValueError, TypeError, UnicodeDecodeError) as exc:
            raise ValidationError(f"{where} is unreadable: {exc}") from None


_FIELDS = tuple(Checkpoint.__dataclass_fields__)


@runtime_checkable
class Checkpointer(Protocol):
    """What both implementations provide. Every method validates before it writes."""

    async def save(
        self, run_id: str, state: Mapping[str, Any], *, metadata: Mapping[str, Any] | None = None
    ) -> Checkpoint:
        """Store ``state`` as the run's next checkpoint (seq = latest + 1, from 1)."""
        ...

    async def latest(self, run_id: str) -> Checkpoint | None:
        """The newest checkpoint of the run, or None: where to resume."""
        ...

    async def list(self, run_id: str) -> list[Checkpoint]:
        """All checkpoints of the run, oldest first (empty if none)."""
        ...

    async def load(self, run_id: str, seq: int) -> Checkpoint:
        """Checkpoint ``seq`` of the run (NotFoundError if absent)."""
        ...

    async def delete_run(self, run_id: str) -> int:
        """Remove every checkpoint of the run at once; returns how many there were."""
        ...

    async def runs(self) -> list[str]:
        """Ids of the runs that have checkpoints, in key order."""
        ...


def _now_ms() -> int:
    return int(time.time() * 1000)


class _Base:
    def __init__(self, clock: Callable[[], int]) -> None:
        if not callable(clock):
            raise ValidationError("clock must be a callable returning epoch milliseconds")
        self._clock = clock
        self._lock = asyncio.Lock()

    def _encode(
        self, run_id: str, seq: int, state: object, metadata: object
    ) -> tuple[Checkpoint, str]:
        if not isinstance(state, Mapping):
            raise ValidationError(f"state must be a JSON object (dict), got {type(state).__name__}")
        if metadata is not None and not isinstance(metadata, Mapping):
            raise ValidationError("metadata must be a JSON object (dict) or None")
        state_json = canonical_json(dict(state), "state", max_bytes=MAX_STATE_BYTES)
        meta_json = canonical_json(dict(metadata or {}), "metadata", max_bytes=MAX_METADATA_BYTES)
        now = self._clock()
        if isinstance(now, bool) or not isinstance(now, int) or now < 0:
            raise ValidationError(f"clock() must return an int of epoch ms, got {shown(now)}")
        cp = Checkpoint(run_id, seq, now, json.loads(state_json), json.loads(meta_json))
        return cp, cp.to_json()


class InMemoryCheckpointer(_Base):
    """Checkpoints in a dict, stored as canonical JSON exactly like KvCheckpointer."""

    def __init__(self, *, clock: Callable[[], int] = _now_ms) -> None:
        super().__init__(clock)
        self._runs: dict[str, dict[int, str]] = {}

    async def save(
        self, run_id: str, state: Mapping[str, Any], *, metadata: Mapping[str, Any] | None = None
    ) -> Checkpoint:
        _check_run_id(run_id)
        async with self._lock:
            run = self._runs.get(run_id, {})
            seq = _check_seq(max(run, default=0) + 1)
            cp, text = self._encode(run_id, seq, state, metadata)
            self._runs.setdefault(run_id, {})[seq] = text
        return cp

    async def latest(self, run_id: str) -> Checkpoint | None:
        run = self._runs.get(_check_run_id(run_id))
        return Checkpoint.from_json(run[max(run)]) if run else None

    async def list(self, run_id: str) -> list[Checkpoint]:
        run = self._runs.get(_check_run_id(run_id), {})
        return [Checkpoint.from_json(run[seq]) for seq in sorted(run)]

    async def load(self, run_id: str, seq: int) -> Checkpoint:
        _check_seq(seq)
        text = self._runs.get(_check_run_id(run_id), {}).get(seq)
        if text is None:
            raise NotFoundError(f"run {run_id!r} has no checkpoint {seq}")
        return Checkpoint.from_json(text)

    async def delete_run(self, run_id: str) -> int:
        return len(self._runs.pop(_check_run_id(run_id), {}))

    async def runs(self) -> list[str]:
        return sorted(self._runs, key=lambda r: f"{r}:")  # the order of KV keys


class KvCheckpointer(_Base):
    """Checkpoints in a KvBackend under ``ckpt:`` (see the module docstring)."""

    def __init__(self, kv: KvBackend, *, clock: Callable[[], int] = _now_ms) -> None:
        super().__init__(clock)
        self.kv = kv
        self._schema_ok = False

    async def _ready(self) -> None:
        if not self._schema_ok:
            await ensure_schema(self.kv)
            self._schema_ok = True

    async def _scan(self, run_id: str) -> list[tuple[str, bytes]]:
        prefix = f"{PREFIX}{run_id}:"
        return [
            (k, raw) async for k, raw in iter_prefix(self.kv, prefix) if k[len(prefix) :].isdigit()
        ]

    async def _latest_seq(self, run_id: str) -> int:
        raw = await self.kv.get(_head_key(run_id))
        if raw is not None:
            try:
                seq = json.loads(raw)["seq"]
                if await self.kv.get(checkpoint_key(run_id, seq)) is not None:
                    return seq
            except (ValueError, KeyError, TypeError):
                pass  # an unreadable head: fall back to scanning the run
        pairs = await self._scan(run_id)
        return int(pairs[-1][0].rsplit(":", 1)[1]) if pairs else 0

    async def save(
        self, run_id: str, state: Mapping[str, Any], *, metadata: Mapping[str, Any] | None = None
    ) -> Checkpoint:
        _check_run_id(run_id)
        await self._ready()
        prefix = f"{PREFIX}{run_id}:"
        checked, _ = self._encode(run_id, 1, state, metadata)  # validate before the transaction
        async with self._lock:

            def write(_values: list[bytes | None], listed: list[list[str]]) -> Writes:
                seqs = [int(k[len(prefix) :]) for k in listed[0] if k[len(prefix) :].isdigit()]
                seq = _check_seq(max(seqs, default=0) + 1)
                cp = Checkpoint(run_id, seq, checked.created_at_ms, checked.state, checked.metadata)
                head = dumps({"seq": seq}).encode("utf-8")
                puts = [
                    (checkpoint_key(run_id, seq), cp.to_json().encode()),
                    (_head_key(run_id), head),
                ]
                return Writes(puts, result=cp)

            return await self.kv.transact([], write, list_prefixes=[prefix])

    async def latest(self, run_id: str) -> Checkpoint | None:
        _check_run_id(run_id)
        await self._ready()
        seq = await self._latest_seq(run_id)
        return await self.load(run_id, seq) if seq else None

    async def list(self, run_id: str) -> list[Checkpoint]:
        _check_run_id(run_id)
        await self._ready()
        return [Checkpoint.from_json(raw, k) for k, raw in await self._scan(run_id)]

    async def load(self, run_id: str, seq: int) -> Checkpoint:
        key = checkpoint_key(run_id, seq)
        await self._ready()
        raw = await self.kv.get(key)
        if raw is None:
            raise NotFoundError(f"run {run_id!r} has no checkpoint {seq}")
        return Checkpoint.from_json(raw, key)

    async def delete_run(self, run_id: str) -> int:
        prefix = f"{PREFIX}{_check_run_id(run_id)}:"
        await self._ready()
        async with self._lock:

            def write(_values: list[bytes | None], listed: list[list[str]]) -> Writes:
                return Writes(deletes=listed[0], result=listed[0])

            keys = await self.kv.transact([], write, list_prefixes=[prefix])
        return sum(1 for k in keys if k[len(prefix) :].isdigit())

    async def runs(self) -> list[str]:
        await self._ready()
        out: list[str] = []
        after: str | None = None
        while True:
            page = await self.kv.scan(PREFIX, start_after=after, limit=1)
            if not page:
                return out
            run_id = page[0][0][len(PREFIX) :].split(":", 1)[0]
            out.append(run_id)
            after = f"{PREFIX}{run_id};"  # ';' follows ':', so this skips the whole run
