"""pymemory: private, offline memory for client-side AI agents."""

from .encoder import Encoded, Encoder, RuleEncoder
from .errors import (
    ConflictError,
    ImportFormatError,
    NotFoundError,
    PymemoryError,
    SchemaError,
    StoreClosedError,
    StrategyError,
    ValidationError,
)
from .item import ArchivedItem, Feedback, MemoryItem
from .memory import ImportResult, Memory
from .retrieval.pipeline import Candidate, Retrieval, ScoredMemory
from .retrieval.strategies import (
    by_scope,
    by_tag,
    by_type,
    compose,
    feedback_weight,
    time_decay,
    time_window,
)
from .retrieval.tokens import (
    HeuristicTokenCounter,
    TiktokenCounter,
    TokenCounter,
    default_token_counter,
)
from .storage import KvBackend, MapKv

__version__ = "0.1.0"

__all__ = [
    "ArchivedItem",
    "Candidate",
    "ConflictError",
    "Encoded",
    "Encoder",
    "Feedback",
    "HeuristicTokenCounter",
    "ImportFormatError",
    "ImportResult",
    "KvBackend",
    "MapKv",
    "Memory",
    "MemoryItem",
    "NotFoundError",
    "PymemoryError",
    "Retrieval",
    "RuleEncoder",
    "SchemaError",
    "ScoredMemory",
    "StoreClosedError",
    "StrategyError",
    "TiktokenCounter",
    "TokenCounter",
    "ValidationError",
    "by_scope",
    "by_tag",
    "by_type",
    "compose",
    "default_token_counter",
    "feedback_weight",
    "time_decay",
    "time_window",
]
