"""Key-value storage: one protocol, several backends, one conformance suite."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import KvBackend, Writes, iter_prefix
from .encrypted import EncryptedKv
from .map import MapKv

if TYPE_CHECKING:
    from .sqlite import SqliteKv

__all__ = ["EncryptedKv", "KvBackend", "MapKv", "SqliteKv", "Writes", "iter_prefix"]


def __getattr__(name: str) -> Any:
    # sqlite3 is an optional module in Pyodide: import it only when asked for.
    if name == "SqliteKv":
        from .sqlite import SqliteKv

        return SqliteKv
    raise AttributeError(name)
