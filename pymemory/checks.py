"""Argument checks shared by the public API (``Memory``) and the data model (``item``).

Each check raises :class:`~pymemory.errors.ValidationError` with a message that names the
argument and what it got, and returns the value when it passes, so a caller reads
``limit = check_int("limit", limit, minimum=0)``. Nothing here converts a wrong type into
a right one: a bool is not an int, a str is not a list.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .errors import NotFoundError, ValidationError, shown

# The largest integer a JavaScript Number holds exactly: versions and counts the JS
# client reads back must stay below it.
MAX_SAFE_INT = 2**53 - 1


def type_name(value: object) -> str:
    return type(value).__name__


def is_int(value: object) -> bool:
    """An int that is not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def check_str(name: str, value: object) -> str:
    """A str that is valid Unicode (no lone surrogates: it could not be stored as UTF-8)."""
    if not isinstance(value, str):
        raise ValidationError(f"{name} must be a string, got {type_name(value)}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(f"{name} contains a lone surrogate; it is not valid text") from None
    return value


def check_bool(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ValidationError(f"{name} must be a bool, got {type_name(value)}")
    return value


def check_int(name: str, value: object, *, minimum: int, optional: bool = False) -> int | None:
    """An int >= ``minimum`` (or None when ``optional``)."""
    if optional and value is None:
        return None
    if not is_int(value) or value < minimum:  # type: ignore[operator]
        allowed = f"None or an int >= {minimum}" if optional else f"an int >= {minimum}"
        raise ValidationError(f"{name} must be {allowed}, got {shown(value)}")
    return value  # type: ignore[return-value]


def check_version(value: object) -> int | None:
    """``expected_version``: None or a version number an item can have."""
    if value is not None and (not is_int(value) or not 1 <= value <= MAX_SAFE_INT):  # type: ignore[operator]
        raise ValidationError("expected_version must be None or an int >= 1")
    return value  # type: ignore[return-value]


def is_positive_number(value: object) -> bool:
    """An int or float > 0 that a float can hold (inf is allowed, NaN is not)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return float(value) > 0
    except OverflowError:  # an int past float's range
        return False


def check_seconds(name: str, value: object) -> float:
    if not is_positive_number(value):
        raise ValidationError(f"{name} must be a number of seconds > 0, got {shown(value)}")
    return float(value)  # type: ignore[arg-type]


def check_days(name: str, value: object, *, optional: bool = False) -> float | None:
    """A number of days > 0 (or None when ``optional``)."""
    if optional and value is None:
        return None
    if not is_positive_number(value):
        allowed = "None or a number of days > 0" if optional else "a number of days > 0"
        raise ValidationError(f"{name} must be {allowed}, got {shown(value)}")
    return value  # type: ignore[return-value]


def check_choice(name: str, value: object, choices: Iterable[str]) -> str:
    options = tuple(choices)
    if not isinstance(value, str) or value not in options:
        raise ValidationError(f"{name} must be one of {', '.join(options)}, got {shown(value)}")
    return value


def check_callable(name: str, value: object, what: str, *, optional: bool = False) -> Any:
    """A callable (or None when ``optional``); ``what`` says what it is called with."""
    if (optional and value is None) or callable(value):
        return value
    allowed = f"None or a callable {what}" if optional else f"a callable {what}"
    raise ValidationError(f"{name} must be {allowed}, got {type_name(value)}")


def check_store_path(store: object) -> str:
    """``Memory.open``'s ``store`` as a SQLite file path: a str or os.PathLike, valid text."""
    path = os.fspath(store) if isinstance(store, os.PathLike) else store
    if not isinstance(path, str):
        raise ValidationError(
            f"store must be a KvBackend, a SQLite file path (str or os.PathLike) or None, "
            f"got {type_name(store)}"
        )
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError("the store path contains a lone surrogate") from None
    return path


def check_lines(value: object, call: str) -> list[str] | Iterable[str]:
    """JSON Lines given as one str (split here) or an iterable of str lines."""
    if isinstance(value, str):
        return value.splitlines()
    if isinstance(value, (bytes, bytearray, Mapping)) or not isinstance(value, Iterable):
        raise ValidationError(f"{call} takes the JSON Lines as a str or a list of str")
    return value


def check_protocol(name: str, value: object, ok: Callable[[object], bool], what: str) -> Any:
    """A collaborator: ``ok(value)`` says whether it has the protocol's members."""
    if not ok(value):
        raise ValidationError(f"{name} must be {what}, got {type_name(value)}")
    return value


def check_instance(name: str, value: object, cls: type, what: str) -> Any:
    """A collaborator that must satisfy ``cls`` (a runtime-checkable protocol)."""
    return check_protocol(name, value, lambda v: isinstance(v, cls), what)


def check_id(value: object) -> str:
    check_str("id", value)
    try:
        canonical = str(uuid.UUID(value))  # type: ignore[arg-type]
    except ValueError:
        canonical = None
    if canonical != value:
        raise ValidationError(f"id must be a lowercase canonical UUID, got {shown(value)}")
    return value  # type: ignore[return-value]


def check_lookup_id(value: object) -> str:
    """An id to look up: a str (else ValidationError); one that cannot be any memory's id
    (not a canonical UUID) is not found (NotFoundError), like an unknown one."""
    check_instance("id", value, str, "a string")
    try:
        return check_id(value)
    except ValidationError:
        raise NotFoundError(f"no memory with id {shown(value)}") from None


def has_members(value: object, *, strs: Iterable[str] = (), methods: Iterable[str] = ()) -> bool:
    """Whether ``value`` has the str attributes and callables a duck-typed protocol needs."""
    return all(isinstance(getattr(value, n, None), str) for n in strs) and all(
        callable(getattr(value, n, None)) for n in methods
    )
