"""Load a HuggingFace ``tokenizer.json`` and encode like the Rust ``tokenizers`` package.

Supported: normalizers BertNormalizer, NFC/NFD/NFKC/NFKD, Lowercase and Sequence; pre-tokenizers
BertPreTokenizer, ByteLevel, Digits, WhitespaceSplit and Sequence; models WordPiece and BPE;
post-processors TemplateProcessing, BertProcessing, RobertaProcessing and ByteLevel; decoders
WordPiece, ByteLevel, ByteFallback, Fuse, Replace (plain string) and Sequence. Anything else
raises :class:`UnsupportedTokenizerError`.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from .bytelevel_bpe import BPE, ByteLevelPreTokenizer, decode_bytelevel
from .normalize import BertNormalizer, BertPreTokenizer, DigitsPreTokenizer, uclass
from .wordpiece import WordPiece, decode_wordpiece


class UnsupportedTokenizerError(ValueError):
    """The tokenizer.json uses a component or an option this package does not implement."""


class _Splitter(Protocol):
    def split(self, text: str) -> list[str]: ...


class _Model(Protocol):
    vocab: dict[str, int]

    def tokenize(self, word: str) -> tuple[int, ...]: ...


@dataclass(frozen=True)
class AddedToken:
    id: int
    content: str
    special: bool = False
    normalized: bool = True
    single_word: bool = False
    lstrip: bool = False
    rstrip: bool = False


@dataclass
class Encoding:
    """Ids with the parallel type ids and attention mask (what an encoder model takes)."""

    ids: list[int]
    type_ids: list[int] = field(default_factory=list)
    attention_mask: list[int] = field(default_factory=list)


@dataclass
class Truncation:
    max_length: int
    direction: str = "right"


@dataclass
class Padding:
    length: int | None = None  # None: pad a batch to its longest encoding
    pad_id: int = 0
    pad_type_id: int = 0
    pad_token: str = "[PAD]"
    direction: str = "right"
    pad_to_multiple_of: int | None = None


class Tokenizer:
    """A tokenizer.json pipeline: added tokens, normalizer, pre-tokenizer, model,
    post-processor, truncation and padding."""

    def __init__(self, spec: Mapping[str, Any]) -> None:
        self.added_tokens = [_added_token(t) for t in spec.get("added_tokens") or []]
        self.normalize = _normalizer(spec.get("normalizer"))
        self.pre_tokenizer = _pre_tokenizer(spec.get("pre_tokenizer"))
        self.model = _model(spec.get("model") or {})
        self._post = _post_processor(spec.get("post_processor"))
        self._decoder = _decoder(spec.get("decoder"))
        self._added_by_content = {t.content: t for t in self.added_tokens}
        self._added_by_id = {t.id: t for t in self.added_tokens}
        self._id_to_token = {i: t for t, i in self.model.vocab.items()}
        self._raw_split = _added_regex([t for t in self.added_tokens if not t.normalized])
        self._normalized_split = _added_regex([t for t in self.added_tokens if t.normalized])
        self.truncation: Truncation | None = _truncation(spec.get("truncation"))
        self.padding: Padding | None = _padding(spec.get("padding"))

    # -- vocabulary ------------------------------------------------------------------------

    @property
    def vocab_size(self) -> int:
        """Distinct tokens, added ones included (Rust: ``get_vocab_size(True)``)."""
        return len(self.model.vocab.keys() | self._added_by_content.keys())

    def token_to_id(self, token: str) -> int | None:
        added = self._added_by_content.get(token)
        return added.id if added is not None else self.model.vocab.get(token)

    def id_to_token(self, id: int) -> str | None:
        added = self._added_by_id.get(id)
        return added.content if added is not None else self._id_to_token.get(id)

    # -- switches --------------------------------------------------------------------------

    def enable_truncation(self, max_length: int, *, direction: str = "right") -> None:
        self.truncation = Truncation(max_length, direction)

    def no_truncation(self) -> None:
        self.truncation = None

    def enable_padding(self, length: int | None = None, **options: Any) -> None:
        """Pad to ``length``, or a batch to its longest encoding when ``length`` is None."""
        self.padding = Padding(length=length, **options)

    def no_padding(self) -> None:
        self.padding = None

    # -- encoding --------------------------------------------------------------------------

    def tokenize_ids(self, text: str) -> list[int]:
        """The model's ids for ``text``: no special tokens added, no truncation or padding."""
        ids: list[int] = []
        for piece, added in self._split_added(text, self._raw_split):
            if added is not None:
                ids.append(added.id)
                continue
            piece = self.normalize(piece)
            for part, added2 in self._split_added(piece, self._normalized_split):
                if added2 is not None:
                    ids.append(added2.id)
                    continue
                tokenize = self.model.tokenize
                for word in self.pre_tokenizer.split(part):
                    ids.extend(tokenize(word))
        return ids

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        """Ids as the Rust ``Tokenizer.encode(text).ids``: special tokens added by the
        post-processor, then truncation and padding when they are switched on."""
        return self.encode_full(text, add_special_tokens).ids

    def encode_full(self, text: str, add_special_tokens: bool = True) -> Encoding:
        """Like :meth:`encode`, with type ids and attention mask."""
        enc = self._encode_unpadded(text, add_special_tokens)
        if self.padding is not None:
            self._pad(enc, self.padding.length or len(enc.ids))
        return enc

    def encode_batch(self, texts: Iterable[str], add_special_tokens: bool = True) -> list[Encoding]:
        """Encodings of ``texts``; with padding and no fixed length, padded to the longest."""
        encs = [self._encode_unpadded(t, add_special_tokens) for t in texts]
        if self.padding is not None and encs:
            target = self.padding.length or max(len(e.ids) for e in encs)
            for enc in encs:
                self._pad(enc, target)
        return encs

    def _encode_unpadded(self, text: str, add_special_tokens: bool) -> Encoding:
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, not {type(text).__name__}")
        ids = self.tokenize_ids(text)
        if self.truncation is not None:
            room = self.truncation.max_length - (self._post.added if add_special_tokens else 0)
            room = max(room, 0)
            if len(ids) > room:
                ids = ids[:room] if self.truncation.direction == "right" else ids[len(ids) - room :]
        if add_special_tokens:
            ids, type_ids = self._post.process(ids)
        else:
            type_ids = [0] * len(ids)
        return Encoding(ids, type_ids, [1] * len(ids))

    def _pad(self, enc: Encoding, target: int) -> None:
        pad = self.padding
        assert pad is not None
        if pad.pad_to_multiple_of and target % pad.pad_to_multiple_of:
            target += pad.pad_to_multiple_of - target % pad.pad_to_multiple_of
        n = target - len(enc.ids)
        if n <= 0:
            return
        if pad.direction == "right":
            enc.ids += [pad.pad_id] * n
            enc.type_ids += [pad.pad_type_id] * n
            enc.attention_mask += [0] * n
        else:
            enc.ids[:0] = [pad.pad_id] * n
            enc.type_ids[:0] = [pad.pad_type_id] * n
            enc.attention_mask[:0] = [0] * n

    def _split_added(
        self, text: str, regex: re.Pattern[str] | None
    ) -> Iterable[tuple[str, AddedToken | None]]:
        if regex is None:
            if text:
                yield text, None
            return
        start = 0
        for m in regex.finditer(text):
            if m.start() > start:
                yield text[start : m.start()], None
            yield m.group(), self._added_by_content[m.group()]
            start = m.end()
        if start < len(text):
            yield text[start:], None

    # -- decoding --------------------------------------------------------------------------

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = True) -> str:
        tokens = []
        for i in ids:
            added = self._added_by_id.get(i)
            if added is not None:
                if not (skip_special_tokens and added.special):
                    tokens.append(added.content)
                continue
            token = self._id_to_token.get(i)
            if token is not None:
                tokens.append(token)
        return self._decoder(tokens)


