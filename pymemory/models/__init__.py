"""Local models over the inference runtimes: tokenizer -> model -> post-processing.

``MiniLmEmbedder`` runs the dense-retrieval encoders (all-MiniLM-L6-v2 by default,
multilingual-e5-small by name; int8 ONNX), unchanged on ``OrtRuntime`` (CPython) and
``OrtWebRuntime`` (onnxruntime-web, browser).
"""

from .minilm import (
    LOCAL_EMBEDDERS,
    MINILM_DEFAULTS,
    MiniLmEmbedder,
    find_model_dir,
    load_local_embedder,
    load_minilm,
    load_multilingual_e5,
)

__all__ = [
    "LOCAL_EMBEDDERS", "MINILM_DEFAULTS", "MiniLmEmbedder", "find_model_dir",
    "load_local_embedder", "load_minilm", "load_multilingual_e5",
]  # fmt: skip
