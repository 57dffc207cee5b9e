"""MemoryItem (seed 002): the unit of memory, its validation and its JSON codec."""

from __future__ import annotations

import json
import math
import re
import uuid
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from .checks import MAX_SAFE_INT, check_id, check_str, is_int
from .errors import ValidationError, shown

MemoryType = Literal["message", "tool_result", "user_feedback", "user_preference", "system_event"]
MEMORY_TYPES: tuple[str, ...] = (
    "message",
    "tool_result",
    "user_feedback",
    "user_preference",
    "system_event",
)
FeedbackKind = Literal["liked", "disliked", "important"]
FEEDBACK_KINDS: tuple[str, ...] = ("liked", "disliked", "important")

MAX_CONTENT_CHARS = 200
MAX_TEXT_CHARS = 100_000
MAX_METADATA_BYTES = 16_384
MAX_METADATA_DEPTH = 8
MAX_TAGS = 32
MAX_TAG_CHARS = 64
MAX_REFERENCES = 256
# The last millisecond of year 9999: later ones are not dates Python (or a reader) can show.
MAX_TIMESTAMP_MS = 253_402_300_799_999
MAX_VERSION = MAX_SAFE_INT
# Integers in metadata: what a JS Number holds exactly (and far below Python's digit limit).
MAX_METADATA_INT = 2**53
# Nesting any JSON this package parses may have. Checked before parsing: a deep document
# would otherwise exhaust the parser's stack (RecursionError in CPython; in Pyodide it can
# take the whole worker down).
MAX_JSON_DEPTH = 64
SCOPE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/@-]{0,127}")

# Seed 002: the names of the well-known scopes. Any string matching SCOPE_RE is accepted, so
# an app can use e.g. "conversation:42" for one conversation.
SCOPES: tuple[str, ...] = ("conversation", "session", "user", "global")


@dataclass(frozen=True, slots=True)
class Feedback:
    """What the user said about a memory: counts of likes and dislikes, and a pin."""

    liked: int = 0
    disliked: int = 0
    important: bool = False

    def __post_init__(self) -> None:
        for name in ("liked", "disliked"):
            value = getattr(self, name)
            if not is_int(value) or not 0 <= value <= MAX_VERSION:
                raise ValidationError(f"feedback.{name} must be an int in 0..2**53-1")
        if not isinstance(self.important, bool):
            raise ValidationError("feedback.important must be a bool")

    def merged(self, delta: Feedback) -> Feedback:
        """This feedback plus ``delta`` given elsewhere: counts add up, a pin stays."""
        return Feedback(
            self.liked + delta.liked,
            self.disliked + delta.disliked,
            self.important or delta.important,
        )

    def add(self, kind: str) -> Feedback:
        if kind == "liked":
            return replace(self, liked=self.liked + 1)
        if kind == "disliked":
            return replace(self, disliked=self.disliked + 1)
        if kind == "important":
            return replace(self, important=True)
        raise ValidationError(
            f"feedback must be one of {', '.join(FEEDBACK_KINDS)}, got {shown(kind)}"
        )

    @property
    def net(self) -> int:
        return self.liked - self.disliked


