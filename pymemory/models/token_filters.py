"""Token filters for constrained decoding: the byte-level ``HanFilter``."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

HAN_CHAR = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def token_bytes_of(tokenizer: Any) -> Callable[[int], bytes]:
    """``id -> the bytes it stands for`` for a byte-level BPE tokenizer."""
    from .tokenizers.bytelevel_bpe import unicode_to_bytes

    table = unicode_to_bytes()
    cache: dict[int, bytes] = {}

    def token_bytes(token: int) -> bytes:
        found = cache.get(token)
        if found is None:
            piece = tokenizer.id_to_token(token) or ""
            if all(c in table for c in piece):
                found = bytes(table[c] for c in piece)
            else:
                found = piece.encode("utf-8")
            cache[token] = found
        return found

    return token_bytes


class HanFilter:
    """A :data:`~pymemory.models.generate.TokenFilter`: every Han character the output
    completes must be in ``chars``, and a trailing partial UTF-8 sequence must be one of
    ``partials`` (byte-level BPE splits a character over several tokens). Without a token
    mask any prefix of an allowed character will do; with one, only the partials seen at
    token boundaries of the allowed texts, which the allowed tokens can complete."""

    def __init__(
        self,
        token_bytes: Callable[[int], bytes],
        chars: Iterable[str],
        partials: Iterable[bytes] | None = None,
    ) -> None:
        self.token_bytes = token_bytes
        self.chars = frozenset(chars)
        if partials is None:  # any token may follow: every prefix of an allowed character
            partials = (c.encode()[:k] for c in self.chars for k in range(1, len(c.encode())))
        self.prefixes = frozenset(partials)

    def __call__(self, output: Sequence[int], token: int) -> bool:
        pending = incomplete_tail(b"".join(self.token_bytes(t) for t in output[-4:]))
        return self._valid(pending + self.token_bytes(token))

    def _valid(self, data: bytes) -> bool:
        i = 0
        while i < len(data):
            lead = data[i]
            if lead >> 6 == 2 or lead >= 0xF8:
                return False  # a continuation byte where a character should start
            size = 1 if lead < 0x80 else 2 if lead >> 5 == 6 else 3 if lead >> 4 == 14 else 4
            if i + size > len(data):
                return data[i:] in self.prefixes
            try:
                char = data[i : i + size].decode("utf-8")
            except UnicodeDecodeError:
                return False
            if HAN_CHAR.fullmatch(char) and char not in self.chars:
                return False
            i += size
        return True


def incomplete_tail(data: bytes) -> bytes:
    """The incomplete UTF-8 character at the end of ``data`` (b"" if it ends cleanly)."""
    for back in range(1, min(4, len(data)) + 1):
        lead = data[-back]
        if lead >> 6 != 2:  # a lead byte (or ASCII)
            size = 1 if lead < 0x80 else 2 if lead >> 5 == 6 else 3 if lead >> 4 == 14 else 4
            return data[-back:] if size > back else b""
    return b""
