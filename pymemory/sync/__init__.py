"""Multi-device sync over CouchDB's replication protocol, below EncryptedKv (docs/sync.md).

``sync_store(kv, url)`` runs one round (push, then pull) between a KvBackend and a
CouchDB database; ``Memory.sync`` delegates here (:class:`SyncHost`). The replicator ships
the bytes the local backend holds: an encrypted store's sealed values, never a key.
"""

from __future__ import annotations

from .couch import CouchClient
from .live import LiveSync, SyncHost
from .replicator import Progress, SyncResult, sync_store
from .transport import HttpxTransport, Response, Transport, WireCount

__all__ = [
    "CouchClient",
    "HttpxTransport",
    "LiveSync",
    "Progress",
    "Response",
    "SyncHost",
    "SyncResult",
    "Transport",
    "WireCount",
    "sync_store",
]
