"""What a database server's failures become: typed :class:`StorageError` subclasses.

Every class keeps the ``storage_error`` code (what the JS client sees) and says with
``retryable`` whether the same call may succeed if made again. Which one a failure gives
depends on when it happened: before ``COMMIT`` was sent nothing was written; a
connection lost while ``COMMIT`` was on its way leaves the outcome unknown (the batch
landed whole or not at all, never in part). A setup mistake (wrong credentials, an
unknown database, TLS the server does not offer, something that is not PostgreSQL at
that address) is never retryable.

libpq reports connection failures as text without a SQLSTATE, so those are told apart
by libpq's (English) messages.
"""

from __future__ import annotations

from ...errors import QuotaExceededError, StorageError, StoreClosedError, ValidationError


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


class ConfigurationError(StorageError):
    """The DSN or the server's setup is wrong: an unknown database, TLS the server does
    not offer (or a certificate it cannot verify), something that is not PostgreSQL at
    that address. Retrying will not help; the message says what to fix."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=False)


class AuthenticationError(ConfigurationError):
    """The server refused the credentials (wrong password, unknown role, no
    ``pg_hba.conf`` entry). Retrying will not help; fix the DSN."""


class StatementTimeoutError(StorageError):
    """A statement ran (or waited for the namespace's write lock) past the store's
    ``statement_timeout_ms``; the transaction was rolled back, nothing was written."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=True)


_AUTH_HINTS = (
    "authentication failed",
    "pg_hba.conf",
    "no password supplied",
    "password",
    'role "',
)
_NOT_POSTGRES = (
    "invalid response to ssl negotiation",
    "invalid response to gssapi negotiation",
    "expected authentication request from server",
    "unexpected message from server",
    "invalid message format",
    "received invalid response",
)
_TLS = (
    "does not support ssl",
    "certificate",
    "ssl was required",
    "sslrootcert",
    "server does not support gss",
)
# libpq's checks of the DSN's values, made before any network I/O.
_MALFORMED = ("invalid integer value", "invalid connection option", "invalid sslmode value",
              'missing "="', "invalid port number", "invalid uri")  # fmt: skip
# FATALs a server sends while it starts, stops, recovers or is full: worth a retry.
_TRANSIENT = ("starting up", "shutting down", "recovery", "too many clients", "connection slots",
              "terminating connection", "accepting connections", "cannot connect now")  # fmt: skip
# SQLSTATE classes after which the server is gone or going: 08 connection exception,
# 57P01..57P03 admin/crash shutdown, cannot connect now.
_GONE = ("57P01", "57P02", "57P03")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def connect_error(exc: BaseException) -> Exception:
    """The typed error for a failed attempt to connect (``exc``: what psycopg raised).
    libpq gives no SQLSTATE here, so its message decides."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    low = text.lower()
    if any(h in low for h in _MALFORMED) and "connection to server" not in low:
        return ValidationError(f"the PostgreSQL DSN is malformed: {text}")
    if "does not exist" in low and "database" in low and 'role "' not in low:
        return ConfigurationError(
            f"PostgreSQL has no such database: {text}. Create it (CREATE DATABASE ..."
            " ENCODING 'UTF8') or fix dbname in the DSN."
        )
    if "failed:" in low and any(h in low for h in _AUTH_HINTS) and "no such file" not in low:
        return AuthenticationError(
            f"PostgreSQL refused the credentials: {text}. Fix the user or password in the"
            " DSN, or the server's pg_hba.conf."
        )
    if any(h in low for h in _TLS):
        return ConfigurationError(
            f"PostgreSQL TLS setup mismatch: {text}. Change sslmode (and the certificates)"
            " in the DSN, or enable ssl on the server."
        )
    if any(h in low for h in _NOT_POSTGRES):
        return ConfigurationError(
            f"what answers at the DSN's host and port is not a PostgreSQL server: {text}."
            " Fix the host or port in the DSN."
        )
    if "fatal:" in low and not any(h in low for h in _TRANSIENT):
        return ConfigurationError(
            f"PostgreSQL refused the connection: {text}. Fix the DSN or the server's setup."
        )
    if "timeout expired" in low:
        return ServerUnavailableError(
            f"PostgreSQL did not answer within connect_timeout_s: {text}. Nothing was"
            " written. Retry when it is reachable."
        )
    return ServerUnavailableError(
        f"cannot connect to PostgreSQL: {text}. Nothing was written. The server is down"
        " or not up yet (retry when it is), or the DSN's host or port is wrong."
    )


def translate(exc: BaseException, where: str, *, committing: bool = False) -> Exception:
    """The typed error for ``exc`` (a psycopg exception) raised during ``where``;
    ``committing``: it happened once ``COMMIT`` may have been sent."""
    import psycopg

    if not isinstance(exc, psycopg.Error):
        return StorageError(f"PostgreSQL ({where}): {exc}; nothing was written")
    state = exc.sqlstate or ""
    text = _first_line(exc)
    lost = isinstance(exc, psycopg.OperationalError) and (
        not state or state.startswith("08") or state in _GONE
    )
    if lost and committing:
        return CommitUnknownError(
            f"PostgreSQL ({where}): the connection was lost while committing ({text}); the"
            " write landed whole or not at all. Read before writing again."
        )
    if state.startswith("28"):
        return AuthenticationError(f"PostgreSQL refused the credentials: {text}")
    if state == "3D000":
        return ConfigurationError(f"PostgreSQL ({where}): {text}: fix dbname in the DSN")
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


def closed_error(where: str) -> StoreClosedError:
    return StoreClosedError(f"PostgreSQL ({where}): the database (its connections) is closed")