@dataclass(frozen=True, slots=True)
class MemoryItem:
    """One memory. ``content`` is the <= 200-char summary; ``text`` the raw input it came from.

    ``metadata`` always holds ``source`` (str), ``confidence`` (0..1) and ``references``
    (ids of related memories), plus any JSON keys the caller adds. ``version`` counts the
    stored writes of the item (1 when added; each update, feedback flush or refinement
    adds one), so a caller can ask ``update`` to fail if the item changed meanwhile.
    """

    id: str
    type: str
    timestamp: int
    content: str
    text: str
    metadata: dict[str, Any]
    scope: str = "global"
    tags: tuple[str, ...] = ()
    ttl_ms: int | None = None
    feedback: Feedback = field(default_factory=Feedback)
    content_method: str = "given"
    version: int = 1

    def __post_init__(self) -> None:
        check_id(self.id)
        check_type(self.type)
        check_timestamp(self.timestamp)
        check_content(self.content)
        check_text(self.text)
        object.__setattr__(self, "metadata", check_metadata(self.metadata))
        check_scope(self.scope)
        object.__setattr__(self, "tags", check_tags(self.tags))
        check_ttl(self.ttl_ms)
        if not isinstance(self.feedback, Feedback):
            raise ValidationError("feedback must be a Feedback")
        check_str("content_method", self.content_method)
        if not 1 <= len(self.content_method) <= 32:
            raise ValidationError("content_method must be a short string")
        if not is_int(self.version) or not 1 <= self.version <= MAX_VERSION:
            raise ValidationError(f"version must be an int >= 1, got {shown(self.version)}")

    @property
    def expires_at(self) -> int | None:
        """Epoch ms after which the item is never returned, or None."""
        return None if self.ttl_ms is None else self.timestamp + self.ttl_ms

    def is_expired(self, now_ms: int) -> bool:
        return self.ttl_ms is not None and now_ms >= self.timestamp + self.ttl_ms

    def to_dict(self) -> dict[str, Any]:
        """The codec's shape. ``text`` is omitted when it equals ``content``, ``version``
        when it is 1 (so records and exports of unchanged items read as before)."""
        out: dict[str, Any] = {
            "id": self.id,
            "type": self.type,
            "timestamp": self.timestamp,
            "content": self.content,
            "content_method": self.content_method,
            "scope": self.scope,
            "tags": list(self.tags),
            "ttl_ms": self.ttl_ms,
            "feedback": {
                "liked": self.feedback.liked,
                "disliked": self.feedback.disliked,
                "important": self.feedback.important,
            },
            "metadata": self.metadata,
        }
        if self.text != self.content:
            out["text"] = self.text
        if self.version != 1:
            out["version"] = self.version
        return out

    @classmethod
    def from_dict(cls, data: Any) -> MemoryItem:
        """Rebuild an item from ``to_dict`` output; raises ValidationError on any defect."""
        if not isinstance(data, dict):
            raise ValidationError("a memory item must be a JSON object")
        allowed = {
            "id", "type", "timestamp", "content", "text", "content_method",
            "scope", "tags", "ttl_ms", "feedback", "metadata", "version",
        }  # fmt: skip
        unknown = set(data) - allowed
        if unknown:
            raise ValidationError(f"unknown item fields: {', '.join(sorted(map(str, unknown)))}")
        missing = {"id", "type", "timestamp", "content", "metadata"} - set(data)
        if missing:
            raise ValidationError(f"missing item fields: {', '.join(sorted(missing))}")
        fb = data.get("feedback", {})
        if not isinstance(fb, dict) or set(fb) - {"liked", "disliked", "important"}:
            raise ValidationError("feedback must be an object with liked, disliked, important")
        tags = data.get("tags", [])
        if not isinstance(tags, list):
            raise ValidationError("tags must be a list of strings")
        return cls(
            id=data["id"],
            type=data["type"],
            timestamp=data["timestamp"],
            content=data["content"],
            text=data.get("text", data["content"]),
            metadata=data["metadata"],
            scope=data.get("scope", "global"),
            tags=tuple(tags),
            ttl_ms=data.get("ttl_ms"),
            feedback=Feedback(**fb),
            content_method=data.get("content_method", "given"),
            version=data.get("version", 1),
        )

    def to_json(self) -> str:
        return dumps(self.to_dict())

    @classmethod
    def from_json(cls, raw: str | bytes) -> MemoryItem:
        return cls.from_dict(loads(raw))

    @classmethod
    def from_trusted_json(cls, raw: str | bytes) -> MemoryItem:
        """Decode a record this pymemory wrote from a validated item (``to_json`` output,
        e.g. kept in a checksummed index snapshot), skipping validation: the same item
        ``from_json`` gives, several times faster. Never use it on outside input."""
        data = json.loads(raw)
        fb = data.get("feedback")
        feedback = object.__new__(Feedback)
        if fb is None:
            fb = {}
        object.__setattr__(feedback, "liked", fb.get("liked", 0))
        object.__setattr__(feedback, "disliked", fb.get("disliked", 0))
        object.__setattr__(feedback, "important", fb.get("important", False))
        item = object.__new__(cls)
        put = object.__setattr__
        put(item, "id", data["id"])
        put(item, "type", data["type"])
        put(item, "timestamp", data["timestamp"])
        put(item, "content", data["content"])
        put(item, "text", data.get("text", data["content"]))
        put(item, "metadata", data["metadata"])
        put(item, "scope", data.get("scope", "global"))
        put(item, "tags", tuple(data.get("tags", ())))
        put(item, "ttl_ms", data.get("ttl_ms"))
        put(item, "feedback", feedback)
        put(item, "content_method", data.get("content_method", "given"))
        put(item, "version", data.get("version", 1))
        return item


