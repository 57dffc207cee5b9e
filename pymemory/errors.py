"""The exceptions pymemory raises. Each has a stable ``code`` that the JS client mirrors.

Every error below is raised before anything is written: a failed call leaves the store
exactly as it was.
"""

from __future__ import annotations


class PymemoryError(Exception):
    """Base class of every pymemory error."""

    code = "error"


class ValidationError(PymemoryError, ValueError):
    """An argument or a stored record has a wrong type, value or size."""

    code = "invalid_input"


class StrategyError(ValidationError):
    """A retrieval strategy is unknown or malformed."""

    code = "invalid_strategy"


class ImportFormatError(ValidationError):
    """A JSON Lines import is malformed; ``line`` is the 1-based line that failed."""

    code = "invalid_import"

    def __init__(self, message: str, line: int) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line


class NotFoundError(PymemoryError, LookupError):
    """No memory has the given id."""

    code = "not_found"


class ConflictError(PymemoryError):
    """The write conflicts with what is stored: an imported id already exists, or the
    item is no longer at the ``expected_version`` the write was based on (another writer
    changed it). Nothing was written."""

    code = "conflict"


class SchemaError(PymemoryError):
    """The store was written by a newer pymemory, or is not a pymemory store."""

    code = "schema_mismatch"


class StorageError(PymemoryError):
    """The storage backend failed (e.g. IndexedDB quota exceeded or transaction aborted,
    or another SQLite connection held the write lock past the busy timeout). The failed
    batch was not applied.

    ``retryable`` is True when making the same call again may succeed (a database server
    that was unreachable or restarting, a timeout), False when it would fail the same way."""

    code = "storage_error"

    def __init__(self, *args: object, retryable: bool = False) -> None:
        super().__init__(*args)
        self.retryable = retryable


class QuotaExceededError(StorageError):
    """The write would leave less room than the store's reserve (or the disk or the
    browser's quota ran out). Nothing was written; reads, deletes, ``clear``, ``sweep`` and
    export keep working, so room can be freed."""

    code = "quota_exceeded"


class CorruptValueError(StorageError):
    """A stored value failed its integrity check: an encrypted value was altered, cut,
    moved to another key, or sealed by a key this store does not hold. Nothing was
    written; the value is never returned as garbage. JS sees ``storage_error``."""


class WrongKeyError(PymemoryError):
    """An encrypted store refused the key or passphrase (or another instance changed the
    store's key since this one opened it). Nothing was written."""

    code = "wrong_key"


class SyncError(PymemoryError):
    """A sync round with a CouchDB-protocol hub failed: the server was unreachable, timed
    out, answered an HTTP error or something that is not CouchDB's JSON. Nothing the
    round had not finished was written locally. ``retryable`` is True when the same call
    may succeed later (network, timeout, 5xx), False when it would fail the same way
    (wrong credentials, no such database, not a CouchDB server)."""

    code = "sync_failed"

    def __init__(self, *args: object, retryable: bool = False) -> None:
        super().__init__(*args)
        self.retryable = retryable


class SyncIntegrityError(SyncError):
    """The hub served a record of an encrypted store that fails its sealed check: an
    older revision replayed, a value moved to another key, a forged or dropped deletion.
    The batch holding it was refused (nothing of it written); the hub needs attention."""

    code = "sync_integrity"


class StoreClosedError(PymemoryError):
    """The store (or its KV backend) has been closed."""

    code = "closed"


def shown(value: object, limit: int = 80) -> str:
    """``repr(value)`` for an error message, safe for any input: an int too long to print
    (Python refuses to turn one of over 4300 digits into text) is described by its size,
    and a long repr is cut to ``limit`` characters."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        digits = int(value.bit_length() * 0.30103) + 1
        return f"{'-' if value < 0 else ''}an int of about {digits} digits"
    try:
        text = repr(value)
    except (ValueError, RecursionError):  # a container holding such an int; deep nesting
        return f"a {type(value).__name__} that cannot be shown"
    return text if len(text) <= limit else text[: limit - 3] + "..."


__all__ = [
    "ConflictError",
    "CorruptValueError",
    "ImportFormatError",
    "NotFoundError",
    "PymemoryError",
    "QuotaExceededError",
    "SchemaError",
    "StorageError",
    "StoreClosedError",
    "StrategyError",
    "SyncError",
    "SyncIntegrityError",
    "ValidationError",
    "WrongKeyError",
]
