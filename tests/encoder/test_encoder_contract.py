"""What the stage-1 rule encoder promises whatever the input: JSON tool results, the API
and its validation, and properties (bounded, deterministic, no invented words)."""

from __future__ import annotations

import json

import pytest
from encoder_words import invented_words
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pymemory.encoder import (
    MAX_CONTENT_CHARS,
    MEMORY_TYPES,
    Encoded,
    Encoder,
    RuleEncoder,
)
from pymemory.errors import ValidationError

ENC = RuleEncoder()


def summarize(text: str, type: str = "message") -> str:
    return ENC.summarize(text, type=type)


# --------------------------------------------------------------------------------------
# JSON tool results
# --------------------------------------------------------------------------------------


def test_json_tool_result_most_informative_first() -> None:
    text = json.dumps(
        {
            "request_id": "3f2a9c1e-8b7d-4c5e-9f01-23456789abcd",
            "status": "error",
            "error": {"code": 404, "message": "File not found: report.csv"},
            "retry": None,
            "hint": "",
        }
    )
    out = summarize(text, "tool_result")
    assert out.startswith("message: File not found: report.csv; status: error")
    assert "code: 404" in out
    assert "retry" not in out and "hint" not in out and "null" not in out
    assert out.index("code: 404") < out.index("request_id")


def test_json_tool_result_keeps_literals_and_lists() -> None:
    text = '{"item": "USB-C cable", "price": 1.50, "in_stock": true, "tags": ["usb", "cable"]}'
    out = summarize(text, "tool_result")
    assert out == "item: USB-C cable; tags: usb, cable; price: 1.50; in_stock: true"


def test_json_array_of_objects() -> None:
    text = json.dumps(
        [
            {"title": "Fix login bug", "state": "open", "number": 12},
            {"title": "Add CSV export", "state": "closed", "number": 13},
        ]
    )
    out = summarize(text, "tool_result")
    assert "title: Fix login bug" in out and "title: Add CSV export" in out
    assert out.index("title: Add CSV export") < out.index("number: 12")


def test_big_json_is_truncated_within_bound() -> None:
    rows = [{"name": f"user {i}", "email": f"u{i}@example.com", "id": i} for i in range(200)]
    text = json.dumps({"count": 200, "results": rows})
    out = summarize(text, "tool_result")
    assert len(out) <= MAX_CONTENT_CHARS
    assert out.startswith("name: user 0; name: user 1")
    assert out.endswith("…") or len(out) > MAX_CONTENT_CHARS - 30


def test_long_json_string_value_does_not_crowd_out_the_rest() -> None:
    text = json.dumps({"output": "lorem ipsum " * 50, "status": "done", "exit_code": 0})
    out = summarize(text, "tool_result")
    assert len(out) <= MAX_CONTENT_CHARS
    assert "status: done" in out and "exit_code: 0" in out


@pytest.mark.parametrize("text", ['{"a": 1,', "[1, 2", "{}", "[]", '{"a": null}', "42"])
def test_non_json_or_empty_json_tool_result_uses_text_rules(text: str) -> None:
    assert summarize(text, "tool_result") == text


def test_json_is_only_rendered_for_tool_results() -> None:
    text = '{"status": "ok"}'
    assert summarize(text, "message") == text
    assert summarize(text, "tool_result") == "status: ok"


# --------------------------------------------------------------------------------------
# API, validation, async
# --------------------------------------------------------------------------------------


def test_blank_input_gives_empty_content() -> None:
    for text in ("", " ", "\n\t  \u3000\u2028"):
        assert summarize(text) == ""


def test_validation() -> None:
    with pytest.raises(ValidationError):
        summarize("hello", "chat")
    with pytest.raises(ValidationError):
        ENC.summarize(b"hello")  # type: ignore[arg-type]
    for bad in (0, -5, True, 2.5, "200"):
        with pytest.raises(ValidationError):
            RuleEncoder(max_chars=bad)  # type: ignore[arg-type]


def test_constants() -> None:
    assert MAX_CONTENT_CHARS == 200
    assert MEMORY_TYPES == (
        "message",
        "tool_result",
        "user_feedback",
        "user_preference",
        "system_event",
    )
    assert RuleEncoder().max_chars == MAX_CONTENT_CHARS
    assert RuleEncoder.method == "rules"


