"""Text analysis: turn a string into the terms the lexical (BM25) index stores.

The same function is used for documents and queries, so whatever it does to a word is
done on both sides and the two always meet.

Pipeline, applied by :func:`analyze`:

1. **Normalise** (:func:`normalize`). Unicode NFKC (full-width letters and digits become
   ASCII, compatibility ideographs become unified ones, half-width katakana becomes
   full-width), then ``str.casefold`` (``"Straße"`` -> ``"strasse"``, ``"İ"`` -> ``"i̇"``),
   then **accent folding for matching**: the string is decomposed (NFKD) and the
   combining marks that only decorate a letter are dropped: the generic diacritics
   (U+0300-036F and their extensions: ``"é"`` -> ``"e"``, ``"İstanbul"`` ->
   ``"istanbul"``, ``"Việt"`` -> ``"viet"``, ``"ά"`` -> ``"α"``), Hebrew points and Arabic
   harakat. Marks that change the letter are kept: Indic and Thai vowel signs, and the
   kana voicing marks (``"が"`` stays ``"が"``); Hangul syllables are recomposed. Letters
   that do not decompose are folded too: ``ø ł đ ħ ı ŧ`` -> ``o l d h i t``, ``æ œ`` ->
   ``ae oe``. The result is NFKC again. The typographic apostrophes ``’ ‘ ʼ`` are treated
   as ``'``. Documents and queries go through the same steps, so ``"istanbul"`` finds
   ``"İstanbul"`` and ``"ete"`` finds ``"e\u0301te"``.
2. **Split** into two kinds of runs; everything else (whitespace, punctuation, symbols,
   emoji, ``_``) only separates tokens and is dropped:

   * **CJK runs**: Han ideographs, Hiragana, Katakana (with ``ー``) and Hangul. A run
     yields every character as a unigram and every pair of neighbouring characters as
     an overlapping bigram: ``"会议纪要"`` -> ``会 议 纪 要 会议 议纪 纪要``
     (unigrams first, then bigrams). A few function characters (``的 了 是 在 和`` ...,
     and the Japanese particles ``の を に は が で と も``) are dropped as unigrams
     but still take part in bigrams.
   * **Word runs**: letters, digits and combining marks of every other script. A word may
     contain an apostrophe between letters (``user's``, ``don't``) and a dot between two
     digits, so version numbers, decimals and addresses stay whole: ``"3.5"``,
     ``"python3.11"``, ``"v1.2.3"``, ``"192.168.0.1"``. Letters and digits that touch
     are one token (``"python3"``, ``"gpt4o"``, ``"mp3"``). Hyphens, slashes, dots
     between letters and underscores split: ``"file.csv"`` -> ``file csv``,
     ``"snake_case"`` -> ``snake case``, ``"gpt-4"`` -> ``gpt 4``.

3. **Clean words.** A trailing clitic is cut: ``'s 'm 'd 're 've 'll`` and ``n't``
   (``"user's"`` -> ``user``, ``"don't"`` -> ``do``, ``"can't"`` -> ``can``,
   ``"won't"`` -> ``will``); any apostrophe left is removed (``"o'neil"`` -> ``oneil``).
   Words longer than :data:`MAX_TOKEN_CHARS` characters (base64 blobs and the like) are
   dropped. Words in the small English stopword list :data:`STOPWORDS` are dropped.
4. **Stem** ASCII-letter words with a light, conservative plural stemmer (see
   :func:`stem`): ``"memories"`` -> ``memory``, ``"scripts"`` -> ``script``,
   ``"classes"`` -> ``class``, ``"boxes"`` -> ``box``. Words with digits, non-ASCII
   letters and words under four letters are never stemmed.

5. **Join digit groups**: a number written in groups (``"139 1108 2267"``,
   ``"159-0213-6677"``, at least :data:`MIN_JOINED_DIGITS` digits) also gives the number
   whole (``13911082267``), appended after the other terms, so a phone number matches
   however either side grouped it.

The output keeps the order in which terms occur (per CJK run: unigrams, then bigrams),
keeps repeats (BM25 counts term frequency) and depends on nothing but the input.

Only the standard library is used, so this runs unchanged under Pyodide.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

__all__ = [
    "CJK_STOP_CHARS",
    "MAX_TOKEN_CHARS",
    "MIN_JOINED_DIGITS",
    "STOPWORDS",
    "analyze",
    "analyze_query",
    "is_cjk",
    "normalize",
    "stem",
]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: Words longer than this (after normalisation) are dropped rather than indexed.
MAX_TOKEN_CHARS = 64

#: English stopwords: articles, pronouns, auxiliaries, conjunctions, prepositions and
#: question words. Content-bearing particles ("up", "out", "off", "over") are kept
#: because they change meaning in agent notes ("sign up", "log out").
STOPWORDS: frozenset[str] = _words(
    """
    a an the
    and or but nor so yet if then than else
    of to in on at by for with from into onto about as via per
    is are was were be been being am
    do does did doing done
    have has had having
    will would shall should can could may might must
    i me my mine myself we us our ours ourselves you your yours yourself yourselves
    he him his himself she her hers herself it its itself they them their theirs
    themselves
    this that these those
    what which who whom whose when where why how
    there here
    not no
    very too also just
    """
)

#: CJK function characters dropped as unigrams (they still appear inside bigrams).
CJK_STOP_CHARS: frozenset[str] = frozenset("的了着是在和与及或也都而之吗呢吧啊把被のをにはがでとも")

# Characters that belong to CJK runs. Ranges are chosen to contain letters only (the
# Katakana middle dot and the kana voicing marks are left out).
_CJK_RANGES = (
    "\u1100-\u11ff"  # Hangul Jamo
    "\u3005-\u3007"  # 々 〆 〇
    "\u3041-\u3096"  # Hiragana
    "\u309d-\u309f"  # Hiragana iteration marks, yori
    "\u30a1-\u30fa"  # Katakana
    "\u30fc-\u30ff"  # prolonged sound mark, Katakana iteration marks, koto
    "\u3131-\u318e"  # Hangul compatibility Jamo
    "\u31f0-\u31ff"  # Katakana phonetic extensions
    "\u3400-\u4dbf"  # CJK Unified Ideographs Extension A
    "\u4e00-\u9fff"  # CJK Unified Ideographs
    "\ua960-\ua97f"  # Hangul Jamo Extended-A
    "\uac00-\ud7a3"  # Hangul syllables
    "\ud7b0-\ud7ff"  # Hangul Jamo Extended-B
    "\uf900-\ufaff"  # CJK Compatibility Ideographs (NFKC maps most away)
    "\U00020000-\U0003134f"  # CJK Unified Ideographs Extensions B-G
)

# Combining marks that may continue a word (they are not ``\w`` in Python's ``re``):
# generic diacritics and the Indic, Thai, Lao, Hebrew and Arabic blocks, where vowel
# signs are marks. Letters in those blocks are ``\w`` already.
_MARKS = (
    "\u0300-\u036f\u0483-\u0489\u0591-\u05c7\u0610-\u061a\u064b-\u065f\u0670"
    "\u06d6-\u06ed\u0900-\u0dff\u0e00-\u0eff\u1ab0-\u1aff\u1dc0-\u1dff"
    "\u20d0-\u20ff\ufe20-\ufe2f"
)

_CJK_RE = re.compile(f"[{_CJK_RANGES}]+")


def is_cjk(term: str) -> bool:
    """Whether ``term`` is made of CJK characters only (a unigram or bigram of a run)."""
    return _CJK_RE.fullmatch(term) is not None


_WORD_START = rf"[^\W_{_CJK_RANGES}]"
_WORD_CHAR = rf"(?:[^\W_{_CJK_RANGES}]|[{_MARKS}])"
_WORD = rf"{_WORD_START}{_WORD_CHAR}*"
# A word, optionally continued by "'" + word, or by "." + word when the dot sits
# between two digits.
_TOKEN_RE = re.compile(rf"([{_CJK_RANGES}]+)|({_WORD}(?:(?:'|(?<=\d)\.(?=\d)){_WORD})*)")

_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})

# Clitic suffixes cut from the end of a word (at most one).
_CLITICS = ("'s", "'m", "'d", "'re", "'ve", "'ll")
_NEGATION_BASES = {"ca": "can", "wo": "will", "sha": "shall"}

# Words that look plural but must not lose their final "s" (would collide with another
# word or are not plurals).
_NO_STEM: frozenset[str] = _words(
    """
    news series species always perhaps towards afterwards whereas
    alias bias atlas canvas chaos
    """
)
# Words in "-ies" whose singular ends in "-ie", not "-y".
_IES_TO_IE: frozenset[str] = _words(
    """
    movies cookies zombies rookies calories brownies selfies hoodies smoothies
    goodies newbies freebies techies indies genies ties lies pies dies
    """
)
# Singulars in "-che": their plurals lose only the "s".
_CHE_WORDS: frozenset[str] = _words(
    "cache ache headache niche avalanche cliche moustache mustache psyche quiche"
)


def stem(word: str) -> str:
    """Reduce an English plural to its singular; leave everything else alone.

    Rules, first match wins, applied only to ASCII-letter words of four or more letters
    that are not in a short exception list:

    * ``-ies`` -> ``-y`` (``memories`` -> ``memory``), except a few ``-ie`` nouns
      (``movies`` -> ``movie``);
    * ``-sses`` ``-xes`` ``-zzes`` ``-shes`` ``-ches`` -> drop ``es`` (``classes`` ->
      ``class``, ``boxes`` -> ``box``, ``matches`` -> ``match``), except ``-che``
      nouns (``caches`` -> ``cache``);
    * ``-ss`` ``-us`` ``-sis`` ``-xis`` -> unchanged (``class``, ``status``,
      ``analysis``, ``axis``);
    * ``-s`` -> drop it (``scripts`` -> ``script``, ``apis`` -> ``api``).
    """
    n = len(word)
    if n < 4 or word[-1] != "s" or not (word.isascii() and word.isalpha()):
        return word
    if word in _NO_STEM:
        return word
    if word.endswith("ies"):
        if word in _IES_TO_IE or n <= 4:
            return word[:-1]
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "zzes", "shes")):
        return word[:-2]
    if word.endswith("ches"):
        base = word[:-1]
        return base if base in _CHE_WORDS else word[:-2]
    if word.endswith(("ss", "us", "sis", "xis")):
        return word
    return word[:-1]


@lru_cache(maxsize=65536)
def _word_term(word: str) -> str | None:
    """The index term for one normalised word run, or None if it is dropped."""
    if "'" in word:
        if word.endswith("n't"):
            base = word[:-3]
            word = _NEGATION_BASES.get(base, base)
        else:
            for clitic in _CLITICS:
                if word.endswith(clitic):
                    word = word[: -len(clitic)]
                    break
        word = word.replace("'", "")
    if not word or len(word) > MAX_TOKEN_CHARS or word in STOPWORDS:
        return None
    return stem(word)


# Combining marks dropped by accent folding: generic diacritics (and their extensions),
# Hebrew points and cantillation, Arabic harakat. Not the Indic, Thai or kana marks.
_FOLD_MARKS = re.compile(
    "[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
    "\u0591-\u05bd\u05bf\u05c1\u05c2\u05c4\u05c5\u05c7\u064b-\u065f\u0670]"
)
# Letters with no decomposition that folding should still meet their base letter.
_FOLD_LETTERS = str.maketrans(
    {"ø": "o", "ł": "l", "đ": "d", "ħ": "h", "ı": "i", "ŧ": "t", "ŀ": "l", "æ": "ae", "œ": "oe"}
)


def normalize(text: str) -> str:
    """The text as the analyzer matches it: NFKC, case-folded, accents folded (see the
    module docstring); documents and queries alike."""
    if text.isascii():
        return text.lower().translate(_APOSTROPHES)
    text = unicodedata.normalize("NFKC", text).casefold()
    text = _FOLD_MARKS.sub("", unicodedata.normalize("NFKD", text)).translate(_FOLD_LETTERS)
    return unicodedata.normalize("NFKC", text).casefold().translate(_APOSTROPHES)


_normalize = normalize


# Digit groups written apart ("139 1108 2267", "07700 900123", "159-0213-6677"): the
# number they spell is also a term, so it matches however it was grouped.
_DIGIT_GROUPS = re.compile(r"(?<!\w)(?<!\d\.)\d+(?:[ \-]\d+)+(?!\w)(?!\.\d)")
MIN_JOINED_DIGITS = 7


def _joined_numbers(text: str) -> list[str]:
    if not any(c.isdigit() for c in text):
        return []
    out = []
    for m in _DIGIT_GROUPS.finditer(text):
        digits = m.group().replace(" ", "").replace("-", "")
        if MIN_JOINED_DIGITS <= len(digits) <= MAX_TOKEN_CHARS:
            out.append(digits)
    return out


def analyze(text: str) -> list[str]:
    """Return the index terms of ``text`` in order of occurrence (repeats kept), then the
    numbers spelled by digit groups written apart (``"139 1108 2267"`` -> ``13911082267``).

    >>> analyze("The user's favourite scripts are in ~/bin")
    ['user', 'favourite', 'script', 'bin']
    >>> analyze("会议纪要")
    ['会', '议', '纪', '要', '会议', '议纪', '纪要']
    """
    if not isinstance(text, str):
        raise TypeError(f"analyze() expects str, got {type(text).__name__}")
    text = _normalize(text)
    out: list[str] = []
    append = out.append
    for cjk, word in _TOKEN_RE.findall(text):
        if word:
            term = _word_term(word)
            if term is not None:
                append(term)
        else:
            out.extend(ch for ch in cjk if ch not in CJK_STOP_CHARS)
            out.extend(cjk[i : i + 2] for i in range(len(cjk) - 1))
    out += _joined_numbers(text)
    return out


#: Queries are analysed exactly like documents (same terms on both sides).
analyze_query = analyze
