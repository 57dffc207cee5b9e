"""Where a memory lives: ``Memory.open``'s ``store`` argument turned into a KvBackend."""

from __future__ import annotations

import os

from ..checks import check_store_path
from .base import KvBackend
from .map import MapKv


async def open_store(store: KvBackend | str | os.PathLike[str] | None) -> tuple[KvBackend, bool]:
    """(the backend, whether the caller owns it and must close it): None is a new MapKv, a
    KvBackend is used as given (the caller's to close), a path opens a SQLite file."""
    if isinstance(store, KvBackend):
        return store, False
    if store is None:
        return MapKv(), True
    from .sqlite import SqliteKv  # sqlite3 is optional in Pyodide

    return await SqliteKv.open(check_store_path(store)), True