async def test_encode_returns_encoded() -> None:
    text = "Hi! Could you convert the script to CSV? Thanks"
    encoded = await ENC.encode(text)
    assert isinstance(encoded, Encoded)
    assert encoded == Encoded("Could you convert the script to CSV?", "rules")
    assert encoded.content == ENC.summarize(text)
    assert encoded.method == "rules"
    tool = await ENC.encode('{"status": "ok"}', type="tool_result")
    assert tool == Encoded("status: ok", "rules")


async def test_encode_validates() -> None:
    with pytest.raises(ValidationError):
        await ENC.encode("hello", type="bogus")


def test_rule_encoder_satisfies_protocol() -> None:
    assert isinstance(RuleEncoder(), Encoder)


# --------------------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------------------

# Pieces that make the rules fire: cue words, pleasantries, fillers, punctuation, code.
VOCAB = [
    "Hi", "hello", "Thanks!", "thank you", "ok", "cool", "please", "Please", "can you",
    "I want", "I need", "we decided", "let's", "I prefer", "never", "always", "not", "just",
    "basically", "actually", "I think that", "first", "then", "step 2", "error", "Mr.", "e.g.",
    "3.5", "main.py", "https://x.io/a?b=1", "你好", "谢谢", "麻烦你了", "辛苦了", "请", "帮我",
    "想", "需要", "决定", "喜欢", "不要", "其实", "那个", "第一步", "然后", "。", "！", "？", "；",
    "…", ".", "!", "?", ",", "，", ":", " ", "  ", "\n", "\n\n", "\t", "- ", "* ", "1. ", "```",
    "Traceback (most recent call last):", '  File "a.py", line 1', "ValueError: bad", "{", "}",
    '"', "\u3000", "😀", "🙏", "é", "Ω",
]  # fmt: skip
any_text = st.text(max_size=400) | st.text(
    alphabet=st.characters(codec="utf-8")
    | st.sampled_from(list("你好世界日本語テスト한국어 \n。")),
    max_size=400,
)
mixed_text = st.lists(st.sampled_from(VOCAB) | st.text(max_size=12), max_size=60).map("".join)
texts = any_text | mixed_text
types = st.sampled_from(MEMORY_TYPES)
limits = st.sampled_from([MAX_CONTENT_CHARS, 1, 2, 3, 10, 40, 120])

PROPERTY_SETTINGS = settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@PROPERTY_SETTINGS
@given(text=texts, type=types, max_chars=limits)
def test_property_bound_nonempty_deterministic_no_invented_words(
    text: str, type: str, max_chars: int
) -> None:
    encoder = RuleEncoder(max_chars=max_chars)
    out = encoder.summarize(text, type=type)
    assert len(out) <= max_chars
    assert bool(out) == bool(text.strip())
    assert bool(out.strip()) == bool(text.strip())
    assert out == " ".join(out.split())  # whitespace-normalised
    assert RuleEncoder(max_chars=max_chars).summarize(text, type=type) == out
    assert not invented_words(out, text), (out, text)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5)
    ),
    max_leaves=40,
)


@PROPERTY_SETTINGS
@given(value=json_values, max_chars=limits)
def test_property_json_tool_results(value: object, max_chars: int) -> None:
    text = json.dumps(value, ensure_ascii=False)
    out = RuleEncoder(max_chars=max_chars).summarize(text, type="tool_result")
    assert 1 <= len(out) <= max_chars
    assert out == " ".join(out.split())
    assert not invented_words(out, text), (out, text)


# Consonant-only words can be neither cue words nor pleasantries ("kk", "np" and "hmm" are
# pleasantries, hence the alphabet).
consonant_word = st.text(alphabet="bcdfgjlqrsvwz", min_size=2, max_size=8)
plain_sentence = st.one_of(
    st.lists(consonant_word, min_size=2, max_size=6)
    .map(" ".join)
    .map(lambda s: s + "."),
    st.text(alphabet="山水木石田林川", min_size=2, max_size=12).map(lambda s: s + "。"),
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(st.lists(plain_sentence, min_size=1, max_size=8))
def test_property_clean_text_that_fits_is_unchanged(sentences: list[str]) -> None:
    text = " ".join(sentences)
    if len(text) <= MAX_CONTENT_CHARS:
        assert summarize(text) == text
    else:
        assert len(summarize(text)) <= MAX_CONTENT_CHARS
