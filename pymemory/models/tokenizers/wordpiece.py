"""WordPiece (BERT): greedy longest-match-first sub-words with a continuation prefix."""

from __future__ import annotations

from collections.abc import Mapping

_CACHE_LIMIT = 100_000


class WordPiece:
    """The HF ``WordPiece`` model: a word longer than ``max_input_chars_per_word``, or one
    that cannot be covered by vocabulary pieces, becomes the unknown token."""

    def __init__(
        self,
        vocab: Mapping[str, int],
        *,
        unk_token: str = "[UNK]",
        continuing_subword_prefix: str = "##",
        max_input_chars_per_word: int = 100,
    ) -> None:
        if unk_token not in vocab:
            raise ValueError(f"WordPiece: the unknown token {unk_token!r} is not in the vocabulary")
        self.vocab = dict(vocab)
        self.unk_token = unk_token
        self.unk_id = self.vocab[unk_token]
        self.prefix = continuing_subword_prefix
        self.max_chars = max_input_chars_per_word
        self._cache: dict[str, tuple[int, ...]] = {}

    def tokenize(self, word: str) -> tuple[int, ...]:
        ids = self._cache.get(word)
        if ids is None:
            ids = self._tokenize(word)
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()
            self._cache[word] = ids
        return ids

    def _tokenize(self, word: str) -> tuple[int, ...]:
        if len(word) > self.max_chars:
            return (self.unk_id,)
        vocab, ids, start = self.vocab, [], 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else self.prefix + word[start:end]
                found = vocab.get(piece)
                if found is not None:
                    ids.append(found)
                    break
                end -= 1
            else:
                return (self.unk_id,)
            start = end
        return tuple(ids)


def decode_wordpiece(tokens: list[str], prefix: str = "##", cleanup: bool = True) -> str:
    """HF ``WordPiece`` decoder: glue continuation pieces, space the rest, tidy punctuation
    (the cleanup is applied token by token, as the Rust library does)."""
    out = []
    for i, token in enumerate(tokens):
        if i:
            token = token[len(prefix) :] if token.startswith(prefix) else " " + token
        if cleanup:
            token = cleanup_tokenization(token)
        out.append(token)
    return "".join(out)


_CLEANUPS = (
    (" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
    (" 'm", "'m"), (" do not", " don't"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"),
)  # fmt: skip


def cleanup_tokenization(text: str) -> str:
    for old, new in _CLEANUPS:
        text = text.replace(old, new)
    return text