def load_tokenizer(
    source: str | Path | Mapping[str, Any], *, padding: bool = False, truncation: bool = False
) -> Tokenizer:
    """A :class:`Tokenizer` from a tokenizer.json path, its JSON text, or the parsed dict
    (a SentencePiece-unigram description written by ``tools/convert_embedder.py`` gives a
    :class:`~.unigram.UnigramTokenizer`: ``encode(text) -> list[int]``, no truncation).

    The file's own padding and truncation settings apply only when asked for: counting
    tokens wants neither.
    """
    if isinstance(source, Mapping):
        spec = dict(source)
    elif isinstance(source, str) and source.lstrip().startswith("{"):
        spec = json.loads(source)
    else:
        spec = json.loads(Path(source).read_text(encoding="utf-8"))
    if spec.get("type") == "sentencepiece-unigram":  # this project's own format
        from .unigram import UnigramTokenizer

        return UnigramTokenizer(spec)  # type: ignore[return-value]  # encode() as Tokenizer's
    tok = Tokenizer(spec)
    if not padding:
        tok.no_padding()
    if not truncation:
        tok.no_truncation()
    return tok


# -- components --------------------------------------------------------------------------


def _unsupported(kind: str, spec: Any) -> UnsupportedTokenizerError:
    return UnsupportedTokenizerError(f"unsupported {kind}: {json.dumps(spec)[:200]}")


