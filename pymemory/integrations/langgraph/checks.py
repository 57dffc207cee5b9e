"""The LangGraph store's constants and input checks (namespaces, keys, values, TTLs, filters)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from langgraph.store.base import (
    InvalidNamespaceError,
    tokenize_path,
)

from ...errors import SchemaError, ValidationError, shown
from ...item import MAX_JSON_DEPTH, check_json, loads
from ...storage.base import MAX_KEY_CHARS

#: Every key this store writes starts with this (listed in storage/schema.py).
KEY_PREFIX = "lg:"
ITEM_PREFIX = KEY_PREFIX + "i:"
VECTOR_PREFIX = KEY_PREFIX + "v:"
SEQ_KEY = KEY_PREFIX + "seq"
#: Largest value accepted, as canonical JSON.
MAX_VALUE_BYTES = 1_048_576
#: Longest TTL accepted, in minutes (100 years).
MAX_TTL_MINUTES = 100 * 365 * 24 * 60
OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})
TTL_CONFIG_KEYS = frozenset(
    {"refresh_on_read", "default_ttl", "omit_expired", "sweep_interval_minutes"}
)
MISSING = object()
MINUTE_MS = 60_000


# --- checks ------------------------------------------------------------------------------


def check_namespace(namespace: object, *, allow_empty: bool = True) -> tuple[str, ...]:
    """The namespace as a tuple; InvalidNamespaceError (LangGraph's) if a label is bad."""
    if isinstance(namespace, str) or not isinstance(namespace, (tuple, list)):
        raise InvalidNamespaceError(
            f"a namespace is a tuple of strings, got {type(namespace).__name__}"
        )
    labels = tuple(namespace)
    if not labels and not allow_empty:
        raise InvalidNamespaceError("Namespace cannot be empty.")
    for label in labels:
        if not isinstance(label, str):
            raise InvalidNamespaceError(
                f"namespace labels must be strings, got {type(label).__name__} in {shown(labels)}"
            )
        if not label or "." in label or "\x00" in label:
            raise InvalidNamespaceError(
                f"namespace label {shown(label)} in {shown(labels)} is empty or holds '.' or NUL"
            )
        try:
            label.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidNamespaceError(
                f"namespace label {shown(label)} holds a lone surrogate"
            ) from None
    return labels


def check_item_key(key: object) -> str:
    """``key`` if it is a string without NUL or lone surrogates."""
    if not isinstance(key, str):
        raise ValidationError(f"an item key must be a string, got {type(key).__name__}")
    if "\x00" in key:
        raise ValidationError("an item key must not contain NUL")
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError("an item key must not contain a lone surrogate") from None
    return key


def namespace_text(namespace: tuple[str, ...]) -> str:
    """The namespace as its key text: each label followed by a dot."""
    return "".join(label + "." for label in namespace)


def item_suffix(namespace: tuple[str, ...], key: str) -> str:
    """What follows the item prefix in an item's key; ValidationError if too long."""
    suffix = namespace_text(namespace) + "." + key
    if len(ITEM_PREFIX) + len(suffix) > MAX_KEY_CHARS:
        raise ValidationError(
            f"namespace and key are {len(suffix)} characters together; the limit is "
            f"{MAX_KEY_CHARS - len(ITEM_PREFIX)}"
        )
    return suffix


def parse_item_key(kv_key: str) -> tuple[tuple[str, ...], str]:
    """(namespace, key) of an item's KV key."""
    rest = kv_key[len(ITEM_PREFIX) :]
    cut = rest.find("..")
    if cut < 0:
        raise SchemaError(f"the record {kv_key!r} is not a LangGraph store item key")
    return tuple(rest[:cut].split(".")), rest[cut + 2 :]


def check_int(value: object, name: str, *, low: int) -> int:
    """``value`` if it is an int (not a bool) of at least ``low``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValidationError(f"{name} must be an int >= {low}, got {shown(value)}")
    return value


def json_text(value: Any) -> str:
    """Compact JSON that keeps the caller's key order (a value comes back as it went in)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def check_value(value: object) -> dict[str, Any]:
    """The value as it will be stored and returned (a JSON round trip)."""
    if not isinstance(value, Mapping):
        raise ValidationError(f"a value must be a mapping (dict), got {type(value).__name__}")
    value = dict(value)
    check_json(value, "value", max_depth=MAX_JSON_DEPTH)
    text = json_text(value)
    size = len(text.encode("utf-8"))
    if size > MAX_VALUE_BYTES:
        raise ValidationError(f"the value is {size} bytes as JSON, over {MAX_VALUE_BYTES}")
    return loads(text)


def check_paths(paths: object, name: str) -> list[str]:
    """``paths`` (an index= list) if every entry is a field path LangGraph can parse."""
    if isinstance(paths, str) or not isinstance(paths, (list, tuple)):
        raise ValidationError(f"{name} must be a list of field paths, got {shown(paths)}")
    out = []
    for path in paths:
        if not isinstance(path, str) or not path:
            raise ValidationError(f"{name} holds {shown(path)}, not a field path")
        if path != "$":
            try:
                tokenize_path(path)
            except Exception as exc:  # LangGraph's own parser decides what a path is
                raise ValidationError(f"{name}: bad field path {shown(path)} ({exc})") from None
        out.append(path)
    return out


def check_ttl_minutes(ttl: object) -> float | None:
    """A TTL (minutes or a timedelta) as float minutes; None for none."""
    if ttl is None:
        return None
    if isinstance(ttl, timedelta):
        ttl = ttl.total_seconds() / 60
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)):
        raise ValidationError(f"ttl must be minutes (a number) or None, got {shown(ttl)}")
    # isfinite() of an int past float's range raises OverflowError: ask floats only.
    if (isinstance(ttl, float) and not math.isfinite(ttl)) or not 0 < ttl <= MAX_TTL_MINUTES:
        raise ValidationError(
            f"ttl must be a number of minutes in (0, {MAX_TTL_MINUTES}] (100 years), "
            f"got {shown(ttl)}"
        )
    return float(ttl)


def check_filter(flt: object) -> dict[str, Any] | None:
    """A copy of ``filter=`` if it is JSON whose operators are supported; None for none."""
    if flt is None:
        return None
    if not isinstance(flt, Mapping):
        raise ValidationError(f"filter must be a dict, got {type(flt).__name__}")
    flt = dict(flt)
    check_json(flt, "filter", max_depth=MAX_JSON_DEPTH)

    def walk(cond: Any, where: str) -> None:
        if isinstance(cond, Mapping):
            ops = [k for k in cond if k.startswith("$")]
            if ops and len(ops) != len(cond):
                raise ValidationError(f"filter {where} mixes operators and fields")
            for k, v in cond.items():
                if ops and k not in OPERATORS:
                    raise ValidationError(
                        f"Unsupported operator {k!r} in filter {where}; use one of "
                        f"{', '.join(sorted(OPERATORS))}"
                    )
                if not ops:
                    walk(v, f"{where}.{k}")
        elif isinstance(cond, (list, tuple)):
            for i, v in enumerate(cond):
                walk(v, f"{where}[{i}]")

    for key, cond in flt.items():
        walk(cond, repr(key))
    return dict(flt)
