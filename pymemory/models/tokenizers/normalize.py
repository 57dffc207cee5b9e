"""Unicode character classes, and the BERT normalizer and pre-tokenizer of HF `tokenizers`.

Python's ``re`` has no ``\\p{L}`` and its ``\\s`` is not Unicode White_Space, so the classes
that the Rust regex engines use are built here from ``unicodedata`` (once, lazily).

The BERT pieces of the Rust library classify characters with Unicode 8 tables (the
``unicode_categories`` crate) and decompose with an old NFD table. The ``_RUST_*`` tables
below list every code point, assigned up to Unicode 15, on which those old tables disagree
with a newer ``unicodedata``; they were found by comparing the two over all code points.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable, Sequence

Ranges = list[tuple[int, int]]

# Unicode White_Space (stable since Unicode 6.3): what Rust's `char::is_whitespace`, the Rust
# `regex` crate's and Oniguruma's `\s` match.
WHITE_SPACE: Ranges = [
    (0x09, 0x0D), (0x20, 0x20), (0x85, 0x85), (0xA0, 0xA0), (0x1680, 0x1680),
    (0x2000, 0x200A), (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000),
]  # fmt: skip

_ASCII_PUNCT = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

# Code points that Rust's `is_punctuation` (Unicode 8) does not / does count as punctuation,
# against the general category P* of Unicode 14/15.
_RUST_PUNCT_NO = (
    0x061D, 0x09FD, 0x0A76, 0x0C77, 0x0C84, (0x1B7D, 0x1B7E), (0x2E43, 0x2E4F),
    (0x2E52, 0x2E5D), 0x10EAD, (0x10F55, 0x10F59), (0x10F86, 0x10F89), (0x1144B, 0x1144F),
    (0x1145A, 0x1145B), 0x1145D, (0x11660, 0x1166C), 0x116B9, 0x1183B, (0x11944, 0x11946),
    0x119E2, (0x11A3F, 0x11A46), (0x11A9A, 0x11A9C), (0x11A9E, 0x11AA2), (0x11B00, 0x11B09),
    (0x11C41, 0x11C45), (0x11C70, 0x11C71), (0x11EF7, 0x11EF8), (0x11F43, 0x11F4F), 0x11FFF,
    (0x12FF1, 0x12FF2), (0x16E97, 0x16E9A), 0x16FE2, (0x1E95E, 0x1E95F),
)  # fmt: skip
_RUST_PUNCT_YES = (0x166D, 0x111C9)
# Format characters (Cf) that Rust's `is_other` does not know, so `clean_text` keeps them.
_RUST_FORMAT_NO = ((0x0890, 0x0891), 0x08E2, 0x110CD, (0x13430, 0x1343F))
# Nonspacing marks (Mn) that Rust's `strip_accents` does not / does remove.
_RUST_MN_NO = (
    0x07FD, (0x0898, 0x089F), (0x08CA, 0x08E1), 0x09FE, (0x0AFA, 0x0AFF), 0x0B55, 0x0C04,
    0x0C3C, 0x0D00, (0x0D3B, 0x0D3C), 0x0D81, 0x0EBA, 0x0ECE, 0x180F, (0x1885, 0x1886),
    (0x1ABF, 0x1ACE), (0x1DF6, 0x1DFB), 0xA82C, 0xA8C5, 0xA8FF, 0xA9BD, (0x10D24, 0x10D27),
    (0x10EAB, 0x10EAC), (0x10EFD, 0x10EFF), (0x10F46, 0x10F50), (0x10F82, 0x10F85), 0x11070,
    (0x11073, 0x11074), 0x110C2, 0x111C9, 0x111CF, 0x1123E, 0x11241, 0x1133B,
    (0x11438, 0x1143F), (0x11442, 0x11444), 0x11446, 0x1145E, (0x1182F, 0x11837),
    (0x11839, 0x1183A), (0x1193B, 0x1193C), 0x1193E, 0x11943, (0x119D4, 0x119D7),
    (0x119DA, 0x119DB), 0x119E0, (0x11A01, 0x11A0A), (0x11A33, 0x11A38), (0x11A3B, 0x11A3E),
    0x11A47, (0x11A51, 0x11A56), (0x11A59, 0x11A5B), (0x11A8A, 0x11A96), (0x11A98, 0x11A99),
    (0x11C30, 0x11C36), (0x11C38, 0x11C3D), 0x11C3F, (0x11C92, 0x11CA7), (0x11CAA, 0x11CB0),
    (0x11CB2, 0x11CB3), (0x11CB5, 0x11CB6), (0x11D31, 0x11D36), 0x11D3A, (0x11D3C, 0x11D3D),
    (0x11D3F, 0x11D45), 0x11D47, (0x11D90, 0x11D91), 0x11D95, 0x11D97, (0x11EF3, 0x11EF4),
    (0x11F00, 0x11F01), (0x11F36, 0x11F3A), 0x11F40, 0x11F42, 0x13440, (0x13447, 0x13455),
    0x16F4F, 0x16FE4, (0x1CF00, 0x1CF2D), (0x1CF30, 0x1CF46), (0x1E000, 0x1E006),
    (0x1E008, 0x1E018), (0x1E01B, 0x1E021), (0x1E023, 0x1E024), (0x1E026, 0x1E02A), 0x1E08F,
    (0x1E130, 0x1E136), 0x1E2AE, (0x1E2EC, 0x1E2EF), (0x1E4EC, 0x1E4EF), (0x1E944, 0x1E94A),
)  # fmt: skip
_RUST_MN_YES = (0x1734,)
# Characters whose canonical decomposition is newer than Rust's NFD table.
_RUST_NO_NFD = "\U00011938"

# BERT's "Chinese character" blocks, as in the Rust library (note 0x2B920, not 0x2B820).
_CJK: Ranges = [
    (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x2A6DF),
    (0x2A700, 0x2B81F), (0x2B920, 0x2CEAF), (0x2F800, 0x2FA1F),
]  # fmt: skip


@functools.cache
def _category_runs() -> tuple[tuple[int, int, str], ...]:
    """Maximal runs of code points sharing a general category, for this Python's Unicode."""
    cats = list(map(unicodedata.category, map(chr, range(0x110000))))
    runs: list[tuple[int, int, str]] = []
    start = 0
    for cp in range(1, 0x110000):
        if cats[cp] != cats[start]:
            runs.append((start, cp - 1, cats[start]))
            start = cp
    runs.append((start, 0x10FFFF, cats[start]))
    return tuple(runs)


