"""The ``sync`` method's pieces (docs/sync.md, "In the browser"): a client's ``auth`` as
Python's, a new encrypted device's first pull, and a round's result in its JS shape.

A client of an encrypted database that syncs must not make a key of its own on a device
that has none yet: its store would then never sync with the hub (another key). So before
such a database is first opened, :func:`first_pull` pulls the hub's records, key record
included, into the raw store, and the open then unlocks them with the client's
passphrase, as ``sync_store`` then ``EncryptedKv.open`` do on a second CPython device.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ...errors import ValidationError
from ...storage import KvBackend
from ...storage.encrypted import KEYRING_KEY
from ...storage.schema import META_SCHEMA
from ...sync import CouchClient, SyncResult, Transport, sync_store
from ...sync.couch import Auth, split_url
from ...sync.records import STORE_DOC
from ...sync.transport import DEFAULT_TIMEOUT_S, HttpxTransport, default_transport

#: A runtime's transport maker; ``timeout_s`` (optional) bounds each request.
TransportFactory = Callable[..., Transport]

#: The longest ``timeoutMs`` a client may give (setTimeout's bound, ~24.8 days).
MAX_TIMEOUT_MS = 2**31 - 1


def auth_from_js(value: Any) -> Auth:
    """The client's ``auth``: null, an ``Authorization`` value (e.g. ``"Bearer <jwt>"``)
    or ``{ username, password }`` (HTTP basic)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, Mapping) and set(value) == {"username", "password"}:
        user, password = value["username"], value["password"]
        if isinstance(user, str) and isinstance(password, str):
            return (user, password)
    raise ValidationError(
        'sync auth must be null, an Authorization value ("Bearer ...") or '
        "{ username, password } (strings)"
    )


def check_url(url: Any, auth: Auth) -> str:
    """``url`` if it names a database on an http(s) hub (ValidationError if not)."""
    split_url(url, auth)
    return url


def timeout_s(value: Any) -> float:
    """The client's ``timeoutMs`` (each request to the hub; default 30 s) in seconds."""
    if value is None:
        return DEFAULT_TIMEOUT_S
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TIMEOUT_MS:
        raise ValidationError(f"timeoutMs must be a whole number from 1 to {MAX_TIMEOUT_MS}")
    return value / 1000


def timed(factory: TransportFactory | None, seconds: float) -> TransportFactory:
    """``factory`` (None: CPython's httpx) making transports whose requests give up after
    ``seconds`` (SyncError, retryable): no round waits forever on a hub that hangs."""
    if factory is None:
        return lambda: HttpxTransport(timeout_s=seconds)
    return lambda: factory(timeout_s=seconds)


async def first_pull(
    kv_factory: Callable[[str], Awaitable[KvBackend]],
    db: str,
    url: str,
    auth: Auth,
    transport: TransportFactory | None,
) -> SyncResult | None:
    """Pull the hub into database ``db`` if it is new (no key record, no schema record)
    and the hub holds a store: an encrypted client's first sync on this device; what it
    did (None: nothing to do; a new hub gets the store the open then makes, key and all,
    from the round after). SyncError when the hub cannot be reached (the store stays new:
    the next call pulls again): a new encrypted device needs the hub once, to learn the
    store's key record."""
    raw = await kv_factory(db)
    made = default_transport() if transport is None else transport()
    try:
        present = await raw.get_many([KEYRING_KEY, META_SCHEMA])
        if any(value is not None for value in present):
            return None
        db_url, authorization, _ = split_url(url, auth)
        if await CouchClient(db_url, authorization, made).get_doc(STORE_DOC) is None:
            return None  # a new hub (or no database yet): nothing to learn from it
        return await sync_store(raw, url, auth=auth, transport=made)
    finally:
        await made.close()
        await raw.close()


def result_js(result: SyncResult, before: SyncResult | None = None) -> dict[str, Any]:
    """What a round did, for the client: pushed, pulled, conflicts, checkpoint, bytes;
    with the first pull ``before`` it added up."""
    out = result.to_dict()
    if before is not None:
        for name, value in before.to_dict().items():
            if name == "conflictItems":
                out[name] = sorted(set(out[name]) | set(value))
            elif name != "checkpoint":
                out[name] = round(out[name] + value, 3)
    return out
