"""A client's key to an encrypted database, as it reaches the API with every call."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...errors import ValidationError
from ...storage.encrypted import DEFAULT_ITERATIONS


@dataclass(frozen=True)
class Unlock:
    """A client's ``encryption`` option as it reaches the API with every call: ``id``
    names the client (a call whose id already unlocked the database is not checked
    again), then the secret, ``passphrase`` or ``key`` (32 bytes or the runtime's key
    handle), and the PBKDF2 ``iterations`` a new store records."""

    id: str
    passphrase: str | None = None
    key: Any = None
    iterations: int = DEFAULT_ITERATIONS

    @classmethod
    def from_fields(cls, fields: Mapping[str, Any]) -> Unlock:
        unknown = set(fields) - {"id", "passphrase", "key", "iterations"}
        if unknown:
            raise ValidationError(f"unknown encryption option(s) {sorted(unknown)}")
        uid = fields.get("id")
        if not isinstance(uid, str) or not uid or len(uid) > 128:
            raise ValidationError("encryption id must be a non-empty string of at most 128 chars")
        if (fields.get("passphrase") is None) == (fields.get("key") is None):
            raise ValidationError("encryption needs exactly one of passphrase or key")
        iterations = fields.get("iterations")
        if iterations is None:
            iterations = DEFAULT_ITERATIONS
        if isinstance(iterations, float) and iterations.is_integer():
            iterations = int(iterations)  # a JS number
        return cls(uid, fields.get("passphrase"), fields.get("key"), iterations)
