"""Encoder: raw input -> a memory's short, human-readable ``content`` (seed 002, layer 2).

Stage 1 (:class:`RuleEncoder`) is deterministic rules, instant, standard library only.
Stage 2 (a :class:`Refiner`, e.g. SmolLM2 in :mod:`.smollm2`) rewrites that summary in the
background, and only output the :mod:`.guard` accepts replaces it (:mod:`.refine`).
"""

from .rules import (
    MAX_CONTENT_CHARS,
    MEMORY_TYPES,
    Encoded,
    Encoder,
    Refiner,
    RuleEncoder,
    split_sentences,
)

__all__ = [
    "MAX_CONTENT_CHARS",
    "MEMORY_TYPES",
    "Encoded",
    "Encoder",
    "Refiner",
    "RuleEncoder",
    "split_sentences",
]