def _added_token(spec: Mapping[str, Any]) -> AddedToken:
    tok = AddedToken(
        id=int(spec["id"]),
        content=str(spec["content"]),
        special=bool(spec.get("special", False)),
        normalized=bool(spec.get("normalized", not spec.get("special", False))),
        single_word=bool(spec.get("single_word", False)),
        lstrip=bool(spec.get("lstrip", False)),
        rstrip=bool(spec.get("rstrip", False)),
    )
    if tok.single_word or tok.lstrip or tok.rstrip:
        raise _unsupported("added token option (single_word/lstrip/rstrip)", spec)
    return tok


def _added_regex(tokens: Sequence[AddedToken]) -> re.Pattern[str] | None:
    # Longest first, so that at one position the longest token wins (leftmost-longest).
    contents = sorted({t.content for t in tokens if t.content}, key=len, reverse=True)
    return re.compile("|".join(map(re.escape, contents))) if contents else None


def _normalizer(spec: Mapping[str, Any] | None) -> Callable[[str], str]:
    if spec is None:
        return _identity
    kind = spec.get("type")
    if kind == "BertNormalizer":
        return BertNormalizer(
            clean_text=spec.get("clean_text", True),
            handle_chinese_chars=spec.get("handle_chinese_chars", True),
            strip_accents=spec.get("strip_accents"),
            lowercase=spec.get("lowercase", True),
        ).normalize
    if kind in ("NFC", "NFD", "NFKC", "NFKD"):
        form = kind
        return lambda text: unicodedata.normalize(form, text)
    if kind == "Lowercase":
        return _lower
    if kind == "Sequence":
        steps = [_normalizer(s) for s in spec.get("normalizers", [])]
        if not steps:
            return _identity

        def run(text: str) -> str:
            for step in steps:
                text = step(text)
            return text

        return run
    raise _unsupported("normalizer", spec)


def _identity(text: str) -> str:
    return text


def _lower(text: str) -> str:
    return text.lower() if "Σ" not in text else "".join(c.lower() for c in text)


class _NoSplit:
    def split(self, text: str) -> list[str]:
        return [text]


class _WhitespaceSplit:
    def __init__(self) -> None:
        self._re = re.compile(f"[^{uclass('s')}]+")

    def split(self, text: str) -> list[str]:
        return self._re.findall(text)


class _SequenceSplit:
    def __init__(self, steps: list[_Splitter]) -> None:
        self.steps = steps

    def split(self, text: str) -> list[str]:
        pieces = [text]
        for step in self.steps:
            pieces = [p for piece in pieces for p in step.split(piece)]
        return pieces


def _pre_tokenizer(spec: Mapping[str, Any] | None) -> _Splitter:
    if spec is None:
        return _NoSplit()
    kind = spec.get("type")
    if kind == "BertPreTokenizer":
        return BertPreTokenizer()
    if kind == "ByteLevel":
        return ByteLevelPreTokenizer(
            add_prefix_space=spec.get("add_prefix_space", True),
            use_regex=spec.get("use_regex", True),
        )
    if kind == "Digits":
        return DigitsPreTokenizer(individual_digits=spec.get("individual_digits", False))
    if kind == "WhitespaceSplit":
        return _WhitespaceSplit()
    if kind == "Sequence":
        return _SequenceSplit([_pre_tokenizer(s) for s in spec.get("pretokenizers", [])])
    raise _unsupported("pre-tokenizer", spec)


def _model(spec: Mapping[str, Any]) -> _Model:
    kind = spec.get("type")
    if kind == "WordPiece":
        return WordPiece(
            spec["vocab"],
            unk_token=spec.get("unk_token", "[UNK]"),
            continuing_subword_prefix=spec.get("continuing_subword_prefix", "##"),
            max_input_chars_per_word=spec.get("max_input_chars_per_word", 100),
        )
    if kind == "BPE" or (kind is None and "merges" in spec):
        if spec.get("dropout") or spec.get("continuing_subword_prefix"):
            raise _unsupported("BPE option (dropout/continuing_subword_prefix)", spec)
        if spec.get("end_of_word_suffix"):
            raise _unsupported("BPE option (end_of_word_suffix)", spec)
        return BPE(
            spec["vocab"],
            spec.get("merges", []),
            unk_token=spec.get("unk_token"),
            fuse_unk=spec.get("fuse_unk", False),
            byte_fallback=spec.get("byte_fallback", False),
            ignore_merges=spec.get("ignore_merges", False),
        )
    raise _unsupported("model", {"type": kind})


class _PostProcessor:
    """Adds special tokens around a single sequence."""

    def __init__(self, before: list[int], after: list[int], type_id: int = 0) -> None:
        self.before, self.after, self.type_id = before, after, type_id
        self.added = len(before) + len(after)

    def process(self, ids: list[int]) -> tuple[list[int], list[int]]:
        out = self.before + ids + self.after
        return out, [self.type_id] * len(out)