@dataclass(frozen=True, slots=True)
class ArchivedItem:
    """What the archive keeps of a memory (seed 002): id, type, timestamp, content."""

    id: str
    type: str
    timestamp: int
    content: str

    def __post_init__(self) -> None:
        check_id(self.id)
        check_type(self.type)
        check_timestamp(self.timestamp)
        check_content(self.content)

    @classmethod
    def of(cls, item: MemoryItem) -> ArchivedItem:
        return cls(item.id, item.type, item.timestamp, item.content)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "type": self.type, "timestamp": self.timestamp,
                "content": self.content}  # fmt: skip

    @classmethod
    def from_dict(cls, data: Any) -> ArchivedItem:
        if not isinstance(data, dict) or set(data) != {"id", "type", "timestamp", "content"}:
            raise ValidationError("an archived item has exactly id, type, timestamp, content")
        return cls(**data)

    def to_json(self) -> str:
        return dumps(self.to_dict())


@dataclass(frozen=True, slots=True)
class MemoryVersion:
    """One version of a memory in ``Memory.history()``: the item as it was, valid from
    ``valid_from`` until ``valid_to`` (epoch ms; None for the current version). The first
    version is valid from the item's ``timestamp``, each later one from the update that
    replaced the one before. ``conflict``: a version that lost a sync conflict (another
    device's edit won, docs/sync.md); it is off the line of versions above."""

    item: MemoryItem
    valid_from: int
    valid_to: int | None = None
    conflict: bool = False


def dumps(value: Any) -> str:
    """Canonical JSON: sorted keys, no spaces, UTF-8 text, no NaN."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)  # fmt: skip


def loads(raw: str | bytes, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Parse JSON, refusing (ValidationError) what is not JSON or nests deeper than
    ``max_depth``. The depth is checked before parsing, without recursion."""
    try:
        text = raw if isinstance(raw, str) else bytes(raw).decode("utf-8")
    except (UnicodeDecodeError, TypeError) as exc:
        raise ValidationError(f"not valid JSON: {exc}") from None
    check_json_depth(text, max_depth)
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ValidationError(f"not valid JSON: {exc}") from None


_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


def check_json_depth(text: str, max_depth: int = MAX_JSON_DEPTH) -> None:
    """ValidationError if the JSON ``text`` nests arrays/objects deeper than ``max_depth``
    (brackets inside strings do not count). Linear time, no recursion; cheap for text with
    few brackets."""
    if text.count("[") + text.count("{") <= max_depth:
        return
    depth = 0
    for match in _JSON_TOKEN.finditer(text):
        c = match.group()[0]
        if c == "[" or c == "{":
            depth += 1
            if depth > max_depth:
                raise ValidationError(f"JSON nests deeper than {max_depth} levels; flatten it")
        elif c == "]" or c == "}":
            depth -= 1


def new_id() -> str:
    return str(uuid.uuid4())


# --- field checks -----------------------------------------------------------------------


def check_type(value: object) -> str:
    if not isinstance(value, str) or value not in MEMORY_TYPES:
        raise ValidationError(f"type must be one of {', '.join(MEMORY_TYPES)}, got {shown(value)}")
    return value  # type: ignore[return-value]


def check_timestamp(value: object, name: str = "timestamp") -> int:
    if not is_int(value) or not 0 <= value <= MAX_TIMESTAMP_MS:  # type: ignore[operator]
        raise ValidationError(f"{name} must be an int of epoch milliseconds, got {shown(value)}")
    return value  # type: ignore[return-value]


def check_content(value: object) -> str:
    check_str("content", value)
    if not value.strip():  # type: ignore[union-attr]
        raise ValidationError("content must not be empty")
    if len(value) > MAX_CONTENT_CHARS:  # type: ignore[arg-type]
        raise ValidationError(
            f"content must be at most {MAX_CONTENT_CHARS} characters (got {len(value)}); "  # type: ignore[arg-type]
            "pass long input as text= and it will be summarised"
        )
    return value  # type: ignore[return-value]


def check_text(value: object) -> str:
    check_str("text", value)
    if not value.strip():  # type: ignore[union-attr]
        raise ValidationError("text must not be empty")
    if len(value) > MAX_TEXT_CHARS:  # type: ignore[arg-type]
        raise ValidationError(f"text must be at most {MAX_TEXT_CHARS} characters")
    return value  # type: ignore[return-value]


def check_scope(value: object) -> str:
    check_str("scope", value)
    if not SCOPE_RE.fullmatch(value):  # type: ignore[arg-type]
        raise ValidationError(
            "scope must be 1-128 characters of letters, digits and _.:/@- "
            f"(e.g. 'conversation' or 'conversation:42'), got {shown(value)}"
        )
    return value  # type: ignore[return-value]


