"""The pure-Python tokenizers against the Rust `tokenizers` package (a test-only dependency):
the same ids for every string of the corpus, for both models' tokenizer.json files."""

from __future__ import annotations

import json
import random
import sys
import unicodedata
from pathlib import Path

import pytest
import tokenizers as rust  # the reference (the `models` extra)
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizer_corpus import corpus

from pymemory.models.tokenizers import UnsupportedTokenizerError, load_tokenizer
from pymemory.models.tokenizers.bytelevel_bpe import _merge_short, merge_symbols
from pymemory.models.tokenizers.normalize import BertNormalizer, BertPreTokenizer, translate_regex

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tools import tokenizer_assets  # noqa: E402

BUILD_SMOLLM2 = ROOT / ".cache" / "models" / "smollm2" / "tokenizer.json"


@pytest.fixture(scope="module")
def minilm_path() -> Path:
    return tokenizer_assets.fetch_minilm_tokenizer()


@pytest.fixture(scope="module")
def smollm2_path() -> Path:
    out = tokenizer_assets.TOKENIZERS / "smollm2" / "tokenizer.json"
    if out.is_file() and tokenizer_assets.sha256(out) == tokenizer_assets.SMOLLM2_TOKENIZER_SHA256:
        return out
    # `gguf` is a build-only tool: it lives in the conversion venv, not in pymemory's extras.
    python = tokenizer_assets.ROOT / ".cache" / "convert-venv" / "bin" / "python"
    if not python.is_file():
        pytest.fail("no .cache/convert-venv: run python3 build.py setup")
    gguf = tokenizer_assets.fetch_smollm2_gguf()
    return tokenizer_assets.export_smollm2_tokenizer(gguf, out.parent, str(python))


def _pair(path: Path, **options):
    ours = load_tokenizer(path, **options)
    ref = rust.Tokenizer.from_file(str(path))
    if not options.get("padding"):
        ref.no_padding()
    if not options.get("truncation"):
        ref.no_truncation()
    return ours, ref


def _assert_same_ids(ours, ref, texts, add_special_tokens: bool) -> None:
    expected = [e.ids for e in ref.encode_batch(list(texts), add_special_tokens=add_special_tokens)]
    bad = [
        (t[:80], ours_ids[:12], ref_ids[:12])
        for t, ref_ids in zip(texts, expected, strict=True)
        if (ours_ids := ours.encode(t, add_special_tokens=add_special_tokens)) != ref_ids
    ]
    assert not bad, f"{len(bad)} of {len(texts)} differ, e.g. {bad[:3]}"


def test_corpus_is_big_and_varied():
    texts = corpus()
    assert len(texts) >= 2000
    assert len(set(texts)) > 0.95 * len(texts)
    assert "" in texts
    assert sum(len(t) >= 10_000 for t in texts) >= 10
    joined = "".join(texts)
    for ch in ("\u200d", "\u3000", "\u00a0", "\r\n", "\t", "\u0301", "\U0001f3fd", "한", "の"):
        assert ch in joined


@pytest.mark.parametrize("add_special_tokens", [True, False])
def test_minilm_ids_match_rust_on_corpus(minilm_path, add_special_tokens):
    ours, ref = _pair(minilm_path)
    _assert_same_ids(ours, ref, corpus(), add_special_tokens)


@pytest.mark.parametrize("add_special_tokens", [True, False])
def test_smollm2_ids_match_rust_on_corpus(smollm2_path, add_special_tokens):
    ours, ref = _pair(smollm2_path)
    _assert_same_ids(ours, ref, corpus(), add_special_tokens)


def test_build_smollm2_tokenizer_matches_rust_on_corpus():
    """The tokenizer.json that transformers' GGUF loader writes (byte fallback, no Digits)
    loads too and gives Rust's ids."""
    if not BUILD_SMOLLM2.is_file():
        pytest.fail("no .cache/models/smollm2/tokenizer.json: run python3 build.py setup")
    ours, ref = _pair(BUILD_SMOLLM2)
    _assert_same_ids(ours, ref, corpus(), add_special_tokens=False)


@pytest.mark.parametrize("name", ["minilm", "smollm2"])
def test_decode_matches_rust(name, minilm_path, request):
    path = minilm_path if name == "minilm" else request.getfixturevalue("smollm2_path")
    ours, ref = _pair(path)
    texts = corpus()[::3]
    for text in texts:
        ids = ref.encode(text).ids
        for skip in (True, False):
            assert ours.decode(ids, skip_special_tokens=skip) == ref.decode(
                ids, skip_special_tokens=skip
            ), text[:80]


