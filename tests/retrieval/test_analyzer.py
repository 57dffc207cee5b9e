"""Tests for pymemory.retrieval.analyzer: normalisation, splitting, stopwords, stemming, CJK."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymemory.retrieval.analyzer import (
    CJK_STOP_CHARS,
    MAX_TOKEN_CHARS,
    STOPWORDS,
    analyze,
    analyze_query,
    normalize,
    stem,
)

# ------------------------------------------------------------------ examples from the spec


def test_plural_and_possessive_examples():
    assert analyze("memories") == ["memory"]
    assert analyze("scripts") == ["script"]
    assert analyze("user's") == ["user"]
    assert analyze("The user's memories and scripts") == ["user", "memory", "script"]


def test_cjk_run_gives_unigrams_then_bigrams():
    assert analyze("会议纪要") == ["会", "议", "纪", "要", "会议", "议纪", "纪要"]


def test_cjk_function_characters_dropped_as_unigrams_only():
    assert analyze("我的书") == ["我", "书", "我的", "的书"]
    assert analyze("的") == []
    assert analyze("是在") == ["是在"]


def test_single_cjk_character():
    assert analyze("书") == ["书"]


def test_cjk_runs_are_split_by_punctuation_and_latin():
    assert analyze("会议，纪要") == ["会", "议", "会议", "纪", "要", "纪要"]
    assert analyze("用Python写") == ["用", "python", "写"]
    assert analyze("2024年3月") == ["2024", "年", "3", "月"]


def test_japanese_and_korean_runs():
    assert analyze("東京タワー") == [
        "東", "京", "タ", "ワ", "ー", "東京", "京タ", "タワ", "ワー",
    ]  # fmt: skip
    assert analyze("세계 안녕") == ["세", "계", "세계", "안", "녕", "안녕"]
    # Japanese particles are dropped as unigrams, like the Chinese function characters.
    assert analyze("本の") == ["本", "本の"]


def test_half_width_katakana_is_normalised():
    assert analyze("ﾀﾜｰ") == analyze("タワー")


# ------------------------------------------------------------------ normalisation


def test_casefold_and_nfkc():
    assert analyze("PYTHON Python python") == ["python"] * 3
    assert analyze("ＰＹＴＨＯＮ３") == ["python3"]  # full-width letters and digits
    assert analyze("Straße") == ["strasse"]
    assert analyze("ﬁle") == ["file"]  # ligature
    assert analyze("café") == analyze("cafe\u0301") == analyze("CAFE") == ["cafe"]


@pytest.mark.parametrize(
    "document, query",
    [
        ("İstanbul", "istanbul"),  # Turkish dotted capital I
        ("ISTANBUL", "ıstanbul"),  # and the dotless i
        ("e\u0301te", "ete"),  # a combining accent
        ("été", "ETE"),
        ("Crème brûlée", "creme brulee"),  # French
        ("Ñandú", "nandu"),  # Spanish
        ("Straße", "STRASSE"),  # German
        ("Łódź", "lodz"),  # Polish
        ("Søren Kierkegård", "soren kierkegard"),  # Danish
        ("Tiếng Việt", "tieng viet"),  # Vietnamese: stacked diacritics
        ("Ελληνικά Άθήνα", "ελληνικα αθηνα"),  # Greek tonos
        ("ΣΟΦΟΣ", "σοφος"),  # Greek final sigma
        ("Ёлка", "елка"),  # Russian yo
        ("Ｐｙｔｈｏｎ３", "python3"),  # full width
        ("شُكْرًا", "شكرا"),  # Arabic harakat
        ("שָׁלוֹם", "שלום"),  # Hebrew points
    ],
)
def test_accents_and_case_fold_identically_for_documents_and_queries(document, query):
    assert analyze(document) == analyze(query)
    assert normalize(document).split() == normalize(query).split()


def test_folding_keeps_marks_that_change_the_letter():
    assert analyze("が") != analyze("か")  # kana voicing marks
    assert analyze("ガイド") == analyze("ｶﾞｲﾄﾞ")  # half width still meets full width
    assert analyze("हिन्दी") == ["हिन्दी"] and analyze("हिन्दी") != analyze("हनद")  # Indic signs
    assert analyze("ไม้") != analyze("ไม")  # Thai tone mark
    assert analyze("한국어") == ["한", "국", "어", "한국", "국어"]  # Hangul recomposed
    assert analyze("会议纪要") == ["会", "议", "纪", "要", "会议", "议纪", "纪要"]


def test_typographic_apostrophes():
    assert analyze("user’s") == analyze("user's") == analyze("userʼs") == ["user"]


# ------------------------------------------------------------------ splitting


def test_numbers_and_versions_stay_whole():
    assert analyze("python3") == ["python3"]
    assert analyze("Python 3.11 and 3.5") == ["python", "3.11", "3.5"]
    assert analyze("python3.11") == ["python3.11"]
    assert analyze("v1.2.3") == ["v1.2.3"]
    assert analyze("192.168.0.1") == ["192.168.0.1"]
    assert analyze("costs 3.50.") == ["cost", "3.50"]
    assert analyze("gpt4o") == ["gpt4o"]
    assert analyze("1990s") == ["1990s"]  # tokens with digits are not stemmed


def test_separators_split():
    assert analyze("report.csv") == ["report", "csv"]
    assert analyze("snake_case") == ["snake", "case"]
    assert analyze("gpt-4") == ["gpt", "4"]
    assert analyze("src/main.py") == ["src", "main", "py"]
    assert analyze("e.g.") == ["e", "g"]
    assert analyze("a@b.com") == ["b", "com"]  # "a" is a stopword


def test_emoji_and_punctuation_are_ignored():
    assert analyze("🎉🎉 !!! ... --- ### 😀") == []
    assert analyze("great👍job") == ["great", "job"]
    assert analyze("“quoted” (parens) [brackets]") == ["quoted", "paren", "bracket"]


def test_empty_and_whitespace():
    assert analyze("") == []
    assert analyze(" \t\n ") == []


def test_other_scripts_are_words():
    assert analyze("Привет мир") == ["привет", "мир"]
    assert analyze("हिन्दी भाषा") == ["हिन्दी", "भाषा"]  # combining vowel signs stay inside
    assert analyze("Ελληνικά") == ["ελληνικα"]  # accents fold for matching


def test_overlong_words_are_dropped():
    assert analyze("x" * MAX_TOKEN_CHARS) == ["x" * MAX_TOKEN_CHARS]
    assert analyze("x" * (MAX_TOKEN_CHARS + 1)) == []


# ------------------------------------------------------------------ words


def test_stopwords_removed():
    assert analyze("the a an of to is are was what who") == []
    assert analyze("What is the user's name?") == ["user", "name"]
    # content particles are kept
    assert analyze("sign up, log out") == ["sign", "up", "log", "out"]


def test_contractions():
    assert analyze("don't") == []  # "do"
    assert analyze("can't won't") == []  # "can", "will"
    assert analyze("isn't") == []
    assert analyze("I'm you're we'll they've she'd") == []
    assert analyze("let's") == ["let"]
    assert analyze("o'neil") == ["oneil"]
    assert analyze("'quoted'") == ["quoted"]
    assert analyze("users' files") == ["user", "file"]


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("memories", "memory"),
        ("queries", "query"),
        ("policies", "policy"),
        ("movies", "movie"),
        ("ties", "tie"),
        ("scripts", "script"),
        ("apis", "api"),
        ("days", "day"),
        ("cases", "case"),
        ("databases", "database"),
        ("classes", "class"),
        ("processes", "process"),
        ("boxes", "box"),
        ("buzzes", "buzz"),
        ("wishes", "wish"),
        ("matches", "match"),
        ("reaches", "reach"),
        ("caches", "cache"),
        ("headaches", "headache"),
        ("class", "class"),
        ("status", "status"),
        ("analysis", "analysis"),
        ("axis", "axis"),
        ("news", "news"),
        ("series", "series"),
        ("bus", "bus"),
        ("gas", "gas"),
        ("memory", "memory"),
        ("running", "running"),
        ("café", "café"),
        ("cafés", "cafés"),  # non-ASCII words are not stemmed
    ],
)
def test_stem(word, expected):
    assert stem(word) == expected


def test_singular_and_plural_meet():
    for singular, plural in [
        ("memory", "memories"),
        ("script", "scripts"),
        ("cache", "caches"),
        ("class", "classes"),
        ("box", "boxes"),
        ("match", "matches"),
        ("database", "databases"),
        ("movie", "movies"),
    ]:
        assert analyze(singular) == analyze(plural), (singular, plural)


def test_analyze_query_matches_analyze():
    text = "What did the user say about 会议纪要 in python3.11?"
    assert analyze_query(text) == analyze(text)


def test_rejects_non_str():
    with pytest.raises(TypeError):
        analyze(b"bytes")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        analyze(None)  # type: ignore[arg-type]


# ------------------------------------------------------------------ properties

_TEXT = st.text(
    alphabet=st.one_of(
        st.characters(codec="utf-8"),
        st.sampled_from(list("abc XYZ 0123456789 .'’-_ 会议纪要的了 タワーの 세계 ﬁ")),
    ),
    max_size=80,
)


@settings(max_examples=300, deadline=None)
@given(_TEXT)
def test_terms_are_clean_and_deterministic(text):
    terms = analyze(text)
    assert terms == analyze(text)
    for term in terms:
        assert term
        assert not any(ch.isspace() for ch in term)
        assert term == term.casefold()
        assert unicodedata.is_normalized("NFKC", term)
        assert term not in STOPWORDS
        assert not (len(term) == 1 and term in CJK_STOP_CHARS)
        assert len(term) <= MAX_TOKEN_CHARS


@settings(max_examples=200, deadline=None)
@given(_TEXT, _TEXT)
def test_whitespace_separated_texts_analyse_independently(a, b):
    assert analyze(a + " " + b) == analyze(a) + analyze(b)