def category_ranges(categories: Iterable[str]) -> Ranges:
    """Code point ranges whose general category is one of ``categories``; a one-letter
    name such as ``"L"`` stands for all its subcategories."""
    wanted = tuple(categories)
    return _merge((a, b) for a, b, cat in _category_runs() if cat in wanted or cat[0] in wanted)


def _as_ranges(items: Iterable[int | tuple[int, int]]) -> Ranges:
    return [(x, x) if isinstance(x, int) else x for x in items]


def _merge(ranges: Iterable[tuple[int, int]]) -> Ranges:
    out: Ranges = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def subtract(ranges: Ranges, removed: Iterable[int | tuple[int, int]]) -> Ranges:
    """``ranges`` without the code points in ``removed``."""
    out = _merge(ranges)
    for ra, rb in _merge(_as_ranges(removed)):
        nxt: Ranges = []
        for a, b in out:
            if b < ra or a > rb:
                nxt.append((a, b))
                continue
            if a < ra:
                nxt.append((a, ra - 1))
            if b > rb:
                nxt.append((rb + 1, b))
        out = nxt
    return out


def union(*parts: Iterable[int | tuple[int, int]]) -> Ranges:
    return _merge(r for part in parts for r in _as_ranges(part))


def char_class(ranges: Sequence[tuple[int, int]]) -> str:
    """The body of a regex character class (without brackets) matching ``ranges``."""

    def esc(cp: int) -> str:
        return f"\\x{cp:02x}" if cp < 0x100 else f"\\u{cp:04x}" if cp < 0x10000 else f"\\U{cp:08x}"

    return "".join(esc(a) if a == b else f"{esc(a)}-{esc(b)}" for a, b in _merge(ranges))


@functools.cache
def uclass(name: str, ascii_only: bool = False) -> str:
    """The body of a character class for ``\\s`` (Unicode White_Space) or a general
    category such as ``L`` or ``Lu``, as the Rust regex engines see them; with
    ``ascii_only``, its ASCII part (possibly empty)."""
    if name == "s":
        ranges = WHITE_SPACE
    elif re.fullmatch(r"[A-Z][a-z]?", name):
        ranges = category_ranges([name])
    else:
        raise ValueError(f"unknown Unicode class {name!r}")
    if ascii_only:
        ranges = subtract(ranges, [(0x80, 0x10FFFF)])
    return char_class(ranges)


_CLASS_ESCAPE = re.compile(r"\\(?:p\{(\w+)\}|p([A-Z])|P\{(\w+)\}|P([A-Z])|([sS])|(.))", re.S)