def test_smollm2_round_trips_text(smollm2_path):
    tok = load_tokenizer(smollm2_path)
    dropped = {chr(c) for c in (0x04, 0x06, 0x13, 0x14, 0x16, 0x1D)}  # bytes not in its vocab
    for text in corpus()[::5]:
        if not any(c in text for c in dropped):
            assert tok.decode(tok.encode(text), skip_special_tokens=False) == text


def test_minilm_file_padding_and_truncation_match_rust(minilm_path):
    ours, ref = _pair(minilm_path, padding=True, truncation=True)
    assert ours.padding is not None and ours.padding.length == 128
    assert ours.truncation is not None and ours.truncation.max_length == 128
    for text in [*corpus()[:400:7], *corpus()[-18:]]:
        got, want = ours.encode_full(text), ref.encode(text)
        assert (got.ids, got.attention_mask, got.type_ids) == (
            want.ids,
            want.attention_mask,
            want.type_ids,
        )
        assert len(got.ids) == 128


def test_padding_and_truncation_are_off_by_default(minilm_path):
    tok = load_tokenizer(minilm_path)
    assert tok.padding is None and tok.truncation is None
    assert tok.encode("hello world") == [101, 7592, 2088, 102]
    assert len(tok.encode("word " * 500)) == 502


def test_switches(minilm_path):
    tok = load_tokenizer(minilm_path)
    tok.enable_truncation(6)
    assert tok.encode("one two three four five six seven") == [101, 2028, 2048, 2093, 2176, 102]
    assert tok.encode("one two three four five six", add_special_tokens=False) == [
        2028,
        2048,
        2093,
        2176,
        2274,
        2416,
    ]
    tok.enable_truncation(6, direction="left")
    assert tok.encode("one two three four five six seven") == [101, 2176, 2274, 2416, 2698, 102]
    tok.no_truncation()
    tok.enable_padding()  # pad a batch to its longest
    batch = tok.encode_batch(["hi", "hello there friend"])
    assert [len(e.ids) for e in batch] == [5, 5]
    assert batch[0].ids == [101, 7632, 102, 0, 0] and batch[0].attention_mask == [1, 1, 1, 0, 0]
    tok.enable_padding(8, pad_to_multiple_of=None, direction="left")
    enc = tok.encode_full("hi")
    assert enc.ids == [0] * 5 + [101, 7632, 102] and enc.attention_mask == [0] * 5 + [1] * 3
    tok.no_padding()
    assert tok.encode("hi") == [101, 7632, 102]


def test_vocabulary_lookups(minilm_path, smollm2_path):
    for path in (minilm_path, smollm2_path):
        ours, ref = _pair(path)
        assert ours.vocab_size == ref.get_vocab_size(with_added_tokens=True)
        for token in ("[CLS]", "[UNK]", "hello", "##ing", "<|im_start|>", "Ġthe", "zzzq"):
            assert ours.token_to_id(token) == ref.token_to_id(token)
        for i in (0, 1, 2, 100, 101, 2000, 30521, 49151, 10**6):
            assert ours.id_to_token(i) == ref.id_to_token(i)


def test_special_tokens_in_text(minilm_path, smollm2_path):
    bert = load_tokenizer(minilm_path)
    assert bert.encode("[CLS] Hi [MASK]!", add_special_tokens=False) == [101, 7632, 103, 999]
    smol = load_tokenizer(smollm2_path)
    ids = smol.encode("<|im_start|>user\nHi<|im_end|>")
    assert ids[0] == 1 and ids[-1] == 2  # no BOS added, the markers are single tokens
    assert smol.decode(ids) == "user\nHi"


def test_smollm2_isolates_digits(smollm2_path):
    smol = load_tokenizer(smollm2_path)
    tokens = [smol.id_to_token(i) for i in smol.encode("in 2024")]
    assert tokens == ["in", "Ġ", "2", "0", "2", "4"]


def test_load_from_json_text_and_dict(minilm_path):
    text = minilm_path.read_text(encoding="utf-8")
    a = load_tokenizer(text)
    b = load_tokenizer(json.loads(text))
    assert a.encode("Tokenizers!") == b.encode("Tokenizers!") == [101, 19204, 17629, 2015, 999, 102]


