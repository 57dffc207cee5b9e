"""The LangGraph store's stored records (items, embeddings) and the items it returns."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
from langgraph.store.base import (
    SearchItem,
)

from ...errors import PymemoryError, SchemaError, ValidationError
from ...item import MAX_JSON_DEPTH, loads
from ...retrieval.vectors_kv import decode_vector, encode_vector
from .checks import (
    json_text,
)

# --- records -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Record:
    """One stored item: its value, times, creation sequence, TTL and what of it is indexed."""

    value: dict[str, Any]
    created_at: int
    updated_at: int
    seq: int
    ttl: float | None = None
    expires_at: int | None = None
    index: list[str] | bool | None = None

    def expired(self, now: int) -> bool:
        return self.expires_at is not None and self.expires_at <= now

    def encode(self) -> bytes:
        return json_text(
            {
                "value": self.value,
                "created_at": self.created_at,
                "updated_at": self.updated_at,
                "seq": self.seq,
                "ttl": self.ttl,
                "expires_at": self.expires_at,
                "index": self.index,
            }
        ).encode("utf-8")

    @classmethod
    def decode(cls, raw: bytes, where: str) -> Record:
        try:
            data = loads(raw, max_depth=MAX_JSON_DEPTH + 1)  # the value sits one deeper
            if not isinstance(data, dict) or not isinstance(data.get("value"), dict):
                raise ValueError("no value object")
            for name in ("created_at", "updated_at", "seq"):
                if isinstance(data.get(name), bool) or not isinstance(data.get(name), int):
                    raise ValueError(f"{name} must be an int")
            return cls(**{k: data.get(k) for k in cls.__dataclass_fields__})
        except (ValueError, TypeError, PymemoryError) as exc:
            raise SchemaError(
                f"the LangGraph store record {where!r} is unreadable: {exc}"
            ) from None


def as_datetime(ms: int) -> datetime:
    """Epoch milliseconds as an aware UTC datetime."""
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def search_item(
    namespace: tuple[str, ...], key: str, rec: Record, score: float | None
) -> SearchItem:
    """The SearchItem LangGraph returns for a record."""
    return SearchItem(
        namespace=namespace,
        key=key,
        value=rec.value,
        created_at=as_datetime(rec.created_at),
        updated_at=as_datetime(rec.updated_at),
        score=score,
    )


def encode_vectors(model: str, rows: np.ndarray) -> bytes:
    """An item's embeddings as a vector record: a JSON header line, then the float32 rows."""
    head = json.dumps({"model": model, "rows": int(rows.shape[0])}).encode()
    return head + b"\n" + b"".join(encode_vector(row, 1.0, "float32") for row in rows)


def decode_vectors(raw: bytes, model: str, dim: int) -> np.ndarray | None:
    """The unit rows of an item's vector record, or None if another model made them."""
    head, _, body = raw.partition(b"\n")
    try:
        meta = json.loads(head)
        n = int(meta["rows"])
    except (ValueError, KeyError, TypeError):
        return None
    if meta.get("model") != model or n <= 0 or len(body) % n:
        return None
    size = len(body) // n
    rows = []
    for i in range(n):
        try:
            _, row, _ = decode_vector(body[i * size : (i + 1) * size])
        except ValidationError:
            return None
        if row.shape[0] != dim:
            return None
        rows.append(row.astype(np.float64))
    out = np.vstack(rows)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)
