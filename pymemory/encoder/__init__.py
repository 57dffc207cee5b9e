"""Encoder: raw input -> a memory's short, human-readable ``content`` (seed 002, layer 2).

Stage 1 (:class:`RuleEncoder`) is deterministic rules, instant, standard library only.
Stage 2 (a :class:`Refiner`, e.g. SmolLM2 in :mod:`.smollm2`) rewrites that summary in the
background, and only output the :mod:`.guard` accepts replaces it (:mod:`.refine`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import MAX_CONTENT_CHARS, MEMORY_TYPES, Encoded, Encoder, Refiner
from .rules import RuleEncoder
from .sentences import split_sentences

if TYPE_CHECKING:
    from .smollm2 import SmolLm2Refiner, load_smollm2_refiner

__all__ = [
    "MAX_CONTENT_CHARS",
    "MEMORY_TYPES",
    "Encoded",
    "Encoder",
    "Refiner",
    "RuleEncoder",
    "SmolLm2Refiner",
    "load_smollm2_refiner",
    "split_sentences",
]


def __getattr__(name: str) -> Any:
    # The model refiner is imported only when asked for: stage 1 alone needs none of it.
    if name in ("SmolLm2Refiner", "load_smollm2_refiner"):
        from . import smollm2

        return getattr(smollm2, name)
    raise AttributeError(name)