class _TemplateProcessor(_PostProcessor):
    def __init__(self, items: list[tuple[list[int] | None, int]]) -> None:
        self.items = items  # (special ids, or None for the sequence; type id)
        self.added = sum(len(ids) for ids, _ in items if ids is not None)

    def process(self, ids: list[int]) -> tuple[list[int], list[int]]:
        out: list[int] = []
        types: list[int] = []
        for special, type_id in self.items:
            part = ids if special is None else special
            out += part
            types += [type_id] * len(part)
        return out, types


def _post_processor(spec: Mapping[str, Any] | None) -> _PostProcessor:
    if spec is None:
        return _PostProcessor([], [])
    kind = spec.get("type")
    if kind == "ByteLevel":
        return _PostProcessor([], [])
    if kind in ("BertProcessing", "RobertaProcessing"):
        return _PostProcessor([spec["cls"][1]], [spec["sep"][1]])
    if kind == "TemplateProcessing":
        specials = spec.get("special_tokens", {})
        items: list[tuple[list[int] | None, int]] = []
        for item in spec.get("single", []):
            if "SpecialToken" in item:
                st = item["SpecialToken"]
                items.append((list(specials[st["id"]]["ids"]), int(st.get("type_id", 0))))
            elif "Sequence" in item:
                items.append((None, int(item["Sequence"].get("type_id", 0))))
            else:
                raise _unsupported("template item", item)
        return _TemplateProcessor(items)
    if kind == "Sequence":
        parts = [_post_processor(p) for p in spec.get("processors", [])]
        active = [p for p in parts if p.added]
        if len(active) > 1:
            raise _unsupported("post-processor sequence", spec)
        return active[0] if active else _PostProcessor([], [])
    raise _unsupported("post-processor", spec)


Decoder = Callable[[list[str]], list[str]]


def _decoder(spec: Mapping[str, Any] | None) -> Callable[[list[str]], str]:
    if spec is None:
        return " ".join
    step = _decoder_step(spec)
    return lambda tokens: "".join(step(tokens))


def _decoder_step(spec: Mapping[str, Any]) -> Decoder:
    """One decoder as the Rust library's ``decode_chain``: tokens in, tokens out."""
    kind = spec.get("type")
    if kind == "WordPiece":
        prefix, cleanup = spec.get("prefix", "##"), spec.get("cleanup", True)
        return lambda tokens: [decode_wordpiece(tokens, prefix, cleanup)]
    if kind == "ByteLevel":
        return lambda tokens: [decode_bytelevel(tokens)]
    if kind == "ByteFallback":
        return _byte_fallback
    if kind == "Fuse":
        return lambda tokens: ["".join(tokens)]
    if kind == "Replace" and "String" in spec.get("pattern", {}):
        old, new = spec["pattern"]["String"], spec.get("content", "")
        return lambda tokens: [t.replace(old, new) for t in tokens]
    if kind == "Sequence":
        steps = [_decoder_step(s) for s in spec.get("decoders", [])]

        def run(tokens: list[str]) -> list[str]:
            for step in steps:
                tokens = step(tokens)
            return tokens

        return run
    raise _unsupported("decoder", spec)


_BYTE_TOKEN = re.compile(r"<0x([0-9A-Fa-f]{2})>")


def _byte_fallback(tokens: list[str]) -> list[str]:
    """``<0xXX>`` tokens back to text; a run of them that is not UTF-8 gives one U+FFFD
    per byte."""
    out: list[str] = []
    pending = bytearray()
    for token in [*tokens, None]:
        m = _BYTE_TOKEN.fullmatch(token) if token is not None else None
        if m is not None:
            pending.append(int(m.group(1), 16))
            continue
        if pending:
            try:
                out.append(pending.decode("utf-8"))
            except UnicodeDecodeError:
                out.extend("\ufffd" * len(pending))
            pending.clear()
        if token is not None:
            out.append(token)
    return out


def _truncation(spec: Mapping[str, Any] | None) -> Truncation | None:
    if spec is None:
        return None
    if spec.get("strategy", "LongestFirst") not in ("LongestFirst", "OnlyFirst"):
        raise _unsupported("truncation strategy", spec)
    return Truncation(int(spec["max_length"]), str(spec.get("direction", "Right")).lower())


def _padding(spec: Mapping[str, Any] | None) -> Padding | None:
    if spec is None:
        return None
    strategy = spec.get("strategy", "BatchLongest")
    length = int(strategy["Fixed"]) if isinstance(strategy, Mapping) else None
    return Padding(
        length=length,
        pad_id=int(spec.get("pad_id", 0)),
        pad_type_id=int(spec.get("pad_type_id", 0)),
        pad_token=str(spec.get("pad_token", "[PAD]")),
        direction=str(spec.get("direction", "Right")).lower(),
        pad_to_multiple_of=spec.get("pad_to_multiple_of"),
    )
