"""Cutting text into units: sentences, clauses, and one line per code block or stack trace."""

from __future__ import annotations

import re
from typing import NamedTuple

from .patterns import lazy_compile, word_set

# --------------------------------------------------------------------------------------
# Character classes and sentence punctuation
# --------------------------------------------------------------------------------------

# Han, kana, bopomofo, CJK punctuation and full-width forms: text that is written without
# spaces, so it may be cut between any two characters. (Hangul is written with spaces.)
_CJK = (
    "\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3100-\u312f\u31f0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef"
    "\U00020000-\U0003134f"
)
_CJK_CHAR = lazy_compile(f"[{_CJK}]")
_CJK_TERMINATORS = "。！？；"
_CLOSERS = "\"'”’)]」』）】"
# A run of sentence punctuation and the quotes/brackets closing right after it.
_TERMINATOR_RUN = lazy_compile(f"(?:[.!?…]+|[{_CJK_TERMINATORS}]+)[{re.escape(_CLOSERS)}]*")
# Punctuation that ends a clause inside a sentence too long to keep whole.
_CLAUSE_RUN = lazy_compile(r"[,;:]+(?= )|[，；：、]+")
CLAUSE_PUNCTUATION = ",;:，；：、"
# Punctuation after which a unit may be glued to the next one without a space.
GLUE_AFTER = "。！？；，、：…」』）】"


# A period after one of these does not end the sentence.
_ABBREVIATIONS = word_set(
    "mr. mrs. ms. dr. prof. sr. jr. st. mt. vs. e.g. i.e. cf. approx. fig. no. nos. vol. "
    "dept. est. ca. al. eg. ie. viz. ref. ver. incl. min. max. avg. jan. feb. mar. apr. "
    "jun. jul. aug. sep. sept. oct. nov. dec. mon. tue. wed. thu. fri. sat. sun."
)
# ... nor after one of these when the next word starts in lower case or with a digit.
_SOFT_ABBREVIATIONS = word_set("etc. a.m. p.m. inc. ltd. co. corp.")
_SENTENCE_END = ".!?…:" + _CJK_TERMINATORS

# --------------------------------------------------------------------------------------
# Code blocks and stack traces
# --------------------------------------------------------------------------------------

_FENCES = ("```", "~~~")
_MIN_WRAPPED_LINE = 40  # a shorter line was ended on purpose, not wrapped
_TRACEBACK_HEADER = "Traceback (most recent call last)"
_EXCEPTION_LINE = lazy_compile(
    r"(?:(?i:uncaught|unhandled|fatal)\s+)?(?:[A-Za-z_][\w$]*\.)*[A-Za-z_]*"
    r"(?:Error|Exception|Warning|Exit|Interrupt|Fault|Panic)(?::.*)?"
)
# Stack frames and traceback chatter: dropped outright.
_NOISE_LINE = lazy_compile(
    r'\s*File ".*", line \d+'
    r"|\s+at\s.*:\d+"
    r"|\s+\.\.\. \d+ more"
    r"|During handling of the above exception"
    r"|The above exception was the direct cause"
)
_CODE_HEADER = lazy_compile(r"#!|#\s*-\*-|Traceback \(most recent call last\)")
_CODE_COMMENT = lazy_compile(r"#\s|#$|//|/\*|\*|--\s|<!--")
_CODE_BONUS = 1
_EXCEPTION_BONUS = 4


