"""MemoryItem validation and the JSON codec."""

import json
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymemory import Feedback, MemoryItem, ValidationError
from pymemory.item import (
    MAX_METADATA_BYTES,
    MAX_TIMESTAMP_MS,
    MEMORY_TYPES,
    ArchivedItem,
    new_id,
)

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
texts = st.text(min_size=1, max_size=300).filter(lambda s: s.strip())

items = st.builds(
    MemoryItem,
    id=st.uuids(version=4).map(str),
    type=st.sampled_from(MEMORY_TYPES),
    timestamp=st.integers(0, MAX_TIMESTAMP_MS),
    content=st.text(min_size=1, max_size=200).filter(lambda s: s.strip()),
    text=texts,
    metadata=st.fixed_dictionaries(
        {},
        optional={
            "source": st.sampled_from(["chat-input", "api-call", "user-click"]),
            "confidence": st.floats(0, 1),
            "references": st.lists(st.uuids().map(str), max_size=3),
            "extra": json_values,
        },
    ),
    scope=st.sampled_from(["global", "user", "conversation:42", "session"]),
    tags=st.lists(
        st.text(min_size=1, max_size=10).filter(lambda s: s == s.strip()), max_size=4
    ).map(tuple),
    ttl_ms=st.none() | st.integers(1, 10**12),
    feedback=st.builds(Feedback, st.integers(0, 9), st.integers(0, 9), st.booleans()),
    content_method=st.sampled_from(["rules", "given", "model"]),
)


def make(**kw):
    base = dict(id=new_id(), type="message", timestamp=1, content="c", text="c", metadata={})
    return MemoryItem(**{**base, **kw})


@given(items)
def test_codec_round_trips(item):
    encoded = item.to_json()
    again = MemoryItem.from_json(encoded)
    assert again == item
    assert again.to_json() == encoded  # stable bytes


@given(items)
def test_codec_is_canonical_json(item):
    data = json.loads(item.to_json())
    assert list(data) == sorted(data)
    assert ("text" in data) == (item.text != item.content)


def test_metadata_defaults_filled():
    item = make()
    assert item.metadata == {"source": "api", "confidence": 1.0, "references": []}


@pytest.mark.parametrize(
    "field, value",
    [
        ("id", "not-a-uuid"),
        ("id", str(uuid.uuid4()).upper()),
        ("id", 5),
        ("type", "chat"),
        ("timestamp", 1.5),
        ("timestamp", True),
        ("timestamp", -1),
        ("content", ""),
        ("content", "x" * 201),
        ("content", b"bytes"),
        ("content", "\ud800"),
        ("text", "   "),
        ("metadata", []),
        ("metadata", {"confidence": 1.5}),
        ("metadata", {"confidence": "high"}),
        ("metadata", {"source": ""}),
        ("metadata", {"references": ["x"]}),
        ("metadata", {"f": float("nan")}),
        ("metadata", {"s": {1, 2}}),
        ("metadata", {"b": b"raw"}),
        ("metadata", {1: "int key"}),
        ("metadata", {"big": "x" * MAX_METADATA_BYTES}),
        ("metadata", {"deep": [[[[[[[[[["x"]]]]]]]]]]}),
        ("scope", "has space"),
        ("scope", ""),
        ("tags", "a-string"),
        ("tags", ("ok", " padded")),
        ("tags", tuple(f"t{i}" for i in range(33))),
        ("ttl_ms", 0),
        ("ttl_ms", 1.0),
    ],
)
def test_bad_fields_raise(field, value):
    with pytest.raises(ValidationError):
        make(**{field: value})


@pytest.mark.parametrize(
    "raw",
    [
        "not json",
        "[]",
        '{"id": 1}',
        json.dumps({**make().to_dict(), "surprise": 1}),
        json.dumps({**make().to_dict(), "feedback": {"liked": -1}}),
        json.dumps({**make().to_dict(), "tags": "x"}),
    ],
)
def test_bad_json_raises(raw):
    with pytest.raises(ValidationError):
        MemoryItem.from_json(raw)


def test_tags_deduplicated_in_order():
    assert make(tags=("b", "a", "b")).tags == ("b", "a")


def test_feedback_state():
    fb = Feedback().add("liked").add("liked").add("disliked").add("important")
    assert (fb.liked, fb.disliked, fb.important, fb.net) == (2, 1, True, 1)
    with pytest.raises(ValidationError):
        fb.add("love")


def test_expiry():
    item = make(timestamp=1000, ttl_ms=500)
    assert item.expires_at == 1500
    assert not item.is_expired(1499)
    assert item.is_expired(1500)


def test_archived_item_codec():
    item = make(content="hello", tags=("x",))
    arc = ArchivedItem.of(item)
    assert arc.to_dict() == {"id": item.id, "type": "message", "timestamp": 1, "content": "hello"}
    assert ArchivedItem.from_dict(json.loads(arc.to_json())) == arc
    with pytest.raises(ValidationError):
        ArchivedItem.from_dict({**arc.to_dict(), "scope": "global"})
