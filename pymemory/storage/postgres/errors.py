"""What a database server's failures become: typed :class:`StorageError` subclasses.

Every class keeps the ``storage_error`` code (what the JS client sees) and says with
``retryable`` whether the same call may succeed if made again. Which one a failure gives
depends on when it happened: before ``COMMIT`` was sent nothing was written; a
connection lost while ``COMMIT`` was on its way leaves the outcome unknown (the batch
landed whole or not at all, never in part).
"""

from __future__ import annotations

from ...errors import QuotaExceededError, StorageError, StoreClosedError


class ServerUnavailableError(StorageError):
    """The database server could not be reached, refused or dropped the connection (or
    no pooled connection came free in time) before the call committed. Nothing was
    written; retry later."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=True)


class CommitUnknownError(StorageError):
    """The connection was lost while the transaction's ``COMMIT`` was in flight: the
    write either landed whole or not at all, and this call cannot tell which. Read
    before writing again (a retried ``put_many`` is harmless; a retried ``add()`` would
    store a second item)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=False)


class AuthenticationError(StorageError):
    """The server refused the credentials (wrong password, unknown role, no
    ``pg_hba.conf`` entry). Retrying will not help; fix the DSN."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=False)


class StatementTimeoutError(StorageError):
    """A statement ran (or waited for the namespace's write lock) past the store's
    ``statement_timeout_ms``; the transaction was rolled back, nothing was written."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=True)


_AUTH_HINTS = ("authentication failed", "pg_hba.conf", "password", 'role "')
# SQLSTATE classes after which the server is gone or going: 08 connection exception,
# 57P01..57P03 admin/crash shutdown, cannot connect now.
_GONE = ("57P01", "57P02", "57P03")


def translate(exc: BaseException, where: str, *, committing: bool = False) -> Exception:
    """The typed error for ``exc`` (a psycopg or psycopg_pool exception) raised during
    ``where``; ``committing``: it happened once ``COMMIT`` may have been sent."""
    import psycopg
    import psycopg_pool

    if isinstance(exc, psycopg_pool.PoolClosed):
        return StoreClosedError(f"PostgreSQL ({where}): the connection pool is closed")
    if isinstance(exc, psycopg_pool.PoolTimeout):
        return ServerUnavailableError(
            f"PostgreSQL ({where}): no connection to the server came free in time ({exc});"
            " nothing was written. Retry when the server is reachable."
        )
    if not isinstance(exc, psycopg.Error):
        return StorageError(f"PostgreSQL ({where}): {exc}; nothing was written")
    state = exc.sqlstate or ""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    lost = isinstance(exc, psycopg.OperationalError) and (
        not state or state.startswith("08") or state in _GONE
    )
    if lost and committing:
        return CommitUnknownError(
            f"PostgreSQL ({where}): the connection was lost while committing ({text}); the"
            " write landed whole or not at all. Read before writing again."
        )
    if state.startswith("28") or (
        not state
        and "connection failed" in text
        and any(h in text for h in _AUTH_HINTS)
        and "No such file" not in text
    ):
        return AuthenticationError(f"PostgreSQL refused the credentials: {text}")
    if lost:
        return ServerUnavailableError(
            f"PostgreSQL ({where}): the server is unreachable or went away ({text});"
            " nothing was written. Retry when it is back."
        )
    if state in ("57014", "55P03"):  # statement timeout / lock not available
        return StatementTimeoutError(
            f"PostgreSQL ({where}): {text}; nothing was written. Retry, or raise"
            " statement_timeout_ms."
        )
    if state == "53100":  # disk full
        return QuotaExceededError(
            f"PostgreSQL ({where}): the server's disk is full; nothing was written."
        )
    # 40001 serialization failure, 40P01 deadlock, 53xxx out of resources: may pass later.
    retry = state.startswith("40") or state.startswith("53")
    return StorageError(f"PostgreSQL ({where}): {text}; nothing was written", retryable=retry)
