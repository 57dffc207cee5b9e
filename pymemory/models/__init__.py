"""Local models over the inference runtimes: tokenizer -> model -> post-processing.

``MiniLmEmbedder`` (all-MiniLM-L6-v2, int8 ONNX) is the dense-retrieval embedder; it runs
unchanged on ``OrtRuntime`` (CPython) and ``OrtWebRuntime`` (onnxruntime-web, browser).
"""

from .minilm import MINILM_DEFAULTS, MiniLmEmbedder, find_model_dir, load_minilm

__all__ = ["MINILM_DEFAULTS", "MiniLmEmbedder", "find_model_dir", "load_minilm"]