def test_unsupported_components_raise(minilm_path):
    spec = json.loads(minilm_path.read_text(encoding="utf-8"))
    for key, value in [
        ("normalizer", {"type": "Precompiled", "precompiled_charsmap": ""}),
        ("pre_tokenizer", {"type": "Metaspace", "replacement": "▁"}),
        ("decoder", {"type": "CTC"}),
        ("model", {"type": "Unigram", "vocab": []}),
    ]:
        with pytest.raises(UnsupportedTokenizerError):
            load_tokenizer({**spec, key: value})


def test_non_string_input_is_a_type_error(minilm_path):
    with pytest.raises(TypeError):
        load_tokenizer(minilm_path).encode(b"bytes")  # type: ignore[arg-type]


# -- every code point: the BERT normalizer and pre-tokenizer against Rust's -----------------


@pytest.mark.skipif(
    tuple(map(int, unicodedata.unidata_version.split("."))) > (15, 1, 0),
    reason="the Rust-compatibility tables cover Unicode up to 15.1",
)
def test_bert_pieces_match_rust_on_every_code_point():
    # Every code point this Python knows (Rust's newer tables also know some that it doesn't).
    chars = [chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) not in ("Cn", "Cs")]
    text = "".join("a" + c for c in chars)  # "a" keeps marks from reordering across chars
    for options in (
        {
            "clean_text": True,
            "handle_chinese_chars": True,
            "strip_accents": None,
            "lowercase": True,
        },
        {
            "clean_text": True,
            "handle_chinese_chars": False,
            "strip_accents": True,
            "lowercase": False,
        },
        {
            "clean_text": False,
            "handle_chinese_chars": False,
            "strip_accents": False,
            "lowercase": True,
        },
    ):
        ours = BertNormalizer(**options).normalize(text)
        assert ours == rust.normalizers.BertNormalizer(**options).normalize_str(text), options
    spaced = " x ".join(chars)
    ours_words = BertPreTokenizer().split(spaced)
    ref_words = [w for w, _ in rust.pre_tokenizers.BertPreTokenizer().pre_tokenize_str(spaced)]
    assert ours_words == ref_words


# -- random text ----------------------------------------------------------------------------

_ALPHABET = st.sampled_from(
    list("aAzZ09 \t\n\r'.,!?-_/#@$%é") + [c for t in corpus()[:200] for c in t]
)


@settings(max_examples=300, deadline=None)
@given(st.text(_ALPHABET, max_size=80))
def test_random_text_matches_rust(minilm_path, smollm2_path, text):
    for path in (minilm_path, smollm2_path):
        ours, ref = _cached_pair(path)
        assert ours.encode(text) == ref.encode(text).ids


_PAIRS: dict[Path, tuple] = {}


def _cached_pair(path: Path):
    if path not in _PAIRS:
        _PAIRS[path] = _pair(path)
    return _PAIRS[path]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=0, max_size=120), st.integers(0, 2**32))
def test_heap_merge_equals_simple_merge(symbols, seed):
    rng = random.Random(seed)
    merges = {}
    next_id, rank = 6, 0
    for _ in range(rng.randint(0, 40)):
        pair = (rng.randint(0, next_id - 1), rng.randint(0, next_id - 1))
        if pair not in merges:
            merges[pair] = (rank, next_id)
            rank += 1
            next_id += 1
    long_input = symbols * 3  # at least 24 symbols takes the heap path
    assert merge_symbols(long_input, merges) == _merge_short(long_input, merges)
    assert merge_symbols(symbols, merges) == _merge_short(symbols, merges)


@pytest.mark.parametrize(
    "pattern",
    [
        r"\p{L}+|\p{N}|[^\s\p{L}]+|\s+(?!\S)|\s|\S",
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|\s|\S",
        r"\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+|\S",
        r"[\p{P}\p{S}]+|\P{L}|\p{L}",
    ],
)
def test_translated_regex_splits_like_rust(pattern):
    import re

    ours = re.compile(translate_regex(pattern), re.DOTALL)
    ref = rust.pre_tokenizers.Split(rust.Regex(pattern), "isolated")
    for text in corpus()[::4]:
        assert ours.findall(text) == [p for p, _ in ref.pre_tokenize_str(text)], text[:80]


def test_translated_whitespace_is_unicode_white_space():
    import re

    assert re.fullmatch(translate_regex(r"\s+"), "\u3000\u2028\x85\xa0 \t") is not None
    assert re.fullmatch(translate_regex(r"\s"), "\x1c") is None  # Python's \s says yes
    assert re.fullmatch(translate_regex(r"\s"), "\ufeff") is None  # JavaScript's \s says yes
