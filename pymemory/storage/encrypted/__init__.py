"""EncryptedKv: a KvBackend whose values are unreadable at rest without the user's key.

``EncryptedKv`` wraps any KvBackend (SqliteKv, MapKv, IndexedDbKv) and seals every value
with AES-256-GCM before it reaches the inner store, so every layer above (``Memory``, the
agent primitives) works unchanged over it::

    kv = await EncryptedKv.open(await SqliteKv.open(path), passphrase="correct horse")
    memory = await Memory.open(kv)          # closing the memory leaves kv open
    ...
    await kv.close()                        # closes the inner store too

What it protects against: someone who gets the SQLite file, a backup of it, the
IndexedDB folder or a devtools export, but not the key, learns no value (no memory text,
summary, metadata, vector, block or observation). A value altered, cut, or moved to
another key fails loudly with :class:`CorruptValueError`, never as garbage. What it does
NOT protect against: anything running in the process (or page) while the store is open
holds the data key; key names stay in the clear (below); value lengths show (each value
grows by 33 bytes); someone who can write the file can delete values or put back an
older ciphertext of the same key (there is no whole-store MAC), and can edit the clear
records. ``Memory.export()`` over an EncryptedKv is plain JSON Lines: an export is what
the user asked to take out; encrypt the file if it leaves the device
(``export(encrypt=...)`` does not exist yet).

Sealed value, format 1 (``FORMAT``), 33 bytes longer than the plaintext::

    offset  size  content
    0       1     format version (1)
    1       4     id of the data key that sealed it, unsigned big-endian
    5       12    nonce, random for every value
    17      n+16  AES-256-GCM ciphertext of the n plaintext bytes, then the 16-byte tag
    associated data = bytes 0..4 (version, key id) + the key name in UTF-8

Binding the key name means a value copied or swapped to another key fails to decrypt.
A future format bumps the version byte; a reader refuses bytes it does not know.

Key names are NOT encrypted: they leak what is in the store's shape: item ids and how
many there are (``mem:``, ``arc:``, ``vec:``), how often each was edited (``hst:<id>:<n>``),
the change log's length (``chg:<n>``), block set ids (``blk:``), structured-memory
namespaces and keys (``ns:<namespace>:cur:<key>``), memory-tool paths (``fs:``) and
LangGraph namespaces (``lg:``), some of which an app may fill with words. Keyed-hash key
names would hide them but are not offered: every backend and layer relies on ordered
prefix scans (``mem:`` pages, ``chg:<seq>`` in order, ``hst:<id>:`` by version), which
hashed names destroy; keeping them would need an encrypted index of the key space,
i.e. a different storage design, not a wrapper.

Records stored in the clear, and why (nothing else is):

* ``meta:enc`` (:data:`KEYRING_KEY`), the key-check record: JSON with the format, the
  KDF and its parameters (``{"name": "pbkdf2-hmac-sha256", "salt": <base64>,
  "iterations": N}``, or null for a raw key), the data keys, each wrapped (AES-256-GCM
  under the key-encryption key, associated data ``b"pymemory-data-key" + bytes 0..4``
  of its id's header: base64 of nonce + ciphertext + tag), and the id new values are
  sealed with. It must be read before any key is known; the wrapped keys are the check
  (a wrong key or passphrase fails their tag, so :class:`WrongKeyError` is raised at
  open before anything is written).
* ``meta:enc:rotation`` (:data:`ROTATION_KEY`): the progress of an unfinished rotation or
  migration (``{"from": [ids] | "plain", "after": <last key done> | null}``).
* ``meta:seq``: the change log's commit counter. Every read of every ``Memory`` checks it
  first, on SQLite without waiting for the database thread (``peek``), which only works
  on clear bytes. It reveals the number of commits, which the ``chg:<n>`` key names
  reveal anyway.

The first two are invisible through the wrapper (reads give None, scans and key lists
skip them, writes raise ValidationError); ``meta:seq`` is an ordinary key stored as is.

Keys. A random 256-bit DATA KEY seals the values; a key-encryption key (KEK) wraps it:
either PBKDF2-HMAC-SHA256 of the passphrase (NFC-normalised UTF-8; 16-byte random salt,
:data:`DEFAULT_ITERATIONS` iterations; both recorded) or a raw 32-byte key the app
supplies (or, in the browser, a CryptoKey handle). :meth:`EncryptedKv.change_passphrase`
re-wraps only the data keys. :meth:`EncryptedKv.rotate` makes a new data key (and
optionally a new KEK) and re-encrypts every value in atomic batches, recording its
progress in ``meta:enc:rotation``; an interrupted rotation resumes at the next
:meth:`EncryptedKv.open` or ``rotate``. A store that already holds unencrypted data is
refused (:class:`SchemaError`) unless ``open(..., migrate=True)``: that encrypts it in
place, the same way, resumable. Stop other (unencrypted) writers first.

Transactions. The cipher is async (WebCrypto in the browser cannot run inside an
IndexedDB transaction), so ``transact`` cannot decrypt inside the inner backend's
transaction. It is optimistic instead: read the raw values (and listed keys), decrypt,
run the function, seal its writes, then apply them in one inner ``transact`` only if the
raw values, the listed keys and the key record are byte-identical to what was read;
otherwise try again (at most :data:`MAX_ATTEMPTS` times, then :class:`ContentionError`).
Concurrent transacts lose nothing, as on every backend, but the function may run more
than once (once per attempt; only the last attempt's writes land): it must be pure, as
:data:`~.base.TransactFn` already requires. Every write checks the key record in the same
inner transaction, so no instance seals with a key another instance's rotation retired.
"""

from __future__ import annotations

from .cipher import (
    DEFAULT_ITERATIONS,
    FORMAT,
    KEYRING_KEY,
    OVERHEAD,
    ROTATION_KEY,
    AeadKey,
    AesGcmCipher,
    Cipher,
    ContentionError,
    CpythonCrypto,
    Crypto,
    TagMismatch,
    sealed_key_id,
)
from .store import EncryptedKv

__all__ = [
    "DEFAULT_ITERATIONS",
    "FORMAT",
    "KEYRING_KEY",
    "OVERHEAD",
    "ROTATION_KEY",
    "AeadKey",
    "AesGcmCipher",
    "Cipher",
    "ContentionError",
    "CpythonCrypto",
    "Crypto",
    "EncryptedKv",
    "TagMismatch",
    "sealed_key_id",
]