class Unit(NamedTuple):
    """One unit of a text: a sentence, a clause or a code block's line."""

    text: str  # whitespace-normalised
    glued: bool  # no whitespace between this unit and the previous one in the input
    kind: str  # "prose" or "code"
    bonus: int = 0


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` (whitespace collapsed), cut where the rule encoder cuts."""
    return [sentence for sentence, _ in _split_sentences(collapse_whitespace(text))]


def collapse_whitespace(text: str) -> str:
    """``text`` with every run of whitespace made one space, stripped."""
    return " ".join(text.split())


def is_cjk(char: str) -> bool:
    """Whether ``char`` is written without spaces (Han, kana, CJK punctuation)."""
    return bool(char) and _CJK_CHAR.match(char) is not None


# --------------------------------------------------------------------------------------
# Units: sentences, clauses and code lines
# --------------------------------------------------------------------------------------


def split_units(text: str, max_chars: int, *, by_line: bool = False) -> list[Unit]:
    """Sentences of the prose, one line per code block or stack trace, in input order.

    ``by_line`` (tool output): each line is a unit, split into sentences only if too long.
    """
    units: list[Unit] = []
    for kind, block in _blocks(text, wrap=not by_line):
        if kind == "code":
            units.append(Unit(block, False, "code", _code_bonus(block)))
            continue
        if by_line and len(block) <= max_chars:  # tool output is line-oriented
            units.append(Unit(block, False, "prose"))
            continue
        for i, (sentence, glued) in enumerate(_split_sentences(block)):
            # A block starts on a new line: its first sentence is never glued to anything.
            glued = glued and i > 0
            pieces = _split_clauses(sentence) if len(sentence) > max_chars else [(sentence, False)]
            for j, (piece, piece_glued) in enumerate(pieces):
                units.append(Unit(piece, piece_glued if j else glued, "prose"))
    return units


def _blocks(text: str, *, wrap: bool = True) -> list[tuple[str, str]]:
    """("prose", paragraph) and ("code", meaningful line) blocks, in input order.

    With ``wrap``, a line continuing a hard-wrapped sentence joins the line before it.
    """
    blocks: list[tuple[str, str]] = []
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            blocks.append(("prose", collapse_whitespace(" ".join(paragraph))))
            paragraph.clear()

    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith(_FENCES):
            end = _fence_end(lines, i)
            flush()
            _add_code(blocks, lines[i + 1 : end])
            i = end + 1
        elif stripped.startswith(_TRACEBACK_HEADER):
            end = _traceback_end(lines, i)
            flush()
            _add_code(blocks, lines[i : end + 1])
            i = end + 1
        elif _EXCEPTION_LINE.fullmatch(stripped):
            flush()
            blocks.append(("code", collapse_whitespace(stripped)))
            i += 1
        else:
            if not stripped or _NOISE_LINE.match(line):
                flush()
            elif wrap and paragraph and _continues(paragraph[-1], stripped):
                paragraph.append(stripped)
            else:
                flush()
                paragraph.append(stripped)
            i += 1
    flush()
    return blocks


def _fence_end(lines: list[str], start: int) -> int:
    """Index of the line closing the fence opened at ``start`` (or len(lines))."""
    fence = lines[start].strip()[:3]
    for j in range(start + 1, len(lines)):
        if lines[j].strip().startswith(fence):
            return j
    return len(lines)


def _traceback_end(lines: list[str], start: int) -> int:
    """Index of the exception line ending the traceback opened at ``start``."""
    indent = _indent(lines[start])
    for j in range(start + 1, len(lines)):
        line = lines[j]
        if line.strip() and _indent(line) <= indent and not _NOISE_LINE.match(line):
            return j
    return len(lines) - 1


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _add_code(blocks: list[tuple[str, str]], body: list[str]) -> None:
    line = _code_line(body)
    if line:
        blocks.append(("code", line))


def _code_line(body: list[str]) -> str:
    """The line that best stands for a code block: its last exception line, else its first
    line of code (a comment only if there is no code), skipping shebangs, headers and stack
    frames."""
    exceptions = [s for s in (line.strip() for line in body) if _EXCEPTION_LINE.fullmatch(s)]
    if exceptions:
        return collapse_whitespace(exceptions[-1])
    meaningful = [line.strip() for line in body if _is_meaningful(line)]
    code = [line for line in meaningful if not _CODE_COMMENT.match(line)]
    return collapse_whitespace((code or meaningful or [""])[0])


def _is_meaningful(line: str) -> bool:
    stripped = line.strip()
    return (
        any(ch.isalnum() for ch in stripped)
        and not _CODE_HEADER.match(stripped)
        and not _NOISE_LINE.match(line)
    )


def _code_bonus(line: str) -> int:
    return _EXCEPTION_BONUS if _EXCEPTION_LINE.fullmatch(line) else _CODE_BONUS


def _continues(previous: str, line: str) -> bool:
    """Whether ``line`` continues a hard-wrapped sentence begun on the (long) line before."""
    return (
        len(previous) >= _MIN_WRAPPED_LINE
        and previous[-1] not in _SENTENCE_END
        and "a" <= line[0] <= "z"
    )


def _split_sentences(paragraph: str) -> list[tuple[str, bool]]:
    """(sentence, glued to the previous one) pairs of a whitespace-normalised paragraph."""
    ends = [m.end() for m in _TERMINATOR_RUN.finditer(paragraph) if _ends_sentence(paragraph, m)]
    return _cut(paragraph, ends)


def _split_clauses(sentence: str) -> list[tuple[str, bool]]:
    """A sentence too long to keep whole, cut after its commas, semicolons and colons."""
    return _cut(sentence, [m.end() for m in _CLAUSE_RUN.finditer(sentence)])


def _cut(text: str, ends: list[int]) -> list[tuple[str, bool]]:
    pieces: list[tuple[str, bool]] = []
    start = 0
    for end in [*ends, len(text)]:
        piece = text[start:end]
        stripped = piece.strip()
        if stripped:
            pieces.append((stripped, not piece[0].isspace()))
        start = end
    return pieces


def _ends_sentence(text: str, match: re.Match[str]) -> bool:
    run = match.group()
    if run[0] in _CJK_TERMINATORS:
        return True
    after = text[match.end() : match.end() + 1]
    if after and not after.isspace() and not is_cjk(after):
        return False  # 3.5, main.py, example.com/a?b, wait…what
    if run.rstrip(_CLOSERS) != ".":
        return True
    word_start = text.rfind(" ", 0, match.start()) + 1
    word = text[word_start : match.start()].lstrip("([{\"'“‘").lower() + "."
    if word in _ABBREVIATIONS:
        return False
    if len(word) == 2 and "a" <= word[0] <= "z" and text[match.start() - 1].isupper():
        return False  # an initial: J. Smith
    if word[:-1].isdigit() and word_start == 0:
        return False  # a numbered list item: "1. Install it"
    following = text[match.end() + 1 : match.end() + 2]
    return not (word in _SOFT_ABBREVIATIONS and (following.islower() or following.isdigit()))