def translate_regex(pattern: str, ascii_only: bool = False) -> str:
    """A Rust/Oniguruma regex with ``\\p{..}``, ``\\P{..}``, ``\\s`` and ``\\S`` rewritten
    for Python's ``re`` (whose ``\\s`` is not Unicode White_Space and which has no ``\\p``).

    With ``ascii_only`` the classes keep only their ASCII part: a much faster regex that
    splits ASCII text exactly as the full one does.
    """

    def cls(name: str) -> str:
        return uclass(name, ascii_only)

    def positive(body: str) -> str:
        return f"[{body}]" if body else "(?!)"

    def negative(body: str) -> str:
        return f"[^{body}]" if body else "(?s:.)"

    out: list[str] = []
    in_class = False
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            m = _CLASS_ESCAPE.match(pattern, i)
            assert m is not None
            pos, pos1, neg, neg1, space, _ = m.groups()
            if pos or pos1:
                body = cls(pos or pos1)
                out.append(body if in_class else positive(body))
            elif neg or neg1:
                if in_class:
                    raise ValueError(f"\\P inside a character class is not supported: {pattern!r}")
                out.append(negative(cls(neg or neg1)))
            elif space == "s":
                out.append(cls("s") if in_class else positive(cls("s")))
            elif space == "S":
                if in_class:
                    raise ValueError(f"\\S inside a character class is not supported: {pattern!r}")
                out.append(negative(cls("s")))
            else:
                out.append(m.group())
            i = m.end()
            continue
        if ch == "[" and not in_class:
            in_class = True
            out.append(ch)
            # A leading "]" (after an optional "^") is a literal, not the end of the class.
            j = i + 1
            if pattern.startswith("^", j):
                out.append("^")
                j += 1
            if pattern.startswith("]", j):
                out.append("\\]")
                j += 1
            i = j
            continue
        if ch == "]" and in_class:
            in_class = False
        elif ch == "[" and in_class:
            out.append("\\")
        out.append(ch)
        i += 1
    return "".join(out)


class BertNormalizer:
    """HF ``BertNormalizer``: clean text, space out CJK characters, strip accents, lowercase."""

    def __init__(
        self,
        *,
        clean_text: bool = True,
        handle_chinese_chars: bool = True,
        strip_accents: bool | None = None,
        lowercase: bool = True,
    ) -> None:
        self.clean_text = clean_text
        self.handle_chinese_chars = handle_chinese_chars
        self.strip_accents = lowercase if strip_accents is None else strip_accents
        self.lowercase = lowercase
        self._remove, self._space, self._cjk, self._marks = _bert_regexes()

    def normalize(self, text: str) -> str:
        if self.clean_text:
            text = self._space.sub(" ", self._remove.sub("", text))
        if self.handle_chinese_chars and not text.isascii():
            text = self._cjk.sub(r" \g<0> ", text)
        if self.strip_accents and not text.isascii():
            text = self._marks.sub("", _nfd(text))
        if self.lowercase:
            # Rust lowercases char by char: no final-sigma rule, unlike str.lower().
            text = text.lower() if "Σ" not in text else "".join(c.lower() for c in text)
        return text


def _nfd(text: str) -> str:
    if not any(c in text for c in _RUST_NO_NFD):
        return unicodedata.normalize("NFD", text)
    # These characters are starters, so decomposing the parts between them is safe.
    parts = re.split(f"([{_RUST_NO_NFD}])", text)
    return "".join(p if p in _RUST_NO_NFD else unicodedata.normalize("NFD", p) for p in parts)


@functools.cache
def _bert_regexes() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    other = union(
        [(0, 0), (0xFFFD, 0xFFFD)],
        subtract(category_ranges(["Cc", "Co", "Cs"]), [0x09, 0x0A, 0x0D]),
        subtract(category_ranges(["Cf"]), _RUST_FORMAT_NO),
    )
    # Whitespace that survives the control filter becomes a plain space.
    space = subtract(WHITE_SPACE, other)
    marks = union(subtract(category_ranges(["Mn"]), _RUST_MN_NO), _RUST_MN_YES)
    return (
        re.compile(f"[{char_class(other)}]+"),
        re.compile(f"[{char_class(subtract(space, [0x20]))}]"),
        re.compile(f"[{char_class(_CJK)}]"),
        re.compile(f"[{char_class(marks)}]+"),
    )


@functools.cache
def bert_punctuation() -> Ranges:
    """What the Rust BERT pre-tokenizer isolates: ASCII punctuation and Unicode 8's P*."""
    return union(
        [(ord(c), ord(c)) for c in _ASCII_PUNCT],
        subtract(category_ranges("P"), _RUST_PUNCT_NO),
        _RUST_PUNCT_YES,
    )


class BertPreTokenizer:
    """HF ``BertPreTokenizer``: split on whitespace (dropped) and around punctuation."""

    def __init__(self) -> None:
        punct = char_class(bert_punctuation())
        self._words = re.compile(f"[{punct}]|[^{uclass('s')}{punct}]+")
        ascii_punct = char_class(subtract(bert_punctuation(), [(0x80, 0x10FFFF)]))
        self._ascii_words = re.compile(f"[{ascii_punct}]|[^{uclass('s', True)}{ascii_punct}]+")

    def split(self, text: str) -> list[str]:
        return (self._ascii_words if text.isascii() else self._words).findall(text)


class DigitsPreTokenizer:
    """HF ``Digits``: numeric characters (Unicode N*) apart from the rest, each on its own
    with ``individual_digits``, else in runs."""

    def __init__(self, individual_digits: bool = False) -> None:
        pattern = r"\p{N}" + ("" if individual_digits else "+") + r"|\P{N}+"
        self._re = re.compile(translate_regex(pattern))
        self._ascii_re = re.compile(translate_regex(pattern, ascii_only=True))

    def split(self, text: str) -> list[str]:
        return (self._ascii_re if text.isascii() else self._re).findall(text)