def check_tag(value: object) -> str:
    check_str("tag", value)
    if not 1 <= len(value) <= MAX_TAG_CHARS or value != value.strip():  # type: ignore[arg-type,union-attr]
        raise ValidationError(f"a tag must be 1-{MAX_TAG_CHARS} characters without outer spaces")
    return value  # type: ignore[return-value]


def check_tags(value: object) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise ValidationError("tags must be a list of strings")
    tags = tuple(dict.fromkeys(check_tag(t) for t in value))
    if len(tags) > MAX_TAGS:
        raise ValidationError(f"at most {MAX_TAGS} tags")
    return tags


def check_ttl(value: object) -> int | None:
    if value is None:
        return None
    if not is_int(value) or not 0 < value <= MAX_TIMESTAMP_MS:  # type: ignore[operator]
        raise ValidationError(f"ttl_ms must be None or a positive int, got {shown(value)}")
    return value  # type: ignore[return-value]


def check_json(value: Any, path: str, *, max_depth: int, depth: int = 0) -> None:
    """Strict JSON: str keys, finite numbers, no lone surrogates, at most ``max_depth``
    levels. ValidationError names where (``path``); nothing is converted."""
    if depth > max_depth:
        where = path if len(path) <= 60 else path[:57] + "..."
        raise ValidationError(f"{where} nests deeper than {max_depth} levels")
    if value is None or isinstance(value, (bool, int)):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValidationError(f"{path} is not a finite number")
        return
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValidationError(f"{path} contains a lone surrogate") from None
        return
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            check_json(item, f"{path}[{i}]", max_depth=max_depth, depth=depth + 1)
        return
    if isinstance(value, dict):
        for k, item in value.items():
            if not isinstance(k, str):
                raise ValidationError(f"{path} has a non-string key {shown(k)}")
            check_json(k, f"{path} key", max_depth=max_depth, depth=depth + 1)
            check_json(item, f"{path}.{k}", max_depth=max_depth, depth=depth + 1)
        return
    raise ValidationError(f"{path} is not JSON (got {type(value).__name__})")


def _check_json(value: Any, path: str, depth: int) -> None:
    if depth > MAX_METADATA_DEPTH:
        raise ValidationError(f"metadata nests deeper than {MAX_METADATA_DEPTH} at {path}")
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, int):
        if not -MAX_METADATA_INT <= value <= MAX_METADATA_INT:
            raise ValidationError(
                f"metadata value at {path} is {shown(value)}: integers must be within "
                f"+-2**53 (what JavaScript reads exactly); store a larger one as a string"
            )
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValidationError(f"metadata value at {path} is not a finite number")
        return
    if isinstance(value, str):
        check_str(f"metadata value at {path}", value)
        return
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_json(v, f"{path}[{i}]", depth + 1)
        return
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise ValidationError(f"metadata keys must be strings (at {path})")
            check_str(f"metadata key at {path}", k)
            _check_json(v, f"{path}.{k}", depth + 1)
        return
    raise ValidationError(f"metadata value at {path} is not JSON ({type(value).__name__})")


def check_metadata(value: object) -> dict[str, Any]:
    """Validate metadata and fill the three keys seed 002 requires. Returns a normalised copy."""
    if not isinstance(value, dict):
        raise ValidationError("metadata must be a JSON object (dict)")
    _check_json(value, "metadata", 0)
    meta = {"source": "api", "confidence": 1.0, "references": [], **value}
    check_str("metadata.source", meta["source"])
    if not 1 <= len(meta["source"]) <= 64:
        raise ValidationError("metadata.source must be 1-64 characters")
    conf = meta["confidence"]
    if isinstance(conf, bool) or not isinstance(conf, (int, float)) or not 0.0 <= conf <= 1.0:
        raise ValidationError(f"metadata.confidence must be a number in 0..1, got {shown(conf)}")
    meta["confidence"] = float(conf)
    refs = meta["references"]
    if not isinstance(refs, (list, tuple)) or len(refs) > MAX_REFERENCES:
        raise ValidationError(f"metadata.references must be a list of at most {MAX_REFERENCES} ids")
    meta["references"] = [check_id(r) for r in refs]
    # Round-trip through JSON so tuples become lists and the stored value is what we return.
    encoded = dumps(meta)
    if len(encoded.encode("utf-8")) > MAX_METADATA_BYTES:
        raise ValidationError(f"metadata is larger than {MAX_METADATA_BYTES} bytes as JSON")
    return json.loads(encoded)
