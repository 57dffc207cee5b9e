"""pymemory: private, offline memory for client-side AI agents."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .encoder import Encoded, Encoder, RuleEncoder
from .errors import (
    ConflictError,
    CorruptValueError,
    ImportFormatError,
    NotFoundError,
    PymemoryError,
    QuotaExceededError,
    SchemaError,
    StorageError,
    StoreClosedError,
    StrategyError,
    ValidationError,
    WrongKeyError,
)
from .item import ArchivedItem, Feedback, MemoryItem, MemoryVersion
from .memory import Memory
from .retrieval.results import Candidate, Retrieval, ScoredMemory
from .retrieval.strategies import (
    by_scope,
    by_tag,
    by_type,
    compose,
    feedback_weight,
    fusion,
    relevance_floor,
    time_decay,
    time_window,
)
from .retrieval.tokens import (
    HeuristicTokenCounter,
    TiktokenCounter,
    TokenCounter,
    default_token_counter,
)
from .retrieval.vectors import InMemoryVectorStore, VectorStore
from .retrieval.vectors_kv import KvVectorStore
from .storage import KvBackend, MapKv
from .storage.export import ImportResult

if TYPE_CHECKING:
    from .storage.sqlite import SqliteKv

__version__ = "0.1.0"

__all__ = [
    "ArchivedItem",
    "Candidate",
    "ConflictError",
    "CorruptValueError",
    "Encoded",
    "Encoder",
    "Feedback",
    "HeuristicTokenCounter",
    "ImportFormatError",
    "ImportResult",
    "InMemoryVectorStore",
    "KvBackend",
    "KvVectorStore",
    "MapKv",
    "Memory",
    "MemoryItem",
    "MemoryVersion",
    "NotFoundError",
    "PymemoryError",
    "QuotaExceededError",
    "Retrieval",
    "RuleEncoder",
    "SchemaError",
    "ScoredMemory",
    "SqliteKv",
    "StorageError",
    "StoreClosedError",
    "StrategyError",
    "TiktokenCounter",
    "TokenCounter",
    "ValidationError",
    "VectorStore",
    "WrongKeyError",
    "by_scope",
    "by_tag",
    "by_type",
    "compose",
    "default_token_counter",
    "feedback_weight",
    "fusion",
    "relevance_floor",
    "time_decay",
    "time_window",
]


def __getattr__(name: str) -> Any:
    # sqlite3 is an optional module in Pyodide: import it only when asked for.
    if name == "SqliteKv":
        from .storage.sqlite import SqliteKv

        return SqliteKv
    raise AttributeError(name)
